/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lazy_counter internals shared with the KUnit suites and the test harness;
 * not an API (clients use include/pcpu_next/lazy_counter.h).
 */
#ifndef _PCPU_NEXT_INTERNAL_LAZY_COUNTER_H
#define _PCPU_NEXT_INTERNAL_LAZY_COUNTER_H

#include <pcpu_next/lazy_counter.h>

#endif /* _PCPU_NEXT_INTERNAL_LAZY_COUNTER_H */
