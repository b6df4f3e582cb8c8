// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for the hierarchical per-CPU counter tree: topology shapes
 * and accuracy figures, the carry arithmetic (exhaustively at 8 bits,
 * against integer floor division), and the counters themselves: after
 * every step the precise sum equals a reference, the approximation lies
 * inside the accuracy range, and the compare functions answer exactly at
 * the edges of that range; then the same under pinned concurrent adders.
 *
 * It needs no test harness (it is built without torture/ in the kunit.py
 * lane): its worker threads and its pseudo-random numbers are its own.
 */

#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/limits.h>
#include <linux/log2.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/wait.h>

#include <pcpu_next/counter_tree.h>
#include "internal/core.h"
#include "internal/counter_tree.h"

/* ---- fixtures ---- */

struct pn_ct_many {
	struct pn_ctree *c;
	unsigned int nr;
};

static void pn_ct_release(void *data)
{
	struct pn_ct_many *m = data;

	pn_ctree_destroy_many(m->c, m->nr);
}

/* Items must be cache-line aligned: power-of-two kmalloc sizes are. */
static void *pn_ct_items(struct kunit *test, unsigned int nr)
{
	size_t sz = roundup_pow_of_two(max_t(size_t, pn_ctree_items_size_many(nr),
					     SMP_CACHE_BYTES));
	void *p = kunit_kzalloc(test, sz, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, p);
	return p;
}

static struct pn_ctree *pn_ct_new(struct kunit *test, unsigned int nr,
				  unsigned long batch)
{
	struct pn_ct_many *m = kunit_kzalloc(test, sizeof(*m), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, m);
	m->c = kunit_kcalloc(test, nr, sizeof(*m->c), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, m->c);
	KUNIT_ASSERT_EQ(test, pn_ctree_init_many(m->c, pn_ct_items(test, nr), nr,
						 batch, GFP_KERNEL), 0);
	m->nr = nr;
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, pn_ct_release, m), 0);
	return m->c;
}

static int pn_ct_sign(long v)
{
	return v > 0 ? 1 : v < 0 ? -1 : 0;
}

/* Every read-side promise, for a counter whose precise sum must be @ref. */
static void pn_ct_check(struct kunit *test, struct pn_ctree *c, long ref)
{
	unsigned long under = 0, over = 0;
	long a, lo, hi;

	pn_ctree_accuracy_range(c, &under, &over);
	KUNIT_ASSERT_EQ(test, pn_ctree_precise_sum(c), ref);
	a = pn_ctree_approx_sum(c);
	KUNIT_ASSERT_LE_MSG(test, ref - (long)under, a, "approx below range");
	KUNIT_ASSERT_LE_MSG(test, a, ref + (long)over, "approx above range");
	pn_ctree_approx_min_max(c, &a, &lo, &hi);
	KUNIT_ASSERT_LE(test, lo, ref);
	KUNIT_ASSERT_GE(test, hi, ref);
	KUNIT_ASSERT_EQ(test, pn_ctree_approx_compare_value(c, ref), 0);
	KUNIT_ASSERT_EQ(test, pn_ctree_precise_compare_value(c, ref), 0);
	KUNIT_ASSERT_EQ(test, pn_ctree_precise_compare_value(c, ref + 1), 1);
	KUNIT_ASSERT_EQ(test, pn_ctree_precise_compare_value(c, ref - 1), -1);
	KUNIT_ASSERT_EQ(test, pn_ctree_precise_sum_positive(c), ref > 0 ? ref : 0);
	KUNIT_ASSERT_GE(test, pn_ctree_approx_sum_positive(c), 0L);
	KUNIT_ASSERT_EQ(test, pn_ctree_approx_sum_positive(c),
			pn_ctree_approx_sum(c) > 0 ? pn_ctree_approx_sum(c) : 0);
}

/*
 * xorshift64*, the generator of the harness's pn_rand_state(), so that the
 * cases walk the same sequences as when they ran on the harness.
 */
static u32 pn_ct_rand(u64 *state)
{
	u64 x = *state ? *state : 0x9e3779b97f4a7c15ULL;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return (x * 0x2545f4914f6cdd1dULL) >> 32;
}

static long pn_ct_rand_inc(u64 *rnd)
{
	u32 r = pn_ct_rand(rnd);
	long inc;

	switch (r & 3) {
	case 0:
		inc = 1;
		break;
	case 1:
		inc = (r >> 8) % 64 + 1;
		break;
	case 2:
		inc = (r >> 8) % 1024 + 1;
		break;
	default:
		inc = (r >> 8) % 10000 + 1;
		break;
	}
	return (r & 4) ? -inc : inc;
}

/* Trees whose item k shares one cache line. */
#define PN_CT_PER_LINE	(SMP_CACHE_BYTES / sizeof(struct pn_ctree_item))

/* Item @k (0 = the first of level 1, nr_items - 1 = the root) of tree @c. */
static atomic_long_t *pn_ct_item(struct pn_ctree *c, unsigned int k)
{
	unsigned int n = pn_ctree_topology()->nr_items;
	void *item0 = (void *)c->root - (size_t)(n - 1) * c->stride;

	return &((struct pn_ctree_item *)(item0 + (size_t)k * c->stride))->count;
}

/* ---- topology and accuracy ---- */

static void pn_ct_topology_shapes(struct kunit *test)
{
	const struct pn_ctree_topo *live = pn_ctree_topology();
	struct pn_ctree_topo t;
	unsigned int order, l;

	for (order = 0; order <= PN_CTREE_MAX_ORDER; order++) {
		unsigned int sum = 0, items = 0;

		pn_ctree_topo_compute(order, &t);
		KUNIT_EXPECT_EQ(test, t.order, order);
		KUNIT_EXPECT_LE(test, t.nr_levels, (unsigned int)PN_CTREE_MAX_LEVELS);
		KUNIT_EXPECT_EQ(test, !t.nr_levels, !order);
		for (l = 0; l < t.nr_levels; l++) {
			KUNIT_EXPECT_GE(test, t.arity_order[l], 1);
			KUNIT_EXPECT_LE(test, t.arity_order[l], 4);
			sum += t.arity_order[l];
			items += 1U << (order - sum);
		}
		KUNIT_EXPECT_EQ_MSG(test, sum, order, "order %u", order);
		/* a single CPU id still has its root */
		KUNIT_EXPECT_EQ_MSG(test, t.nr_items, order ? items : 1U,
				    "order %u", order);
	}
	/*
	 * The live shape follows nr_cpu_ids; items come in rows of whole
	 * lines, one row per item, shared by up to a line's worth of trees.
	 */
	KUNIT_EXPECT_EQ(test, live->order, (unsigned int)order_base_2(nr_cpu_ids));
	KUNIT_EXPECT_EQ(test, pn_ctree_items_size(),
			live->nr_items * (size_t)SMP_CACHE_BYTES);
	KUNIT_EXPECT_EQ(test, pn_ctree_items_size_many(PN_CT_PER_LINE),
			live->nr_items * (size_t)SMP_CACHE_BYTES);
	KUNIT_EXPECT_EQ(test, pn_ctree_items_size_many(PN_CT_PER_LINE + 1),
			live->nr_items * (size_t)SMP_CACHE_BYTES * 2);
	KUNIT_EXPECT_EQ(test, pn_ctree_batch_max(),
			1UL << (PN_CTREE_RANGE_ORDER - live->order));
}

/*
 * Figures worked out by hand from the derivation in counter_tree.c (and
 * quoted in Documentation/counter_tree.rst), batch 32.
 */
