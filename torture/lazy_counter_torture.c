// SPDX-License-Identifier: GPL-2.0
/*
 * test=lazy: the stress and the bench of the lazy counters (lazy_counter.c),
 * run by the debugfs control plane (control.c).  Harness code: it uses
 * the library through include/pcpu_next/lazy_counter.h and, for two test
 * hooks, internal/lazy_counter.h; the library never calls back into it.
 *
 * Stress.  Each round simulates a generation of processes, each owning an
 * rss_stat-like array of LAZY_ST_NR counters with a random initial value
 * and a random target (flat or tree).  Worker i < nproc is the owner of
 * process i and updates it with lazy_counter_add_local(); the other
 * workers update a process with lazy_counter_add_remote() (or, in AUTO
 * mode, lazy_counter_add_remote_auto(), whose rate trigger upgrades the
 * array from a workqueue).  Every worker keeps a private reference of what
 * it added.  At a random moment of the round the process's upgrader acts:
 * nobody (NEVER), the owner (OWNER), a remote worker (REMOTE), both racing
 * (BOTH), or the owner with its first attempt failed (INJECT: the
 * upgrade site's fault_attr armed for the owner's own task with
 * pn_fault_fail_nth(); not in faults= runs, whose window owns that attr,
 * nor without CONFIG_FAULT_INJECTION).  At quiescence, every counter of
 * every process must sum (lazy_counter_sum() and _sum_local()) to its
 * initial value plus the references, lazy_counter_read() must lie within
 * lazy_counter_read_slack() of the sum, and the mode must match whether
 * an upgrade returned 0.  Over the run, every upgrade failure must be an
 * injected one (INJECT's, or with faults= the fault_attrs of the
 * upgrade and chunk-creation sites, armed for the whole run) and each
 * injected failure must have failed exactly one upgrade; no group may be
 * left alive.  The summary reports rounds, processes, operations, upgraded
 * arrays and the upgrade statistics.
 *
 * Bench.  Alternating slices of a lazy operation and its classic
 * counterpart, so that a slow spell of the host hits both:
 *  - a counter's lifetime: lazy init+destroy of 1 and 4 counters, and
 *    init+upgrade(flat or tree)+destroy of 4 (flat also accounted), against
 *    percpu_counter_init_many()+destroy_many() (one thread: the cost is
 *    the allocation);
 *  - add_local on each worker's own counter, lazy, flat and tree, against
 *    percpu_counter_add() on the worker's own percpu_counter, and tree
 *    against pn_ctree_add() on the worker's own tree (what the lazy
 *    layer costs, in the same loop);
 *  - add_remote on one counter shared by all workers, lazy, flat and
 *    tree, against atomic_long_add() on one word and (flat) against
 *    percpu_counter_add() on one shared percpu_counter.
 * The shared counters double as a check: their sums must equal the number
 * of add_remote() calls made on them.
 */

#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/percpu_counter.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include <pcpu_next/counter_tree.h>
#include <pcpu_next/lazy_counter.h>
#include "internal/core.h"
#include "internal/lazy_counter.h"
#include "torture.h"

/* ---- stress: test=lazy --------------------------------------------------- */

#define LAZY_ST_NR		4	/* counters per simulated process */
#define LAZY_ST_ROUND_MS	250	/* lifetime of one generation of processes */
/*
 * With faults=, shorter generations and two processes each: every
 * generation makes at most one upgrade attempt per process, and at 30%
 * six attempts (1.5 s of 250 ms rounds, one process) injected nothing in
 * about one run in eight; fifty attempts leave that at 0.7^50.
 */
#define LAZY_ST_FAULT_ROUND_MS	60
#define LAZY_ST_FAULT_PROCS	2

