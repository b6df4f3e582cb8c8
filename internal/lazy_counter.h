/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lazy_counter internals shared with the KUnit suites and the test harness;
 * not an API (clients use include/pcpu_next/lazy_counter.h).  Nothing here
 * is exported to other modules (the suites and the harness are linked into
 * pcpu_next.ko): the KUnit-only hooks are VISIBLE_IF_KUNIT and exist only
 * on kernels with KUnit.  Upgrade failures are injected through the
 * kernel's fault_attr of the module core (internal/core.h), not from here.
 * The definitions, with their kernel-doc, are in lazy_counter.c.
 */
#ifndef _PCPU_NEXT_INTERNAL_LAZY_COUNTER_H
#define _PCPU_NEXT_INTERNAL_LAZY_COUNTER_H

#include <linux/types.h>

#include <pcpu_next/lazy_counter.h>

/*
 * The flat target's folding threshold (percpu_counter_batch).  Used by the
 * library itself and by kunit/lazy_counter_kunit.c (the flat target's
 * batch and fold case).
 */
long lazy_counter_batch(void);

/*
 * The largest |lazy_counter_read() - lazy_counter_sum()| of a counter at
 * quiescence.  Used by kunit/lazy_counter_kunit.c, kunit/failnth_kunit.c
 * and the stress (torture/lazy_counter_torture.c) to bound read().
 */
u64 lazy_counter_read_slack(const struct lazy_counter *c);

#if IS_ENABLED(CONFIG_KUNIT)
/*
 * KUnit only (kunit/lazy_counter_kunit.c).
 * lazy_counter_expect_misuse(): the next @n uses of destroyed counters
 * are counted without the WARN; returns what was left of the previous
 * budget.
 */
unsigned int lazy_counter_expect_misuse(unsigned int n);
#endif

#endif /* _PCPU_NEXT_INTERNAL_LAZY_COUNTER_H */