static const struct {
	unsigned int cpus, levels, items;
	unsigned long under, over;
} pn_ct_table[] = {
	{ 1, 0, 1, 0, 0 },
	{ 2, 1, 1, 30, 32 },
	{ 4, 2, 3, 124, 64 },
	{ 8, 2, 3, 248, 192 },
	{ 64, 2, 9, 1984, 1792 },
	{ 512, 3, 73, 22016, 22528 },
};

static void pn_ct_accuracy_table(struct kunit *test)
{
	unsigned int i, order, b;
	struct pn_ctree_topo t;
	unsigned long u, o;

	for (i = 0; i < ARRAY_SIZE(pn_ct_table); i++) {
		pn_ctree_topo_compute(order_base_2(pn_ct_table[i].cpus), &t);
		pn_ctree_accuracy(&t, 5, pn_ct_table[i].cpus, &u, &o);
		KUNIT_EXPECT_EQ(test, t.nr_levels, pn_ct_table[i].levels);
		KUNIT_EXPECT_EQ(test, t.nr_items, pn_ct_table[i].items);
		KUNIT_EXPECT_EQ_MSG(test, u, pn_ct_table[i].under, "%u CPUs", pn_ct_table[i].cpus);
		KUNIT_EXPECT_EQ_MSG(test, o, pn_ct_table[i].over, "%u CPUs", pn_ct_table[i].cpus);
	}
	/* Balanced: the two sides never differ by more than one level step. */
	for (order = 1; order <= PN_CTREE_MAX_ORDER; order++) {
		pn_ctree_topo_compute(order, &t);
		for (b = 1; b <= 9; b++) {
			unsigned long step = (1UL << order) << b;

			pn_ctree_accuracy(&t, b, 1U << order, &u, &o);
			KUNIT_EXPECT_LE(test, max(u, o) - min(u, o), step);
			KUNIT_EXPECT_GT(test, u + o, 0UL);
		}
	}
}

/*
 * Review C3: a tree that replaces a percpu_counter (rss_stat, lazy's tree
 * target) must be no less accurate than it at every machine size, not
 * only at the lanes' 16 CPUs.  percpu_counter's bound with the kernel's
 * batch is (max(32, 2p) - 1) x p; the default batch is 32 wherever that
 * keeps the tree within it, which is every size here but 12 (16).  The
 * old rule, the kernel's batch rounded up to a power of two, was up to
 * 2.23 times worse (96, 192 and 384 CPUs).
 */
static const struct {
	unsigned int cpus;
	unsigned long batch;
} pn_ct_batch_table[] = {
	{ 4, 32 }, { 8, 32 }, { 12, 16 }, { 16, 32 }, { 24, 32 }, { 32, 32 },
	{ 48, 32 }, { 64, 32 }, { 96, 32 }, { 128, 32 }, { 192, 32 },
	{ 256, 32 }, { 384, 32 }, { 512, 32 },
};

static void pn_ct_batch_vs_mainline(struct kunit *test)
{
	unsigned long bound, batch, u, o;
	struct pn_ctree_topo t;
	unsigned int i, p;

	for (i = 0; i < ARRAY_SIZE(pn_ct_batch_table); i++) {
		p = pn_ct_batch_table[i].cpus;
		bound = (max(32UL, 2UL * p) - 1) * p;
		pn_ctree_topo_compute(order_base_2(p), &t);
		batch = min(PN_CTREE_BATCH, pn_ctree_batch_within(&t, p, bound));
		KUNIT_EXPECT_EQ_MSG(test, batch, pn_ct_batch_table[i].batch, "%u CPUs", p);
		pn_ctree_accuracy(&t, ilog2(batch), p, &u, &o);
		KUNIT_EXPECT_LE_MSG(test, max(u, o), bound, "%u CPUs", p);
	}
	/* This machine's default is that rule at its own size. */
	p = num_possible_cpus();
	bound = (max(32UL, 2UL * p) - 1) * p;
	KUNIT_EXPECT_EQ(test, pn_ctree_default_batch(),
			min(PN_CTREE_BATCH,
			    pn_ctree_batch_within(pn_ctree_topology(), p, bound)));
	pn_ctree_accuracy(pn_ctree_topology(), ilog2(pn_ctree_default_batch()), p, &u, &o);
	KUNIT_EXPECT_LE(test, max(u, o), bound);
}

/* ---- carry arithmetic ---- */

static int pn_ct_floor_div(int a, int b)
{
	int q = a / b;

	if ((a % b) && a < 0)
		q--;
	return q;
}

/* The w-bit value @v read as a signed w-bit number. */
static int pn_ct_sext(unsigned long v, unsigned int w)
{
	v &= BIT(w) - 1;
	return v & BIT(w - 1) ? (int)v - (1 << w) : (int)v;
}

/*
 * Every (orig, inc) pair of an 8-bit counter, every batch 2..128: the carry
 * is B * (floor((o + inc) / B) - floor(o / B)) computed on plain integers
 * (o read as signed), modulo 2^8; it is a multiple of B; and a multiple of
 * B passes through unchanged (why propagation may skip such an item).
 */
static void pn_ct_carry_exhaustive_8bit(struct kunit *test)
{
	const unsigned int w = 8;
	unsigned int order, orig, bad = 0, checked = 0;
	int inc;

	for (order = 1; order < w; order++) {
		int batch = 1 << order;

		for (orig = 0; orig < BIT(w); orig++) {
			for (inc = -(1 << (w - 1)); inc < (1 << (w - 1)); inc++) {
				unsigned long res = (orig + inc) & (BIT(w) - 1);
				unsigned long c = __pn_ctree_carry(orig, res, order, w);
				int o = pn_ct_sext(orig, w);
				int ref = batch * (pn_ct_floor_div(o + inc, batch) -
						   pn_ct_floor_div(o, batch));
				bool ok = pn_ct_sext(c, w) == pn_ct_sext(ref, w) &&
					  !(c & (batch - 1)) &&
					  ((inc & (batch - 1)) ||
					   pn_ct_sext(c, w) == pn_ct_sext(inc, w));

				checked++;
				if (!ok && !bad++)
					KUNIT_FAIL(test,
						   "order %u orig %u inc %d: carry %lu, floor division says %d",
						   order, orig, inc, c, ref);
			}
		}
	}
	KUNIT_EXPECT_EQ(test, bad, 0U);
	KUNIT_EXPECT_EQ(test, checked, 7U * 256 * 256);
}

static void pn_ct_carry_full_width(struct kunit *test)
{
	const unsigned int w = BITS_PER_LONG;

	/* Crossing zero upwards and downwards, and across LONG_MAX. */
	KUNIT_EXPECT_EQ(test, __pn_ctree_carry(ULONG_MAX, 0, 5, w), 32UL);
	KUNIT_EXPECT_EQ(test, __pn_ctree_carry(0, ULONG_MAX, 5, w), -32UL);
	KUNIT_EXPECT_EQ(test, __pn_ctree_carry(LONG_MAX, (unsigned long)LONG_MIN, 5, w), 32UL);
	KUNIT_EXPECT_EQ(test, __pn_ctree_carry(31, 32, 5, w), 32UL);
	KUNIT_EXPECT_EQ(test, __pn_ctree_carry(32, 63, 5, w), 0UL);
	KUNIT_EXPECT_EQ(test, __pn_ctree_carry(32, 31, 5, w), -32UL);
	KUNIT_EXPECT_EQ(test, __pn_ctree_carry(5, 5 + 10000, 5, w), 9984UL);
	KUNIT_EXPECT_EQ(test, __pn_ctree_carry(5, 5 - 10000, 5, w), -10016UL);
}

/* ---- counters ---- */

