/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pcpu_next library core, private to the module (as mm/internal.h is to
 * mm/): the debugfs directory the components put their statistics in,
 * the fault-injection sites (both in core.c), and the components' init
 * and exit, which main.c calls in order.  Clients use include/pcpu_next/
 * instead; the test harness (torture/) and the KUnit suites (kunit/) may
 * include this, the library never includes theirs.
 */
#ifndef _PCPU_NEXT_INTERNAL_CORE_H
#define _PCPU_NEXT_INTERNAL_CORE_H

#include <linux/atomic.h>
#include <linux/types.h>

struct dentry;

int pn_core_init(void);
void pn_core_exit(void);

/*
 * Every CPU that was online at load or was brought up since, never
 * cleared (core.c): a per-CPU sum over it reads every part that can be
 * nonzero, with no hotplug callback or list of counters.
 */
struct cpumask;
extern const struct cpumask *const pn_cpus_seen;

/**
 * pn_debugfs_dir() - the module's debugfs directory
 *
 * Context: After the module core created it (before any component init).
 * Return: the dentry of /sys/kernel/debug/pcpu_next, or an ERR_PTR or
 * NULL without debugfs (debugfs_create_*() accept either as parent).
 */
struct dentry *pn_debugfs_dir(void);

/*
 * Fault injection on the kernel's framework: every site has its own
 * struct fault_attr (defined in core.c, which also creates the
 * debugfs knobs pcpu_next/fault/fail_<site>/), checked with should_fail()
 * by pn_fault_hit() at the site.  At load: probability 0, verbose 0, so
 * only the calling task's fail-nth reaches a site until someone (a test,
 * a run's faults= window, an administrator) arms an attr.  Every injected
 * failure is counted per site for pn_fault_injected().  Without
 * CONFIG_FAULT_INJECTION nothing of this is compiled in.
 */
enum pn_fault_site {
	PN_FAULT_CHUNK,		/* pcpu_alloc.c: chunk creation */
	PN_FAULT_CTOR,		/* torture: the alloc stress's constructor */
	PN_FAULT_UPGRADE,	/* lazy_counter.c: an upgrade's allocation */
	PN_FAULT_MMCID,		/* mmcid_pcpu.c: a block's allocation */
	PN_FAULT_NR_SITES,
};

const char *pn_fault_name(enum pn_fault_site site);

#ifdef CONFIG_FAULT_INJECTION
struct fault_attr;
extern struct fault_attr pn_fail_chunk;
extern struct fault_attr pn_fail_ctor;
extern struct fault_attr lazy_fail_upgrade;
extern struct fault_attr mmcid_fail_grow;

bool pn_fault_hit(enum pn_fault_site site);
struct fault_attr *pn_fault_attr(enum pn_fault_site site);
void pn_fault_attr_reset(struct fault_attr *attr);
unsigned long pn_fault_injected(enum pn_fault_site site);
void pn_fault_reset_count(enum pn_fault_site site);
void pn_fault_fail_nth(enum pn_fault_site site, unsigned int nth);
#else
static inline bool pn_fault_hit(enum pn_fault_site site)
{
	return false;
}

static inline unsigned long pn_fault_injected(enum pn_fault_site site)
{
	return 0;
}

static inline void pn_fault_fail_nth(enum pn_fault_site site, unsigned int nth)
{
}
#endif

/*
 * A misuse budget, for KUnit: a suite announces the misuses it is about
 * to make (each component's *_expect_misuse() hook), and each one then
 * consumes the budget instead of WARNing, since every WARN fails the test
 * lanes.  One atomic, no lock: the misuse paths stay valid in every
 * context they are documented for.  Without KUnit a misuse always WARNs.
 */
struct pn_misuse_budget {
	atomic_t left;
};

/* Replace the budget with @n; returns what was left of it. */
static inline unsigned int pn_misuse_expect(struct pn_misuse_budget *b,
					    unsigned int n)
{
	return atomic_xchg(&b->left, n);
}

/* Consume one announced misuse; true if there was one. */
static inline bool pn_misuse_expected(struct pn_misuse_budget *b)
{
	return IS_ENABLED(CONFIG_KUNIT) && unlikely(atomic_read(&b->left)) &&
	       atomic_dec_if_positive(&b->left) >= 0;
}

/* The components' init and exit, in main.c's order. */
int pn_alloc_init(void);
void pn_alloc_exit(void);
int pn_ctree_subsys_init(void);
int lazy_counter_module_init(void);
void lazy_counter_module_exit(void);
int pn_mmcid_init(void);
void pn_mmcid_exit(void);

#endif /* _PCPU_NEXT_INTERNAL_CORE_H */