enum lazy_st_upgrade {
	LAZY_ST_NEVER,		/* stays lazy; destroyed in lazy mode */
	LAZY_ST_OWNER,		/* the owner upgrades */
	LAZY_ST_REMOTE,		/* a remote thread upgrades */
	LAZY_ST_BOTH,		/* owner and a remote thread race to upgrade */
	LAZY_ST_INJECT,		/* the owner's first attempt fails (injected) */
	LAZY_ST_AUTO,		/* remote adds go through the rate trigger */
	LAZY_ST_NR_MODES,
};

/**
 * struct lazy_st_proc - one simulated process
 * @c: its counters (an rss_stat-like array)
 * @init: their initial values
 * @mode: who upgrades, and how
 * @target: what it is upgraded to
 * @upgrade_ns: when (ktime) the upgrade is due
 * @done: an upgrade returned 0 (set by whoever did it)
 * @autoup: automatic-upgrade state (LAZY_ST_AUTO)
 */
struct lazy_st_proc {
	struct lazy_counter c[LAZY_ST_NR];
	struct lazy_counter_auto autoup;
	s64 init[LAZY_ST_NR];
	enum lazy_st_upgrade mode;
	enum lazy_counter_target target;
	u64 upgrade_ns;
	bool done;
};

/**
 * struct lazy_st - one stress round
 * @procs: the processes
 * @nproc: their number
 * @ref: per worker, per counter: what that worker added (private)
 * @ops: per worker: updates done (private)
 * @seed: round seed
 * @bad_ret: first unexpected upgrade return value (0: none)
 * @failures: upgrades that returned -ENOMEM
 */
struct lazy_st {
	struct lazy_st_proc *procs;
	unsigned int nproc;
	s64 (*ref)[LAZY_ST_NR];
	u64 *ops;
	u64 seed;
	atomic_t bad_ret;
	atomic_t failures;
};

static s64 lazy_st_amount(u64 *rnd)
{
	u32 r = pn_rand_state(rnd);

	if (!(r & 63))		/* now and then a large one, either sign */
		return (r & 64 ? -1LL : 1LL) * ((s64)pn_rand_state(rnd) << 8);
	return (s64)(r % 17) - 8;
}

static void lazy_st_try_upgrade(struct lazy_st *st, struct lazy_st_proc *p,
				bool inject)
{
	int ret;

	if (inject)
		pn_fault_fail_nth(PN_FAULT_UPGRADE,
				  1 + (pn_rand_state(&st->seed) & 1));
	ret = lazy_counter_upgrade_many(p->c, LAZY_ST_NR, p->target,
					GFP_KERNEL);
	if (inject)
		pn_fault_fail_nth(PN_FAULT_UPGRADE, 0);
	if (!ret)
		WRITE_ONCE(p->done, true);
	else if (ret == -ENOMEM)
		atomic_inc(&st->failures);
	else
		atomic_cmpxchg(&st->bad_ret, 0, ret);
}

/*
 * Worker idx < nproc owns process idx and updates it with add_local; the
 * others update process (idx - nproc) % nproc with add_remote.  The first
 * remote thread of a process is its remote upgrader.
 */
static int lazy_st_worker(struct pn_run *run, unsigned int idx, void *arg)
{
	struct lazy_st *st = arg;
	bool owner = idx < st->nproc;
	unsigned int pi = owner ? idx : (idx - st->nproc) % st->nproc;
	struct lazy_st_proc *p = &st->procs[pi];
	bool upgrader, tried_inject = false;
	u64 rnd = st->seed ^ ((u64)idx << 32 | 0x5bd1e995);
	s64 *ref = st->ref[idx];
	u64 n = 0;

	switch (p->mode) {
	case LAZY_ST_OWNER:
	case LAZY_ST_INJECT:
		upgrader = owner;
		break;
	case LAZY_ST_REMOTE:
		upgrader = idx == st->nproc + pi;
		break;
	case LAZY_ST_BOTH:
		upgrader = owner || idx == st->nproc + pi;
		break;
	default:
		upgrader = false;
	}

	while (!pn_should_stop(run)) {
		unsigned int i = pn_rand_state(&rnd) % LAZY_ST_NR;
		s64 v = lazy_st_amount(&rnd);

		if (owner)
			lazy_counter_add_local(&p->c[i], v);
		else if (p->mode == LAZY_ST_AUTO)
			lazy_counter_add_remote_auto(&p->autoup, i, v);
		else
			lazy_counter_add_remote(&p->c[i], v);
		ref[i] += v;
		if (!(++n & 63)) {
			if (upgrader && !READ_ONCE(p->done) &&
			    ktime_get_ns() >= p->upgrade_ns) {
				bool inject = p->mode == LAZY_ST_INJECT &&
					      !tried_inject;

				tried_inject = true;
				lazy_st_try_upgrade(st, p, inject);
			}
			cond_resched();
		}
	}
	st->ops[idx] = n;
	return 0;
}

