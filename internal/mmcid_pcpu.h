/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmcid_pcpu internals shared with the KUnit suites and the test harness;
 * not an API (clients use include/pcpu_next/mmcid_pcpu.h).  Nothing here
 * is exported to other modules except, with KUnit, through
 * EXPORT_SYMBOL_IF_KUNIT().
 *
 * Who uses what:
 *
 *	enum mmcid_src				library, harness, KUnit
 *	__mmcid_pcpu_get()			harness bench, KUnit
 *	__mmcid_counter_add(), _add_at()	harness, KUnit
 *	mmcid_pcpu_ctx_size()			harness bench
 *	mmcid_pcpu_model_bytes()		harness bench
 *	mmcid_pcpu_grow_attempts()		KUnit only
 *	mmcid_pcpu_lock_key()			KUnit only
 *	mmcid_pcpu_geo_blk(), _geo_block()	KUnit only
 *	mmcid_pcpu_map_grain()			KUnit only
 *	mmcid_pcpu_expect_misuse()		KUnit only
 *
 * __mmcid_pcpu_get(), __mmcid_counter_add_at(), mmcid_pcpu_ctx_size() and
 * mmcid_pcpu_model_bytes() are compiled only with KUnit or the harness, the KUnit-only ones only
 * with KUnit (VISIBLE_IF_KUNIT, EXPORT_SYMBOL_IF_KUNIT).  The harness's
 * own mmcid functions (the debugfs file) are in torture/torture.h.  The
 * functions are documented
 * (kernel-doc) where they are defined.
 */
#ifndef _PCPU_NEXT_INTERNAL_MMCID_PCPU_H
#define _PCPU_NEXT_INTERNAL_MMCID_PCPU_H

#include <linux/bits.h>
#include <linux/gfp_types.h>
#include <linux/lockdep_types.h>
#include <linux/types.h>

#include <pcpu_next/mmcid_pcpu.h>

/*
 * Block 0 holds 1 << MMCID_B0_SHIFT cids, fewer if a page or nr_cpu_ids
 * is smaller.  The inline add reaches only block 0.  Four cids on 6.12,
 * eight on 7.x, where a 4-thread process may keep cid 4 (compat.h).
 * Here so that KUnit checks the same size.
 */
#define MMCID_B0_SHIFT	PN_MMCID_B0_SHIFT
#define MMCID_B0	BIT(MMCID_B0_SHIFT)

/**
 * enum mmcid_src - where an access takes its index from
 * @MMCID_SRC_TASK: pn_task_mm_cid(current), read with preemption disabled;
 *	the remote slot for a caller that is not a thread of the storage's
 *	mm or has no cid.  The only source of the exported API.
 * @MMCID_SRC_CPU: the CPU number, read with preemption disabled: exclusive
 *	exactly like a real cid, and handed from task to task as tasks
 *	migrate, as a CPU-owned cid is at a context switch (6.12, and 7.x in
 *	per-CPU mode).  For kernel threads, which never own an mm_cid.
 * @MMCID_SRC_FIXED: a cid the caller chooses and guarantees that nobody
 *	else uses at the same time.
 *
 * A cid outside [0, nr_cpu_ids) means the remote slot, whatever the
 * source.
 */
enum mmcid_src {
	MMCID_SRC_TASK,
	MMCID_SRC_CPU,
	MMCID_SRC_FIXED,
};

void *__mmcid_pcpu_get(struct mmcid_pcpu *s, struct mmcid_pcpu_ref *ref,
		       gfp_t gfp, enum mmcid_src src, int cid);
int __mmcid_counter_add_at(struct mmcid_counter *c, unsigned int idx,
			   s64 delta, gfp_t gfp, enum mmcid_src src, int cid,
			   unsigned int *cpu);

/* __mmcid_counter_add_at() on counter 0 (a counter of one). */
static inline int __mmcid_counter_add(struct mmcid_counter *c, s64 delta,
				      gfp_t gfp, enum mmcid_src src, int cid,
				      unsigned int *cpu)
{
	return __mmcid_counter_add_at(c, 0, delta, gfp, src, cid, cpu);
}

size_t mmcid_pcpu_ctx_size(void);
size_t mmcid_pcpu_model_bytes(unsigned int ncids, unsigned int nobj,
			      size_t size, unsigned int cids,
			      size_t *unit_bytes);

#if IS_ENABLED(CONFIG_KUNIT)
/* Block allocations tried, and the backoff deadline (0: none). */
unsigned int mmcid_pcpu_grow_attempts(struct mmcid_pcpu *s,
				      unsigned long *retry);
/* The lockdep class key the storage's lock was given. */
const struct lock_class_key *mmcid_pcpu_lock_key(struct mmcid_pcpu *s);
/* Block geometry for @stride-byte slots and @ncids cids. */
unsigned int mmcid_pcpu_geo_blk(unsigned int stride, unsigned int cid);
void mmcid_pcpu_geo_block(unsigned int stride, unsigned int ncids,
			  unsigned int k, unsigned int *first,
			  unsigned int *len);
/* A unit set's map grain and bits for @unit-byte units. */
u32 mmcid_pcpu_map_grain(u32 unit, unsigned int *nbits);
/* The next @n misuses are the suite's own: no WARN (budget left back). */
unsigned int mmcid_pcpu_expect_misuse(unsigned int n);
#endif

#endif /* _PCPU_NEXT_INTERNAL_MMCID_PCPU_H */
