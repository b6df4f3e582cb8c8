// SPDX-License-Identifier: GPL-2.0
/*
 * pcpu_next module core: init and exit of the components, and the
 * control plane's own test "percpu".
 *
 *   module_init                     module_exit
 *     pn_control_init()   (dir)       pn_control_stop()   (files; aborts a run)
 *     <component>_init() ...          ... <component>_exit()
 *     pn_control_start()  (files)     pn_control_exit()   (dir)
 *
 * The "percpu" test exercises the control plane itself on the kernel's
 * own per-CPU memory: worker kthreads, placed as pin= says, increment one
 * alloc_percpu() counter through this_cpu_inc() and count their own
 * increments privately.  At quiescence the sum over every possible CPU
 * must equal the sum of the private counts; anything else means lost or
 * doubled updates (or workers that were not stopped before the check).
 * Its bench compares this_cpu_inc() with atomic_long_inc() on one shared
 * counter, which is the argument for per-CPU data in one number.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include <pcpu_next/counter_tree.h>
#include <pcpu_next/internal.h>
#include <pcpu_next/lazy_counter.h>
#include <pcpu_next/mmcid_pcpu.h>
#include <pcpu_next/pcpu_alloc.h>

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
	u64 ops, ns, base_ops, base_ns;
	int ret = -ENOMEM;

	a.counts = kcalloc(run->p.threads, sizeof(*a.counts), GFP_KERNEL);
	a.ctr = alloc_percpu(u64);
	if (!a.counts || !a.ctr)
		goto out;

	ops = pn_percpu_phase(run, &a, &ret);
	ns = run->phase_ns;
	if (ret)
		goto out;
	free_percpu(a.ctr);
	a.ctr = NULL;
	a.shared = &shared;
	base_ops = pn_percpu_phase(run, &a, &ret);
	base_ns = run->phase_ns;
	if (ret)
		goto out;
	pn_bench_row(run, "this_cpu_inc", ops, ns,
		     "atomic_long_inc (shared)", base_ops, base_ns);
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

static int __init pcpu_next_init(void)
{
	int ret;

	ret = pn_control_init();	/* workqueue and debugfs directory */
	if (ret)
		return ret;
	ret = pn_alloc_init();		/* everything below allocates from it */
	if (ret)
		goto err_control;
	ret = pn_ctree_subsys_init();	/* only computes the tree's shape */
	if (ret)
		goto err_alloc;
	ret = lazy_counter_module_init();
	if (ret)
		goto err_alloc;
	ret = pn_mmcid_init();
	if (ret)
		goto err_lazy;
	pn_control_start();		/* components ready: runs may start */
	pr_info("loaded: %u possible CPUs, %u online\n",
		num_possible_cpus(), num_online_cpus());
	return 0;

err_lazy:
	lazy_counter_module_exit();
err_alloc:
	pn_alloc_exit();
err_control:
	pn_control_exit();
	return ret;
}

static void __exit pcpu_next_exit(void)
{
	pn_control_stop();	/* no run may outlive a component */
	pn_mmcid_exit();
	lazy_counter_module_exit();
	pn_alloc_exit();
	pn_control_exit();
}

module_init(pcpu_next_init);
module_exit(pcpu_next_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("pcpu_next: scalable per-CPU allocator and per-CPU counters");
MODULE_AUTHOR("The pcpu_next developers");