/* Check every counter of every process at quiescence; 0 or -EIO. */
static int lazy_st_check(struct pn_run *run, struct lazy_st *st,
			 unsigned int nthreads)
{
	unsigned int pi, i, t;

	for (pi = 0; pi < st->nproc; pi++) {
		struct lazy_st_proc *p = &st->procs[pi];

		for (i = 0; i < LAZY_ST_NR; i++) {
			struct lazy_counter *c = &p->c[i];
			s64 expect = p->init[i], sum, rd;

			for (t = 0; t < nthreads; t++) {
				unsigned int tp = t < st->nproc ? t :
						  (t - st->nproc) % st->nproc;

				if (tp == pi)
					expect += st->ref[t][i];
			}
			sum = lazy_counter_sum(c);
			rd = lazy_counter_read(c);
			if (sum != expect || lazy_counter_sum_local(c) != expect) {
				pn_fail(run, "proc%u.ctr%u:sum=%lld,expect=%lld,mode=%d,target=%d",
					pi, i, sum, expect, p->mode, p->target);
				return -EIO;
			}
			if (abs(rd - sum) > lazy_counter_read_slack(c)) {
				pn_fail(run, "proc%u.ctr%u:read=%lld,sum=%lld",
					pi, i, rd, sum);
				return -EIO;
			}
			if (p->mode != LAZY_ST_AUTO &&
			    lazy_counter_is_lazy(c) == READ_ONCE(p->done)) {
				pn_fail(run, "proc%u.ctr%u:lazy=%d,upgraded=%d",
					pi, i, lazy_counter_is_lazy(c), p->done);
				return -EIO;
			}
		}
	}
	return 0;
}

