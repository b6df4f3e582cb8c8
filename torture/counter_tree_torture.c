// SPDX-License-Identifier: GPL-2.0
/*
 * counter_tree stress and bench for the debugfs control plane (test=tree).
 *
 * The stress checks the two promises of the tree under concurrency.
 * threads= adders add random increments (1..10^4 or around the batch,
 * either sign; worker 0 drifts upwards) to objects= trees of one
 * pn_ctree_init_many() array and keep private totals, while one more
 * worker reads both sums of every tree.  The run is cut into rounds of
 * PN_TREE_ROUND_MS, every third of which starts by setting each tree to a
 * random value.  After every round, with the adders stopped (quiescent),
 * the precise sum must equal the set value plus every adder's total, and
 * the approximation must lie inside the tree's accuracy range
 * [precise - under, precise + over]; the result words report the largest
 * deviation seen on each side against under and over.  live_max_dev is
 * the reader's racy view during the rounds (adds in flight widen the
 * range), printed for information and not checked.
 *
 * The bench compares, per operation and across the same workers,
 * pn_ctree_add() with percpu_counter_add() and with atomic_long_add() on
 * one shared atomic; pn_ctree_approx_sum() with percpu_counter_read() and
 * percpu_counter_sum(); pn_ctree_precise_sum() with percpu_counter_sum().
 * It then prints the accuracy range and the bytes per counter of the live
 * shape and of a 64-CPU shape next to percpu_counter's worst read error,
 * and checks that the precise sum accounts for every add it made.
 *
 * Only the public API is used, plus, for the shapes of machines the bench
 * does not run on, pn_ctree_topo_compute() and pn_ctree_accuracy() from
 * internal/counter_tree.h.
 */

#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/percpu_counter.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>

#include <pcpu_next/counter_tree.h>
#include "internal/counter_tree.h"
#include "torture.h"

#define PN_TREE_DEF_BATCH	32
#define PN_TREE_DEF_TREES	4
#define PN_TREE_MAX_TREES	64
#define PN_TREE_ROUND_MS	250

/* Cache-line aligned items for @nr trees (power-of-two kmalloc sizes are). */
static struct pn_ctree_item *pn_tree_alloc_items(unsigned int nr)
{
	size_t sz = max_t(size_t, pn_ctree_items_size_many(nr), SMP_CACHE_BYTES);

	return kzalloc(roundup_pow_of_two(sz), GFP_KERNEL);
}

struct pn_tree_stress {
	struct pn_ctree *trees;
	unsigned int nr_trees;
	unsigned int nr_adders;		/* workers 0..nr_adders-1; then the reader */
	unsigned long batch;
	u64 seed;
	s64 *totals;			/* [adder][tree], private to each adder */
	u64 *ops;			/* [adder] */
	unsigned long live_dev;		/* reader's largest |approx - precise| */
	unsigned long samples;
};

/* An increment in 1..10^4 or around the batch, either sign. */
static long pn_tree_rand_inc(u64 *rnd, unsigned long batch, bool drift_up)
{
	u32 r = pn_rand_state(rnd);
	long inc;

	if (!(r & 7))
		inc = (r >> 8) % 10000 + 1;
	else
		inc = (r >> 8) % (2 * batch) + 1;
	/* Half negative; a drifting worker only a quarter of the time. */
	if ((r & 8) && (!drift_up || (r & 16)))
		inc = -inc;
	return inc;
}

static int pn_tree_stress_reader(struct pn_run *run, struct pn_tree_stress *s)
{
	unsigned long max = 0, n = 0;
	unsigned int i;

	while (!pn_should_stop(run)) {
		for (i = 0; i < s->nr_trees; i++) {
			long a = pn_ctree_approx_sum(&s->trees[i]);
			long p = pn_ctree_precise_sum(&s->trees[i]);
			unsigned long d = a > p ? a - p : p - a;

			max = max(max, d);
			n++;
		}
		cond_resched();
	}
	s->live_dev = max(s->live_dev, max);
	s->samples += n;
	return 0;
}

static int pn_tree_stress_worker(struct pn_run *run, unsigned int idx,
				 void *arg)
{
	struct pn_tree_stress *s = arg;
	u64 rnd = s->seed + 0x9e3779b97f4a7c15ULL * (idx + 1);
	s64 *tot = &s->totals[idx * s->nr_trees];
	u64 n = 0;

	if (idx == s->nr_adders)
		return pn_tree_stress_reader(run, s);
	while (!pn_should_stop(run)) {
		unsigned int t = pn_rand_state(&rnd) % s->nr_trees;
		long inc = pn_tree_rand_inc(&rnd, s->batch, idx == 0);

		pn_ctree_add(&s->trees[t], inc);
		tot[t] += inc;
		if (!(++n & 255))
			cond_resched();
	}
	s->ops[idx] += n;
	return 0;
}

