// SPDX-License-Identifier: GPL-2.0
/*
 * pcpu_next library core: the debugfs directory the components put their
 * statistics in, and the fault-injection sites they share.  Nothing else
 * of the library lives here; main.c brings the components up in order.
 *
 * Every fault site has its own struct fault_attr of the kernel's
 * fault-injection framework (Documentation/fault-injection/
 * fault-injection.rst), checked with should_fail() by pn_fault_hit() at
 * the site; with CONFIG_FAULT_INJECTION_DEBUG_FS they appear as
 *
 *   /sys/kernel/debug/pcpu_next/fault/
 *     fail_chunk/  fail_ctor/  fail_upgrade/  fail_mmcid/
 *       probability interval times space verbose task-filter ...
 *
 * At load each has probability 0 and verbose 0 (a stack dump per injected
 * failure would be a splat in the test lanes), so only the calling task's
 * fail-nth reaches a site.  Every true answer of should_fail() at a site
 * is counted (fail-nth ones too) for pn_fault_injected(); the counts are
 * atomic and carry no ordering: a reader that needs them exact waits for
 * the failing tasks first.  The ctor site is failed only by the test
 * harness's constructor; it is here so that all sites share one
 * directory and one set of counts.
 *
 * CPUs ever brought up.  A per-CPU sum must read every CPU that may hold
 * a nonzero part; percpu_counter reads the online CPUs and folds a dying
 * CPU's part into the total from a hotplug callback, which needs a global
 * list of counters under a global lock (percpu_counters_lock: every
 * init and destroy takes it).  The kernel's mask of CPUs that ever came up
 * (cpus_booted_once_mask) is not exported, so the core keeps its own,
 * pn_cpus_seen: every CPU online at load, and every CPU from the
 * BP_PREPARE_DYN step of its bring-up on, which runs on the control CPU
 * before the new CPU executes anything.  Bits are never cleared: an
 * offline CPU keeps its part in place and sums keep reading it, so no
 * counter needs a hotplug callback or a list.  A CPU's first update is
 * ordered after its bit because the control CPU sets the bit before it
 * kicks the new CPU (BP_PREPARE_DYN precedes BP_KICK_AP), and starting a
 * CPU orders what the starter wrote before; a sum that reads the mask before the
 * bit appears races with that CPU's updates and may miss them, as a sum
 * misses any update concurrent with it.
 *
 * Depends on: <linux/...> headers and internal/core.h only.
 */

#include <linux/atomic.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/fault-inject.h>

#include "internal/core.h"

static struct dentry *pn_dir;

/**
 * pn_debugfs_dir() - the module's debugfs directory
 *
 * Context: Between pn_core_init() and pn_core_exit().
 * Return: the dentry of /sys/kernel/debug/pcpu_next (an ERR_PTR without
 * debugfs, which debugfs_create_*() accept as parent).
 */
struct dentry *pn_debugfs_dir(void)
{
	return pn_dir;
}

/* ---- fault injection ------------------------------------------------------ */

static const char *const pn_fault_names[PN_FAULT_NR_SITES] = {
	[PN_FAULT_CHUNK] = "chunk",
	[PN_FAULT_CTOR] = "ctor",
	[PN_FAULT_UPGRADE] = "upgrade",
	[PN_FAULT_MMCID] = "mmcid",
};

/**
 * pn_fault_name() - a site's name, as in debugfs (after "fail_")
 * @site: the site
 *
 * Context: Any context.
 * Return: the name.
 */
const char *pn_fault_name(enum pn_fault_site site)
{
	return pn_fault_names[site];
}

#ifdef CONFIG_FAULT_INJECTION
DECLARE_FAULT_ATTR(pn_fail_chunk);
DECLARE_FAULT_ATTR(pn_fail_ctor);
DECLARE_FAULT_ATTR(lazy_fail_upgrade);
DECLARE_FAULT_ATTR(mmcid_fail_grow);

static struct fault_attr *const pn_fault_attrs[PN_FAULT_NR_SITES] = {
	[PN_FAULT_CHUNK] = &pn_fail_chunk,
	[PN_FAULT_CTOR] = &pn_fail_ctor,
	[PN_FAULT_UPGRADE] = &lazy_fail_upgrade,
	[PN_FAULT_MMCID] = &mmcid_fail_grow,
};

static atomic_long_t pn_fault_count[PN_FAULT_NR_SITES];

/**
 * pn_fault_attr_reset() - back to the load-time settings
 * @attr: a site's attr
 *
 * Probability 0, so only fail-nth reaches the site.  The probability goes
 * first, so a concurrent should_fail() sees either the old settings or
 * probability 0.
 *
 * Context: Any context.
 */
void pn_fault_attr_reset(struct fault_attr *attr)
{
	WRITE_ONCE(attr->probability, 0);
	WRITE_ONCE(attr->interval, 1);
	atomic_set(&attr->times, 1);
	atomic_set(&attr->space, 0);
	WRITE_ONCE(attr->task_filter, false);
	WRITE_ONCE(attr->verbose, 0);
}