static int lazy_stress(struct pn_run *run)
{
	unsigned int nthreads = max(run->p.threads, 2U);
	unsigned int round_ms = min(run->p.duration_ms, run->p.faults ?
				    LAZY_ST_FAULT_ROUND_MS : LAZY_ST_ROUND_MS);
	unsigned int rounds = max(run->p.duration_ms / round_ms, 1U);
	struct lazy_counter_stats st0, st1;
	unsigned int r, pi, i, upgraded = 0;
	struct lazy_st st = {};
	u64 ops = 0, injected, injected0;
	int ret = 0;

	st.nproc = run->p.objects ? : max(nthreads / 4, 1U);
	if (run->p.faults && !run->p.objects)
		st.nproc = max(st.nproc, LAZY_ST_FAULT_PROCS);
	st.nproc = min(st.nproc, nthreads - 1);
	nthreads = max(nthreads, 2 * st.nproc);
	st.procs = kcalloc(st.nproc, sizeof(*st.procs), GFP_KERNEL);
	st.ref = kcalloc(nthreads, sizeof(*st.ref), GFP_KERNEL);
	st.ops = kcalloc(nthreads, sizeof(*st.ops), GFP_KERNEL);
	if (!st.procs || !st.ref || !st.ops) {
		ret = -ENOMEM;
		goto out;
	}
	lazy_counter_get_stats(&st0);

	/*
	 * faults=N: upgrade steps and chunk creations fail at random for
	 * the whole run (should_fail() on lazy_fail_upgrade and
	 * pn_fail_chunk; the rounds' setup and checks allocate nothing).
	 */
	pn_fault_arm(run);	/* resets the site counts with faults= */
	injected0 = pn_fault_injected(PN_FAULT_UPGRADE) +
		    pn_fault_injected(PN_FAULT_CHUNK);
	for (r = 0; r < rounds && !ret; r++) {
		u64 now = ktime_get_ns();

		st.seed = (u64)pn_rand(run) << 32 | pn_rand(run);
		memset(st.ref, 0, nthreads * sizeof(*st.ref));
		for (pi = 0; pi < st.nproc; pi++) {
			struct lazy_st_proc *p = &st.procs[pi];

			p->init[0] = (s64)pn_rand(run) - (1LL << 31);
			for (i = 1; i < LAZY_ST_NR; i++)
				p->init[i] = p->init[0];
			lazy_counter_init_many(p->c, p->init[0], LAZY_ST_NR);
			p->target = pn_rand(run) % LAZY_COUNTER_NR_TARGETS;
			lazy_counter_auto_init(&p->autoup, p->c, LAZY_ST_NR,
					       p->target, 2000);
			p->mode = pn_rand(run) % LAZY_ST_NR_MODES;
			/* faults= owns the attr INJECT would arm */
			if (p->mode == LAZY_ST_INJECT &&
			    (run->p.faults || !IS_ENABLED(CONFIG_FAULT_INJECTION)))
				p->mode = LAZY_ST_OWNER;
			p->upgrade_ns = now + (u64)(pn_rand(run) % round_ms) *
					      NSEC_PER_MSEC;
			p->done = false;
		}
		ret = pn_run_threads(run, nthreads, run->p.pin, round_ms,
				     lazy_st_worker, &st);
		for (pi = 0; pi < st.nproc; pi++)	/* quiesce auto upgrades */
			flush_work(&st.procs[pi].autoup.work);
		if (!ret && atomic_read(&st.bad_ret)) {
			pn_fail(run, "upgrade_ret=%d", atomic_read(&st.bad_ret));
			ret = -EIO;
		}
		if (!ret)
			ret = lazy_st_check(run, &st, nthreads);
		for (i = 0; i < nthreads; i++)
			ops += st.ops[i];
		for (pi = 0; pi < st.nproc; pi++) {
			upgraded += !lazy_counter_is_lazy(st.procs[pi].c);
			lazy_counter_auto_destroy(&st.procs[pi].autoup);
		}
	}
	pn_fault_disarm(run);	/* workers stopped, auto-upgrade work flushed */
	injected = pn_fault_injected(PN_FAULT_UPGRADE) +
		   pn_fault_injected(PN_FAULT_CHUNK) - injected0;
	lazy_counter_get_stats(&st1);
	pn_printf(run, "rounds=%u procs=%u ops=%llu upgraded=%u ", r, st.nproc,
		  ops, upgraded);
	pn_printf(run, "auto=%llu upgrades=%llu races=%llu failures=%llu ",
		  st1.auto_upgrades - st0.auto_upgrades,
		  st1.upgrades - st0.upgrades,
		  st1.upgrade_races - st0.upgrade_races,
		  st1.upgrade_failures - st0.upgrade_failures);
	/*
	 * Every injected failure (faults= window, or the INJECT mode's
	 * fault_attr) failed exactly one upgrade, and nothing else did: an
	 * upgrade stops at its first failed step, and these runs have no
	 * real allocation failures.  The counters stayed exact (checked
	 * per round above) and lazy wherever the upgrade failed.
	 */
	if (!ret && st1.upgrade_failures - st0.upgrade_failures != injected) {
		pn_fail(run, "upgrade_failures=%llu,injected=%llu",
			st1.upgrade_failures - st0.upgrade_failures, injected);
		ret = -EIO;
	}
	if (!ret && st1.live_groups != st0.live_groups) {
		pn_fail(run, "live_groups=%llu,before=%llu", st1.live_groups,
			st0.live_groups);
		ret = -EIO;
	}
out:
	kfree(st.ops);
	kfree(st.ref);
	kfree(st.procs);
	return ret == -EIO ? 0 : ret;	/* -EIO was reported by pn_fail() */
}

