/* SPDX-License-Identifier: GPL-2.0 */
/*
 * counter_tree internals shared with the KUnit suites and the test harness;
 * not an API (clients use include/pcpu_next/counter_tree.h).  Nothing here
 * is exported to other modules except, with KUnit, through
 * EXPORT_SYMBOL_IF_KUNIT().
 *
 * Who uses what:
 *
 *	struct pn_ctree_topo, PN_CTREE_MAX_*	library, harness, KUnit
 *	pn_ctree_topo_compute()			library, harness bench, KUnit
 *	pn_ctree_batch_within()			library, KUnit
 *	pn_ctree_accuracy()			harness bench, KUnit
 *	pn_ctree_topology()			KUnit only
 *	pn_ctree_expect_misuse()		KUnit only
 */
#ifndef _PCPU_NEXT_INTERNAL_COUNTER_TREE_H
#define _PCPU_NEXT_INTERNAL_COUNTER_TREE_H

#include <linux/bits.h>
#include <linux/compiler.h>
#include <linux/types.h>

#include <pcpu_next/counter_tree.h>

#define PN_CTREE_MAX_LEVELS	5	/* carry levels, root excluded */
#define PN_CTREE_MAX_ORDER	20	/* up to 2^20 CPU ids */
/*
 * log2(batch) + log2(CPU ids) is at most this: the accuracy range then
 * stays below 2^30, which the precise sum needs to take the high bits of
 * the 32-bit level 0 from the root (counter_tree.c, "Level 0 is 32 bits
 * wide").
 */
#define PN_CTREE_RANGE_ORDER	27

/**
 * struct pn_ctree_topo - the shape of every tree on this machine
 * @order: log2 of the number of level-0 slots (2^@order >= nr_cpu_ids)
 * @nr_levels: carry levels below the root; 0 on a single-CPU kernel
 * @nr_items: items per tree in levels 1..root (the root included)
 * @arity_order: log2 of the fan-in of each level into the next one
 *
 * Level l (1 <= l <= @nr_levels) has 2^(@order - sum of @arity_order[0..l-1])
 * items; level @nr_levels is the root, a single item.
 */
struct pn_ctree_topo {
	unsigned int order;
	unsigned int nr_levels;
	unsigned int nr_items;
	u8 arity_order[PN_CTREE_MAX_LEVELS];
};

/*
 * The pure arithmetic of the shape and of the accuracy range, for any
 * number of CPU ids: the library applies it to nr_cpu_ids at module init,
 * the bench prints it for a machine it does not run on, and KUnit checks
 * it against figures worked out by hand.
 */
void pn_ctree_topo_compute(unsigned int order, struct pn_ctree_topo *t);
void pn_ctree_accuracy(const struct pn_ctree_topo *t, unsigned int batch_order,
		       unsigned int nr_level0, unsigned long *under,
		       unsigned long *over);
unsigned long pn_ctree_batch_within(const struct pn_ctree_topo *t,
				    unsigned int nr_level0, unsigned long bound);

#if IS_ENABLED(CONFIG_KUNIT)
const struct pn_ctree_topo *pn_ctree_topology(void);
unsigned int pn_ctree_expect_misuse(unsigned int n);
#endif

#endif /* _PCPU_NEXT_INTERNAL_COUNTER_TREE_H */
