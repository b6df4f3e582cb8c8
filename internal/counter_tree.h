/* SPDX-License-Identifier: GPL-2.0 */
/*
 * counter_tree internals shared with the KUnit suites and the test harness;
 * not an API (clients use include/pcpu_next/counter_tree.h).
 */
#ifndef _PCPU_NEXT_INTERNAL_COUNTER_TREE_H
#define _PCPU_NEXT_INTERNAL_COUNTER_TREE_H

#include <pcpu_next/counter_tree.h>

#endif /* _PCPU_NEXT_INTERNAL_COUNTER_TREE_H */
