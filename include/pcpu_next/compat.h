/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel-version differences, in one place.  pcpu_next supports 6.12 LTS
 * and 7.x; every #if on LINUX_VERSION_CODE in the module and its headers
 * lives here.  Public, because the inline fast paths of the API need the
 * mm_cid read.
 *
 *   what                         6.12              7.x (since)
 *   namespace import             bare identifier   string literal (6.13)
 *   timer owner lookup           from_timer()      timer_container_of() (6.16)
 *   one zeroed object            kzalloc(sizeof)   kzalloc_obj() (7.0)
 *   mm_cid of a thread           t->mm_cid         t->mm_cid.cid, with
 *                                                  ONCPU/TRANSIT bits (6.19)
 *   cid of a kthread or exited   -1                MM_CID_UNSET, INT_MIN (6.19)
 *   cids of a 4-thread process   0..3              0..4 kept for good (6.19)
 */
#ifndef _PCPU_NEXT_COMPAT_H
#define _PCPU_NEXT_COMPAT_H

#include <linux/compiler.h>
#include <linux/mm.h>		/* task_mm_cid() on 6.12 */
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/timer.h>
#include <linux/version.h>

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
#define PN_IMPORT_NS_KUNIT()	MODULE_IMPORT_NS("EXPORTED_FOR_KUNIT_TESTING")
#else
#define PN_IMPORT_NS_KUNIT()	MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING)
#endif

/* kzalloc_obj() (7.0) is a macro: no version test needed. */
#ifndef kzalloc_obj
#define kzalloc_obj(P, gfp)	kzalloc(sizeof(P), gfp)
#endif

/* A macro: stable kernels that backport it need no version test. */
#ifndef timer_container_of
#define timer_container_of(var, timer, field)	from_timer(var, timer, field)
#endif

/*
 * mmcid_pcpu's block 0, the cids its inline add reaches.  6.12 hands a
 * CPU's cid to whichever thread of the mm runs there, so a 4-thread
 * process uses cids 0..3.  Since 6.19 a task keeps its cid; the bound is
 * users + users / 4, so such a process may hold cid 4 for good.  Five
 * 64-byte units cost what eight do (kmalloc-512): block 0 is 8 cids.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 19, 0)
#define PN_MMCID_B0_SHIFT	3
#else
#define PN_MMCID_B0_SHIFT	2
#endif

/**
 * pn_task_mm_cid() - the mm_cid of @t, as task_mm_cid() reads it
 * @t: current, or a task whose mm_cid cannot change under the caller
 *
 * Since 6.19 the scheduler sets and clears the ONCPU and TRANSIT bits of a
 * running task's cid from other CPUs with plain stores; the value without
 * those bits is stable while @t runs with preemption disabled.  The load
 * is marked so that the race on the other bits is not a data race.
 *
 * Context: Any; stable only with preemption disabled, for @t == current.
 * Return: the cid, or a negative value (-1 on 6.12, MM_CID_UNSET on 7.x)
 * for a task that has none: kernel threads, exiting and exec'ing tasks.
 * Without CONFIG_SCHED_MM_CID, the CPU number.
 */
static __always_inline int pn_task_mm_cid(struct task_struct *t)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 19, 0) && defined(CONFIG_SCHED_MM_CID)
	return READ_ONCE(t->mm_cid.cid) & ~(MM_CID_ONCPU | MM_CID_TRANSIT);
#else
	return task_mm_cid(t);
#endif
}

#endif /* _PCPU_NEXT_COMPAT_H */
