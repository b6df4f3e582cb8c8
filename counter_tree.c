// SPDX-License-Identifier: GPL-2.0
/*
 * pcpu_next hierarchical per-CPU counter tree
 *
 * A per-CPU split counter makes adds cheap and sums expensive (visit every
 * CPU); one atomic makes sums cheap and adds expensive (one contended
 * cache line).  The tree keeps the per-CPU counters exact and, on the
 * side, pushes coarse "carries" up a fixed N-ary tree of atomics whose
 * root is an approximate sum readable in O(1), with an error bound that
 * is known in advance from the topology and the batch size.
 *
 * Shape, for 8 CPU ids (order 3, arity orders {2, 1}), batch B:
 *
 *   level 0:  cpu0 cpu1 cpu2 cpu3 cpu4 cpu5 cpu6 cpu7     per-CPU, exact
 *               |    |    |    |    |    |    |    |
 *             [cpus 0,2,4,6]       [cpus 1,3,5,7]       item = cpu & (2 - 1)
 *                    |                    |
 *   level 1:      item[0]              item[1]          in: multiples of B
 *                    |                    |             out: multiples of 4B
 *                    +---------+----------+
 *                              |
 *   root:                   item[2]                     the approximate sum
 *
 * A level-l item (level 0 being the per-CPU counters) is chosen by the
 * low bits of the CPU number: item[cpu & (nr_items_at_level - 1)].  Low
 * bits rather than blocks because every item of every level then has a
 * CPU beneath it even when nr_cpu_ids is not a power of two, and because
 * x86 numbers SMT siblings n and n + nr_cores, which then share items.
 *
 * Topology.  At module init order = order_base_2(nr_cpu_ids) selects the
 * shape: nr_levels = max(ceil(order / 3), min(order, 2)), at most 5, and
 * the order bits are spread as evenly as possible over the levels, the
 * lower levels getting the remainder (arity orders 1..4, so at most
 * 16-way fan-in).  One CPU id gives zero levels: the root is the only
 * item and every add carries into it.  Levels 1..root hold
 * sum over l of 2^(order - a_0 - ... - a_(l-1)) items per tree.
 *
 * Carry rule.  With T_0 = B and T_l = T_(l-1) * 2^a_(l-1), a counter of
 * level l stands, for the next level, for floor(v / T_l) * T_l: its value
 * with the low log2(T_l) bits cleared.  An add of inc turning orig into
 * res = orig + inc (modulo 2^BITS_PER_LONG) therefore hands up exactly
 *
 *	carry = (res & ~(T_l - 1)) - (orig & ~(T_l - 1))
 *
 * (__pn_ctree_carry()).  Because the modulus is a multiple of T_l this is
 * exact under wrap-around too, and a carry is always a multiple of T_l.
 * An item of level l only receives multiples of T_(l-1); when a carry is
 * a multiple of T_l the item's low bits would not change and its carry
 * out would be the carry itself, so the atomic is skipped and the carry
 * goes straight up.  The fast path is one this_cpu_add_return() and two
 * masks; the atomics are touched only when a T_0 boundary is crossed.
 *
 * Accuracy.  Follow a node (a level-0 counter or an item) from its
 * starting value s: everything it ever received minus everything it
 * handed up is (v mod T_next) - (s mod T_next) where v is its current
 * value and T_next its carry threshold.  Summed over the tree (the root
 * hands up nothing and is the approximation A), at quiescence
 *
 *	P - A = sum over nodes of ((v mod T_next) - s)	(s < T_next)
 *
 * where P is the precise sum.  A level-0 counter's term lies in
 * [-s_0, B - 1 - s_0]; a level-l item holds s_l plus multiples of
 * T_(l-1), so with s_l = q_l * T_(l-1) and fan-in K = 2^a_(l-1) its term
 * lies in [-q_l * T_(l-1), (K - 1 - q_l) * T_(l-1)].  Starting every node
 * at zero (as the seed does) makes A <= P always and puts the whole span
 * below P; instead the nodes start in the middle of their window:
 * s_0 = B / 2, and q_l in {K/2 - 1, K/2} picked level by level to keep
 * the two sides balanced (pn_ctree_shape()).  That roughly halves the worst
 * |P - A| for the same memory and the same fast path.  With N_l nodes at
 * level l:
 *
 *	under = N_0 (B - 1 - s_0) + sum N_l (K_l - 1 - q_l) T_(l-1)
 *	over  = N_0 s_0           + sum N_l q_l T_(l-1)
 *
 * and P - under <= A <= P + over.  N_0 is num_possible_cpus().  An item
 * level spans N_l (K_l - 1) T_(l-1) = 2^order * B * (1 - 1/K_l) in all,
 * so under + over < 2^order * B * (nr_levels + 1): the bound grows as
 * O(nr_cpu_ids * B * nr_levels), against O(nr_cpu_ids^2) for a
 * percpu_counter whose batch grows with the CPU count.  The level-0
 * start value is not stored in the counters: they start at 0 as the
 * allocator zeroed them and the add looks for carries in (counter +
 * B / 2), the same arithmetic modulo 2^32, so init writes no per-CPU
 * memory.  The precise sum subtracts the items' start values, one total
 * per batch fixed at module init with the range (pn_ctree_shapes[]).  It (and
 * so pn_ctree_set()) reads only the CPUs that were ever brought up
 * (pn_cpus_seen, internal/core.h): a CPU that never ran still holds 0,
 * which contributes nothing, so skipping it is exact; an offline CPU
 * keeps its part and is still read.
 *
 * Level 0 is 32 bits wide.  A level-0 counter holds its CPU's adds
 * modulo 2^32 (half the per-CPU memory of a long, the same as
 * percpu_counter's s32).  Nothing is lost: the carry out of an add
 * depends only on the increment and the low b = log2(B) bits of the old
 * and new values, which a 32-bit counter holds exactly since 2^b divides
 * 2^32; so the tree and A are those of a 64-bit level 0.  The precise
 * sum P comes from the identity above read the other way round,
 *
 *	P = A + sum over nodes of ((v mod T_next) - s)
 *
 * where a level-0 counter's term is ((v + B/2) mod B) - B/2, which its
 * 32 bits hold exactly, and an item's uses its own value.  Each term is
 * bounded by its threshold, so the precise sum reads the root and every
 * item of the tree besides level 0 (9 items at 64 CPU ids, 73 at 512)
 * and can never be off by a wrap of 2^32: at quiescence it is exact, and
 * while adds run it may miss or count twice the carries that move
 * between nodes during the read (see "Adds in flight" for their size).
 * Init caps log2(B) + order at PN_CTREE_RANGE_ORDER = 27, which keeps
 * under + over below 2^30.  pn_ctree_add() splits an increment beyond
 * 2^30 either way, with preemption disabled throughout: its multiple of
 * 2^32 rounded toward zero goes straight to the root (it changes no
 * 32-bit counter and is a multiple of every threshold, so no item would
 * see it), the rest (below 2^32, same sign) in ordinary adds of at most
 * 2^30, so no add holds more than 2^30 + T_top in flight and no reader
 * sees more than the whole add.  On a single CPU id there is no item
 * level: B is treated as 1, every add also carries into the root (one
 * atomic per add: a single-CPU kernel pays for the shape's generality),
 * and under = over = 0.
 *
 * Items of an array.  pn_ctree_init_many() lays the items of its @nr
 * trees out in rows: row k holds item k of every tree, and a row is a
 * whole number of cache lines (eight trees per line).  Item k of each
 * tree is fed by the same CPUs (item[cpu & (n - 1)] of the same level), so
 * trees of one array, which the same tasks update together (the four
 * rss_stat counters of an mm, say), share those lines, while different
 * items, fed by different CPUs, never share one.  The price: a carry of
 * one tree takes the line from a CPU carrying into the same item of
 * another tree, and the root row is written by every tree's top-level
 * carries, so an approximate read of one tree misses in the cache after
 * any tree of the array carried that far.  For 64 CPU ids and four
 * trees: 9 lines for the array, 144 bytes of items per tree instead of
 * 576.
 *
 * Sets.  pn_ctree_set() only moves the bias, which both sums include:
 * P - A and hence the accuracy is unchanged.
 *
 * Adds in flight.  An add is in flight from its level-0 update until its
 * carry has reached the root (or died out at an item).  Such an add has
 * handed a carry c out of one node and not yet into the next, so at that
 * instant P - A is the sum of the node terms above (each still inside its
 * window, every node update being one RMW) plus c.  A level-0 counter
 * hands up |c| <= |inc| + T_0 - 1, and an item of level l that receives c
 * (a multiple of T_(l-1), as is its own value) hands up at most
 * |c| + T_l - T_(l-1); the sum telescopes to
 *
 *	|c| <= |inc| + T_top - 1,	T_top = T_(nr_levels - 1)
 *
 * the threshold of the last level below the root (B on a two-CPU tree).
 * So every add in flight widens the range by at most |inc| + T_top - 1,
 * under for a positive carry and over for a negative one, until it
 * completes.
 *
 * Preemption.  pn_ctree_add() runs with preemption disabled from its
 * level-0 add to the end of the propagation: at most nr_levels + 1
 * atomics, no lock, no loop that depends on other CPUs.  A task that is
 * preempted or migrated therefore never holds a carry: without the guard
 * it would, for as long as it stays off the CPU, and one large add is a
 * large carry (an munmap() of 1 GiB subtracts 262,144 pages at once),
 * so every approximate read and compare would be wrong by that much for
 * the whole time.  The section is also correct on PREEMPT_RT, where it
 * only adds a few atomics of latency.  What still stretches the in-flight
 * window is what can stop a CPU with preemption off: an interrupt on that
 * CPU, for the handler's duration (it may add to the same tree; its own
 * add completes before it returns), and, in a virtual machine, the host
 * descheduling the vCPU (milliseconds under QEMU TCG on a busy host).
 * Adds are not allowed in NMI: the generic this_cpu_add_return()
 * (asm-generic/percpu.h, used where the architecture has no single
 * instruction for it) is a load and a store under raw_local_irq_save();
 * an NMI add that lands between them is overwritten by the store and
 * lost.  At most one add per context level (task, softirq, hardirq) per
 * CPU is in flight at a time, and at every instant
 *
 *	P - under - F+ <= A <= P + over + F-
 *
 * where F+ (F-) sums |inc| + T_top - 1 over the positive (negative)
 * carries of the adds in flight at that instant; at quiescence F+ = F- = 0
 * and the compare functions are exact.  (A reader that loads A and then
 * sums P also sees the adds that completed between its two reads.)  The
 * cost on the fast path is an increment and a decrement-and-test of the
 * preempt count (a per-CPU or per-task word, no atomic, no fence; a
 * compiler barrier only without CONFIG_PREEMPT_COUNT).  (|inc| here is
 * at most PN_CTREE_STEP_MAX: pn_ctree_add() splits larger adds.)
 *
 * Use after destroy.  pn_ctree_destroy_many() leaves every tree of the
 * array destroyed: @level0 NULL (and no root or items).  A NULL per-CPU
 * pointer is not a safe value, it is a valid offset (on x86-64 an add
 * through it would write the per-CPU area's first word,
 * fixed_percpu_data.gs_base), so pn_ctree_add(), the sums and
 * pn_ctree_set() test @level0 first: a destroyed tree WARNs once per
 * boot, drops the add or set and sums to 0.  The add already loads
 * @level0 on its fast path, so the test is one predicted branch on a
 * register (not measured).  Destroying again is a no-op.  A use racing
 * with destroy is not caught; the API forbids it.  KUnit announces its
 * deliberate misuses with pn_ctree_expect_misuse(), a lock-free budget
 * that each misuse consumes instead of WARNing (every WARN fails the test
 * lanes); the budget and its test exist only in a kernel with KUnit, and
 * only on the misuse path, never on an add or a read of a live tree.
 *
 * Locking and memory ordering.  There are no locks.  Level-0 updates are
 * this_cpu_add_return(): atomic with respect to the local CPU (interrupts
 * included), and the carry is computed from the values of that one
 * read-modify-write.  Which item of the next level absorbs a carry does
 * not matter to the identity above; the CPU number only picks a nearby
 * one.  Items are updated with atomic_long_add_return_relaxed();
 * each item's updates are totally ordered by coherence and each carry is
 * derived from one of them, which is all the identity needs.  Readers
 * order nothing: the approximate sum is one atomic read; the precise sum
 * reads the root, the tree's items and the level-0 counters of every CPU
 * ever brought up, in no particular order, and is exact once the adders'
 * stores are visible (e.g. after kthread_stop() of the adders); while adds
 * run it sees a subset of them, give or take the carries that move
 * between nodes during the read (nothing orders an adder's level-0
 * update before its carry's item updates for a remote reader, nor the
 * reader's loads).  CPU hotplug needs
 * no callback: an offline CPU's counter keeps its value and is still
 * summed, and its uncarried remainder is covered by the bound.
 *
 * Statistics.  None, with or without CONFIG_PCPU_NEXT_STATS: the tree
 * counts neither its adds nor its carries nor its misuses (a misuse
 * WARNs once instead), and has no debugfs file.  Every quantity a test
 * asserts on, the sums and the accuracy range, is the counter itself.
 *
 * Files.  This file is the library alone.  It depends on kernel headers,
 * <kunit/visibility.h>, the public headers <pcpu_next/counter_tree.h>
 * (the client API) and <pcpu_next/pcpu_alloc.h> (the level-0 storage),
 * and the private "internal/core.h" (pn_ctree_subsys_init(), called by
 * the module core) and "internal/counter_tree.h" (the shape and the
 * accuracy formula, shared with KUnit and the harness,
 * and the KUnit-only hooks pn_ctree_topology() and
 * pn_ctree_expect_misuse(), compiled only with KUnit).  It knows nothing
 * of the test harness: the stress and bench of the debugfs control plane
 * (test=tree) are in torture/counter_tree_torture.c, built with
 * CONFIG_PCPU_NEXT_TORTURE, and the KUnit suite, which needs no harness,
 * in kunit/counter_tree_kunit.c.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/bug.h>
#include <linux/cache.h>
#include <linux/cpumask.h>
#include <linux/errno.h>
#include <linux/export.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/math.h>
#include <linux/minmax.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/printk.h>
#include <linux/smp.h>
#include <linux/string.h>

#include <kunit/visibility.h>

#include <pcpu_next/counter_tree.h>
#include <pcpu_next/pcpu_alloc.h>
#include "internal/core.h"
#include "internal/counter_tree.h"

/* Written once by pn_ctree_subsys_init(), read-only afterwards. */
static struct pn_ctree_topo pn_ctree_topo __read_mostly;

