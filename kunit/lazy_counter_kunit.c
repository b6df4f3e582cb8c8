// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite pcpu_next_lazy: lazy_counter.c.
 *
 * Every case checks exact values against a reference kept by the test
 * itself, and the mode (lazy or upgraded) where it matters, so that a lost
 * remote update, a local add that lands in the wrong place, a leaked or
 * doubled group, or an upgrade that does not happen fails the case.
 */

#include <kunit/resource.h>
#include <kunit/test.h>
#include <linux/cpu.h>
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/panic.h>
#include <linux/percpu_counter.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include <pcpu_next/counter_tree.h>
#include <pcpu_next/lazy_counter.h>

#include "internal/core.h"
#include "internal/lazy_counter.h"

#define LK_NR		4	/* counters per array */
#define LK_MAX_THREADS	4
#define LK_REMOTE_ITERS	1500	/* add_remote calls per thread per run */
#define LK_REPEAT	6	/* upgrade-under-load repetitions */
#define LK_WAIT_MS	10000	/* the longest wait for another thread */

static int lk_upgrade_to(struct lazy_counter *c, unsigned int nr,
			 enum lazy_counter_target target)
{
	return lazy_counter_upgrade_many(c, nr, target, GFP_KERNEL);
}

static int lk_upgrade(struct lazy_counter *c, unsigned int nr)
{
	return lazy_counter_upgrade_many(c, nr, LAZY_COUNTER_FLAT, GFP_KERNEL);
}

/* ---- pinned kthreads ------------------------------------------------- */

struct lk_thread {
	struct task_struct *task;
	struct completion done;
	int (*fn)(struct lk_thread *t);
	void *arg;
	unsigned int idx;
	int ret;
};

static int lk_thread_main(void *data)
{
	struct lk_thread *t = data;

	t->ret = t->fn(t);
	complete(&t->done);
	set_current_state(TASK_INTERRUPTIBLE);
	while (!kthread_should_stop()) {
		schedule();
		set_current_state(TASK_INTERRUPTIBLE);
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

/* Start up to LK_MAX_THREADS threads, thread i on the i-th online CPU. */
static unsigned int lk_start(struct kunit *test, struct lk_thread *t,
			     unsigned int nr, int (*fn)(struct lk_thread *t),
			     void *arg)
{
	unsigned int i = 0, cpu;

	for_each_online_cpu(cpu) {
		if (i == nr)
			break;
		t[i].fn = fn;
		t[i].arg = arg;
		t[i].idx = i;
		init_completion(&t[i].done);
		t[i].task = kthread_create_on_cpu(lk_thread_main, &t[i], cpu,
						  "lazy_kunit/%u");
		KUNIT_ASSERT_FALSE(test, IS_ERR(t[i].task));
		get_task_struct(t[i].task);
		wake_up_process(t[i].task);
		i++;
	}
	return i;
}

static void lk_join(struct kunit *test, struct lk_thread *t, unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		wait_for_completion(&t[i].done);
		kthread_stop(t[i].task);
		put_task_struct(t[i].task);
		KUNIT_EXPECT_EQ(test, t[i].ret, 0);
	}
}

/* ---- shared state of the hammer cases -------------------------------- */

struct lk_hammer {
	struct lazy_counter c[LK_NR];
	s64 ref[LK_MAX_THREADS][LK_NR];	/* per thread, private */
	atomic_t progress;		/* add_remote calls done, all threads */
	bool upgrade_in_thread;		/* thread 0 upgrades at half time */
	bool upgraded;			/* thread 0's upgrade returned */
	enum lazy_counter_target target;
	int upgrade_ret;
};

static s64 lk_amount(unsigned int idx, unsigned int n)
{
	/*
	 * Mixed signs and sizes, different per thread; mostly small, so that
	 * the flat target mostly takes its per-CPU fast path.
	 */
	s64 v = (s64)((n * 2654435761u + idx * 40503u) % 9) - 4;

	return (n % 97 == 0) ? v << 30 : v;
}

static int lk_remote_fn(struct lk_thread *t)
{
	struct lk_hammer *h = t->arg;
	unsigned int n;

	for (n = 0; n < LK_REMOTE_ITERS; n++) {
		unsigned int i = (n + t->idx) % LK_NR;
		s64 v = lk_amount(t->idx, n);

		lazy_counter_add_remote(&h->c[i], v);
		h->ref[t->idx][i] += v;
		if (!(n & 7))
			atomic_add(8, &h->progress);
		if (h->upgrade_in_thread && t->idx == 0 &&
		    n == LK_REMOTE_ITERS / 2) {
			h->upgrade_ret = lk_upgrade_to(h->c, LK_NR, h->target);
			WRITE_ONCE(h->upgraded, true);
		}
		if (!(n & 255))
			cond_resched();
	}
	return 0;
}

static void lk_expect_sums(struct kunit *test, struct lk_hammer *h,
			   const s64 *base, unsigned int nthreads)
{
	unsigned int i, t;

	for (i = 0; i < LK_NR; i++) {
		s64 expect = base[i];

		for (t = 0; t < nthreads; t++)
			expect += h->ref[t][i];
		KUNIT_EXPECT_EQ(test, lazy_counter_sum(&h->c[i]), expect);
		KUNIT_EXPECT_EQ(test, lazy_counter_sum_local(&h->c[i]), expect);
	}
}

static unsigned int lk_nthreads(void)
{
	return min_t(unsigned int, num_online_cpus(), LK_MAX_THREADS);
}

/* ---- cases ------------------------------------------------------------- */

/* Lazy mode: local and remote updates, every read flavour exact. */
static void lazy_exact_test(struct kunit *test)
{
	struct lazy_counter c[LK_NR];
	s64 ref[LK_NR];
	unsigned int i, n;

	lazy_counter_init_many(c, 100, LK_NR);
	for (i = 0; i < LK_NR; i++) {
		ref[i] = 100;
		KUNIT_EXPECT_TRUE(test, lazy_counter_is_lazy(&c[i]));
		KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[i]), 100);
	}
	for (n = 0; n < 1000; n++) {
		i = n % LK_NR;
		lazy_counter_add_local(&c[i], (s64)n - 300);
		lazy_counter_add_remote(&c[i], 7 - (s64)(n % 13));
		ref[i] += (s64)n - 300 + 7 - (s64)(n % 13);
	}
	for (i = 0; i < LK_NR; i++) {
		KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[i]), ref[i]);
		KUNIT_EXPECT_EQ(test, lazy_counter_sum_local(&c[i]), ref[i]);
		KUNIT_EXPECT_EQ(test, lazy_counter_read(&c[i]), ref[i]);
		KUNIT_EXPECT_TRUE(test, lazy_counter_is_lazy(&c[i]));
	}
	/* _positive variants clamp a negative total, pass a positive one */
	lazy_counter_add_remote(&c[0], -ref[0] - 5);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[0]), -5);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum_positive(&c[0]), 0);
	KUNIT_EXPECT_EQ(test, lazy_counter_read_positive(&c[0]), 0);
	lazy_counter_add_local(&c[0], 12);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum_positive(&c[0]), 7);
	KUNIT_EXPECT_EQ(test, lazy_counter_read_positive(&c[0]), 7);
	lazy_counter_destroy_many(c, LK_NR);
}