static void pn_ct_init_rejects(struct kunit *test)
{
	const unsigned long max = pn_ctree_batch_max();
	const unsigned long bad[] = { 0, 1, 3, 6, 48, max * 2, 1UL << 62 };
	struct pn_ctree c;
	void *items = pn_ct_items(test, 1);
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		KUNIT_EXPECT_EQ_MSG(test, pn_ctree_init(&c, items, bad[i], GFP_KERNEL),
				    -EINVAL, "batch %lu", bad[i]);
	KUNIT_EXPECT_EQ(test, pn_ctree_init_many(&c, items, 0, 32, GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, pn_ctree_init_many(&c, items, PN_CTREE_MAX_ARRAY + 1,
						 32, GFP_KERNEL), -EINVAL);
	/* every shape has a root, so items are always needed, whole lines */
	KUNIT_EXPECT_EQ(test, pn_ctree_init(&c, NULL, 32, GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, pn_ctree_init(&c, items + 8, 32, GFP_KERNEL), -EINVAL);
	/* the largest batch is accepted, and exact */
	KUNIT_ASSERT_EQ(test, pn_ctree_init(&c, items, max, GFP_KERNEL), 0);
	pn_ctree_add(&c, -77);
	pn_ctree_add(&c, (long)max * 3 + 1);
	pn_ct_check(test, &c, (long)max * 3 - 76);
	pn_ctree_destroy(&c);
}

/*
 * Init reads each batch's range and item start values from a table made
 * at module init: every legal batch must get the formula's range, and a
 * fresh tree (items at their start values) must sum to exactly 0.
 */
static void pn_ct_every_batch(struct kunit *test)
{
	unsigned int p = num_possible_cpus(), order = pn_ctree_topology()->order, b;
	unsigned long u, o;

	for (b = 1; (1UL << b) <= pn_ctree_batch_max(); b++) {
		struct pn_ctree *c = pn_ct_new(test, 2, 1UL << b);
		/* B (2^order - 1): no multiple of T_1, so items change */
		long move = (1L << b) * ((1L << order) - 1);

		pn_ctree_accuracy(pn_ctree_topology(), b, p, &u, &o);
		KUNIT_EXPECT_EQ_MSG(test, (unsigned long)c[1].under, u, "batch 2^%u", b);
		KUNIT_EXPECT_EQ_MSG(test, (unsigned long)c[1].over, o, "batch 2^%u", b);
		pn_ct_check(test, &c[1], 0);
		/* carries that move items, then one straight to the root */
		pn_ctree_add(&c[1], move);
		pn_ct_check(test, &c[1], move);
		pn_ctree_add(&c[1], (1L << b) << order);
		pn_ct_check(test, &c[1], move + ((1L << b) << order));
		pn_ctree_add(&c[1], -move - ((1L << b) << order) - 1);
		pn_ct_check(test, &c[1], -1);
		pn_ct_check(test, &c[0], 0);
	}
}

static void pn_ct_degenerate_shape(struct kunit *test)
{
	struct pn_ctree_topo t;
	unsigned long u = 1, o = 1;

	pn_ctree_topo_compute(0, &t);
	KUNIT_EXPECT_EQ(test, t.nr_levels, 0U);
	KUNIT_EXPECT_EQ(test, t.nr_items, 1U);	/* the root alone */
	pn_ctree_accuracy(&t, 5, 1, &u, &o);
	KUNIT_EXPECT_EQ(test, u, 0UL);
	KUNIT_EXPECT_EQ(test, o, 0UL);
}

/* A random walk at every batch 2^1..2^9, checked after each step. */
static void pn_ct_random_walk(struct kunit *test)
{
	u64 rnd = 0x5eed;
	unsigned int b, step;

	for (b = 1; b <= 9; b++) {
		struct pn_ctree *c = pn_ct_new(test, 1, 1UL << b);
		long ref = 0;

		pn_ct_check(test, c, 0);
		for (step = 0; step < 200; step++) {
			long inc = pn_ct_rand_inc(&rnd);

			pn_ctree_add(c, inc);
			ref += inc;
			pn_ct_check(test, c, ref);
		}
	}
}

/* Nothing reaches the root before the level-0 threshold is crossed. */
static void pn_ct_no_early_carry(struct kunit *test)
{
	struct pn_ctree *c = pn_ct_new(test, 1, 64);
	long a0 = pn_ctree_approx_sum(c), a_up, a_down, a_cross;
	unsigned int i, moved = 0;

	if (!pn_ctree_topology()->nr_levels)
		kunit_skip(test, "one CPU: no tree");
	/* One CPU's counter, so no migration (and no sleeping) here. */
	preempt_disable();
	/* It starts mid-window: 31 ups stay below the threshold 64... */
	for (i = 0; i < 31; i++) {
		pn_ctree_add(c, 1);
		moved += pn_ctree_approx_sum(c) != a0;
	}
	a_up = pn_ctree_approx_sum(c);
	/* ...and so do 32 downs from the start... */
	pn_ctree_add(c, -31 - 32);
	a_down = pn_ctree_approx_sum(c);
	/* ...but one more crosses it and carries the batch. */
	pn_ctree_add(c, -1);
	a_cross = pn_ctree_approx_sum(c);
	preempt_enable();

	KUNIT_EXPECT_EQ(test, moved, 0U);
	KUNIT_EXPECT_EQ(test, a_up, a0);
	KUNIT_EXPECT_EQ(test, a_down, a0);
	pn_ct_check(test, c, -33);
	/* The carry of -64 reached level 1; the root moved by 0 or -64 * k. */
	KUNIT_EXPECT_EQ(test, (a_cross - a0) % 64, 0L);
	KUNIT_EXPECT_LE(test, a_cross, a0);
}

/*
 * An add that is a multiple of every threshold goes straight to the root:
 * the approximation moves by exactly that much and no intermediate item is
 * touched (the atomics are skipped when no carry-significant bit changes).
 */
static void pn_ct_aligned_add_skips_items(struct kunit *test)
{
	const struct pn_ctree_topo *t = pn_ctree_topology();
	struct pn_ctree *c = pn_ct_new(test, 1, 8);
	long before, inc = 8L << t->order;
	unsigned long *snap;
	unsigned int i, n = t->nr_items - 1;

	snap = kunit_kcalloc(test, n + 1, sizeof(*snap), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, snap);
	pn_ctree_add(c, 3);	/* leave level 0 off its start */
	for (i = 0; i < n; i++)
		snap[i] = atomic_long_read(pn_ct_item(c, i));
	before = pn_ctree_approx_sum(c);
	pn_ctree_add(c, inc);
	KUNIT_EXPECT_EQ(test, pn_ctree_approx_sum(c) - before, inc);
	pn_ctree_add(c, -3 * inc);
	KUNIT_EXPECT_EQ(test, pn_ctree_approx_sum(c) - before, -2 * inc);
	for (i = 0; i < n; i++)
		KUNIT_EXPECT_EQ_MSG(test, atomic_long_read(pn_ct_item(c, i)),
				    (long)snap[i], "item %u", i);
	pn_ct_check(test, c, 3 - 2 * inc);
}

/*
 * Level 0 is 32 bits wide: adds that wrap a CPU's counter many times, in
 * both directions, single adds past 2^30 (split by the add) and past
 * 2^32, the values either side of every split point; the precise sum
 * takes its high bits from the root and must stay exact throughout.
 */
static void pn_ct_level0_wraps(struct kunit *test)
{
	static const long incs[] = {
		(1L << 30), -(1L << 30), (1L << 30) + 1, -(1L << 30) - 1,
		(1L << 31) - 1, -(1L << 31), (1L << 31) + 12345,
		(1L << 32) - 1, (1L << 32), -(1L << 32) + 7, 3L << 33,
		-(5L << 35) - 99, LONG_MAX / 8, LONG_MIN / 8, 1, -1,
	};
	struct pn_ctree *c = pn_ct_new(test, 2, 32);
	unsigned int i, k;
	long ref = 0;

	for (k = 0; k < 3; k++) {
		for (i = 0; i < ARRAY_SIZE(incs); i++) {
			pn_ctree_add(&c[0], incs[i]);
			ref += incs[i];
			pn_ct_check(test, &c[0], ref);
			pn_ct_check(test, &c[1], 0);
		}
		/* 2^32 in steps of 2^30 - 1: the counter wraps with no split */
		for (i = 0; i < 5; i++) {
			pn_ctree_add(&c[0], (1L << 30) - 1);
			ref += (1L << 30) - 1;
		}
		pn_ct_check(test, &c[0], ref);
	}
	/* and back to zero, then below */
	pn_ctree_add(&c[0], -ref - 5);
	pn_ct_check(test, &c[0], -5);
	pn_ct_check(test, &c[1], 0);
	/* the extremes (no check in between: the sums would wrap a long) */
	pn_ctree_add(&c[1], LONG_MIN);
	pn_ctree_add(&c[1], LONG_MAX);
	pn_ctree_add(&c[1], 1L << 31);
	pn_ctree_add(&c[1], 1);
	pn_ctree_add(&c[1], -(1L << 31));
	pn_ct_check(test, &c[1], 0);
	pn_ct_check(test, &c[0], -5);
}

/*
 * Level-0 updates whose carries have not arrived (adds in flight on two
 * CPUs, interrupted between their level-0 add and the carry, simulated
 * by writing level 0 directly): the precise sum must count each of them
 * or not, never be off by a wrap of 2^32, which a precise sum that took
 * the high bits from the root (P = A + (s32)(S - A)) was once the moment
 * they reached 2^31 together.  Writing multiples of the batch leaves
 * every level-0 term unchanged, so the answer is the sum before them.
 */
static void pn_ct_inflight_no_wrap(struct kunit *test)
{
	struct pn_ctree *c = pn_ct_new(test, 1, 32);
	unsigned int cpus[2], n = 0, cpu, i;
	long p;

	for_each_online_cpu(cpu)
		if (n < ARRAY_SIZE(cpus))
			cpus[n++] = cpu;
	if (n < 2)
		kunit_skip(test, "needs two online CPUs");
	pn_ctree_add(c, 12345);
	for (i = 0; i < n; i++)
		*per_cpu_ptr(c->level0, cpus[i]) += 1U << 30;
	p = pn_ctree_precise_sum(c);
	KUNIT_EXPECT_GE(test, p, 12345L);
	KUNIT_EXPECT_LE(test, p, 12345L + (1L << 31));
	for (i = 0; i < n; i++)
		*per_cpu_ptr(c->level0, cpus[i]) -= 1U << 30;
	pn_ct_check(test, c, 12345);
}

/*
 * The items of an array are interleaved in rows of whole lines: tree i's
 * item k is at row k, word i.  An add to one tree changes only its own
 * items, every item of every tree lies inside the caller's area, and no
 * two trees share an item.
 */
static void pn_ct_array_rows(struct kunit *test)
{
	const struct pn_ctree_topo *t = pn_ctree_topology();
	const unsigned int nr = PN_CT_PER_LINE + 3;
	size_t row = pn_ctree_items_size_many(nr) / t->nr_items;
	struct pn_ctree *c = pn_ct_new(test, nr, 8);
	void *base = pn_ct_item(&c[0], 0);
	unsigned long *snap;
	unsigned int i, j, k;

	snap = kunit_kcalloc(test, nr * t->nr_items, sizeof(*snap), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, snap);
	KUNIT_EXPECT_EQ(test, row, 2 * (size_t)SMP_CACHE_BYTES);
	KUNIT_EXPECT_TRUE(test, IS_ALIGNED((unsigned long)base, SMP_CACHE_BYTES));
	for (i = 0; i < nr; i++) {
		KUNIT_EXPECT_EQ(test, (size_t)c[i].stride, row);
		for (k = 0; k < t->nr_items; k++)
			KUNIT_EXPECT_PTR_EQ(test, (void *)pn_ct_item(&c[i], k),
					    base + k * row +
					    i * sizeof(struct pn_ctree_item));
	}
	for (j = 0; j < nr; j++) {
		for (i = 0; i < nr; i++)
			for (k = 0; k < t->nr_items; k++)
				snap[i * t->nr_items + k] =
					atomic_long_read(pn_ct_item(&c[i], k));
		/* enough to carry through every level, both ways */
		pn_ctree_add(&c[j], 8L << t->order << 4);
		pn_ctree_add(&c[j], -(8L << t->order << 3) - 3);
		for (i = 0; i < nr; i++) {
			if (i == j)
				continue;
			for (k = 0; k < t->nr_items; k++)
				KUNIT_EXPECT_EQ_MSG(test,
						    atomic_long_read(pn_ct_item(&c[i], k)),
						    (long)snap[i * t->nr_items + k],
						    "add to tree %u moved tree %u item %u",
						    j, i, k);
		}
		pn_ct_check(test, &c[j], (8L << t->order << 3) - 3);
	}
}

static void pn_ct_set_values(struct kunit *test)
{
	static const long vals[] = {
		0, 1, -1, 12345, -12345, LONG_MAX / 4, LONG_MIN / 4, 7,
	};
	struct pn_ctree *c = pn_ct_new(test, 1, 16);
	unsigned int i;

	pn_ctree_add(c, 1000);
	for (i = 0; i < ARRAY_SIZE(vals); i++) {
		pn_ctree_set(c, vals[i]);
		pn_ct_check(test, c, vals[i]);
		pn_ctree_add(c, -(16 * 3 + 1));
		pn_ct_check(test, c, vals[i] - 49);
		pn_ctree_add(c, 10000);
		pn_ct_check(test, c, vals[i] - 49 + 10000);
	}
}

static void pn_ct_init_many_independent(struct kunit *test)
{
	const unsigned int nr = 16;
	struct pn_ctree *c = pn_ct_new(test, nr, 8);
	unsigned int i;

	for (i = 0; i < nr; i++)
		pn_ctree_add(&c[i], (long)i * 1000 - 7000);
	for (i = 0; i < nr; i++)
		pn_ct_check(test, &c[i], (long)i * 1000 - 7000);
	pn_ctree_set(&c[3], 42);
	for (i = 0; i < nr; i++)
		pn_ct_check(test, &c[i], i == 3 ? 42 : (long)i * 1000 - 7000);
}

/* Set @a so that its approximation is exactly @target. */
static void pn_ct_place(struct kunit *test, struct pn_ctree *a, long target)
{
	long dev = pn_ctree_precise_sum(a) - pn_ctree_approx_sum(a);

	pn_ctree_set(a, target + dev);
	KUNIT_ASSERT_EQ(test, pn_ctree_approx_sum(a), target);
}

/*
 * Compare results exactly at the accuracy edges and one beyond, in both
 * directions, with two trees whose (under, over) differ so that mixing
 * up under and over anywhere changes an answer.
 */
static void pn_ct_compare_edges(struct kunit *test)
{
	struct pn_ctree *a = pn_ct_new(test, 1, 4);
	struct pn_ctree *b = pn_ct_new(test, 1, 64);
	u64 rnd = 77;
	long ap, apb, e, k;
	unsigned int i;

	/* Move both trees off their initial state. */
	for (i = 0; i < 50; i++) {
		pn_ctree_add(a, pn_ct_rand_inc(&rnd));
		pn_ctree_add(b, pn_ct_rand_inc(&rnd));
	}

	/* Counter against value: the sign of v minus the counter. */
	ap = pn_ctree_approx_sum(a);
	KUNIT_EXPECT_EQ(test, pn_ctree_approx_compare_value(a, ap + (long)a->under), 0);
	KUNIT_EXPECT_EQ(test, pn_ctree_approx_compare_value(a, ap + (long)a->under + 1), 1);
	KUNIT_EXPECT_EQ(test, pn_ctree_approx_compare_value(a, ap - (long)a->over), 0);
	KUNIT_EXPECT_EQ(test, pn_ctree_approx_compare_value(a, ap - (long)a->over - 1), -1);
	for (k = -(long)a->over - 2; k <= (long)a->under + 2; k++) {
		long v = ap + k;

		KUNIT_EXPECT_EQ(test, pn_ctree_precise_compare_value(a, v),
				pn_ct_sign(v - pn_ctree_precise_sum(a)));
	}

	/* Counter against counter. */
	apb = pn_ctree_approx_sum(b);
	for (k = -(long)(a->under + b->over) - 2; k <= (long)(a->over + b->under) + 2; k++) {
		int want, got;

		pn_ct_place(test, a, apb + k);
		got = pn_ctree_approx_compare(a, b);
		if (k > (long)(a->over + b->under))
			want = 1;
		else if (k < -(long)(a->under + b->over))
			want = -1;
		else
			want = 0;
		KUNIT_ASSERT_EQ_MSG(test, got, want, "approx delta %ld", k);
		KUNIT_ASSERT_EQ(test, pn_ctree_approx_compare(b, a), -want);
		/* Whatever it says, the approximation never contradicts the truth. */
		e = pn_ct_sign(pn_ctree_precise_sum(a) - pn_ctree_precise_sum(b));
		if (got)
			KUNIT_ASSERT_EQ(test, (long)got, e);
		KUNIT_ASSERT_EQ(test, (long)pn_ctree_precise_compare(a, b), e);
		KUNIT_ASSERT_EQ(test, (long)pn_ctree_precise_compare(b, a), -e);
	}
	/* Equal precise sums compare equal. */
	pn_ctree_set(a, 5);
	pn_ctree_set(b, 5);
	KUNIT_EXPECT_EQ(test, pn_ctree_precise_compare(a, b), 0);
	KUNIT_EXPECT_EQ(test, pn_ctree_precise_compare(b, a), 0);
}

/* ---- concurrent adders ---- */

/*
 * Worker placement, as the harness's pin= each, even, one and random:
 * round robin over the online CPUs or over the even-numbered ones, all on
 * the first online CPU, or each on a pseudo-random online CPU.
 */
enum pn_ct_pin {
	PN_CT_PIN_EACH,
	PN_CT_PIN_EVEN,
	PN_CT_PIN_ONE,
	PN_CT_PIN_RANDOM,
};

/**
 * struct pn_ct_phase - worker kthreads that start together and run to the end
 * @wq: woken when a worker entered or left its body
 * @ready: workers that entered their body
 * @done: workers whose body returned
 * @go: set once every worker is ready: they start at the same moment
 * @stop: set when the phase ends, or is torn down before it started
 * @fn: the body of worker @idx; returns 0 or -errno
 * @data: the body's argument
 */
struct pn_ct_phase {
	wait_queue_head_t wq;
	atomic_t ready;
	atomic_t done;
	bool go;
	bool stop;
	int (*fn)(struct pn_ct_phase *ph, unsigned int idx, void *data);
	void *data;
};

struct pn_ct_worker {
	struct pn_ct_phase *ph;
	unsigned int idx;
	unsigned int cpu;
	struct task_struct *task;
};

static int pn_ct_worker_main(void *arg)
{
	struct pn_ct_worker *w = arg;
	struct pn_ct_phase *ph = w->ph;
	int ret;

	/*
	 * Pinned from here: since 6.14 a kthread's first run resets an
	 * affinity set before it (kthread_affine_node()).
	 */
	set_cpus_allowed_ptr(current, cpumask_of(w->cpu));
	atomic_inc(&ph->ready);
	wake_up(&ph->wq);
	while (!READ_ONCE(ph->go) && !READ_ONCE(ph->stop))
		schedule_timeout_uninterruptible(1);
	ret = ph->fn(ph, w->idx, ph->data);
	atomic_inc(&ph->done);
	wake_up(&ph->wq);
	/* kthread_stop() collects the result; wait for it. */
	set_current_state(TASK_INTERRUPTIBLE);
	while (!kthread_should_stop()) {
		schedule();
		set_current_state(TASK_INTERRUPTIBLE);
	}
	__set_current_state(TASK_RUNNING);
	return ret;
}

/* The @n-th online CPU (modulo their number), of the even ones if @even. */
static unsigned int pn_ct_nth_online(unsigned int n, bool even)
{
	unsigned int cpu, seen = 0, nr = 0;

	for_each_online_cpu(cpu)
		if (!even || !(cpu & 1))
			nr++;
	if (!nr)
		return cpumask_first(cpu_online_mask);
	n %= nr;
	for_each_online_cpu(cpu) {
		if (even && (cpu & 1))
			continue;
		if (seen++ == n)
			return cpu;
	}
	return cpumask_first(cpu_online_mask);
}

static unsigned int pn_ct_pick_cpu(enum pn_ct_pin pin, unsigned int idx,
				   u64 *rnd)
{
	unsigned int cpu;

	cpus_read_lock();
	switch (pin) {
	case PN_CT_PIN_EVEN:
		cpu = pn_ct_nth_online(idx, true);
		break;
	case PN_CT_PIN_ONE:
		cpu = cpumask_first(cpu_online_mask);
		break;
	case PN_CT_PIN_RANDOM:
		cpu = pn_ct_nth_online(pn_ct_rand(rnd), false);
		break;
	default:
		cpu = pn_ct_nth_online(idx, false);
		break;
	}
	cpus_read_unlock();
	return cpu;
}

/*
 * Run @nr workers placed by @pin (@rnd for the random placement) until
 * every one of them returned.  All are created first and released
 * together once each has entered its body.  Returns 0, -ENOMEM, the
 * error of a failed kthread_create(), or the first non-zero value a
 * worker returned.  kthread_stop() orders the workers' stores before the
 * caller's later loads.
 */
static int pn_ct_run_phase(struct pn_ct_phase *ph, unsigned int nr,
			   enum pn_ct_pin pin, u64 *rnd)
{
	struct pn_ct_worker *w;
	unsigned int i, started = 0;
	int ret = 0, r;

	w = kcalloc(nr, sizeof(*w), GFP_KERNEL);
	if (!w)
		return -ENOMEM;
	init_waitqueue_head(&ph->wq);
	atomic_set(&ph->ready, 0);
	atomic_set(&ph->done, 0);
	WRITE_ONCE(ph->go, false);
	WRITE_ONCE(ph->stop, false);
	for (i = 0; i < nr; i++) {
		unsigned int cpu = pn_ct_pick_cpu(pin, i, rnd);
		struct task_struct *t;

		w[i].ph = ph;
		w[i].idx = i;
		w[i].cpu = cpu;
		t = kthread_create(pn_ct_worker_main, &w[i], "pn_ct_mt/%u", i);
		if (IS_ERR(t)) {
			ret = PTR_ERR(t);
			break;
		}
		get_task_struct(t);
		w[i].task = t;
		wake_up_process(t);
		started++;
	}
	if (!ret) {
		wait_event(ph->wq, atomic_read(&ph->ready) == started);
		WRITE_ONCE(ph->go, true);
		wait_event(ph->wq, atomic_read(&ph->done) == started);
	}
	WRITE_ONCE(ph->stop, true);
	for (i = 0; i < started; i++) {
		r = kthread_stop(w[i].task);
		put_task_struct(w[i].task);
		if (r && !ret)
			ret = r;
	}
	kfree(w);
	return ret;
}

#define PN_CT_NR_BATCH	9	/* batches 2^1 .. 2^9 */
#define PN_CT_ADDERS	4
#define PN_CT_OPS	1500	/* adds each adder makes at least */
#define PN_CT_PASSES	8	/* reader passes the adders wait for */
#define PN_CT_WAIT_MS	10000	/* the longest they wait for them */

/**
 * struct pn_ct_mt - shared state of pn_ct_threads_pinned
 * @trees: one tree per batch
 * @totals: per adder and tree, the sum of its adds
 * @adders_left: adders still adding
 * @passes: reader passes over all trees in this phase
 */
struct pn_ct_mt {
	struct pn_ctree *trees[PN_CT_NR_BATCH];
	long totals[PN_CT_ADDERS][PN_CT_NR_BATCH];
	atomic_t adders_left;
	atomic_t passes;
};

/*
 * The reader reads until the last adder is done.  The adders do not rely
 * on the scheduler to run the reader in time: past PN_CT_OPS adds they go
 * on until the reader made PN_CT_PASSES passes, and sleep now and then so
 * that a reader on their CPU runs.  They give up after PN_CT_WAIT_MS; the
 * case then fails.
 */
static int pn_ct_mt_worker(struct pn_ct_phase *ph, unsigned int idx, void *data)
{
	struct pn_ct_mt *m = data;
	unsigned long end = jiffies + msecs_to_jiffies(PN_CT_WAIT_MS);
	u64 rnd = 1000 + idx;
	unsigned int i, t;

	if (idx == PN_CT_ADDERS) {	/* reader */
		while (atomic_read(&m->adders_left) && !READ_ONCE(ph->stop)) {
			for (t = 0; t < PN_CT_NR_BATCH; t++) {
				long a, lo, hi;

				pn_ctree_approx_min_max(m->trees[t], &a, &lo, &hi);
				pn_ctree_precise_compare(m->trees[t],
							 m->trees[(t + 1) % PN_CT_NR_BATCH]);
			}
			atomic_inc(&m->passes);
			cond_resched();
		}
		return 0;
	}
	for (i = 0; !READ_ONCE(ph->stop); i++) {
		long inc = pn_ct_rand_inc(&rnd);

		if (i >= PN_CT_OPS &&
		    (atomic_read(&m->passes) >= PN_CT_PASSES || time_after(jiffies, end)))
			break;
		t = pn_ct_rand(&rnd) % PN_CT_NR_BATCH;
		pn_ctree_add(m->trees[t], inc);
		m->totals[idx][t] += inc;
		if (!(i & 63)) {
			if (i >= PN_CT_OPS)
				usleep_range(50, 100);
			else
				cond_resched();
		}
	}
	atomic_dec(&m->adders_left);
	return 0;
}

static void pn_ct_threads_pinned(struct kunit *test)
{
	static const enum pn_ct_pin pins[] = {
		PN_CT_PIN_EACH, PN_CT_PIN_EVEN, PN_CT_PIN_ONE, PN_CT_PIN_RANDOM,
	};
	struct pn_ct_phase *ph;
	struct pn_ct_mt *m;
	unsigned int p, t, w;
	u64 rnd = 3;

	ph = kunit_kzalloc(test, sizeof(*ph), GFP_KERNEL);
	m = kunit_kzalloc(test, sizeof(*m), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ph);
	KUNIT_ASSERT_NOT_NULL(test, m);
	ph->fn = pn_ct_mt_worker;
	ph->data = m;
	for (t = 0; t < PN_CT_NR_BATCH; t++)
		m->trees[t] = pn_ct_new(test, 1, 2UL << t);

	for (p = 0; p < ARRAY_SIZE(pins); p++) {
		memset(m->totals, 0, sizeof(m->totals));
		atomic_set(&m->adders_left, PN_CT_ADDERS);
		atomic_set(&m->passes, 0);
		for (t = 0; t < PN_CT_NR_BATCH; t++)
			pn_ctree_set(m->trees[t], (long)p * 100000 - 150000);
		KUNIT_ASSERT_EQ(test, pn_ct_run_phase(ph, PN_CT_ADDERS + 1,
						      pins[p], &rnd), 0);
		/* kthread_stop() ordered the workers' stores before ours. */
		for (t = 0; t < PN_CT_NR_BATCH; t++) {
			long ref = (long)p * 100000 - 150000;

			for (w = 0; w < PN_CT_ADDERS; w++)
				ref += m->totals[w][t];
			pn_ct_check(test, m->trees[t], ref);
		}
		/* Each pass the adders waited for began before they were done. */
		KUNIT_EXPECT_GE_MSG(test, atomic_read(&m->passes), PN_CT_PASSES,
				    "phase %u: the reader did not read during the adds within %d ms",
				    p, PN_CT_WAIT_MS);
	}
}

/* ---- a preempted adder holds no carry ---- */

#define PN_CT_HOG_MIN_BURSTS	24
#define PN_CT_HOG_MAX_BURSTS	200
#define PN_CT_HOG_WANT_SEEN	12	/* clean bursts the reader should read in */
#define PN_CT_HOG_SPIN_US	5000
#define PN_CT_HOG_SPIN_MAX_US	20000	/* spin on to this for the reader */
#define PN_CT_HOG_GAP_US	3000
#define PN_CT_HOG_STARTUP_MS	4000	/* for adder and reader to start */
#define PN_CT_HOG_LIMIT_MS	4000	/* for the bursts, once they have */

/**
 * struct pn_ct_hog - shared state of pn_ct_preempted_adder
 * @tree: the tree under test
 * @inc: the adder's increment: its carry is far beyond the range
 * @under: @tree's accuracy below the precise sum
 * @over: @tree's accuracy above it
 * @seq: 2 * burst + 1 while the hog spins in that burst, even otherwise
 * @ready: adder and reader running (the hog waits for both)
 * @started: both were running within PN_CT_HOG_STARTUP_MS (hog only)
 * @stop: set by the test once the hog is done
 * @clean: per burst, the hog kept its CPU for the whole spin (hog only)
 * @read_in: per burst, the reader completed a read inside it (reader
 *	     writes, the hog reads it while it spins, and a gap after the
 *	     burst for its early exit)
 * @bad: per burst, such a read broke the range (reader only)
 * @bursts: bursts the hog ran
 * @burst_reads: reads inside a burst (reader only)
 * @worst: the largest P - A of a read that broke the range (reader only)
 * @pairs: +@inc/-@inc pairs the adder made (adder only)
 * @hog_done: the hog finished its bursts
 */
struct pn_ct_hog {
	struct pn_ctree *tree;
	long inc;
	unsigned long under, over;
	unsigned int seq;
	atomic_t ready;
	bool started;
	bool stop;
	bool clean[PN_CT_HOG_MAX_BURSTS];
	bool read_in[PN_CT_HOG_MAX_BURSTS];
	bool bad[PN_CT_HOG_MAX_BURSTS];
	unsigned int bursts;
	unsigned long burst_reads;
	long worst;
	u64 pairs;
	struct completion hog_done;
};

struct pn_ct_hog_thread {
	struct task_struct *task;
	int (*fn)(struct pn_ct_hog *h);
	struct pn_ct_hog *h;
};

static int pn_ct_hog_thread_main(void *data)
{
	struct pn_ct_hog_thread *t = data;
	int ret = t->fn(t->h);

	set_current_state(TASK_INTERRUPTIBLE);
	while (!kthread_should_stop()) {
		schedule();
		set_current_state(TASK_INTERRUPTIBLE);
	}
	__set_current_state(TASK_RUNNING);
	return ret;
}

/* Normal priority: +inc then -inc, every add carrying up to the root. */
static int pn_ct_hog_adder(struct pn_ct_hog *h)
{
	u64 n = 0;

	atomic_inc(&h->ready);
	while (!READ_ONCE(h->stop)) {
		pn_ctree_add(h->tree, h->inc);
		pn_ctree_add(h->tree, -h->inc);
		if (!(++n & 255))
			cond_resched();
	}
	h->pairs = n;
	return 0;
}

/*
 * SCHED_FIFO on the adder's CPU: sleep a few ms (the adder runs), then
 * spin for PN_CT_HOG_SPIN_US (the adder is preempted wherever it was).
 * The spin goes on until the reader read in the burst, up to
 * PN_CT_HOG_SPIN_MAX_US: a reader that is slow to run still gets to read
 * in some bursts.
 * A burst is clean if the hog was never switched out during its spin: then
 * the adder did not run at all in it.  Thread start-up has its own time
 * budget, so that a slow start does not eat the bursts' one; the early
 * exit counts only clean bursts that the reader read in, the ones the
 * verdict rests on.
 */
static int pn_ct_hog_hog(struct pn_ct_hog *h)
{
	u64 end = ktime_get_ns() + PN_CT_HOG_STARTUP_MS * NSEC_PER_MSEC;
	unsigned int i, good = 0;

	sched_set_fifo(current);
	while (atomic_read(&h->ready) < 2 && ktime_get_ns() < end)
		usleep_range(100, 200);
	h->started = atomic_read(&h->ready) >= 2;
	end = ktime_get_ns() + PN_CT_HOG_LIMIT_MS * NSEC_PER_MSEC;
	for (i = 0; h->started && i < PN_CT_HOG_MAX_BURSTS; i++) {
		unsigned long sw;
		u64 t;

		usleep_range(PN_CT_HOG_GAP_US, PN_CT_HOG_GAP_US + 1000);
		/* the reader marked burst i - 1 a whole gap ago, if at all */
		if (i && h->clean[i - 1] && READ_ONCE(h->read_in[i - 1]))
			good++;
		if (i >= PN_CT_HOG_MIN_BURSTS && good >= PN_CT_HOG_WANT_SEEN)
			break;
		if (ktime_get_ns() >= end)
			break;
		sw = current->nvcsw + current->nivcsw;
		/* odd: burst i; pairs with the reader's acquire */
		smp_store_release(&h->seq, 2 * i + 1);
		t = ktime_get_ns();
		while (ktime_get_ns() - t < PN_CT_HOG_SPIN_US * NSEC_PER_USEC ||
		       (!READ_ONCE(h->read_in[i]) &&
			ktime_get_ns() - t < PN_CT_HOG_SPIN_MAX_US * NSEC_PER_USEC))
			cpu_relax();
		h->clean[i] = current->nvcsw + current->nivcsw == sw;
		/* even: burst over; pairs with the reader's smp_rmb() */
		smp_store_release(&h->seq, 2 * i + 2);
	}
	h->bursts = i;
	complete(&h->hog_done);
	return 0;
}

/*
 * Another CPU: approx and precise sum, attributed to a burst when the
 * burst number is odd and the same before and after both reads (the
 * acquire/rmb pair of a seqcount reader; the adder's stores before it
 * was switched out are ordered before the hog's odd store by the context
 * switch, its stores after the burst after the hog's even store).
 */
static int pn_ct_hog_reader(struct pn_ct_hog *h)
{
	unsigned int s1, s2;
	unsigned long n = 0;

	atomic_inc(&h->ready);
	while (!READ_ONCE(h->stop)) {
		long a, p;

		s1 = smp_load_acquire(&h->seq);	/* the sums after seq */
		a = pn_ctree_approx_sum(h->tree);
		p = pn_ctree_precise_sum(h->tree);
		smp_rmb();	/* the sums before the second load of seq */
		s2 = READ_ONCE(h->seq);
		if ((s1 & 1) && s1 == s2) {
			unsigned int b = s1 / 2;

			h->burst_reads++;
			WRITE_ONCE(h->read_in[b], true);
			if ((a < p && (unsigned long)(p - a) > h->under) ||
			    (a > p && (unsigned long)(a - p) > h->over)) {
				h->bad[b] = true;
				if (abs(p - a) > abs(h->worst))
					h->worst = p - a;
			}
		}
		if (!(++n & 1023))
			cond_resched();
	}
	return 0;
}

/*
 * A task preempted between its level-0 add and the carry propagation
 * must not hold the carry.  The adder's every add carries about
 * 8 * (under + over + 2^order * batch); a SCHED_FIFO hog on its CPU
 * preempts it every few ms for 5 to 20 ms; a reader on another CPU
 * compares approx with precise.  During a clean burst the adder is off
 * its CPU, so the tree is quiescent and the range must hold exactly: no
 * timing heuristic, no allowance.  Interrupts and host scheduling of the
 * vCPUs cannot cause a report either, since neither lets the adder run
 * while the hog spins.  Without preemption disabled across the add, the
 * hog lands between the two halves of an add in a good share of the
 * bursts (on a preemptible kernel), and every read of such a burst finds
 * approx off by about inc.  On a kernel without full preemption the hog
 * only runs at the adder's cond_resched() (or, voluntary, its
 * might_sleep() points, none of which is inside an add), and the case
 * would pass with or without the fix: it is skipped there.
 */
static void pn_ct_preempted_adder(struct kunit *test)
{
	const struct pn_ctree_topo *t = pn_ctree_topology();
	unsigned int acpu, rcpu, i, nclean = 0, nseen = 0, nbad = 0, nbad_all = 0;
	struct pn_ct_hog_thread th[3];
	struct pn_ct_hog *h;
	const unsigned long batch = 4;

	if (!t->nr_levels)
		kunit_skip(test, "one CPU id: no carries");
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two online CPUs");
	if (!preempt_model_full() && !preempt_model_rt())
		kunit_skip(test,
			   "needs preempt=full or PREEMPT_RT: otherwise the adder is never preempted inside an add");
	h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, h);
	h->tree = pn_ct_new(test, 1, batch);
	h->under = h->tree->under;
	h->over = h->tree->over;
	h->inc = 8 * (long)(h->under + h->over + (batch << t->order)) + 1;
	init_completion(&h->hog_done);
	acpu = cpumask_last(cpu_online_mask);
	rcpu = cpumask_first(cpu_online_mask);

	th[0] = (struct pn_ct_hog_thread){ .fn = pn_ct_hog_adder, .h = h };
	th[1] = (struct pn_ct_hog_thread){ .fn = pn_ct_hog_hog, .h = h };
	th[2] = (struct pn_ct_hog_thread){ .fn = pn_ct_hog_reader, .h = h };
	for (i = 0; i < 3; i++) {
		th[i].task = kthread_create_on_cpu(pn_ct_hog_thread_main, &th[i],
						   i == 2 ? rcpu : acpu,
						   "pn_ct_hog/%u");
		if (IS_ERR(th[i].task)) {
			while (i--)
				kthread_stop(th[i].task);	/* never woken */
			KUNIT_FAIL(test, "kthread_create_on_cpu() failed");
			return;
		}
	}
	for (i = 0; i < 3; i++)
		wake_up_process(th[i].task);
	wait_for_completion(&h->hog_done);
	WRITE_ONCE(h->stop, true);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, kthread_stop(th[i].task), 0);

	for (i = 0; i < h->bursts; i++) {
		nbad_all += h->bad[i];
		if (!h->clean[i])
			continue;
		nclean++;
		nseen += h->read_in[i];
		nbad += h->bad[i];
	}
	kunit_info(test, "CPU %u: %u bursts, %u clean, %u read in, %lu reads, %llu add pairs; range -%lu..+%lu, inc %ld\n",
		   acpu, h->bursts, nclean, nseen, h->burst_reads, h->pairs,
		   h->under, h->over, h->inc);
	KUNIT_EXPECT_EQ_MSG(test, nbad, 0U,
			    "approx - precise = %ld while the adder was off its CPU (range -%lu..+%lu): a preempted add held its carry (%u of %u bursts, %u counting unclean ones)",
			    -h->worst, h->under, h->over, nbad, nseen, nbad_all);
	KUNIT_EXPECT_TRUE_MSG(test, h->started,
			      "adder and reader did not start within %u ms",
			      PN_CT_HOG_STARTUP_MS);
	/* The case proves nothing unless the reader read inside some burst. */
	KUNIT_EXPECT_GT(test, nseen, 0U);
	KUNIT_EXPECT_GT(test, h->pairs, 0ULL);
	/* Every add was paired: quiescent now, exactly zero. */
	pn_ct_check(test, h->tree, 0);
}