/*
 * pn_ctree_shape() of each legal batch order for the possible CPUs, and
 * the sum of every item's start value; entries past the largest batch
 * stay zero.  Fixed at init: neither init nor the precise sum recomputes
 * the shape.
 */
struct pn_ctree_shape_of {
	unsigned long under, over, start_sum;
	unsigned long start[PN_CTREE_MAX_LEVELS];
};

static struct pn_ctree_shape_of pn_ctree_shapes[PN_CTREE_RANGE_ORDER + 1] __read_mostly;
static unsigned long pn_ctree_batch __read_mostly;	/* the default batch */
static bool pn_ctree_ready __read_mostly;

/* Misuses still expected (KUnit), see struct pn_misuse_budget. */
static struct pn_misuse_budget pn_ctree_misuse_budget;

#if IS_ENABLED(CONFIG_KUNIT)
/**
 * pn_ctree_expect_misuse() - announce uses of destroyed trees that must not WARN
 * @n: how many of the next uses of destroyed trees are deliberate
 *
 * Test hook for KUnit only (not API): each of the next @n uses of a
 * destroyed tree, from any context, skips the WARN, which would fail the
 * test lanes.  Replaces the budget left from a previous call.
 *
 * Context: Any context.
 * Return: what was left of the previous budget: pn_ctree_expect_misuse(0)
 * returns 0 after exactly the announced number of misuses.
 */