/* Remote adds from pinned kthreads while the owner adds locally. */
static void lazy_remote_kthreads_test(struct kunit *test)
{
	struct lk_thread *t;
	struct lk_hammer *h;
	s64 base[LK_NR];
	unsigned int i, n, nt;

	h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
	t = kunit_kcalloc(test, LK_MAX_THREADS, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, h);
	KUNIT_ASSERT_NOT_NULL(test, t);
	lazy_counter_init_many(h->c, -1000, LK_NR);
	for (i = 0; i < LK_NR; i++)
		base[i] = -1000;
	nt = lk_start(test, t, lk_nthreads(), lk_remote_fn, h);
	for (n = 0; n < 2000; n++) {
		lazy_counter_add_local(&h->c[n % LK_NR], 3);
		base[n % LK_NR] += 3;
	}
	lk_join(test, t, nt);
	lk_expect_sums(test, h, base, nt);
	for (i = 0; i < LK_NR; i++)
		KUNIT_EXPECT_TRUE(test, lazy_counter_is_lazy(&h->c[i]));
	lazy_counter_destroy_many(h->c, LK_NR);
}

/*
 * Upgrade while kthreads hammer add_remote, many times.  Even runs: the
 * owner (this thread) upgrades and its later local adds must go to the
 * per-CPU target (c->local frozen).  Odd runs: a remote thread upgrades
 * while the owner keeps adding locally.  Neither relies on the scheduler
 * for the overlap: the owner waits for the remote adds to be under way,
 * or adds until the remote upgrade returned (both bounded).
 */
static void lk_upgrade_race(struct kunit *test, enum lazy_counter_target target)
{
	struct lazy_counter_stats s0, s1;
	struct lk_thread *t;
	struct lk_hammer *h;
	unsigned int r, i, n, nt;
	s64 base[LK_NR];

	lazy_counter_get_stats(&s0);

	h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
	t = kunit_kcalloc(test, LK_MAX_THREADS, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, h);
	KUNIT_ASSERT_NOT_NULL(test, t);
	for (r = 0; r < LK_REPEAT; r++) {
		bool by_owner = !(r & 1);
		long frozen[LK_NR];
		unsigned long end;

		memset(h, 0, sizeof(*h));
		memset(t, 0, LK_MAX_THREADS * sizeof(*t));
		lazy_counter_init_many(h->c, r * 1000003LL, LK_NR);
		for (i = 0; i < LK_NR; i++)
			base[i] = r * 1000003LL;
		h->upgrade_in_thread = !by_owner;
		h->target = target;
		nt = lk_start(test, t, lk_nthreads(), lk_remote_fn, h);

		end = jiffies + msecs_to_jiffies(LK_WAIT_MS);
		if (by_owner) {
			/* let the remote threads get going, then switch */
			while (atomic_read(&h->progress) < LK_REMOTE_ITERS / 4 &&
			       time_before(jiffies, end))
				usleep_range(100, 200);
			KUNIT_ASSERT_EQ(test,
					lk_upgrade_to(h->c, LK_NR, target), 0);
			for (i = 0; i < LK_NR; i++) {
				struct lazy_counter *c = &h->c[i];

				KUNIT_EXPECT_FALSE(test, lazy_counter_is_lazy(c));
				frozen[i] = READ_ONCE(c->local);
			}
		}
		/* odd runs: on until thread 0's upgrade returned */
		for (n = 0; n < 1000 || (!by_owner && !READ_ONCE(h->upgraded) &&
					 time_before(jiffies, end)); n++) {
			lazy_counter_add_local(&h->c[n % LK_NR], 1 + (n & 7));
			base[n % LK_NR] += 1 + (n & 7);
			if (!(n & 255))
				cond_resched();
		}
		if (by_owner)
			for (i = 0; i < LK_NR; i++)
				KUNIT_EXPECT_EQ(test, READ_ONCE(h->c[i].local),
						frozen[i]);
		lk_join(test, t, nt);
		KUNIT_EXPECT_EQ(test, h->upgrade_ret, 0);
		lk_expect_sums(test, h, base, nt);
		for (i = 0; i < LK_NR; i++) {
			struct lazy_counter *c = &h->c[i];

			KUNIT_EXPECT_FALSE(test, lazy_counter_is_lazy(c));
			KUNIT_EXPECT_LE(test, abs(lazy_counter_read(c) -
						  lazy_counter_sum(c)),
					lazy_counter_read_slack(c));
		}
		lazy_counter_destroy_many(h->c, LK_NR);
	}
	/* every group of every round released */
	lazy_counter_get_stats(&s1);
	KUNIT_EXPECT_EQ(test, s1.live_groups, s0.live_groups);
}

static void lazy_upgrade_race_test(struct kunit *test)
{
	lk_upgrade_race(test, LAZY_COUNTER_FLAT);
}

/* The same against the hierarchical counter tree target. */
static void lazy_tree_upgrade_race_test(struct kunit *test)
{
	lk_upgrade_race(test, LAZY_COUNTER_TREE);
}

/*
 * Tree target: one allocation for many trees, values carried exactly
 * (including a remote total at the encoding's limit), read() within the
 * tree's accuracy range, injected failures leave lazy counters.
 */
