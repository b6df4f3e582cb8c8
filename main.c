// SPDX-License-Identifier: GPL-2.0
/*
 * pcpu_next, the module: the order in which the library's components come
 * up and go down, and the test harness (torture/, only with
 * CONFIG_PCPU_NEXT_TORTURE) plugged in last and taken out first.  This
 * file is the only one that knows both; the library (core.c and the four
 * component files) includes no harness header.
 *
 *   module_init                         module_exit
 *     pn_core_init()  (debugfs, faults,   pn_control_stop()  (files; aborts a run)
 *       CPUs seen)
 *     pn_control_init()   (harness wq)    pn_mmcid_exit()
 *     pn_alloc_init()                     lazy_counter_module_exit()
 *     pn_ctree_subsys_init()              pn_alloc_exit()
 *     lazy_counter_module_init()          pn_control_exit()  (harness results)
 *     pn_mmcid_init()                     pn_core_exit()
 *     pn_control_start()  (files)
 *
 * A run never sees a component half up or half gone: the control files
 * appear after the last init and go (aborting any run, waiting for it)
 * before the first exit.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/module.h>

#include <pcpu_next/pcpu_alloc.h>

#include "internal/core.h"

#if IS_ENABLED(CONFIG_PCPU_NEXT_TORTURE)
#include "torture/torture.h"
#else
static inline int pn_control_init(void)
{
	return 0;
}

static inline void pn_control_start(void)
{
}

static inline void pn_control_stop(void)
{
}

static inline void pn_control_exit(void)
{
}
#endif

/* ---- module init and exit ----------------------------------------------- */

/* Every component is up: set last by init, cleared first by exit. */
static bool pn_ready;

/**
 * pcpu_next_ready() - may the library be used?
 *
 * For code built into the kernel with the library (which comes up at
 * device_initcall time and may fail to): false before the library's
 * init finished, if it failed, and from the start of module exit on.
 *
 * Context: Any context.
 * Return: true while every component is initialised.
 */
bool pcpu_next_ready(void)
{
	return READ_ONCE(pn_ready);
}
EXPORT_SYMBOL_GPL(pcpu_next_ready);

/**
 * pcpu_next_cpus_seen() - the CPUs that ever came up
 *
 * Every CPU online when the library came up, and every CPU from the
 * BP_PREPARE_DYN step of its bring-up on, before it runs anything (see
 * core.c).  Bits are never cleared, so a CPU that may hold a part of a
 * per-CPU sum, online or offline now, is in the mask: a sum over it is
 * exact at quiescence without a hotplug callback, and visits the CPUs
 * that were ever used rather than every possible one (the kernel's own
 * mask, cpus_booted_once_mask, is not exported).
 *
 * Context: Any context, while the library is up (pcpu_next_ready()).
 * Return: the mask.
 */
const struct cpumask *pcpu_next_cpus_seen(void)
{
	return pn_cpus_seen;
}
EXPORT_SYMBOL_GPL(pcpu_next_cpus_seen);

static int __init pcpu_next_init(void)
{
	int ret;

	ret = pn_core_init();		/* debugfs, fault sites, CPUs seen */
	if (ret)
		return ret;
	ret = pn_control_init();	/* the harness's workqueue */
	if (ret)
		goto err_dir;
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
	WRITE_ONCE(pn_ready, true);
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
err_dir:
	pn_core_exit();
	return ret;
}

static void __exit pcpu_next_exit(void)
{
	WRITE_ONCE(pn_ready, false);
	pn_control_stop();	/* no run may outlive a component */
	pn_mmcid_exit();
	lazy_counter_module_exit();
	pn_alloc_exit();
	pn_control_exit();
	pn_core_exit();
}

module_init(pcpu_next_init);
module_exit(pcpu_next_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("pcpu_next: scalable per-CPU allocator and per-CPU counters");
MODULE_AUTHOR("The pcpu_next developers");