static int pn_tree_stress(struct pn_run *run)
{
	struct pn_tree_stress s = {};
	struct pn_ctree_item *items = NULL;
	unsigned int rounds, round, i, w;
	unsigned long below = 0, above = 0;
	u64 ops = 0;
	s64 *expect = NULL;
	int ret = -ENOMEM;

	s.batch = run->p.batch ? : PN_TREE_DEF_BATCH;
	s.nr_trees = min(run->p.objects ? : PN_TREE_DEF_TREES, PN_TREE_MAX_TREES);
	s.nr_adders = run->p.threads;
	s.seed = run->p.seed;
	if (s.batch < 2 || !is_power_of_2(s.batch)) {
		pn_fail(run, "batch_must_be_a_power_of_two_above_1");
		return -EINVAL;
	}
	if (s.batch > pn_ctree_batch_max()) {
		pn_fail(run, "batch_above_pn_ctree_batch_max");
		return -EINVAL;
	}
	rounds = clamp(run->p.duration_ms / PN_TREE_ROUND_MS, 1U, 40U);

	s.trees = kcalloc(s.nr_trees, sizeof(*s.trees), GFP_KERNEL);
	items = pn_tree_alloc_items(s.nr_trees);
	s.totals = kcalloc(s.nr_adders * s.nr_trees, sizeof(*s.totals), GFP_KERNEL);
	s.ops = kcalloc(s.nr_adders, sizeof(*s.ops), GFP_KERNEL);
	expect = kcalloc(s.nr_trees, sizeof(*expect), GFP_KERNEL);
	if (!s.trees || !items || !s.totals || !s.ops || !expect)
		goto out_free;
	ret = pn_ctree_init_many(s.trees, items, s.nr_trees, s.batch, GFP_KERNEL);
	if (ret)
		goto out_free;

	for (round = 0; round < rounds && !ret; round++) {
		/* Every third round starts from a set value, either sign. */
		if (round % 3 == 2) {
			for (i = 0; i < s.nr_trees; i++) {
				expect[i] = (s32)pn_rand(run) * 4096LL;
				pn_ctree_set(&s.trees[i], expect[i]);
			}
		}
		memset(s.totals, 0, s.nr_adders * s.nr_trees * sizeof(*s.totals));
		ret = pn_run_threads(run, s.nr_adders + 1, run->p.pin,
				     run->p.duration_ms / rounds,
				     pn_tree_stress_worker, &s);
		if (ret)
			break;
		/* Quiescent: kthread_stop() ordered the adders' stores. */
		for (i = 0; i < s.nr_trees; i++) {
			struct pn_ctree *c = &s.trees[i];
			long p, a;

			for (w = 0; w < s.nr_adders; w++)
				expect[i] += s.totals[w * s.nr_trees + i];
			p = pn_ctree_precise_sum(c);
			a = pn_ctree_approx_sum(c);
			if (p != expect[i]) {
				pn_fail(run, "tree%u_precise=%ld_expected=%lld", i,
					p, expect[i]);
				ret = -EIO;
			}
			if (a < p && (unsigned long)(p - a) > c->under) {
				pn_fail(run, "tree%u_approx_%lu_below", i, p - a);
				ret = -EIO;
			}
			if (a > p && (unsigned long)(a - p) > c->over) {
				pn_fail(run, "tree%u_approx_%lu_above", i, a - p);
				ret = -EIO;
			}
			if (a < p)
				below = max(below, (unsigned long)(p - a));
			else
				above = max(above, (unsigned long)(a - p));
		}
	}
	for (w = 0; w < s.nr_adders; w++)
		ops += s.ops[w];
	pn_printf(run,
		  "trees=%u batch=%lu rounds=%u adds=%llu max_below=%lu under=%u max_above=%lu over=%u live_max_dev=%lu samples=%lu ",
		  s.nr_trees, s.batch, round, ops, below, s.trees[0].under,
		  above, s.trees[0].over, s.live_dev, s.samples);
	pn_ctree_destroy_many(s.trees, s.nr_trees);
out_free:
	kfree(expect);
	kfree(s.ops);
	kfree(s.totals);
	kfree(items);
	kfree(s.trees);
	return ret;
}