static void lazy_tree_target_test(struct kunit *test)
{
	const unsigned int nr = 16;
	struct lazy_counter_stats s0, s1;
	struct lazy_counter *c;
	unsigned int i, step;

	if (!IS_ENABLED(CONFIG_FAULT_INJECTION))
		kunit_skip(test, "needs CONFIG_FAULT_INJECTION");
	c = kunit_kcalloc(test, nr, sizeof(*c), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c);
	lazy_counter_init_many(c, -3, nr);
	lazy_counter_add_remote(&c[0], LAZY_COUNTER_REMOTE_MIN);
	for (i = 1; i < nr; i++)
		lazy_counter_add_remote(&c[i], 100 * (s64)i);

	for (step = 1; step <= 2; step++) {
		lazy_counter_get_stats(&s0);
		pn_fault_fail_nth(PN_FAULT_UPGRADE, step);
		KUNIT_EXPECT_EQ(test, lk_upgrade_to(c, nr, LAZY_COUNTER_TREE),
				-ENOMEM);
		lazy_counter_get_stats(&s1);
		KUNIT_EXPECT_EQ(test, s1.live_groups, s0.live_groups);
		KUNIT_EXPECT_TRUE(test, lazy_counter_is_lazy(&c[nr - 1]));
	}
	pn_fault_fail_nth(PN_FAULT_UPGRADE, 0);

	lazy_counter_get_stats(&s0);
	KUNIT_ASSERT_EQ(test, lk_upgrade_to(c, nr, LAZY_COUNTER_TREE), 0);
	lazy_counter_get_stats(&s1);
	KUNIT_EXPECT_EQ(test, s1.pcpu_allocs, s0.pcpu_allocs + 1);
	KUNIT_EXPECT_EQ(test, s1.live_groups, s0.live_groups + 1);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[0]),
			LAZY_COUNTER_REMOTE_MIN - 3);
	for (i = 1; i < nr; i++) {
		KUNIT_EXPECT_FALSE(test, lazy_counter_is_lazy(&c[i]));
		KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[i]), 100 * (s64)i - 3);
	}
	for (i = 0; i < nr * 312; i++) {
		lazy_counter_add_local(&c[i % nr], 3);
		lazy_counter_add_remote(&c[(i + 1) % nr], -1);
	}
	for (i = 1; i < nr; i++) {
		s64 sum = lazy_counter_sum(&c[i]);

		KUNIT_EXPECT_EQ(test, sum, 100 * (s64)i - 3 + 2 * 312);
		KUNIT_EXPECT_LE(test, abs(lazy_counter_read(&c[i]) - sum),
				lazy_counter_read_slack(&c[i]));
	}
	lazy_counter_destroy_many(c, nr);
	lazy_counter_get_stats(&s1);
	KUNIT_EXPECT_EQ(test, s1.live_groups, s0.live_groups);
}

/*
 * The tree target's inline add takes the tree's fast path up to
 * PN_CTREE_STEP_MAX either way and pn_ctree_add() beyond: every size,
 * from the owner and from remote adders, must land exactly.
 */
static void lazy_tree_large_add_test(struct kunit *test)
{
	static const s64 amounts[] = {
		1, -1, PN_CTREE_STEP_MAX, -PN_CTREE_STEP_MAX,
		PN_CTREE_STEP_MAX + 1, -PN_CTREE_STEP_MAX - 1,
		1LL << 40, -(1LL << 40), S64_MIN / 2, S64_MAX / 2,
	};
	struct lazy_counter *c;
	s64 want = 0;
	unsigned int i;

	c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c);
	lazy_counter_init_many(c, 0, 1);
	KUNIT_ASSERT_EQ(test, lazy_counter_upgrade_many(c, 1, LAZY_COUNTER_TREE,
							GFP_KERNEL), 0);
	for (i = 0; i < ARRAY_SIZE(amounts); i++) {
		lazy_counter_add_local(c, amounts[i]);
		want += amounts[i];
		KUNIT_EXPECT_EQ_MSG(test, lazy_counter_sum(c), want, "add_local %lld",
				    amounts[i]);
		lazy_counter_add_remote(c, -amounts[i]);
		want -= amounts[i];
		KUNIT_EXPECT_EQ_MSG(test, lazy_counter_sum(c), want, "add_remote %lld",
				    -amounts[i]);
	}
	lazy_counter_destroy_many(c, 1);
}

/*
 * Flat target: deltas below the batch stay per CPU (read() does not see
 * them, sum() does), reaching the batch folds.
 */
static void lazy_flat_target_test(struct kunit *test)
{
	long batch = lazy_counter_batch();
	struct lazy_counter c;
	long n;

	lazy_counter_init_many(&c, 50, 1);
	lazy_counter_add_remote(&c, 25);
	KUNIT_ASSERT_EQ(test, lk_upgrade(&c, 1), 0);
	KUNIT_EXPECT_FALSE(test, lazy_counter_is_lazy(&c));
	KUNIT_EXPECT_EQ(test, lazy_counter_read(&c), 75);

	preempt_disable();
	for (n = 0; n < batch - 1; n++)
		lazy_counter_add_local(&c, 1);
	KUNIT_EXPECT_EQ(test, lazy_counter_read(&c), 75);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c), 75 + batch - 1);
	lazy_counter_add_remote(&c, 1);		/* reaches the batch: folds */
	KUNIT_EXPECT_EQ(test, lazy_counter_read(&c), 75 + batch);
	lazy_counter_add_local(&c, -5);
	KUNIT_EXPECT_EQ(test, lazy_counter_read(&c), 75 + batch);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c), 70 + batch);
	/* the negative side: -(batch - 1) stays per CPU, -batch folds */
	lazy_counter_add_local(&c, -(batch - 1) + 5);
	KUNIT_EXPECT_EQ(test, lazy_counter_read(&c), 75 + batch);
	lazy_counter_add_local(&c, -1);
	preempt_enable();
	KUNIT_EXPECT_EQ(test, lazy_counter_read(&c), 75);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c), 75);

	/* positive variants in per-CPU mode */
	lazy_counter_add_remote(&c, -(80 + batch) * 4);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum_positive(&c), 0);
	KUNIT_EXPECT_EQ(test, lazy_counter_read_positive(&c), 0);
	lazy_counter_destroy_many(&c, 1);
}

static int lk_add_here(void *arg)
{
	lazy_counter_add_local(arg, 3);
	return raw_smp_processor_id();
}

