/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pcpu_alloc internals shared with the KUnit suites and the test harness;
 * not an API (clients use include/pcpu_next/pcpu_alloc.h).
 */
#ifndef _PCPU_NEXT_INTERNAL_PCPU_ALLOC_H
#define _PCPU_NEXT_INTERNAL_PCPU_ALLOC_H

#include <pcpu_next/pcpu_alloc.h>

#endif /* _PCPU_NEXT_INTERNAL_PCPU_ALLOC_H */