enum pn_tree_bench_op {
	PN_TB_TREE_ADD,
	PN_TB_PC_ADD,
	PN_TB_ATOMIC_ADD,
	PN_TB_TREE_APPROX,
	PN_TB_PC_READ,
	PN_TB_PC_SUM,
	PN_TB_TREE_PRECISE,
	PN_TB_NR,
};

struct pn_tree_bench {
	struct pn_ctree tree;
	struct percpu_counter pc;
	atomic_long_t shared;
	enum pn_tree_bench_op op;
	u64 *ops;			/* [worker] */
	long sink;
};

static int pn_tree_bench_worker(struct pn_run *run, unsigned int idx, void *arg)
{
	struct pn_tree_bench *b = arg;
	long sink = 0;
	u64 n = 0;
	int i;

	while (!pn_should_stop(run)) {
		for (i = 0; i < 64; i++) {
			switch (b->op) {
			case PN_TB_TREE_ADD:
				pn_ctree_add(&b->tree, 1);
				break;
			case PN_TB_PC_ADD:
				percpu_counter_add(&b->pc, 1);
				break;
			case PN_TB_ATOMIC_ADD:
				atomic_long_add(1, &b->shared);
				break;
			case PN_TB_TREE_APPROX:
				sink += pn_ctree_approx_sum(&b->tree);
				break;
			case PN_TB_PC_READ:
				sink += percpu_counter_read(&b->pc);
				break;
			case PN_TB_PC_SUM:
				sink += percpu_counter_sum(&b->pc);
				break;
			case PN_TB_TREE_PRECISE:
				sink += pn_ctree_precise_sum(&b->tree);
				break;
			default:
				return -EINVAL;
			}
		}
		n += 64;
		cond_resched();
	}
	b->ops[idx] = n;
	WRITE_ONCE(b->sink, sink);
	return 0;
}

static int pn_tree_bench_phase(struct pn_run *run, struct pn_tree_bench *b,
			       enum pn_tree_bench_op op, unsigned int ms,
			       u64 *ops, struct pn_span *s)
{
	unsigned int i;
	int ret;

	b->op = op;
	memset(b->ops, 0, run->p.threads * sizeof(*b->ops));
	pn_span_next(run, s);
	ret = pn_run_threads(run, run->p.threads, run->p.pin, ms,
			     pn_tree_bench_worker, b);
	if (ret == -EINTR && !pn_aborted(run)) {
		/*
		 * A worker was stopped before it ever ran (kthread_stop()
		 * says -EINTR then): seen under an overloaded emulator.
		 * Measure the phase again, once, and say so.
		 */
		pn_printf(run, "# phase %d: a worker never started, retried\n", op);
		memset(b->ops, 0, run->p.threads * sizeof(*b->ops));
		*s = (struct pn_span){};	/* a window of its own */
		pn_span_next(run, s);
		ret = pn_run_threads(run, run->p.threads, run->p.pin, ms,
				     pn_tree_bench_worker, b);
	}
	if (ret)
		pn_printf(run, "# phase %d: ret=%d\n", op, ret);
	*ops = 0;
	for (i = 0; i < run->p.threads; i++)
		*ops += b->ops[i];
	return ret;
}

/*
 * Accuracy and memory of a tree of 2^order slots, nr CPUs, for the bench.
 * Bytes per counter are those of one counter of an array of
 * PN_TREE_BYTES_ARRAY (the rss_stat shape), every byte counted on both
 * sides: our struct, 32-bit level 0 and a quarter of the array's
 * interleaved item rows; percpu_counter's struct and s32 per CPU.
 */
#define PN_TREE_BYTES_ARRAY	4

static void pn_tree_bench_shape(struct pn_run *run, const char *what,
				unsigned int nr, unsigned long batch,
				unsigned long pc_batch)
{
	const unsigned int n = PN_TREE_BYTES_ARRAY;
	size_t row = ALIGN(n * sizeof(struct pn_ctree_item), SMP_CACHE_BYTES);
	size_t items, level0 = nr * sizeof(u32), pc;
	struct pn_ctree_topo t;
	unsigned long under, over;

	pn_ctree_topo_compute(order_base_2(nr), &t);
	pn_ctree_accuracy(&t, ilog2(batch), nr, &under, &over);
	items = DIV_ROUND_UP(t.nr_items * row, n);
	pc = nr * sizeof(s32) + sizeof(struct percpu_counter);
	pn_printf(run,
		  "# %s: %u CPUs, levels=%u items=%u: tree batch=%lu under=%lu over=%lu max|err|=%lu; percpu_counter batch=%lu worst |read err| batch*CPUs=%lu\n",
		  what, nr, t.nr_levels, t.nr_items, batch, under, over,
		  max(under, over), pc_batch, pc_batch * nr);
	pn_printf(run,
		  "# %s: bytes/counter in an array of %u: tree=%zu (level0 %zu + items %zu + struct %zu) percpu_counter=%zu (per-CPU s32 %zu + struct %zu)\n",
		  what, n, level0 + items + sizeof(struct pn_ctree), level0,
		  items, sizeof(struct pn_ctree), pc, nr * sizeof(s32),
		  sizeof(struct percpu_counter));
}