/* An online CPU other than ours and the boot CPU, or nr_cpu_ids. */
static unsigned int lk_removable_cpu(void)
{
	unsigned int cpu;

	for_each_online_cpu(cpu)
		if (cpu != raw_smp_processor_id() &&
		    cpu != cpumask_first(cpu_online_mask))
			return cpu;
	return nr_cpu_ids;
}

/*
 * Flat target across CPU hotplug: there is no CPU-dead fold, an offline
 * CPU keeps its delta and sum() still reads it (pn_cpus_seen); the CPU
 * comes back with the delta in place.  Needs two online CPUs.
 */
static void lazy_flat_offline_cpu_test(struct kunit *test)
{
	unsigned int target = lk_removable_cpu();
	struct lazy_counter c;
	int ret;

	if (target >= nr_cpu_ids)
		kunit_skip(test, "needs a second online CPU that is not the boot CPU");
	lazy_counter_init_many(&c, 10, 1);
	KUNIT_ASSERT_EQ(test, lk_upgrade(&c, 1), 0);
	KUNIT_EXPECT_EQ(test, smp_call_on_cpu(target, lk_add_here, &c, false),
			(int)target);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c), 13);
	KUNIT_EXPECT_EQ(test, lazy_counter_read(&c), 10);	/* below batch */
	ret = remove_cpu(target);
	if (ret) {
		lazy_counter_destroy_many(&c, 1);
		kunit_skip(test, "remove_cpu(%u): %d", target, ret);
	}
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c), 13);
	KUNIT_EXPECT_EQ(test, add_cpu(target), 0);
	KUNIT_EXPECT_EQ(test, smp_call_on_cpu(target, lk_add_here, &c, false),
			(int)target);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c), 16);
	lazy_counter_destroy_many(&c, 1);
}

static int lk_add_big(void *arg)
{
	lazy_counter_add_local(arg, 100000);
	return raw_smp_processor_id();
}

/*
 * The read bound survives a batch that hotplug lowers.  The kernel
 * recomputes percpu_counter_batch at every hotplug step; an offline CPU
 * keeps the delta it built under the old batch, so a bound computed from
 * the batch of the moment would be too small.  A module raised the batch
 * (it is an exported int) before the add; taking a CPU offline sets it
 * back to max(32, 2 * online), and read() must still be within
 * lazy_counter_read_slack() of sum().
 */
static void lazy_flat_batch_hotplug_test(struct kunit *test)
{
	int saved = READ_ONCE(percpu_counter_batch);
	unsigned int target = lk_removable_cpu();
	struct lazy_counter c;
	s64 gap;
	int ret;

	if (target >= nr_cpu_ids)
		kunit_skip(test, "needs a second online CPU that is not the boot CPU");
	lazy_counter_init_many(&c, 0, 1);
	KUNIT_ASSERT_EQ(test, lk_upgrade(&c, 1), 0);
	WRITE_ONCE(percpu_counter_batch, 1 << 20);
	KUNIT_EXPECT_EQ(test, smp_call_on_cpu(target, lk_add_big, &c, false),
			(int)target);
	ret = remove_cpu(target);
	if (ret) {
		WRITE_ONCE(percpu_counter_batch, saved);
		lazy_counter_destroy_many(&c, 1);
		kunit_skip(test, "remove_cpu(%u): %d", target, ret);
	}
	/* The kernel's compute_batch_value() ran for the dead CPU. */
	KUNIT_EXPECT_LT(test, READ_ONCE(percpu_counter_batch), 1 << 20);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c), 100000);
	gap = abs(lazy_counter_read(&c) - lazy_counter_sum(&c));
	KUNIT_EXPECT_LE(test, (u64)gap, lazy_counter_read_slack(&c));
	KUNIT_EXPECT_EQ(test, add_cpu(target), 0);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c), 100000);
	lazy_counter_destroy_many(&c, 1);
}

/* Destroy in both modes; groups are counted, released exactly once. */
static void lazy_destroy_modes_test(struct kunit *test)
{
	struct lazy_counter_stats s0, s1;
	struct lazy_counter c[LK_NR];

	lazy_counter_get_stats(&s0);
	lazy_counter_init_many(c, 1, LK_NR);
	lazy_counter_add_remote(&c[1], 2);
	lazy_counter_destroy_many(c, LK_NR);
	lazy_counter_destroy_many(c, LK_NR);	/* second destroy: no-op */
	lazy_counter_get_stats(&s1);
	KUNIT_EXPECT_EQ(test, s1.live_groups, s0.live_groups);
	KUNIT_EXPECT_EQ(test, s1.pcpu_allocs, s0.pcpu_allocs);

	lazy_counter_init_many(c, 1, LK_NR);
	KUNIT_ASSERT_EQ(test, lk_upgrade(c, LK_NR), 0);
	/* upgrading again is a no-op */
	KUNIT_ASSERT_EQ(test, lk_upgrade(c, LK_NR), 0);
	lazy_counter_get_stats(&s1);
	KUNIT_EXPECT_EQ(test, s1.live_groups, s0.live_groups + 1);
	KUNIT_EXPECT_EQ(test, s1.pcpu_allocs, s0.pcpu_allocs + 1);
	KUNIT_EXPECT_EQ(test, s1.upgrades, s0.upgrades + 1);
	lazy_counter_destroy_many(c, LK_NR);
	lazy_counter_destroy_many(c, LK_NR);
	lazy_counter_get_stats(&s1);
	KUNIT_EXPECT_EQ(test, s1.live_groups, s0.live_groups);
}

/* Many counters upgraded together: one allocation, every value kept. */
static void lazy_many_test(struct kunit *test)
{
	const unsigned int nr = 64;
	struct lazy_counter_stats s0, s1;
	struct lazy_counter *c;
	unsigned int i;

	c = kunit_kcalloc(test, nr, sizeof(*c), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c);
	lazy_counter_init_many(c, 7, nr);
	for (i = 0; i < nr; i++) {
		lazy_counter_add_local(&c[i], i);
		lazy_counter_add_remote(&c[i], -2 * (s64)i);
	}
	lazy_counter_get_stats(&s0);
	KUNIT_ASSERT_EQ(test, lk_upgrade(c, nr), 0);
	lazy_counter_get_stats(&s1);
	KUNIT_EXPECT_EQ(test, s1.pcpu_allocs, s0.pcpu_allocs + 1);
	KUNIT_EXPECT_EQ(test, s1.live_groups, s0.live_groups + 1);
	for (i = 0; i < nr; i++) {
		KUNIT_EXPECT_FALSE(test, lazy_counter_is_lazy(&c[i]));
		KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[i]), 7 - (s64)i);
		lazy_counter_add_local(&c[i], 1000 * (s64)i);
		lazy_counter_add_remote(&c[i], 1);
	}
	for (i = 0; i < nr; i++)
		KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[i]),
				8 + 999 * (s64)i);
	lazy_counter_destroy_many(c, nr);
}