/* ---- use after destroy ---- */

/* Clears the misuse budget if the case ends early (an assertion). */
static void pn_ct_misuse_budget_clear(void *unused)
{
	pn_ctree_expect_misuse(0);
}

#define PN_CT_MISUSES_PER_TREE	6

/*
 * After pn_ctree_destroy_many() every tree of the array (not only the
 * first, whose level-0 pointer used to be the only one cleared) is
 * destroyed: adds and sets are dropped, sums are 0, nothing is written
 * through a NULL or stale per-CPU pointer.  Each use would WARN once;
 * the case announces exactly the uses it makes (pn_ctree_expect_misuse())
 * and checks that the budget was used up exactly: a missing check leaves
 * some of it, an extra one WARNs (and fails the lanes).  Destroying
 * again, as the fixture's release does, is a no-op.
 */
static int pn_ct_add_here(void *arg)
{
	pn_ctree_add(arg, 1000003);
	return raw_smp_processor_id();
}

/*
 * The precise sum and set read only the CPUs ever brought up
 * (pn_cpus_seen).  Bring up a possible CPU that never ran (the rt lane
 * boots 4 of 8), add on it, and the sum must include the add, before and
 * after the CPU goes offline again; a set must account for it too.
 * Skipped when every possible CPU is already up.
 */