static int pn_tree_bench(struct pn_run *run)
{
	static const struct {
		enum pn_tree_bench_op ours, base;
		const char *name, *base_name;
	} rows[] = {
		{ PN_TB_TREE_ADD, PN_TB_PC_ADD, "tree_add", "percpu_counter_add" },
		{ PN_TB_TREE_ADD, PN_TB_ATOMIC_ADD, "tree_add", "atomic_long_add (shared)" },
		{ PN_TB_TREE_APPROX, PN_TB_PC_READ, "tree_approx_sum", "percpu_counter_read" },
		{ PN_TB_TREE_APPROX, PN_TB_PC_SUM, "tree_approx_sum", "percpu_counter_sum" },
		{ PN_TB_TREE_PRECISE, PN_TB_PC_SUM, "tree_precise_sum", "percpu_counter_sum" },
	};
	struct pn_span sp[PN_TB_NR] = {};
	u64 ops[PN_TB_NR];
	bool done[PN_TB_NR] = {};
	struct pn_ctree_item *items;
	struct pn_tree_bench *b;
	unsigned long batch = run->p.batch ? : PN_TREE_DEF_BATCH;
	unsigned int i, ms = max(run->p.duration_ms / PN_TB_NR, 100U);
	int ret = -ENOMEM;

	if (batch < 2 || !is_power_of_2(batch) || batch > pn_ctree_batch_max()) {
		pn_printf(run, "# batch must be a power of two, 2..pn_ctree_batch_max()\n");
		return -EINVAL;
	}
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	items = pn_tree_alloc_items(1);
	if (!b || !items)
		goto out_free;
	b->ops = kcalloc(run->p.threads, sizeof(*b->ops), GFP_KERNEL);
	if (!b->ops)
		goto out_free;
	ret = pn_ctree_init(&b->tree, items, batch, GFP_KERNEL);
	if (ret)
		goto out_free;
	ret = percpu_counter_init(&b->pc, 0, GFP_KERNEL);
	if (ret)
		goto out_tree;

	for (i = 0; i < ARRAY_SIZE(rows) && !ret; i++) {
		enum pn_tree_bench_op ops2[2] = { rows[i].ours, rows[i].base };
		unsigned int k;

		for (k = 0; k < 2 && !ret; k++) {
			if (done[ops2[k]])
				continue;
			ret = pn_tree_bench_phase(run, b, ops2[k], ms,
						  &ops[ops2[k]], &sp[ops2[k]]);
			done[ops2[k]] = true;
		}
		if (!ret)
			pn_bench_row(run, rows[i].name, ops[rows[i].ours],
				     &sp[rows[i].ours], rows[i].base_name,
				     ops[rows[i].base], &sp[rows[i].base]);
	}
	if (!ret) {
		pn_tree_bench_shape(run, "this VM", num_possible_cpus(), batch,
				    percpu_counter_batch);
		pn_tree_bench_shape(run, "64 possible", 64, batch,
				    max(32UL, 2UL * 64));
		/* Every add of a phase is accounted: the sums must say so. */
		pn_printf(run,
			  "# exact after adds: tree precise=%ld adds=%llu, percpu_counter sum=%lld adds=%llu\n",
			  pn_ctree_precise_sum(&b->tree), ops[PN_TB_TREE_ADD],
			  percpu_counter_sum(&b->pc), ops[PN_TB_PC_ADD]);
		if (pn_ctree_precise_sum(&b->tree) != (long)ops[PN_TB_TREE_ADD])
			ret = -EIO;
	}
	percpu_counter_destroy(&b->pc);
out_tree:
	pn_ctree_destroy(&b->tree);
out_free:
	if (b)
		kfree(b->ops);
	kfree(items);
	kfree(b);
	return ret;
}

const struct pn_test pn_tree_test = {
	.name = "tree",
	.desc = "hierarchical per-CPU counter tree: exact precise sum, approx within bound",
	.def_duration_ms = 2000,
	.stress = pn_tree_stress,
	.bench = pn_tree_bench,
};