/* Encoding edges: the remote total's full range, huge local totals. */
static void lazy_encoding_test(struct kunit *test)
{
	struct lazy_counter c[3];

	lazy_counter_init_many(c, 0, 3);
	lazy_counter_add_remote(&c[0], LAZY_COUNTER_REMOTE_MAX);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[0]), LAZY_COUNTER_REMOTE_MAX);
	KUNIT_EXPECT_TRUE(test, lazy_counter_is_lazy(&c[0]));
	lazy_counter_add_remote(&c[0], -LAZY_COUNTER_REMOTE_MAX);
	lazy_counter_add_remote(&c[0], LAZY_COUNTER_REMOTE_MIN);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[0]), LAZY_COUNTER_REMOTE_MIN);
	KUNIT_EXPECT_EQ(test, lazy_counter_read(&c[0]), LAZY_COUNTER_REMOTE_MIN);
	KUNIT_EXPECT_TRUE(test, lazy_counter_is_lazy(&c[0]));

	/* the local part has the full s64 range */
	lazy_counter_add_local(&c[1], S64_MAX - 3);
	lazy_counter_add_remote(&c[1], 3);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[1]), S64_MAX);
	lazy_counter_add_local(&c[2], S64_MIN + 5);
	lazy_counter_add_remote(&c[2], -5);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[2]), S64_MIN);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum_positive(&c[2]), 0);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum_positive(&c[1]), S64_MAX);

	/* carried across the upgrade exactly */
	KUNIT_ASSERT_EQ(test, lk_upgrade(c, 3), 0);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[0]), LAZY_COUNTER_REMOTE_MIN);
	KUNIT_EXPECT_EQ(test, lazy_counter_read(&c[0]), LAZY_COUNTER_REMOTE_MIN);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[1]), S64_MAX);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[2]), S64_MIN);
	/* and beyond the lazy remote range once upgraded */
	lazy_counter_add_remote(&c[0], LAZY_COUNTER_REMOTE_MIN);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[0]), S64_MIN);
	lazy_counter_add_remote(&c[1], -(1LL << 40));
	lazy_counter_add_local(&c[1], -(1LL << 41));
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[1]),
			S64_MAX - (1LL << 40) - (1LL << 41));
	lazy_counter_destroy_many(c, 3);
}

/*
 * The race of add_remote() with the switch, replayed step by step: the
 * adder saw lazy mode, the upgrade switched, then the adder's atomic add
 * lands in the state word.  The switch kept the remote total in the word
 * (it only set bit 0), and the late add is counted there, exactly once,
 * by read and sum, with nothing redone on the target.  A switch that
 * cleared the word (the xchg of the old protocol) or an adder that also
 * added to the target would each fail one of the sums below.
 */
static void lazy_live_word_test(struct kunit *test)
{
	enum lazy_counter_target target;
	struct lazy_counter c;

	for (target = 0; target < LAZY_COUNTER_NR_TARGETS; target++) {
		lazy_counter_init_many(&c, 40, 1);
		lazy_counter_add_remote(&c, 2);		/* in the word */
		KUNIT_ASSERT_TRUE(test, lazy_counter_is_lazy(&c));
		KUNIT_ASSERT_EQ(test, lk_upgrade_to(&c, 1, target), 0);
		KUNIT_EXPECT_EQ(test, atomic_long_read(&c.state),
				__lazy_counter_encode(2) | LAZY_COUNTER_UPGRADED);
		KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c), 42);

		/* the adder's atomic add, after the switch */
		atomic_long_add(__lazy_counter_encode(7), &c.state);
		KUNIT_EXPECT_FALSE(test, lazy_counter_is_lazy(&c));
		KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c), 49);
		KUNIT_EXPECT_EQ(test, lazy_counter_sum_local(&c), 49);
		KUNIT_EXPECT_LE(test, abs(lazy_counter_read(&c) - 49),
				lazy_counter_read_slack(&c));
		/* later remote adds go to the target, the word stays put */
		lazy_counter_add_remote(&c, 1);
		KUNIT_EXPECT_EQ(test, atomic_long_read(&c.state),
				__lazy_counter_encode(9) | LAZY_COUNTER_UPGRADED);
		KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c), 50);
		lazy_counter_destroy_many(&c, 1);
		KUNIT_EXPECT_EQ(test, atomic_long_read(&c.state),
				LAZY_COUNTER_UPGRADED);
	}
}

/* Injected failure at either allocation step leaves working counters. */
static void lazy_inject_failure_test(struct kunit *test)
{
	struct lazy_counter_stats s0, s1;
	struct lazy_counter c[LK_NR];
	unsigned int step, i;

	if (!IS_ENABLED(CONFIG_FAULT_INJECTION))
		kunit_skip(test, "needs CONFIG_FAULT_INJECTION");
	lazy_counter_init_many(c, 10, LK_NR);
	for (step = 1; step <= 2; step++) {
		lazy_counter_get_stats(&s0);
		pn_fault_fail_nth(PN_FAULT_UPGRADE, step);
		KUNIT_EXPECT_EQ(test, lk_upgrade(c, LK_NR), -ENOMEM);
		lazy_counter_get_stats(&s1);
		KUNIT_EXPECT_EQ(test, s1.upgrade_failures,
				s0.upgrade_failures + 1);
		KUNIT_EXPECT_EQ(test, s1.live_groups, s0.live_groups);
		KUNIT_EXPECT_EQ(test, s1.pcpu_allocs, s0.pcpu_allocs);
		for (i = 0; i < LK_NR; i++) {
			KUNIT_EXPECT_TRUE(test, lazy_counter_is_lazy(&c[i]));
			lazy_counter_add_local(&c[i], 1);
			lazy_counter_add_remote(&c[i], 2);
			KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[i]),
					10 + 3 * (s64)step);
		}
	}
	pn_fault_fail_nth(PN_FAULT_UPGRADE, 0);
	KUNIT_EXPECT_EQ(test, lk_upgrade(c, LK_NR), 0);
	for (i = 0; i < LK_NR; i++) {
		KUNIT_EXPECT_FALSE(test, lazy_counter_is_lazy(&c[i]));
		KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[i]), 16);
	}
	lazy_counter_destroy_many(c, LK_NR);
}