static void pn_ct_cpu_first_up(struct kunit *test)
{
	struct pn_ctree *c = pn_ct_new(test, 1, 32);
	unsigned int cpu, target = nr_cpu_ids;
	int ret;

	for_each_possible_cpu(cpu) {
		if (!cpu_online(cpu) && !cpumask_test_cpu(cpu, pn_cpus_seen)) {
			target = cpu;
			break;
		}
	}
	if (target == nr_cpu_ids)
		kunit_skip(test, "every possible CPU was up already");
	pn_ctree_add(c, 5);
	ret = add_cpu(target);
	if (ret)
		kunit_skip(test, "add_cpu(%u): %d", target, ret);
	KUNIT_EXPECT_TRUE(test, cpumask_test_cpu(target, pn_cpus_seen));
	KUNIT_EXPECT_EQ(test, smp_call_on_cpu(target, pn_ct_add_here, c, false),
			(int)target);
	KUNIT_EXPECT_EQ(test, pn_ctree_precise_sum(c), 1000008L);
	KUNIT_EXPECT_EQ(test, remove_cpu(target), 0);
	KUNIT_EXPECT_EQ(test, pn_ctree_precise_sum(c), 1000008L);
	pn_ctree_set(c, 7);
	KUNIT_EXPECT_EQ(test, pn_ctree_precise_sum(c), 7L);
}

