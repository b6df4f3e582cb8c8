// SPDX-License-Identifier: GPL-2.0
/*
 * The control plane's own test "percpu": worker kthreads, placed as pin=
 * says, increment one alloc_percpu() counter through this_cpu_inc() and
 * count their own increments privately.  At quiescence the sum over every
 * possible CPU must equal the sum of the private counts; anything else
 * means lost or doubled updates (or workers that were not stopped before
 * the check).  Its bench compares this_cpu_inc() with atomic_long_inc()
 * on one shared counter, which is the argument for per-CPU data in one
 * number.  It uses the kernel's per-CPU memory only, so it checks the
 * harness, not the library.
 */

#include <linux/atomic.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "torture.h"

struct pn_percpu_arg {
	u64 __percpu *ctr;
	atomic_long_t *shared;
	u64 *counts;		/* one per worker */
};

static int pn_percpu_worker(struct pn_run *run, unsigned int idx, void *data)
{
	struct pn_percpu_arg *a = data;
	u64 n = 0;

	while (!pn_should_stop(run)) {
		if (a->ctr)
			this_cpu_inc(*a->ctr);
		else
			atomic_long_inc(a->shared);
		if (!(++n & 1023))
			cond_resched();
	}
	a->counts[idx] = n;
	return 0;
}

static u64 pn_percpu_phase(struct pn_run *run, struct pn_percpu_arg *a,
			   int *ret)
{
	unsigned int i;
	u64 total = 0;

	*ret = pn_run_threads(run, run->p.threads, run->p.pin,
			      run->p.duration_ms, pn_percpu_worker, a);
	for (i = 0; i < run->p.threads; i++)
		total += a->counts[i];
	return total;
}

static int pn_percpu_stress(struct pn_run *run)
{
	struct pn_percpu_arg a = {};
	u64 expect, sum = 0;
	unsigned int cpu;
	int ret = -ENOMEM;

	a.counts = kcalloc(run->p.threads, sizeof(*a.counts), GFP_KERNEL);
	a.ctr = alloc_percpu(u64);
	if (!a.counts || !a.ctr)
		goto out;

	expect = pn_percpu_phase(run, &a, &ret);
	for_each_possible_cpu(cpu)
		sum += *per_cpu_ptr(a.ctr, cpu);
	pn_printf(run, "ops=%llu sum=%llu ", expect, sum);
	if (!ret && sum != expect)
		pn_fail(run, "lost_updates=%lld", (s64)(expect - sum));
out:
	free_percpu(a.ctr);
	kfree(a.counts);
	return ret;
}

static int pn_percpu_bench(struct pn_run *run)
{
	struct pn_percpu_arg a = {};
	atomic_long_t shared = ATOMIC_LONG_INIT(0);
	struct pn_span s = {}, bs = {};
	u64 ops, base_ops;
	int ret = -ENOMEM;

	a.counts = kcalloc(run->p.threads, sizeof(*a.counts), GFP_KERNEL);
	a.ctr = alloc_percpu(u64);
	if (!a.counts || !a.ctr)
		goto out;

	pn_span_next(run, &s);
	ops = pn_percpu_phase(run, &a, &ret);
	if (ret)
		goto out;
	free_percpu(a.ctr);
	a.ctr = NULL;
	a.shared = &shared;
	pn_span_next(run, &bs);
	base_ops = pn_percpu_phase(run, &a, &ret);
	if (ret)
		goto out;
	pn_bench_row(run, "this_cpu_inc", ops, &s,
		     "atomic_long_inc (shared)", base_ops, &bs);
out:
	free_percpu(a.ctr);
	kfree(a.counts);
	return ret;
}

const struct pn_test pn_percpu_test = {
	.name = "percpu",
	.desc = "control-plane self test: this_cpu_inc from pinned kthreads, sum exact",
	.def_duration_ms = 1000,
	.stress = pn_percpu_stress,
	.bench = pn_percpu_bench,
};