/* Concurrent upgrades of one array: exactly one group survives. */
struct lk_race {
	struct lazy_counter c[LK_NR];
	atomic_t ready;
	unsigned int nt;
	int ret[LK_MAX_THREADS];
};

static int lk_upgrade_fn(struct lk_thread *t)
{
	struct lk_race *r = t->arg;

	atomic_inc(&r->ready);
	while (atomic_read(&r->ready) < r->nt)
		cpu_relax();
	r->ret[t->idx] = lk_upgrade(r->c, LK_NR);
	lazy_counter_add_remote(&r->c[t->idx % LK_NR], 1);
	return 0;
}

static void lazy_concurrent_upgrade_test(struct kunit *test)
{
	struct lk_thread *t;
	struct lazy_counter_stats s0, s1;
	struct lk_race *r;
	unsigned int rep, i, nt;

	r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	t = kunit_kcalloc(test, LK_MAX_THREADS, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, r);
	KUNIT_ASSERT_NOT_NULL(test, t);
	for (rep = 0; rep < LK_REPEAT; rep++) {
		s64 expect[LK_NR] = {};

		memset(r, 0, sizeof(*r));
		memset(t, 0, LK_MAX_THREADS * sizeof(*t));
		r->nt = lk_nthreads();
		lazy_counter_init_many(r->c, 0, LK_NR);
		lazy_counter_get_stats(&s0);
		nt = lk_start(test, t, r->nt, lk_upgrade_fn, r);
		lk_join(test, t, nt);
		lazy_counter_get_stats(&s1);
		KUNIT_EXPECT_EQ(test, s1.live_groups, s0.live_groups + 1);
		KUNIT_EXPECT_EQ(test, s1.upgrades, s0.upgrades + 1);
		for (i = 0; i < nt; i++) {
			KUNIT_EXPECT_EQ(test, r->ret[i], 0);
			expect[i % LK_NR]++;
		}
		for (i = 0; i < LK_NR; i++) {
			KUNIT_EXPECT_FALSE(test, lazy_counter_is_lazy(&r->c[i]));
			KUNIT_EXPECT_EQ(test, lazy_counter_sum(&r->c[i]),
					expect[i]);
		}
		lazy_counter_destroy_many(r->c, LK_NR);
	}
}

/* Automatic upgrade: below the rate nothing happens, above it upgrades. */
static void lazy_auto_upgrade_test(struct kunit *test)
{
	struct lazy_counter_stats s0, s1;
	struct lazy_counter_auto *a;
	struct lazy_counter c[LK_NR];
	unsigned int n, i;

	a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, a);
	lazy_counter_init_many(c, 5, LK_NR);
	lazy_counter_auto_init(a, c, LK_NR, LAZY_COUNTER_FLAT, 200);
	lazy_counter_get_stats(&s0);
	for (n = 0; n < 20; n++)
		lazy_counter_add_remote_auto(a, n % LK_NR, 1);
	flush_work(&a->work);
	lazy_counter_get_stats(&s1);
	KUNIT_EXPECT_EQ(test, s1.auto_triggers, s0.auto_triggers);
	for (i = 0; i < LK_NR; i++)
		KUNIT_EXPECT_TRUE(test, lazy_counter_is_lazy(&c[i]));

	/* a burst well past the threshold within one window */
	for (n = 20; n < 1000; n++)
		lazy_counter_add_remote_auto(a, n % LK_NR, 1);
	flush_work(&a->work);
	lazy_counter_get_stats(&s1);
	KUNIT_EXPECT_GE(test, s1.auto_triggers, s0.auto_triggers + 1);
	KUNIT_EXPECT_EQ(test, s1.auto_upgrades, s0.auto_upgrades + 1);
	for (i = 0; i < LK_NR; i++) {
		KUNIT_EXPECT_FALSE(test, lazy_counter_is_lazy(&c[i]));
		lazy_counter_add_remote_auto(a, i, 10);
		lazy_counter_add_local(&c[i], 1);
		KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[i]), 5 + 250 + 11);
	}
	lazy_counter_auto_destroy(a);
	lazy_counter_get_stats(&s1);
	KUNIT_EXPECT_EQ(test, s1.live_groups, s0.live_groups);
}

/*
 * Zero-filled memory is a lazy counter of value 0: kzalloc() and memset()
 * counters take local and remote adds, sum exactly and upgrade to both
 * targets without lazy_counter_init_many(), and init_many(c, 0, n) writes
 * exactly those bytes.  With the old encoding (bit 0 set meaning lazy) a
 * zero state read as upgraded and the first add dereferenced a NULL slot.
 */
static void lazy_zero_filled_test(struct kunit *test)
{
	enum lazy_counter_target target;
	struct lazy_counter *c, zero, ref;
	unsigned int i;

	memset(&zero, 0, sizeof(zero));
	memset(&ref, 0x5a, sizeof(ref));
	lazy_counter_init_many(&ref, 0, 1);
	KUNIT_EXPECT_EQ(test, memcmp(&ref, &zero, sizeof(zero)), 0);
	KUNIT_EXPECT_TRUE(test, lazy_counter_is_lazy(&zero));
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&zero), 0);
	KUNIT_EXPECT_EQ(test, lazy_counter_read(&zero), 0);
	lazy_counter_add_local(&zero, 5);
	lazy_counter_add_remote(&zero, -7);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum(&zero), -2);
	KUNIT_EXPECT_EQ(test, lazy_counter_sum_local(&zero), -2);
	KUNIT_EXPECT_EQ(test, lazy_counter_read_slack(&zero), 0ULL);
	lazy_counter_destroy_many(&zero, 1);

	for (target = 0; target < LAZY_COUNTER_NR_TARGETS; target++) {
		c = kunit_kzalloc(test, LK_NR * sizeof(*c), GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, c);
		for (i = 0; i < LK_NR; i++) {
			KUNIT_EXPECT_TRUE(test, lazy_counter_is_lazy(&c[i]));
			KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[i]), 0);
			lazy_counter_add_local(&c[i], 10 * (s64)i);
			lazy_counter_add_remote(&c[i], 3);
			KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[i]),
					10 * (s64)i + 3);
			KUNIT_EXPECT_EQ(test, lazy_counter_read(&c[i]),
					10 * (s64)i + 3);
		}
		KUNIT_ASSERT_EQ(test, lk_upgrade_to(c, LK_NR, target), 0);
		for (i = 0; i < LK_NR; i++) {
			KUNIT_EXPECT_FALSE(test, lazy_counter_is_lazy(&c[i]));
			lazy_counter_add_local(&c[i], 1);
			lazy_counter_add_remote(&c[i], -2);
			KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[i]),
					10 * (s64)i + 2);
		}
		lazy_counter_destroy_many(c, LK_NR);
	}
}

