/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-mm storage indexed by the rseq concurrency id (mm_cid) instead of the
 * CPU number: a process with T threads on a machine with C possible CPUs
 * needs about min(T, C) slots, not C.  See mmcid_pcpu.c for the design;
 * the functions are documented (kernel-doc) where they are defined.
 *
 * This is the client API, all of it exported (GPL): storage objects
 * (create, destroy, get/put of the caller's slot, for_each, and the
 * lockless memory, slots, max_cid and mm_gone reports) and a counter on
 * top of them.  Everything a test needs besides (a chosen index, the
 * geometry, the growth statistics) is in the module's private
 * internal/mmcid_pcpu.h.
 */
#ifndef _PCPU_NEXT_MMCID_PCPU_H
#define _PCPU_NEXT_MMCID_PCPU_H

#include <linux/gfp.h>
#include <linux/lockdep_types.h>
#include <linux/types.h>

struct mm_struct;
struct mmcid_pcpu;
struct mmcid_counter;

/* Value of mmcid_pcpu_ref.cid when the caller got the remote slot. */
#define MMCID_PCPU_REMOTE	(-1)

/**
 * struct mmcid_pcpu_ops - how the slots of a storage object are managed
 * @init: called once for every slot before its first use and must not
 *	  sleep.  For the remote slot in mmcid_pcpu_create() (process
 *	  context); for a cid slot by the cid's owner with preemption and
 *	  interrupts disabled, on PREEMPT_RT too, so there it must not
 *	  allocate or take a sleeping lock (spinlock_t on PREEMPT_RT).  NULL:
 *	  slots start zeroed.
 * @fold: called when the mm is torn down, for every initialised cid slot,
 *	  under the storage's raw spinlock with interrupts disabled (the
 *	  same rules as for @init on a cid slot): merge @slot into @remote
 *	  (the remote slot) so that no information is lost when the cid
 *	  slots are freed.  NULL: the cid slots are simply dropped.
 * @fini: called once for every initialised slot (the remote slot, and
 *	  every cid slot that was used), when its memory is freed: for cid slots
 *	  after @fold at mm teardown (from the mmu_notifier's ->release) or in
 *	  mmcid_pcpu_destroy() if the mm is still alive then; for the remote
 *	  slot in mmcid_pcpu_destroy().  Process context, no lock of the
 *	  storage held, may sleep; the slot is unreachable by then (at mm
 *	  teardown the remote slot may still be in use meanwhile).  NULL:
 *	  nothing to release.
 */
struct mmcid_pcpu_ops {
	void (*init)(void *slot, void *arg);
	void (*fold)(void *remote, const void *slot, void *arg);
	void (*fini)(void *slot, void *arg);
};

/**
 * struct mmcid_pcpu_ref - what mmcid_pcpu_get() handed out
 * @slot: the slot to use until mmcid_pcpu_put()
 * @cid: the mm_cid whose slot it is, or MMCID_PCPU_REMOTE
 * @cpu: the CPU the caller ran on when it got the slot
 * @flags: saved interrupt state (remote slot only; its lock is held)
 */
struct mmcid_pcpu_ref {
	void *slot;
	int cid;
	unsigned int cpu;
	unsigned long flags;
};

struct mmcid_pcpu *__mmcid_pcpu_create(struct mm_struct *mm, size_t size,
				       const struct mmcid_pcpu_ops *ops,
				       void *arg, struct lock_class_key *key);

/**
 * mmcid_pcpu_create() - create storage for an mm, indexed by mm_cid
 * @mm: the mm; the caller holds mm_users (mmget() or it is current->mm)
 * @size: bytes per slot, 1..PAGE_SIZE
 * @ops: slot callbacks, or NULL
 * @arg: passed to the callbacks
 *
 * See __mmcid_pcpu_create().  Every call site has a static lockdep class
 * for the storage's lock (as percpu_counter_init() and mutex_init() do):
 * all objects created here share it.
 *
 * Context: Process context, may sleep.
 * Return: the storage or an ERR_PTR(), see __mmcid_pcpu_create().
 */
#define mmcid_pcpu_create(mm, size, ops, arg)				\
({									\
	static struct lock_class_key __key;				\
									\
	__mmcid_pcpu_create(mm, size, ops, arg, &__key);		\
})

void mmcid_pcpu_destroy(struct mmcid_pcpu *s);
void *mmcid_pcpu_get(struct mmcid_pcpu *s, struct mmcid_pcpu_ref *ref,
		     gfp_t gfp);
void *mmcid_pcpu_get_nested(struct mmcid_pcpu *s, struct mmcid_pcpu_ref *ref,
			    gfp_t gfp);
void mmcid_pcpu_put(struct mmcid_pcpu *s, struct mmcid_pcpu_ref *ref);
void mmcid_pcpu_for_each(struct mmcid_pcpu *s,
			 void (*fn)(const void *slot, int cid, void *data),
			 void *data);
size_t mmcid_pcpu_memory(struct mmcid_pcpu *s);
size_t mmcid_pcpu_mm_memory(struct mmcid_pcpu *s, size_t *unit_bytes);
unsigned int mmcid_pcpu_slots(struct mmcid_pcpu *s);
int mmcid_pcpu_max_cid(struct mmcid_pcpu *s);
bool mmcid_pcpu_mm_gone(struct mmcid_pcpu *s);

struct mmcid_counter *__mmcid_counter_create(struct mm_struct *mm,
					     struct lock_class_key *key);

/**
 * mmcid_counter_create() - a counter of an mm, one local64_t per cid
 * @mm: as for mmcid_pcpu_create()
 *
 * See __mmcid_counter_create(); one static lockdep class per call site.
 *
 * Context: Process context, may sleep.
 * Return: the counter or an ERR_PTR(), see __mmcid_counter_create().
 */
#define mmcid_counter_create(mm)					\
({									\
	static struct lock_class_key __key;				\
									\
	__mmcid_counter_create(mm, &__key);				\
})

void mmcid_counter_destroy(struct mmcid_counter *c);
int mmcid_counter_add(struct mmcid_counter *c, s64 delta, gfp_t gfp,
		      unsigned int *cpu);
int mmcid_counter_add_nested(struct mmcid_counter *c, s64 delta, gfp_t gfp,
			     unsigned int *cpu);
s64 mmcid_counter_sum(struct mmcid_counter *c);
struct mmcid_pcpu *mmcid_counter_storage(struct mmcid_counter *c);

#endif /* _PCPU_NEXT_MMCID_PCPU_H */