/* ---- bench: test=lazy ---------------------------------------------------- */

enum lazy_bench_op {
	LB_LAZY_LIFE,		/* init_many + destroy_many, lazy */
	LB_PCPU_LIFE,		/* percpu_counter_init_many + destroy_many */
	LB_UPGRADE_LIFE,	/* init_many + upgrade_many + destroy_many */
	LB_ADD_LOCAL,		/* add_local on the worker's own counter */
	LB_PCPU_ADD,		/* percpu_counter_add on the worker's own */
	LB_ADD_REMOTE,		/* add_remote on one shared counter */
	LB_ATOMIC_ADD,		/* atomic_long_add on one shared word */
	LB_PCPU_ADD_SHARED,	/* percpu_counter_add on one shared counter */
	LB_TREE_ADD,		/* pn_ctree_add on the worker's own tree */
};

/**
 * struct lazy_bench - one bench phase
 * @op: what the workers do
 * @nr: counters per init/destroy
 * @target: upgrade target of the phase
 * @gfp: allocation flags of the lifetimes (GFP_KERNEL, or accounted)
 * @own: per worker, its own lazy counter
 * @own_pc: per worker, its own percpu_counter
 * @shared: the shared lazy counter
 * @shared_atomic: the shared atomic word
 * @shared_pc: the shared percpu_counter
 * @own_tree: per worker, its own counter tree (the tree target, raw)
 * @own_items: per worker, its tree's items (a kmalloc() each)
 * @ops: per worker, operations done
 * @remote_ops: add_remote() calls made on @shared, all phases
 * @err: first error of a worker
 */
struct lazy_bench {
	enum lazy_bench_op op;
	unsigned int nr;
	enum lazy_counter_target target;
	gfp_t gfp;
	struct lazy_counter *own;
	struct percpu_counter *own_pc;
	struct lazy_counter shared;
	atomic_long_t shared_atomic;
	struct percpu_counter shared_pc;
	struct pn_ctree *own_tree;
	void **own_items;
	u64 *ops;
	u64 remote_ops;
	atomic_t err;
};

#define LB_MAX_NR	4
#define LB_LIVES	16	/* lifetimes per loop turn */
#define LB_SLICES	4	/* a pair alternates this many times */

static int lazy_bench_life(struct lazy_bench *b, unsigned int idx)
{
	struct lazy_counter lc[LB_MAX_NR];
	struct percpu_counter pc[LB_MAX_NR];
	int ret;

	switch (b->op) {
	case LB_LAZY_LIFE:
		lazy_counter_init_many(lc, idx, b->nr);
		barrier_data(lc);	/* keep the stores: they are the cost */
		lazy_counter_destroy_many(lc, b->nr);
		return 0;
	case LB_UPGRADE_LIFE:
		lazy_counter_init_many(lc, idx, b->nr);
		ret = lazy_counter_upgrade_many(lc, b->nr, b->target, b->gfp);
		lazy_counter_destroy_many(lc, b->nr);
		return ret;
	default:
		ret = percpu_counter_init_many(pc, idx, b->gfp, b->nr);
		if (!ret)
			percpu_counter_destroy_many(pc, b->nr);
		return ret;
	}
}