/* Clears the misuse budget if the case ends early (an assertion). */
static void lk_misuse_budget_clear(void *unused)
{
	lazy_counter_expect_misuse(0);
}

/*
 * Every use of a destroyed counter, upgraded or lazy when destroyed: no
 * crash, adds dropped, reads 0, upgrade -EINVAL, each counted once as
 * misuse; destroying again is silent; init_many revives the counters.
 * The WARN is silenced by announcing, per round, exactly the misuses the
 * round makes (lazy_counter_expect_misuse(); the lanes fail on any WARN);
 * the count is what is checked, and so is the budget: it must be used up
 * exactly (a missing misuse leaves some, an extra one WARNs and shows in
 * the misuse count).  Before the destroyed state existed, the first add
 * after destroy dereferenced a NULL slot.
 */
static void lazy_use_after_destroy_test(struct kunit *test)
{
	struct lazy_counter_stats s0, s1;
	struct lazy_counter c[LK_NR];
	unsigned int round, i;

	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test,
							lk_misuse_budget_clear,
							NULL), 0);
	for (round = 0; round < 3; round++) {
		/* 0: flat, 1: tree, 2: never upgraded */
		lazy_counter_init_many(c, 100, LK_NR);
		lazy_counter_add_remote(&c[1], 5);
		if (round < 2)
			KUNIT_ASSERT_EQ(test, lk_upgrade_to(c, LK_NR, round), 0);
		lazy_counter_destroy_many(c, LK_NR);

		lazy_counter_get_stats(&s0);
		KUNIT_EXPECT_EQ(test, lazy_counter_expect_misuse(6 * LK_NR + 1),
				0U);
		for (i = 0; i < LK_NR; i++) {
			KUNIT_EXPECT_FALSE(test, lazy_counter_is_lazy(&c[i]));
			lazy_counter_add_local(&c[i], 1);		/* 1 */
			lazy_counter_add_remote(&c[i], 2);		/* 2 */
			KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[i]), 0);	/* 3 */
			KUNIT_EXPECT_EQ(test, lazy_counter_read(&c[i]), 0);	/* 4 */
			KUNIT_EXPECT_EQ(test, lazy_counter_sum_local(&c[i]), 0); /* 5 */
			KUNIT_EXPECT_EQ(test, lazy_counter_read_positive(&c[i]), 0); /* 6 */
		}
		KUNIT_EXPECT_EQ(test, lk_upgrade(c, LK_NR), -EINVAL);	/* +1 */
		/* every announced misuse was made, and no more were counted */
		KUNIT_EXPECT_EQ_MSG(test, lazy_counter_expect_misuse(0), 0U,
				    "round %u: fewer misuses than announced",
				    round);
		lazy_counter_get_stats(&s1);
		KUNIT_EXPECT_EQ(test, s1.misuse - s0.misuse, 6ULL * LK_NR + 1);
		KUNIT_EXPECT_EQ(test, s1.live_groups, s0.live_groups);
		KUNIT_EXPECT_EQ(test, s1.upgrade_failures, s0.upgrade_failures);

		/* destroying again is a no-op, not a misuse */
		lazy_counter_destroy_many(c, LK_NR);
		lazy_counter_get_stats(&s0);
		KUNIT_EXPECT_EQ(test, s0.misuse, s1.misuse);
		KUNIT_EXPECT_EQ(test, s0.live_groups, s1.live_groups);

		/* init makes them counters again */
		lazy_counter_init_many(c, -4, LK_NR);
		for (i = 0; i < LK_NR; i++) {
			lazy_counter_add_remote(&c[i], 1);
			KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[i]), -3);
		}
		KUNIT_EXPECT_EQ(test, lk_upgrade(c, LK_NR), 0);
		KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[LK_NR - 1]), -3);
		lazy_counter_destroy_many(c, LK_NR);
		lazy_counter_get_stats(&s1);
		KUNIT_EXPECT_EQ(test, s1.misuse, s0.misuse);
	}
}

/*
 * Review C10: destroying part of an upgraded array is a misuse; the
 * counters past it keep their group (it used to be freed under them).
 */
static void lazy_partial_destroy_test(struct kunit *test)
{
	struct lazy_counter c[4];
	unsigned int i;

	lazy_counter_init_many(c, 0, ARRAY_SIZE(c));
	KUNIT_ASSERT_EQ(test, lk_upgrade(c, ARRAY_SIZE(c)), 0);
	kunit_add_action(test, lk_misuse_budget_clear, NULL);
	lazy_counter_expect_misuse(1);
	lazy_counter_destroy_many(c, 2);
	KUNIT_EXPECT_EQ(test, lazy_counter_expect_misuse(0), 0U);
	for (i = 0; i < ARRAY_SIZE(c); i++) {
		lazy_counter_add_remote(&c[i], 1);
		KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[i]), 1);
	}
	lazy_counter_destroy_many(c, ARRAY_SIZE(c));
}

/* How a non-sleeping upgrade is wrapped; PREEMPT_RT only allows a lock. */
enum lk_atomic_ctx {
	LK_SPINLOCK,		/* spinlock_t held (valid on PREEMPT_RT too) */
	LK_SPINLOCK_IRQ,	/* spin_lock_irqsave() (!PREEMPT_RT) */
	LK_PREEMPT_OFF,		/* preempt_disable() (!PREEMPT_RT) */
	LK_NR_CTX,
};