VISIBLE_IF_KUNIT unsigned int pn_ctree_expect_misuse(unsigned int n)
{
	return pn_misuse_expect(&pn_ctree_misuse_budget, n);
}
EXPORT_SYMBOL_IF_KUNIT(pn_ctree_expect_misuse);
#endif

/**
 * __pn_ctree_misuse() - report a use of a destroyed tree
 *
 * Out of line for pn_ctree_approx_sum() and the functions of this file,
 * off their fast paths (only a destroyed tree gets here).  WARNs once per
 * boot unless, in a kernel with KUnit, pn_ctree_expect_misuse() announced
 * the misuse; without KUnit there is no budget and no test of it.
 *
 * Context: Any context.
 * Return: 0, the value a destroyed tree sums to.
 */
long __pn_ctree_misuse(void)
{
	if (pn_misuse_expected(&pn_ctree_misuse_budget))
		return 0;
	WARN_ONCE(1, "pn_ctree: use of a destroyed counter tree\n");
	return 0;
}
EXPORT_SYMBOL_GPL(__pn_ctree_misuse);

/**
 * pn_ctree_topo_compute() - the tree shape for 2^@order CPU ids
 * @order: log2 of the number of level-0 slots, 0..PN_CTREE_MAX_ORDER
 * @t: filled in
 *
 * Context: Any context.
 */