static int lazy_bench_worker(struct pn_run *run, unsigned int idx, void *arg)
{
	struct lazy_bench *b = arg;
	u64 n = 0;
	int ret = 0, k;

	while (!pn_should_stop(run) && !ret) {
		switch (b->op) {
		case LB_LAZY_LIFE:
		case LB_PCPU_LIFE:
		case LB_UPGRADE_LIFE:
			for (k = 0; k < LB_LIVES && !ret; k++)
				ret = lazy_bench_life(b, idx);
			n += LB_LIVES;
			break;
		case LB_ADD_LOCAL:
			for (k = 0; k < 256; k++)
				lazy_counter_add_local(&b->own[idx], 1);
			n += 256;
			break;
		case LB_PCPU_ADD:
			for (k = 0; k < 256; k++)
				percpu_counter_add(&b->own_pc[idx], 1);
			n += 256;
			break;
		case LB_ADD_REMOTE:
			for (k = 0; k < 256; k++)
				lazy_counter_add_remote(&b->shared, 1);
			n += 256;
			break;
		case LB_ATOMIC_ADD:
			for (k = 0; k < 256; k++)
				atomic_long_add(1, &b->shared_atomic);
			n += 256;
			break;
		case LB_PCPU_ADD_SHARED:
			for (k = 0; k < 256; k++)
				percpu_counter_add(&b->shared_pc, 1);
			n += 256;
			break;
		case LB_TREE_ADD:
			for (k = 0; k < 256; k++)
				pn_ctree_add(&b->own_tree[idx], 1);
			n += 256;
			break;
		}
		cond_resched();
	}
	b->ops[idx] = n;
	if (ret)
		atomic_cmpxchg(&b->err, 0, ret);
	return 0;
}

/* One phase: returns operations done; adds the phase's time to *s. */
static u64 lazy_bench_phase(struct pn_run *run, struct lazy_bench *b,
			    enum lazy_bench_op op, unsigned int threads,
			    struct pn_span *s, int *ret)
{
	unsigned int i;
	u64 total = 0;

	if (*ret)
		return 0;
	b->op = op;
	memset(b->ops, 0, threads * sizeof(*b->ops));
	pn_span_next(run, s);
	*ret = pn_run_threads(run, threads, run->p.pin,
			      max(run->p.duration_ms / LB_SLICES, 10U),
			      lazy_bench_worker, b);
	if (!*ret)
		*ret = atomic_read(&b->err);
	for (i = 0; i < threads; i++)
		total += b->ops[i];
	if (op == LB_ADD_REMOTE)
		b->remote_ops += total;
	return total;
}

static void lazy_bench_pair(struct pn_run *run, struct lazy_bench *b,
			    unsigned int threads, const char *name,
			    enum lazy_bench_op op, const char *base_name,
			    enum lazy_bench_op base_op, int *ret)
{
	struct pn_span s = {}, bs = {};
	u64 ops = 0, base_ops = 0;
	unsigned int i;

	/* Alternate the two, so that a slow spell of the host hits both. */
	for (i = 0; i < LB_SLICES; i++) {
		ops += lazy_bench_phase(run, b, op, threads, &s, ret);
		base_ops += lazy_bench_phase(run, b, base_op, threads, &bs, ret);
	}
	if (!*ret)
		pn_bench_row(run, name, ops, &s, base_name, base_ops, &bs);
}

