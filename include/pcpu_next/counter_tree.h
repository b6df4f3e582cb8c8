/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pcpu_next hierarchical per-CPU counter tree: fast per-CPU adds, an O(1)
 * approximate sum with a guaranteed accuracy range, and an O(nr_cpus)
 * precise sum.  See counter_tree.c for the design.
 *
 * This is the API for client modules.  The out-of-line functions are
 * documented (kernel-doc) at their definitions in counter_tree.c, the
 * inline readers here; a counter's accuracy range, which a client may
 * rely on, is pn_ctree_accuracy_range().  The __pn_ctree_*() helpers are
 * the add's fast path, inline for the lazy counter; not for callers.
 *
 * Accuracy convention, at quiescence (no add in flight):
 *
 *	precise - under <= approx <= precise + over
 *
 * An add in flight (between its level-0 add and the end of its carry
 * propagation, which run with preemption disabled) widens this by at most
 * |inc| + T_top - 1 until it completes; see "Adds in flight" in
 * counter_tree.c.
 */
#ifndef _PCPU_NEXT_COUNTER_TREE_H
#define _PCPU_NEXT_COUNTER_TREE_H

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/cache.h>
#include <linux/compiler.h>
#include <linux/gfp_types.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/types.h>

/**
 * struct pn_ctree_item - one carry counter of levels 1..root
 * @count: carries received from the level below, modulo 2^BITS_PER_LONG
 *
 * The items of the trees of one array are interleaved: item k of every
 * tree of the array is in row k, and a row is a whole number of cache
 * lines (eight trees per line on 64-bit).  The same CPUs feed item k of
 * every tree of the array, so sharing its line costs nothing, while the
 * CPUs that feed different items never share a line.  The caller provides
 * pn_ctree_items_size_many() bytes, cache-line aligned.
 */
struct pn_ctree_item {
	atomic_long_t count;
};

/**
 * struct pn_ctree - a hierarchical per-CPU counter tree
 * @level0: this tree's per-CPU counter (level 0), 32 bits per CPU: it
 *	    holds every add exactly modulo 2^32, and the precise sum takes
 *	    the high bits from the root (see "Level 0 is 32 bits wide" in
 *	    counter_tree.c).  NULL once destroyed: every user tests it first
 * @root: the item whose value is the approximate sum, less the bias
 * @batch_order: log2 of the batch (level-0 increments per carry); 0 on a
 *	    single-CPU topology, where every add goes to the root too
 * @stride: bytes from one of this tree's items to the next (a row of the
 *	    array's interleaved items)
 * @bias: added to both sums; moved by pn_ctree_set()
 * @under: approx >= precise - @under at quiescence
 * @over: approx <= precise + @over at quiescence
 *
 * 40 bytes on 64-bit; an add reads the first 24.
 */
struct pn_ctree {
	u32 __percpu *level0;
	atomic_long_t *root;
	unsigned int batch_order;
	unsigned int stride;
	long bias;
	unsigned int under;
	unsigned int over;
};

/* The batch of pn_ctree_default_batch(), where it is no less accurate. */
#define PN_CTREE_BATCH		32UL

/* Most trees in one array: their level 0 is one per-CPU allocation of 32 KiB. */
#define PN_CTREE_MAX_ARRAY	8192

size_t pn_ctree_items_size_many(unsigned int nr);
unsigned long pn_ctree_batch_max(void);
unsigned long pn_ctree_default_batch(void);
int pn_ctree_init_many(struct pn_ctree *counters, struct pn_ctree_item *items,
		       unsigned int nr, unsigned long batch, gfp_t gfp);
int pn_ctree_init(struct pn_ctree *counter, struct pn_ctree_item *items,
		  unsigned long batch, gfp_t gfp);
void pn_ctree_destroy_many(struct pn_ctree *counters, unsigned int nr);
void pn_ctree_destroy(struct pn_ctree *counter);
void pn_ctree_add(struct pn_ctree *counter, long inc);
long pn_ctree_precise_sum(struct pn_ctree *counter);
int pn_ctree_approx_compare(struct pn_ctree *a, struct pn_ctree *b);
int pn_ctree_approx_compare_value(struct pn_ctree *counter, long v);
int pn_ctree_precise_compare(struct pn_ctree *a, struct pn_ctree *b);
int pn_ctree_precise_compare_value(struct pn_ctree *counter, long v);
void pn_ctree_set(struct pn_ctree *counter, long v);

/* Not for callers: the inline readers below report a destroyed tree here. */
long __pn_ctree_misuse(void);

/* pn_ctree_add() splits larger adds, so that none holds more in flight. */
#define PN_CTREE_STEP_MAX	((long)BIT(30))

/**
 * __pn_ctree_carry() - carry out of a counter after one add, at a given width
 * @orig: the counter before the add
 * @res: the counter after the add (orig + inc, modulo 2^@width)
 * @order: log2 of the batch of the level the counter carries into
 * @width: the counter's width in bits, 1..BITS_PER_LONG
 *
 * The counter stands for floor(v / 2^@order) * 2^@order in the next
 * level; the carry is the change of that value, modulo 2^@width.  The
 * library passes BITS_PER_LONG; smaller widths let KUnit check the
 * arithmetic exhaustively.  Not for callers.
 *
 * Context: Any context.
 * Return: the carry, a multiple of 2^@order, modulo 2^@width.
 */