static void pn_ct_use_after_destroy(struct kunit *test)
{
	struct pn_ctree *c = pn_ct_new(test, 2, 8);
	unsigned int i;

	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test,
							pn_ct_misuse_budget_clear,
							NULL), 0);
	pn_ctree_add(&c[0], 5);
	pn_ctree_add(&c[1], 7);
	pn_ctree_destroy_many(c, 2);
	for (i = 0; i < 2; i++)
		KUNIT_EXPECT_TRUE(test, !c[i].level0);

	KUNIT_EXPECT_EQ(test,
			pn_ctree_expect_misuse(2 * PN_CT_MISUSES_PER_TREE), 0U);
	for (i = 0; i < 2; i++) {
		pn_ctree_add(&c[i], 1000);					/* 1 */
		pn_ctree_set(&c[i], 42);					/* 2 */
		KUNIT_EXPECT_EQ(test, pn_ctree_precise_sum(&c[i]), 0);		/* 3 */
		KUNIT_EXPECT_EQ(test, pn_ctree_approx_sum(&c[i]), 0);		/* 4 */
		KUNIT_EXPECT_EQ(test, pn_ctree_precise_sum_positive(&c[i]), 0); /* 5 */
		KUNIT_EXPECT_EQ(test, pn_ctree_approx_compare_value(&c[i], 0), 0); /* 6 */
	}
	KUNIT_EXPECT_EQ_MSG(test, pn_ctree_expect_misuse(0), 0U,
			    "fewer uses of the destroyed trees were caught than made");

	pn_ctree_destroy_many(c, 2);	/* again: no-op, no misuse */
	for (i = 0; i < 2; i++)
		KUNIT_EXPECT_TRUE(test, !c[i].level0);
}