void pn_ctree_topo_compute(unsigned int order, struct pn_ctree_topo *t)
{
	unsigned int levels, l, shift = 0;

	memset(t, 0, sizeof(*t));
	t->order = order;
	t->nr_items = 1;	/* the root; alone on a single CPU id */
	if (!order)
		return;
	t->nr_items = 0;
	levels = max(DIV_ROUND_UP(order, 3), min(order, 2U));
	levels = min_t(unsigned int, levels, PN_CTREE_MAX_LEVELS);
	t->nr_levels = levels;
	for (l = 0; l < levels; l++) {
		t->arity_order[l] = order / levels + (l < order % levels);
		shift += t->arity_order[l];
		t->nr_items += 1U << (order - shift);
	}
}

/*
 * Accuracy range and starting values of a tree with batch 2^@batch_order
 * and @nr_level0 level-0 counters; @start[l] is the starting value of
 * every node of level l (NULL if not wanted).  See the essay above.
 */
static void pn_ctree_shape(const struct pn_ctree_topo *t,
			   unsigned int batch_order, unsigned int nr_level0,
			   unsigned long *under, unsigned long *over,
			   unsigned long *start)
{
	unsigned long step = 1UL << batch_order, s0, u, o;
	unsigned int l, shift = 0;

	if (!t->nr_levels) {	/* one CPU: level 0 is exact */
		*under = 0;
		*over = 0;
		if (start)
			start[0] = 0;
		return;
	}
	s0 = step / 2;
	o = nr_level0 * s0;
	u = nr_level0 * (step - 1 - s0);
	if (start)
		start[0] = s0;
	for (l = 1; l < t->nr_levels; l++) {
		unsigned int a = t->arity_order[l - 1];
		unsigned long k = 1UL << a, n, q;

		shift += a;
		n = 1UL << (t->order - shift);
		q = o > u ? k / 2 - 1 : k / 2;	/* feed the smaller side */
		o += n * q * step;
		u += n * (k - 1 - q) * step;
		if (start)
			start[l] = q * step;
		step <<= a;
	}
	*under = u;
	*over = o;
}

/**
 * pn_ctree_accuracy() - accuracy range of a tree of a given shape
 * @t: the topology
 * @batch_order: log2 of the batch size
 * @nr_level0: number of level-0 counters (possible CPUs)
 * @under: set to the largest P - A
 * @over: set to the largest A - P
 *
 * The formula of pn_ctree_init_many() for any shape, not only the live
 * one: for the bench, which prints the range of machines it does not run
 * on, and for KUnit.  Clients read a counter's range with
 * pn_ctree_accuracy_range() instead.
 *
 * Context: Any context.
 */
void pn_ctree_accuracy(const struct pn_ctree_topo *t, unsigned int batch_order,
		       unsigned int nr_level0, unsigned long *under,
		       unsigned long *over)
{
	pn_ctree_shape(t, batch_order, nr_level0, under, over, NULL);
}

/**
 * pn_ctree_batch_within() - the largest batch whose range fits a bound
 * @t: the topology
 * @nr_level0: number of level-0 counters (possible CPUs)
 * @bound: the largest under and over allowed
 *
 * Context: Any context.
 * Return: the largest power of two from 2 to 2^(PN_CTREE_RANGE_ORDER -
 * @t->order) whose accuracy range (pn_ctree_accuracy()) is within @bound
 * on both sides; 2 if none is.
 */
unsigned long pn_ctree_batch_within(const struct pn_ctree_topo *t,
				    unsigned int nr_level0, unsigned long bound)
{
	unsigned int b = PN_CTREE_RANGE_ORDER - t->order;
	unsigned long u, o;

	for (; b > 1; b--) {
		pn_ctree_shape(t, b, nr_level0, &u, &o, NULL);
		if (max(u, o) <= bound)
			break;
	}
	return 1UL << b;
}

/**
 * pn_ctree_default_batch() - the batch for a tree that replaces a
 *			      percpu_counter
 *
 * PN_CTREE_BATCH (32), the batch of HPCC's rss_stat patch, whatever the
 * machine size: the tree's bound then grows as CPUs x levels, not as
 * CPUs^2.  Smaller where 32 would make the tree less accurate than
 * percpu_counter with the kernel's batch, max(32, 2 x CPUs), which drifts
 * by up to (batch - 1) per CPU (12 possible CPUs: 16).  It depends on the
 * possible CPUs only, so unlike percpu_counter_batch it never changes at
 * CPU hotplug.
 *
 * Context: Any context, after module init.
 * Return: a power of two, at most PN_CTREE_BATCH.
 */
unsigned long pn_ctree_default_batch(void)
{
	return pn_ctree_batch;
}
EXPORT_SYMBOL_GPL(pn_ctree_default_batch);

#if IS_ENABLED(CONFIG_KUNIT)
/**
 * pn_ctree_topology() - the topology chosen at module init
 *
 * For KUnit only: the library reads pn_ctree_topo directly, the harness
 * and clients need no shape (pn_ctree_items_size() and the counter's
 * under/over are what a client sees).
 *
 * Context: Any context, after module init.
 * Return: the topology every tree of this kernel uses.
 */
VISIBLE_IF_KUNIT const struct pn_ctree_topo *pn_ctree_topology(void)
{
	return &pn_ctree_topo;
}
EXPORT_SYMBOL_IF_KUNIT(pn_ctree_topology);
#endif

/**
 * pn_ctree_subsys_init() - choose the topology from nr_cpu_ids
 *
 * Context: Module init.
 * Return: 0, or -EOPNOTSUPP if nr_cpu_ids exceeds 2^PN_CTREE_MAX_ORDER.
 */