static __always_inline unsigned long __pn_ctree_carry(unsigned long orig,
						      unsigned long res,
						      unsigned int order,
						      unsigned int width)
{
	unsigned long high = ~((1UL << order) - 1);
	unsigned long wmask = width >= BITS_PER_LONG ? ~0UL : BIT(width) - 1;

	return ((res & high) - (orig & high)) & wmask;
}

/* Not for callers: __pn_ctree_add_step() hands a carry up here. */
void __pn_ctree_propagate(struct pn_ctree *counter, unsigned long carry);

/**
 * __pn_ctree_add_step() - the fast path of pn_ctree_add()
 * @counter: a live tree
 * @level0: @counter->level0, not NULL
 * @inc: at most PN_CTREE_STEP_MAX either way
 *
 * Not for callers: pn_ctree_add() and the lazy counter's inline add use
 * it.  Level 0 is the counter modulo 2^32 as if it had started at B / 2.
 * The carry depends only on the low bits, which 32 bits hold exactly.
 *
 * Context: Any context except NMI.
 */
static __always_inline void __pn_ctree_add_step(struct pn_ctree *counter,
						u32 __percpu *level0, long inc)
{
	unsigned int b = counter->batch_order;
	unsigned long r, carry;

	preempt_disable();
	r = (unsigned long)this_cpu_add_return(*level0, (u32)inc) +
	    ((1UL << b) >> 1);
	carry = __pn_ctree_carry(r - inc, r, b, BITS_PER_LONG);
	if (unlikely(carry))
		__pn_ctree_propagate(counter, carry);
	preempt_enable();
}

/**
 * pn_ctree_items_size() - bytes of items one tree needs
 *
 * Context: Any context, after module init.
 * Return: pn_ctree_items_size_many(1).
 */
static inline size_t pn_ctree_items_size(void)
{
	return pn_ctree_items_size_many(1);
}

/**
 * pn_ctree_approx_sum() - the approximate sum, in O(1)
 * @counter: the counter
 *
 * Context: Any context.
 * Return: a value within the counter's accuracy range of the precise sum
 * at quiescence; an add in flight on some CPU may be missing from it, by
 * at most its increment plus the top carry threshold.  0 for a destroyed
 * tree (which WARNs once).
 */
static inline long pn_ctree_approx_sum(struct pn_ctree *counter)
{
	u32 __percpu *level0 = READ_ONCE(counter->level0);
	unsigned long v;

	if (unlikely(!level0))	/* destroyed */
		return __pn_ctree_misuse();
	v = atomic_long_read(counter->root);
	return (long)(v + (unsigned long)READ_ONCE(counter->bias));
}

/**
 * pn_ctree_accuracy_range() - add the counter's accuracy range to a total
 * @counter: the counter
 * @under: incremented by how far the approximation may lie below the
 *	   precise sum
 * @over: incremented by how far it may lie above
 *
 * Adds rather than sets, so that the range of a sum of counters can be
 * accumulated: callers start from zero.  The range depends only on the
 * topology and the batch size and never changes for a counter.
 *
 * Context: Any context.
 */
static inline void pn_ctree_accuracy_range(struct pn_ctree *counter,
					   unsigned long *under,
					   unsigned long *over)
{
	*under += counter->under;
	*over += counter->over;
}

/**
 * pn_ctree_min_max_range() - precise sums compatible with an approximation
 * @approx: an approximate sum
 * @under: its accuracy below the precise sum
 * @over: its accuracy above the precise sum
 * @precise_min: the smallest precise sum that could give @approx
 * @precise_max: the largest one
 *
 * From precise - under <= approx <= precise + over follows
 * approx - over <= precise <= approx + under.
 *
 * Context: Any context.
 */
static inline void pn_ctree_min_max_range(long approx, unsigned long under,
					  unsigned long over, long *precise_min,
					  long *precise_max)
{
	*precise_min = (long)((unsigned long)approx - over);
	*precise_max = (long)((unsigned long)approx + under);
}

/**
 * pn_ctree_approx_min_max() - approximate sum and the precise range around it
 * @counter: the counter
 * @approx: the approximate sum (output)
 * @precise_min: the smallest possible precise sum (output)
 * @precise_max: the largest possible precise sum (output)
 *
 * Context: Any context.
 */
static inline void pn_ctree_approx_min_max(struct pn_ctree *counter,
					   long *approx, long *precise_min,
					   long *precise_max)
{
	long v = pn_ctree_approx_sum(counter);

	pn_ctree_min_max_range(v, counter->under, counter->over,
			       precise_min, precise_max);
	*approx = v;
}

/**
 * pn_ctree_approx_sum_positive() - the approximate sum, clamped at zero
 * @counter: the counter
 *
 * Context: Any context.
 * Return: max(approximate sum, 0).
 */
static inline long pn_ctree_approx_sum_positive(struct pn_ctree *counter)
{
	long v = pn_ctree_approx_sum(counter);

	return v > 0 ? v : 0;
}

/**
 * pn_ctree_precise_sum_positive() - the precise sum, clamped at zero
 * @counter: the counter
 *
 * A precise sum taken while adds run on other CPUs is not a snapshot and
 * can be transiently negative for a counter that never is; this clamps it.
 *
 * Context: Any context.
 * Return: max(precise sum, 0).
 */
static inline long pn_ctree_precise_sum_positive(struct pn_ctree *counter)
{
	long v = pn_ctree_precise_sum(counter);

	return v > 0 ? v : 0;
}

#endif /* _PCPU_NEXT_COUNTER_TREE_H */