static int pn_ct_suite_init(struct kunit_suite *suite)
{
	/* Module init chose the topology before the suites run. */
	return pn_ctree_topology()->order == order_base_2(nr_cpu_ids) ? 0 : -ENODEV;
}

static struct kunit_case pn_ct_cases[] = {
	KUNIT_CASE(pn_ct_topology_shapes),
	KUNIT_CASE(pn_ct_accuracy_table),
	KUNIT_CASE(pn_ct_batch_vs_mainline),
	KUNIT_CASE(pn_ct_carry_exhaustive_8bit),
	KUNIT_CASE(pn_ct_carry_full_width),
	KUNIT_CASE(pn_ct_init_rejects),
	KUNIT_CASE(pn_ct_every_batch),
	KUNIT_CASE(pn_ct_degenerate_shape),
	KUNIT_CASE(pn_ct_random_walk),
	KUNIT_CASE(pn_ct_no_early_carry),
	KUNIT_CASE(pn_ct_aligned_add_skips_items),
	KUNIT_CASE(pn_ct_level0_wraps),
	KUNIT_CASE(pn_ct_array_rows),
	KUNIT_CASE(pn_ct_inflight_no_wrap),
	KUNIT_CASE(pn_ct_set_values),
	KUNIT_CASE(pn_ct_init_many_independent),
	KUNIT_CASE(pn_ct_compare_edges),
	KUNIT_CASE(pn_ct_threads_pinned),
	KUNIT_CASE(pn_ct_preempted_adder),
	KUNIT_CASE(pn_ct_use_after_destroy),
	KUNIT_CASE(pn_ct_cpu_first_up),
	{}
};

static struct kunit_suite pn_ct_suite = {
	.name = "pcpu_next_counter_tree",
	.suite_init = pn_ct_suite_init,
	.test_cases = pn_ct_cases,
};

kunit_test_suite(pn_ct_suite);