int pn_ctree_subsys_init(void)
{
	unsigned int order = order_base_2(nr_cpu_ids), b;
	unsigned long p = num_possible_cpus();

	if (order > PN_CTREE_MAX_ORDER) {
		pr_err("counter tree: %u CPU ids not supported\n", nr_cpu_ids);
		return -EOPNOTSUPP;
	}
	pn_ctree_topo_compute(order, &pn_ctree_topo);
	for (b = 0; b + order <= PN_CTREE_RANGE_ORDER; b++) {
		struct pn_ctree_shape_of *s = &pn_ctree_shapes[b];
		unsigned int l, shift = 0;

		pn_ctree_shape(&pn_ctree_topo, b, p, &s->under, &s->over,
			       s->start);
		s->start_sum = 0;
		for (l = 1; l < pn_ctree_topo.nr_levels; l++) {
			shift += pn_ctree_topo.arity_order[l - 1];
			s->start_sum += s->start[l] << (order - shift);
		}
	}
	pn_ctree_batch = min(PN_CTREE_BATCH,
			     pn_ctree_batch_within(&pn_ctree_topo, p,
						   (max(32UL, 2 * p) - 1) * p));
	pn_ctree_ready = true;
	return 0;
}

/* Bytes of one row of items: item k of each of @nr trees, whole lines. */
static size_t pn_ctree_row_size(unsigned int nr)
{
	return ALIGN(array_size(nr, sizeof(struct pn_ctree_item)),
		     SMP_CACHE_BYTES);
}

/**
 * pn_ctree_items_size_many() - bytes of items an array of trees needs
 * @nr: number of trees in the array (as given to pn_ctree_init_many())
 *
 * One row per item of a tree (nr_items rows: levels 1..root), each row a
 * whole number of cache lines holding that item of every tree of the
 * array: 8 trees share each line on 64-bit.
 *
 * Context: Any context, after module init.
 * Return: the size of the @items area for pn_ctree_init_many(); SIZE_MAX
 * if it overflows.
 */
size_t pn_ctree_items_size_many(unsigned int nr)
{
	return array_size(pn_ctree_topo.nr_items, pn_ctree_row_size(nr));
}
EXPORT_SYMBOL_GPL(pn_ctree_items_size_many);

/**
 * pn_ctree_batch_max() - the largest batch pn_ctree_init_many() accepts
 *
 * The accuracy range must stay far below 2^31 for the precise sum to
 * recover the high bits of the 32-bit level 0 (see "Level 0 is 32 bits
 * wide" at the top of this file): log2(batch) + log2(CPU ids) <= 27.
 *
 * Context: Any context, after module init.
 * Return: a power of two, at least 2^(27 - PN_CTREE_MAX_ORDER) = 128.
 */
unsigned long pn_ctree_batch_max(void)
{
	return 1UL << (PN_CTREE_RANGE_ORDER - pn_ctree_topo.order);
}
EXPORT_SYMBOL_GPL(pn_ctree_batch_max);

/*
 * Level-0 storage of @nr trees in one per-CPU allocation, from the
 * project's own allocator (pcpu_alloc.c): its sized API has the same
 * contract as __alloc_percpu_gfp() (zeroed on every possible CPU, at
 * most 32 KiB) without the kernel allocator's global lock, except for an
 * accounted request in a module (pcpu_alloc.c, "GFP").
 */
static u32 __percpu *pn_ctree_alloc_level0(unsigned int nr, gfp_t gfp)
{
	return pn_alloc_percpu_gfp(array_size(nr, sizeof(u32)),
				   __alignof__(u32), gfp);
}

static void pn_ctree_free_level0(u32 __percpu *level0)
{
	pn_free_percpu(level0);
}

/**
 * pn_ctree_init_many() - initialise @nr counter trees
 * @counters: array of @nr trees, memory provided by the caller
 * @items: pn_ctree_items_size_many(@nr) bytes of items, provided by the
 *	   caller, cache-line aligned (a power-of-two kmalloc() size is);
 *	   the items of the @nr trees are interleaved there, row by row
 * @nr: number of trees, at least 1
 * @batch: level-0 increments per carry: a power of two, at least 2 and at
 *	   most pn_ctree_batch_max()
 * @gfp: allocation flags for the one per-CPU allocation of the level-0
 *	 counters of all @nr trees
 *
 * Every tree starts at zero.  Release with pn_ctree_destroy_many() on the
 * same array.
 *
 * Context: Process context if @gfp may sleep.  With GFP_ATOMIC or
 * GFP_NOWAIT, any context in which a spinlock_t may be taken and kmalloc()
 * called with that @gfp: the level-0 storage comes from pcpu_alloc.c,
 * which takes a local_lock_t and a spinlock_t.  So never in NMI or under
 * a raw_spinlock_t, and on PREEMPT_RT not with preemption or interrupts
 * disabled (those locks sleep there).
 * Return: 0; -EINVAL for a bad @batch, @nr or @items, or before module init;
 * -ENOMEM if the per-CPU allocation fails.
 */
int pn_ctree_init_many(struct pn_ctree *counters, struct pn_ctree_item *items,
		       unsigned int nr, unsigned long batch, gfp_t gfp)
{
	const struct pn_ctree_topo *t = &pn_ctree_topo;
	const struct pn_ctree_shape_of *s;
	size_t row = pn_ctree_row_size(nr);
	unsigned int i, l;
	u32 __percpu *level0;
	void *rows;

	if (!pn_ctree_ready || !nr || nr > PN_CTREE_MAX_ARRAY ||
	    batch < 2 || !is_power_of_2(batch) || batch > pn_ctree_batch_max())
		return -EINVAL;
	if (!items || !IS_ALIGNED((unsigned long)items, SMP_CACHE_BYTES))
		return -EINVAL;

	level0 = pn_ctree_alloc_level0(nr, gfp);
	if (!level0)
		return -ENOMEM;
	s = &pn_ctree_shapes[ilog2(batch)];

	for (i = 0; i < nr; i++) {
		struct pn_ctree *c = &counters[i];
		unsigned int shift = 0;

		/* Item k of tree i is at rows + k * row + i * sizeof(item). */
		rows = (void *)items + i * sizeof(struct pn_ctree_item);
		c->level0 = level0 + i;
		c->batch_order = t->nr_levels ? ilog2(batch) : 0;
		c->stride = row;
		c->bias = 0;
		c->under = s->under;
		c->over = s->over;
		c->root = &((struct pn_ctree_item *)(rows + (t->nr_items - 1) * row))->count;
		/*
		 * Level 0 stays as the allocator zeroed it: its start value
		 * is an offset the add applies when it looks for carries
		 * (pn_ctree_add()), so init writes no per-CPU memory.
		 */
		for (l = 1; l < t->nr_levels; l++) {
			unsigned int j, n;

			shift += t->arity_order[l - 1];
			n = 1U << (t->order - shift);
			for (j = 0; j < n; j++) {
				atomic_long_set(&((struct pn_ctree_item *)rows)->count,
						s->start[l]);
				rows += row;
			}
		}
		atomic_long_set(c->root, 0);
	}
	return 0;
}
EXPORT_SYMBOL_GPL(pn_ctree_init_many);