static DEFINE_SPINLOCK(lk_atomic_lock);

static int lk_upgrade_atomic(struct lazy_counter *c, unsigned int nr,
			     enum lazy_counter_target target, gfp_t gfp,
			     enum lk_atomic_ctx ctx)
{
	unsigned long flags;
	int ret;

	switch (ctx) {
	case LK_SPINLOCK:
		spin_lock(&lk_atomic_lock);
		ret = lazy_counter_upgrade_many(c, nr, target, gfp);
		spin_unlock(&lk_atomic_lock);
		break;
	case LK_SPINLOCK_IRQ:
		spin_lock_irqsave(&lk_atomic_lock, flags);
		ret = lazy_counter_upgrade_many(c, nr, target, gfp);
		spin_unlock_irqrestore(&lk_atomic_lock, flags);
		break;
	default:
		preempt_disable();
		ret = lazy_counter_upgrade_many(c, nr, target, gfp);
		preempt_enable();
		break;
	}
	return ret;
}

/*
 * Upgrades with GFP_ATOMIC and GFP_NOWAIT in atomic context, both targets:
 * under a spinlock_t (every kernel), and on kernels without PREEMPT_RT
 * also with interrupts or preemption disabled.  Each either succeeds or
 * fails cleanly with -ENOMEM (counters lazy and exact), and none may make
 * a "sleeping function called from invalid context" report: that report
 * taints the kernel with TAINT_WARN, which is checked when the kernel was
 * not tainted before (the debug kernels have DEBUG_ATOMIC_SLEEP, where
 * the old might_sleep() in the upgrade made exactly that report); a
 * kernel already tainted before the case cannot tell, so the case is
 * skipped there.  A GFP_KERNEL upgrade and destroy on the same CPU first
 * leaves storage of the right size in this CPU's caches, so success is
 * the usual outcome, and at least one GFP_ATOMIC upgrade under a
 * spinlock_t must succeed (otherwise the case tested only failure paths).
 */
static void lazy_atomic_upgrade_test(struct kunit *test)
{
	static const gfp_t gfps[] = { GFP_ATOMIC, GFP_NOWAIT };
	bool tainted = test_taint(TAINT_WARN);
	unsigned int nctx = IS_ENABLED(CONFIG_PREEMPT_RT) ? 1 : LK_NR_CTX;
	unsigned int ctx, k, i, ok = 0, nomem = 0, ok_spin_atomic = 0;
	enum lazy_counter_target target;
	struct lazy_counter c[LK_NR];
	int ret;

	if (tainted)
		kunit_skip(test,
			   "kernel already tainted (TAINT_WARN): a new report could not be seen");
	for (target = 0; target < LAZY_COUNTER_NR_TARGETS; target++) {
		for (ctx = 0; ctx < nctx; ctx++) {
			for (k = 0; k < ARRAY_SIZE(gfps); k++) {
				migrate_disable();
				lazy_counter_init_many(c, 0, LK_NR);
				if (!lk_upgrade_to(c, LK_NR, target))
					lazy_counter_destroy_many(c, LK_NR);
				lazy_counter_init_many(c, 50, LK_NR);
				lazy_counter_add_remote(&c[0], 7);
				ret = lk_upgrade_atomic(c, LK_NR, target,
							gfps[k], ctx);
				migrate_enable();

				KUNIT_EXPECT_TRUE_MSG(test, !ret || ret == -ENOMEM,
						      "target %d ctx %u gfp %u: %d",
						      target, ctx, k, ret);
				ok += !ret;
				nomem += ret == -ENOMEM;
				if (ctx == LK_SPINLOCK && gfps[k] == GFP_ATOMIC)
					ok_spin_atomic += !ret;
				for (i = 0; i < LK_NR; i++) {
					KUNIT_EXPECT_EQ(test,
							lazy_counter_is_lazy(&c[i]),
							ret != 0);
					lazy_counter_add_local(&c[i], 1);
					lazy_counter_add_remote(&c[i], 2);
					KUNIT_EXPECT_EQ(test, lazy_counter_sum(&c[i]),
							53 + (i ? 0 : 7));
				}
				lazy_counter_destroy_many(c, LK_NR);
			}
		}
	}
	kunit_info(test, "non-sleeping upgrades: %u succeeded, %u -ENOMEM\n",
		   ok, nomem);
	KUNIT_EXPECT_GT_MSG(test, ok_spin_atomic, 0U,
			    "no GFP_ATOMIC upgrade under a spinlock_t succeeded after the GFP_KERNEL warm-up");
	KUNIT_EXPECT_FALSE_MSG(test, test_taint(TAINT_WARN),
			       "the kernel reported a problem (TAINT_WARN) during the non-sleeping upgrades");
}

static struct kunit_case lazy_counter_cases[] = {
	KUNIT_CASE(lazy_exact_test),
	KUNIT_CASE(lazy_remote_kthreads_test),
	KUNIT_CASE(lazy_upgrade_race_test),
	KUNIT_CASE(lazy_tree_upgrade_race_test),
	KUNIT_CASE(lazy_tree_target_test),
	KUNIT_CASE(lazy_tree_large_add_test),
	KUNIT_CASE(lazy_flat_target_test),
	KUNIT_CASE(lazy_flat_offline_cpu_test),
	KUNIT_CASE(lazy_flat_batch_hotplug_test),
	KUNIT_CASE(lazy_destroy_modes_test),
	KUNIT_CASE(lazy_many_test),
	KUNIT_CASE(lazy_encoding_test),
	KUNIT_CASE(lazy_live_word_test),
	KUNIT_CASE(lazy_inject_failure_test),
	KUNIT_CASE(lazy_concurrent_upgrade_test),
	KUNIT_CASE(lazy_auto_upgrade_test),
	KUNIT_CASE(lazy_zero_filled_test),
	KUNIT_CASE(lazy_use_after_destroy_test),
	KUNIT_CASE(lazy_partial_destroy_test),
	KUNIT_CASE(lazy_atomic_upgrade_test),
	{}
};

static struct kunit_suite lazy_counter_suite = {
	.name = "pcpu_next_lazy",
	.test_cases = lazy_counter_cases,
};

kunit_test_suite(lazy_counter_suite);