static int lazy_bench(struct pn_run *run)
{
	unsigned int threads = run->p.threads, i, pcs = 0, trees = 0;
	struct lazy_bench *b;
	int ret = 0;
	s64 expect;

	b = kzalloc_obj(*b, GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	b->gfp = GFP_KERNEL;
	b->ops = kcalloc(threads, sizeof(*b->ops), GFP_KERNEL);
	b->own = kcalloc(threads, sizeof(*b->own), GFP_KERNEL);
	b->own_pc = kcalloc(threads, sizeof(*b->own_pc), GFP_KERNEL);
	if (!b->ops || !b->own || !b->own_pc) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = percpu_counter_init(&b->shared_pc, 0, GFP_KERNEL);
	if (ret)
		goto out_free;
	for (pcs = 0; pcs < threads; pcs++) {
		ret = percpu_counter_init(&b->own_pc[pcs], 0, GFP_KERNEL);
		if (ret)
			goto out;
	}
	b->own_tree = kcalloc(threads, sizeof(*b->own_tree), GFP_KERNEL);
	b->own_items = kcalloc(threads, sizeof(*b->own_items), GFP_KERNEL);
	if (!b->own_tree || !b->own_items) {
		ret = -ENOMEM;
		goto out;
	}
	for (trees = 0; trees < threads; trees++) {
		/* a power-of-two kmalloc() is aligned to its size: whole lines */
		b->own_items[trees] = kmalloc(roundup_pow_of_two(pn_ctree_items_size()),
					      GFP_KERNEL);
		ret = b->own_items[trees] ?
		      pn_ctree_init(&b->own_tree[trees], b->own_items[trees],
				    pn_ctree_default_batch(), GFP_KERNEL) : -ENOMEM;
		if (ret) {
			kfree(b->own_items[trees]);
			goto out;
		}
	}

	/* Lifetime of 1 and 4 counters; one thread, the allocation cost. */
	b->nr = 1;
	lazy_bench_pair(run, b, 1, "lazy init+destroy x1", LB_LAZY_LIFE,
			"percpu_counter init+destroy x1", LB_PCPU_LIFE, &ret);
	b->nr = 4;
	lazy_bench_pair(run, b, 1, "lazy init+destroy x4", LB_LAZY_LIFE,
			"percpu_counter init+destroy x4", LB_PCPU_LIFE, &ret);
	b->target = LAZY_COUNTER_FLAT;
	lazy_bench_pair(run, b, 1, "init+upgrade(flat)+destroy x4",
			LB_UPGRADE_LIFE, "percpu_counter init+destroy x4",
			LB_PCPU_LIFE, &ret);
	b->target = LAZY_COUNTER_TREE;
	lazy_bench_pair(run, b, 1, "init+upgrade(tree)+destroy x4",
			LB_UPGRADE_LIFE, "percpu_counter init+destroy x4",
			LB_PCPU_LIFE, &ret);
	/*
	 * rss_stat's gfp: accounted.  In a module the library serves such a
	 * request with __alloc_percpu_gfp(), as percpu_counter does; built
	 * in, from its caches, charged per object.
	 */
	b->gfp = GFP_KERNEL_ACCOUNT;
	b->target = LAZY_COUNTER_FLAT;
	lazy_bench_pair(run, b, 1, "init+upgrade(flat)+destroy x4, accounted",
			LB_UPGRADE_LIFE, "percpu_counter init+destroy x4, accounted",
			LB_PCPU_LIFE, &ret);
	b->gfp = GFP_KERNEL;

	/*
	 * The same lifetimes from every worker at once (fork/exit on many
	 * CPUs): percpu_counter's init and destroy take the global
	 * percpu_counters_lock (with CONFIG_HOTPLUG_CPU), ours no global
	 * lock.  b->nr is still 4.
	 */
	b->target = LAZY_COUNTER_FLAT;
	lazy_bench_pair(run, b, threads, "all threads: upgrade(flat) x4",
			LB_UPGRADE_LIFE, "all threads: percpu_counter x4",
			LB_PCPU_LIFE, &ret);
	b->target = LAZY_COUNTER_TREE;
	lazy_bench_pair(run, b, threads, "all threads: upgrade(tree) x4",
			LB_UPGRADE_LIFE, "all threads: percpu_counter x4",
			LB_PCPU_LIFE, &ret);

	/* add_local: each worker its own counter, lazy then upgraded. */
	lazy_counter_init_many(b->own, 0, threads);
	lazy_bench_pair(run, b, threads, "add_local (lazy)", LB_ADD_LOCAL,
			"percpu_counter_add (own)", LB_PCPU_ADD, &ret);
	for (i = 0; i < threads && !ret; i++)
		ret = lazy_counter_upgrade_many(&b->own[i], 1,
						LAZY_COUNTER_FLAT, GFP_KERNEL);
	lazy_bench_pair(run, b, threads, "add_local (flat)", LB_ADD_LOCAL,
			"percpu_counter_add (own)", LB_PCPU_ADD, &ret);
	for (i = 0; i < threads; i++) {
		lazy_counter_destroy_many(&b->own[i], 1);
		lazy_counter_init_many(&b->own[i], 0, 1);
		if (!ret)
			ret = lazy_counter_upgrade_many(&b->own[i], 1,
							LAZY_COUNTER_TREE,
							GFP_KERNEL);
	}
	lazy_bench_pair(run, b, threads, "add_local (tree)", LB_ADD_LOCAL,
			"percpu_counter_add (own)", LB_PCPU_ADD, &ret);
	/* What the lazy layer costs: the tree's own add, in the same loop. */
	lazy_bench_pair(run, b, threads, "add_local (tree)", LB_ADD_LOCAL,
			"pn_ctree_add (own)", LB_TREE_ADD, &ret);

	/* add_remote: every worker on one shared counter. */
	lazy_counter_init_many(&b->shared, 0, 1);
	atomic_long_set(&b->shared_atomic, 0);
	lazy_bench_pair(run, b, threads, "add_remote (lazy, shared)",
			LB_ADD_REMOTE, "atomic_long_add (shared)",
			LB_ATOMIC_ADD, &ret);
	if (!ret)
		ret = lazy_counter_upgrade_many(&b->shared, 1,
						LAZY_COUNTER_FLAT, GFP_KERNEL);
	lazy_bench_pair(run, b, threads, "add_remote (flat, shared)",
			LB_ADD_REMOTE, "atomic_long_add (shared)",
			LB_ATOMIC_ADD, &ret);
	lazy_bench_pair(run, b, threads, "add_remote (flat, shared)",
			LB_ADD_REMOTE, "percpu_counter_add (shared)",
			LB_PCPU_ADD_SHARED, &ret);

	/* The bench doubles as a check: no add_remote() was lost. */
	if (!ret) {
		expect = b->remote_ops;
		if (lazy_counter_sum(&b->shared) != expect)
			pn_fail(run, "shared_sum=%lld,expect=%lld",
				lazy_counter_sum(&b->shared), expect);
	}
	lazy_counter_destroy_many(&b->shared, 1);

	lazy_counter_init_many(&b->shared, 0, 1);
	b->remote_ops = 0;
	if (!ret)
		ret = lazy_counter_upgrade_many(&b->shared, 1,
						LAZY_COUNTER_TREE, GFP_KERNEL);
	lazy_bench_pair(run, b, threads, "add_remote (tree, shared)",
			LB_ADD_REMOTE, "atomic_long_add (shared)",
			LB_ATOMIC_ADD, &ret);
	if (!ret && lazy_counter_sum(&b->shared) != b->remote_ops)
		pn_fail(run, "tree_shared_sum=%lld,expect=%llu",
			lazy_counter_sum(&b->shared), b->remote_ops);
	lazy_counter_destroy_many(&b->shared, 1);
	for (i = 0; i < threads; i++)
		lazy_counter_destroy_many(&b->own[i], 1);
out:
	while (trees--) {
		pn_ctree_destroy(&b->own_tree[trees]);
		kfree(b->own_items[trees]);
	}
	while (pcs--)
		percpu_counter_destroy(&b->own_pc[pcs]);
	percpu_counter_destroy(&b->shared_pc);
out_free:
	kfree(b->own_items);
	kfree(b->own_tree);
	kfree(b->own_pc);
	kfree(b->own);
	kfree(b->ops);
	kfree(b);
	return ret;
}

const struct pn_test pn_lazy_test = {
	.name = "lazy",
	.desc = "lazy counters: owner + remote threads, upgrade at a random moment, sums exact",
	.def_duration_ms = 1000,
	.stress = lazy_stress,
	.bench = lazy_bench,
	.faults = true,
};