/**
 * pn_ctree_init() - initialise one counter tree
 * @counter: the tree, memory provided by the caller
 * @items: pn_ctree_items_size() bytes of items, provided by the caller
 * @batch: level-0 increments per carry: a power of two, at least 2 and at
 *	   most pn_ctree_batch_max()
 * @gfp: allocation flags for the per-CPU level-0 counter
 *
 * Context: As pn_ctree_init_many(): process context if @gfp may sleep;
 * with GFP_ATOMIC or GFP_NOWAIT wherever a spinlock_t may be taken (never
 * in NMI or under a raw_spinlock_t, and on PREEMPT_RT not with preemption
 * or interrupts disabled).
 * Return: 0, -EINVAL or -ENOMEM as pn_ctree_init_many().
 */
int pn_ctree_init(struct pn_ctree *counter, struct pn_ctree_item *items,
		  unsigned long batch, gfp_t gfp)
{
	return pn_ctree_init_many(counter, items, 1, batch, gfp);
}
EXPORT_SYMBOL_GPL(pn_ctree_init);

/**
 * pn_ctree_destroy_many() - release @nr trees made by pn_ctree_init_many()
 * @counters: the array given to pn_ctree_init_many()
 * @nr: its length (all trees share one allocation, released at once)
 *
 * The items belong to the caller and are not touched.  Every tree of the
 * array is left destroyed (see "Use after destroy" at the top of this
 * file): a later add, sum or set WARNs once and does nothing (sums are 0)
 * instead of writing through a stale or NULL per-CPU pointer.  Destroying
 * again is a no-op.
 *
 * Context: Level 0 goes back through pn_free_percpu(), which takes a
 * local_lock_t and a spinlock_t: never in NMI or under a raw_spinlock_t,
 * and on PREEMPT_RT not with preemption or interrupts disabled.
 */
void pn_ctree_destroy_many(struct pn_ctree *counters, unsigned int nr)
{
	unsigned int i;

	if (!nr || !counters[0].level0)
		return;
	pn_ctree_free_level0(counters[0].level0);
	for (i = 0; i < nr; i++) {
		WRITE_ONCE(counters[i].level0, NULL);
		counters[i].root = NULL;
	}
}
EXPORT_SYMBOL_GPL(pn_ctree_destroy_many);

/**
 * pn_ctree_destroy() - release a tree made by pn_ctree_init()
 * @counter: the tree
 *
 * Context: As pn_ctree_destroy_many().
 */
void pn_ctree_destroy(struct pn_ctree *counter)
{
	pn_ctree_destroy_many(counter, 1);
}
EXPORT_SYMBOL_GPL(pn_ctree_destroy);

/**
 * __pn_ctree_propagate() - hand a carry up from level 1 to the root
 * @counter: the tree
 * @carry: a nonzero multiple of T_0
 *
 * Out of line for __pn_ctree_add_step().  The CPU number only picks items.
 *
 * Context: Preemption disabled by the caller; not in NMI.
 */
void __pn_ctree_propagate(struct pn_ctree *counter, unsigned long carry)
{
	const struct pn_ctree_topo *t = &pn_ctree_topo;
	size_t row = counter->stride;
	/* this tree's item 0; its item k is k rows further */
	void *level = (void *)counter->root - (size_t)(t->nr_items - 1) * row;
	unsigned int cpu = smp_processor_id();
	unsigned int order = counter->batch_order, shift = 0, l;

	for (l = 1; l < t->nr_levels; l++) {
		unsigned int nr;

		shift += t->arity_order[l - 1];
		order += t->arity_order[l - 1];
		nr = 1U << (t->order - shift);
		/* Low bits of this item would change: it must see the carry. */
		if (carry & ((1UL << order) - 1)) {
			struct pn_ctree_item *it = level + (cpu & (nr - 1)) * row;
			unsigned long res;

			res = atomic_long_add_return_relaxed((long)carry, &it->count);
			carry = __pn_ctree_carry(res - carry, res, order,
						 BITS_PER_LONG);
			if (likely(!carry))
				return;
		}
		level += nr * row;
	}
	atomic_long_add((long)carry, counter->root);
}
EXPORT_SYMBOL_GPL(__pn_ctree_propagate);

/*
 * An add of more than PN_CTREE_STEP_MAX either way: its multiple of 2^32
 * rounded toward zero goes straight to the root (it changes no 32-bit
 * level-0 counter and is a multiple of every carry threshold, so no item
 * would see it), the rest (below 2^32, the same sign) in steps of at
 * most 2^30, so that no add holds more than PN_CTREE_STEP_MAX + T_top in
 * flight and no reader ever sees more than the whole add.  All of it
 * with preemption disabled, as one ordinary add is.
 */