/**
 * pn_fault_hit() - should the caller fail here?
 * @site: the injection site
 *
 * should_fail() on the site's fault_attr: the debugfs knobs, a test's
 * settings and the calling task's fail-nth all reach it.  A failure is
 * counted for pn_fault_injected().
 *
 * Context: Any context but NMI; fail-nth counts only in task context.
 * Return: true if the caller must fail.
 */
bool pn_fault_hit(enum pn_fault_site site)
{
	if (!should_fail(pn_fault_attrs[site], 1))
		return false;
	atomic_long_inc(&pn_fault_count[site]);
	return true;
}

/**
 * pn_fault_attr() - a site's fault_attr
 * @site: the site
 *
 * Context: Any context.
 * Return: the attr, for a test that arms it.
 */
struct fault_attr *pn_fault_attr(enum pn_fault_site site)
{
	return pn_fault_attrs[site];
}

/**
 * pn_fault_injected() - failures injected at a site since the last reset
 * @site: the site
 *
 * Context: Any context.
 * Return: the count.
 */
unsigned long pn_fault_injected(enum pn_fault_site site)
{
	return atomic_long_read(&pn_fault_count[site]);
}

/**
 * pn_fault_fail_nth() - the calling task's @nth check of a site fails, once
 * @site: the injection site
 * @nth: 1: its next check fails, 2: the one after, ...; 0 restores the
 *	 defaults (probability 0: only fail-nth reaches the site)
 *
 * The kernel's fault_attr doing what a "fail the n-th step" test needs:
 * task-filtered (current->make_it_fail), interval @nth counted from now,
 * times 1, probability 100, written last so that a concurrent
 * should_fail() sees the rest first.  Checks by other tasks neither fail
 * nor count.  The failure is counted by pn_fault_hit() as any other.
 *
 * Context: Process context, the task whose check is to fail.
 */
void pn_fault_fail_nth(enum pn_fault_site site, unsigned int nth)
{
	struct fault_attr *a = pn_fault_attrs[site];

	pn_fault_attr_reset(a);
	current->make_it_fail = !!nth;
	if (!nth)
		return;
	WRITE_ONCE(a->task_filter, true);
	WRITE_ONCE(a->interval, nth);
	WRITE_ONCE(a->count, 0);
	atomic_set(&a->times, 1);
	/* The settings above before the probability that enables them. */
	smp_wmb();
	WRITE_ONCE(a->probability, 100);
}

/**
 * pn_fault_reset_count() - start counting a site's failures from 0
 * @site: the site
 *
 * Context: Any context.
 */
void pn_fault_reset_count(enum pn_fault_site site)
{
	atomic_long_set(&pn_fault_count[site], 0);
}

static void pn_fault_debugfs_init(struct dentry *parent)
{
	struct dentry *dir __maybe_unused;
	unsigned int i;

	for (i = 0; i < PN_FAULT_NR_SITES; i++)
		pn_fault_attr_reset(pn_fault_attrs[i]);
#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
	dir = debugfs_create_dir("fault", parent);
	for (i = 0; i < PN_FAULT_NR_SITES; i++) {
		char name[16];

		snprintf(name, sizeof(name), "fail_%s", pn_fault_names[i]);
		fault_create_debugfs_attr(name, dir, pn_fault_attrs[i]);
	}
#endif
}
#else
static void pn_fault_debugfs_init(struct dentry *parent)
{
}
#endif

/* ---- CPUs ever brought up ------------------------------------------------ */

static struct cpumask pn_cpus_seen_mask;	/* bits only set, never cleared */
const struct cpumask *const pn_cpus_seen = &pn_cpus_seen_mask;
static int pn_cpus_seen_state;

static int pn_cpu_seen_prepare(unsigned int cpu)
{
	cpumask_set_cpu(cpu, &pn_cpus_seen_mask);
	return 0;
}

/**
 * pn_core_init() - debugfs directory, fault sites, the mask of CPUs seen
 *
 * Context: Module init, before any component's init; may sleep.
 * Return: 0, or -errno if the hotplug state could not be set up.
 */
int pn_core_init(void)
{
	int ret;

	/* Invokes the callback for every CPU up now, excluding hotplug. */
	ret = cpuhp_setup_state(CPUHP_BP_PREPARE_DYN, "pcpu_next:cpus_seen",
				pn_cpu_seen_prepare, NULL);
	if (ret < 0)
		return ret;
	pn_cpus_seen_state = ret;
	pn_dir = debugfs_create_dir("pcpu_next", NULL);
	pn_fault_debugfs_init(pn_dir);
	return 0;
}

/**
 * pn_core_exit() - remove the debugfs directory and the hotplug state
 *
 * Context: Module exit, after every component's exit; may sleep.
 */
void pn_core_exit(void)
{
	debugfs_remove(pn_dir);
	cpuhp_remove_state_nocalls(pn_cpus_seen_state);
}