static noinline void pn_ctree_add_large(struct pn_ctree *counter,
					u32 __percpu *level0, long inc)
{
	unsigned long mag = inc < 0 ? -(unsigned long)inc : (unsigned long)inc;
	unsigned long hi = mag & ~(BIT_ULL(32) - 1);
	long lo = (long)(mag - hi), step;	/* [0, 2^32) */

	preempt_disable();
	while (lo) {
		step = min(lo, PN_CTREE_STEP_MAX);
		__pn_ctree_add_step(counter, level0, inc < 0 ? -step : step);
		lo -= step;
	}
	if (hi)
		atomic_long_add(inc < 0 ? -(long)hi : (long)hi, counter->root);
	preempt_enable();
}

/**
 * pn_ctree_add() - add to a counter tree
 * @counter: the tree
 * @inc: the increment, negative to subtract
 *
 * One per-CPU add; the tree's atomics are touched only when the level-0
 * counter crosses a multiple of the batch size, and higher levels only
 * when their own thresholds are crossed.  The level-0 add and the carry
 * propagation run with preemption disabled (no lock, at most nr_levels + 1
 * atomics), so a preempted caller never holds a carry; only an interrupt
 * on this CPU, or a descheduled vCPU, can keep the add in flight, which
 * widens the accuracy range by at most |@inc| + T_top - 1 meanwhile (see
 * "Adds in flight" in the essay at the top of this file).  An @inc of
 * more than 2^30 either way is split (see "Level 0 is 32 bits wide").
 *
 * On a destroyed tree the add is dropped (and WARNs once).
 *
 * Context: Any context except NMI, PREEMPT_RT included (the level-0
 * update is interrupt safe, the rest takes no lock).  Not NMI: the
 * generic this_cpu_add_return() is a load and a store under
 * raw_local_irq_save(), and an NMI add between them would be lost.
 */
void pn_ctree_add(struct pn_ctree *counter, long inc)
{
	u32 __percpu *level0 = READ_ONCE(counter->level0);

	if (unlikely(!level0)) {	/* destroyed */
		__pn_ctree_misuse();
		return;
	}
	if (unlikely(inc > PN_CTREE_STEP_MAX || inc < -PN_CTREE_STEP_MAX)) {
		pn_ctree_add_large(counter, level0, inc);
		return;
	}
	__pn_ctree_add_step(counter, level0, inc);
}
EXPORT_SYMBOL_GPL(pn_ctree_add);

/*
 * The sum of level 0, less the bias, from the identity of the essay:
 * P = A + the sum over every node of its part below its carry threshold
 * less its start value, ((v + s0) mod B) - s0 for a level-0 counter
 * (which holds those bits exactly in 32 bits), (v mod T_l) - s_l for an
 * item of level l, and the root A itself.  Every term is bounded by its
 * threshold, so no read can be off by a wrap: at quiescence the result
 * is exact, and while adds run it misses or double-counts at most the
 * carries that move between the nodes during the read (each at most
 * |inc| + T_top - 1 of one add in flight, |inc| <= PN_CTREE_STEP_MAX).
 * The caller checked that @level0 (c->level0) is not NULL.
 */
static unsigned long pn_ctree_level0_sum(struct pn_ctree *c,
					 u32 __percpu *level0)
{
	const struct pn_ctree_topo *t = &pn_ctree_topo;
	const unsigned long *seen = cpumask_bits(pn_cpus_seen);
	unsigned int b = c->batch_order, order = b, shift = 0, l, w;
	unsigned long s0 = (1UL << b) >> 1, low0 = (1UL << b) - 1, sum;
	void *item = (void *)c->root - (size_t)(t->nr_items - 1) * c->stride;

	sum = atomic_long_read(c->root) - pn_ctree_shapes[b].start_sum;
	for (l = 1; l < t->nr_levels; l++) {
		unsigned long mask;
		unsigned int j;

		shift += t->arity_order[l - 1];
		order += t->arity_order[l - 1];
		mask = (1UL << order) - 1;
		for (j = 1U << (t->order - shift); j; j--) {
			sum += atomic_long_read(&((struct pn_ctree_item *)item)->count) & mask;
			item += c->stride;
		}
	}
	/*
	 * CPUs never brought up still hold 0, a zero term: skip them.  A
	 * word of the mask at a time: with NR_CPUS > BITS_PER_LONG,
	 * for_each_cpu() calls _find_next_bit() for every CPU.
	 */
	for (w = 0; w < BITS_TO_LONGS(nr_cpu_ids); w++) {
		unsigned long bits = READ_ONCE(seen[w]);

		while (bits) {
			unsigned int cpu = w * BITS_PER_LONG + __ffs(bits);

			bits &= bits - 1;
			sum += ((READ_ONCE(*per_cpu_ptr(level0, cpu)) + s0) & low0) - s0;
		}
	}
	return sum;
}

/**
 * pn_ctree_precise_sum() - the exact sum, visiting every CPU ever brought up
 * @counter: the tree
 *
 * Reads the root, the tree's items and the level-0 counter of every CPU
 * ever brought up (see "Level 0 is 32 bits wide" at the top of this file).
 *
 * Context: Any context.  Exact when no add runs concurrently; otherwise
 * it includes a subset of the concurrent adds, give or take the carries
 * that move between nodes during the read (each at most |inc| + T_top - 1
 * of one add in flight, |inc| <= 2^30 after the add's split).
 * Return: the sum of all adds since init (or the last set), plus the set
 * value; 0 for a destroyed tree (which WARNs once).
 */
long pn_ctree_precise_sum(struct pn_ctree *counter)
{
	u32 __percpu *level0 = READ_ONCE(counter->level0);

	if (unlikely(!level0))
		return __pn_ctree_misuse();
	return (long)(pn_ctree_level0_sum(counter, level0) +
		      (unsigned long)READ_ONCE(counter->bias));
}
EXPORT_SYMBOL_GPL(pn_ctree_precise_sum);

/* 1 if @delta > @pos, -1 if @delta < -@neg, else 0. */
static int pn_ctree_cmp(long delta, unsigned long neg, unsigned long pos)
{
	if (delta > 0 && (unsigned long)delta > pos)
		return 1;
	if (delta < 0 && -(unsigned long)delta > neg)
		return -1;
	return 0;
}

static int pn_ctree_sign(long delta)
{
	return delta > 0 ? 1 : delta < 0 ? -1 : 0;
}

static long pn_ctree_sub(long a, long b)
{
	return (long)((unsigned long)a - (unsigned long)b);
}

/**
 * pn_ctree_approx_compare() - compare two trees from their approximations
 * @a: first tree
 * @b: second tree
 *
 * With Pa in [Aa - a->over, Aa + a->under] and likewise for b, Pa > Pb is
 * certain when Aa - Ab > a->over + b->under, and Pa < Pb when
 * Aa - Ab < -(a->under + b->over).
 *
 * "Certainly" holds at quiescence.  While adds are in flight each of
 * them may widen a tree's range by up to |inc| + T_top - 1 (see "Adds in
 * flight" at the top of this file), which the ranges used here do not
 * include, so a nonzero answer may then be wrong by that much.
 *
 * Context: Any context.
 * Return: 1 if a's precise sum is certainly greater than b's, -1 if
 * certainly smaller, 0 if the accuracy ranges do not tell (at quiescence).
 */
int pn_ctree_approx_compare(struct pn_ctree *a, struct pn_ctree *b)
{
	return pn_ctree_cmp(pn_ctree_sub(pn_ctree_approx_sum(a),
					 pn_ctree_approx_sum(b)),
			    a->under + b->over, a->over + b->under);
}
EXPORT_SYMBOL_GPL(pn_ctree_approx_compare);

/**
 * pn_ctree_approx_compare_value() - compare a value with a tree, approximately
 * @counter: the tree
 * @v: the value
 *
 * Note the order, kept from the design this follows: the result is the
 * sign of @v minus the counter.  With P in [A - over, A + under], @v > P is
 * certain when v - A > under and @v < P when v - A < -over.
 *
 * "Certainly" holds at quiescence: each add in flight may widen the
 * range by up to |inc| + T_top - 1, which is not included here (see "Adds
 * in flight" at the top of this file).
 *
 * Context: Any context.
 * Return: 1 if @v is certainly greater than the precise sum, -1 if
 * certainly smaller, 0 if @v lies within the accuracy range (at
 * quiescence).
 */
int pn_ctree_approx_compare_value(struct pn_ctree *counter, long v)
{
	return pn_ctree_cmp(pn_ctree_sub(v, pn_ctree_approx_sum(counter)),
			    counter->over, counter->under);
}
EXPORT_SYMBOL_GPL(pn_ctree_approx_compare_value);

/**
 * pn_ctree_precise_compare() - compare two trees exactly
 * @a: first tree
 * @b: second tree
 *
 * Uses the approximations first and sums precisely only what they leave
 * open, starting with the tree whose range is wider.
 *
 * Context: Any context.  Exact at quiescence.
 * Return: the sign of a's precise sum minus b's.
 */
int pn_ctree_precise_compare(struct pn_ctree *a, struct pn_ctree *b)
{
	long pa, pb;
	int r;

	r = pn_ctree_approx_compare(a, b);
	if (r)
		return r;
	if (a->under + a->over >= b->under + b->over) {
		pa = pn_ctree_precise_sum(a);
		/* Pa - Pb in [d - b->under, d + b->over] */
		r = pn_ctree_cmp(pn_ctree_sub(pa, pn_ctree_approx_sum(b)),
				 b->over, b->under);
		if (r)
			return r;
		pb = pn_ctree_precise_sum(b);
	} else {
		pb = pn_ctree_precise_sum(b);
		/* Pa - Pb in [d - a->over, d + a->under] */
		r = pn_ctree_cmp(pn_ctree_sub(pn_ctree_approx_sum(a), pb),
				 a->under, a->over);
		if (r)
			return r;
		pa = pn_ctree_precise_sum(a);
	}
	return pn_ctree_sign(pn_ctree_sub(pa, pb));
}
EXPORT_SYMBOL_GPL(pn_ctree_precise_compare);

/**
 * pn_ctree_precise_compare_value() - compare a value with a tree exactly
 * @counter: the tree
 * @v: the value
 *
 * Same order as pn_ctree_approx_compare_value(): the sign of @v minus the
 * counter.  Sums precisely only if the approximation does not tell.
 *
 * Context: Any context.  Exact at quiescence.
 * Return: 1, 0 or -1 as @v is greater than, equal to or less than the
 * precise sum.
 */
int pn_ctree_precise_compare_value(struct pn_ctree *counter, long v)
{
	int r = pn_ctree_approx_compare_value(counter, v);

	if (r)
		return r;
	return pn_ctree_sign(pn_ctree_sub(v, pn_ctree_precise_sum(counter)));
}
EXPORT_SYMBOL_GPL(pn_ctree_precise_compare_value);

/**
 * pn_ctree_set() - set the precise sum to a value
 * @counter: the tree
 * @v: the new value
 *
 * Moves the bias only: the approximation moves by the same amount and
 * stays within the accuracy range.  Adds racing with the set may or may
 * not be included, and a carry moving during its precise read may be
 * missed or counted twice (see pn_ctree_precise_sum()); callers that need
 * an exact result exclude them.  On a
 * destroyed tree the set is dropped (and WARNs once).
 *
 * Context: Any context.
 */
void pn_ctree_set(struct pn_ctree *counter, long v)
{
	u32 __percpu *level0 = READ_ONCE(counter->level0);

	if (unlikely(!level0)) {
		__pn_ctree_misuse();
		return;
	}
	WRITE_ONCE(counter->bias,
		   (long)((unsigned long)v - pn_ctree_level0_sum(counter, level0)));
}
EXPORT_SYMBOL_GPL(pn_ctree_set);
