/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-mm storage indexed by the rseq concurrency id (mm_cid) instead of the
 * CPU number: a process with T threads on a machine with C possible CPUs
 * needs about min(T, C) slots, a quarter more on 7.x, not C.  See
 * mmcid_pcpu.c for the design and for how 6.12 and 7.x hand out cids;
 * the out-of-line functions are documented (kernel-doc) where they are
 * defined, the inline counter add here.
 *
 * This is the client API, exported (GPL) or inline: storage objects
 * (create, destroy, get/put of the caller's slot, for_each, and the
 * lockless memory, slots, max_cid and mm_gone reports) and a counter on
 * top of them, whose add is inline (struct mmcid_pcpu_fast; clients built
 * against the earlier header, with mmcid_counter_add() exported, must be
 * rebuilt).  Everything a test needs besides (a chosen index, the
 * geometry, the growth statistics) is in the module's private
 * internal/mmcid_pcpu.h.
 */
#ifndef _PCPU_NEXT_MMCID_PCPU_H
#define _PCPU_NEXT_MMCID_PCPU_H

#include <linux/bitops.h>
#include <linux/gfp.h>
#include <linux/kernel.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/types.h>
#include <asm/local64.h>

#include <pcpu_next/compat.h>

struct mmcid_pcpu;
struct mmcid_counter;

/**
 * struct mmcid_pcpu_fast - what the inline counter add reads of an object
 * @slot0: the object's slot of cid 0 in block 0 of its unit set (the
 *	   slot of cid c < @nr0 is @stride * c bytes further); set before
 *	   the first bit of @ready0 and not changed while any bit is set;
 *	   meaningless (the block may be gone) once @ready0 is cleared
 * @ready0: bit c set once the object's slot of cid c (< @nr0) is
 *	    initialised; cleared when the mm is torn down
 * @mm: the mm the object belongs to
 * @stride: bytes between the slots of consecutive cids (the unit, at most
 *	    32 KiB)
 * @nr: counters in the array of a counter (its slot's local64_t words),
 *	0 for other storage; the inline add goes out of line (which
 *	refuses it) for an index at or above it
 * @nr0: cids in block 0 (at most 8)
 * @dead: library state, not read here: the mm was torn down (set under
 *	  the object's lock, read without it by the allocation path)
 * @folded: library state, not read here: teardown folded the cid slots
 *	    (under the per-mm context's lock)
 *
 * The first member of every storage object, on its first cache line,
 * so that mmcid_counter_add() can inline the path of a thread whose cid
 * is in block 0 (cids 0..3 on 6.12, 0..7 on 7.x: see compat.h) without a
 * call (percpu_counter_add() calls out to percpu_counter_add_batch()).
 * Not API: read only by the inline
 * functions below, written only by mmcid_pcpu.c.  Its layout is part of
 * the ABI of those inline functions: __mmcid_counter_add_task() takes it
 * by type, so a change moves that symbol's modversions CRC and an old
 * client is refused at load instead of adding at stale offsets.  @dead
 * and @folded live here only because the line has room for them: they
 * are one byte each, so that the two locks that write them never write
 * the same byte.
 */
struct mmcid_pcpu_fast {
	void *slot0;
	unsigned long ready0;
	struct mm_struct *mm;
	u16 stride;
	u16 nr;
	u8 nr0;
	u8 dead;
	u8 folded;
};

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
 * @size: bytes per slot, 1..PAGE_SIZE (at most 32 KiB)
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

struct mmcid_mm;
struct mmcid_mm *mmcid_mm_create(gfp_t gfp);
void mmcid_mm_release(struct mmcid_mm *ctx);
void mmcid_mm_destroy(struct mmcid_mm *ctx);
struct mmcid_pcpu *__mmcid_pcpu_create_in(struct mmcid_mm *ctx,
					  struct mm_struct *mm, size_t size,
					  const struct mmcid_pcpu_ops *ops,
					  void *arg, struct lock_class_key *key);

/**
 * mmcid_pcpu_create_in() - create storage in an owned per-mm context
 * @ctx: from mmcid_mm_create()
 * @mm: the mm of @ctx
 * @size: bytes per slot, 1..PAGE_SIZE (at most 32 KiB)
 * @ops: slot callbacks, or NULL
 * @arg: passed to the callbacks
 *
 * See __mmcid_pcpu_create_in(); one static lockdep class per call site.
 *
 * Context: Process context, may sleep.
 * Return: the storage or an ERR_PTR().
 */
#define mmcid_pcpu_create_in(ctx, mm, size, ops, arg)			\
({									\
	static struct lock_class_key __key;				\
									\
	__mmcid_pcpu_create_in(ctx, mm, size, ops, arg, &__key);	\
})

int mmcid_pcpu_prepare(struct mmcid_pcpu *s, unsigned int max_cid, gfp_t gfp);
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
					     unsigned int nr,
					     struct lock_class_key *key);

/**
 * mmcid_counter_create() - a counter of an mm, one local64_t per cid
 * @mm: as for mmcid_pcpu_create()
 *
 * An array of one counter: see __mmcid_counter_create(); one static
 * lockdep class per call site.
 *
 * Context: Process context, may sleep.
 * Return: the counter or an ERR_PTR(), see __mmcid_counter_create().
 */
#define mmcid_counter_create(mm)					\
({									\
	static struct lock_class_key __key;				\
									\
	__mmcid_counter_create(mm, 1, &__key);				\
})

/**
 * mmcid_counter_create_many() - an array of counters of an mm
 * @mm: as for mmcid_pcpu_create()
 * @nr: counters in the array
 *
 * One storage object for all @nr (one header, one range of each cid's
 * unit): see __mmcid_counter_create(); one static lockdep class per call
 * site.
 *
 * Context: Process context, may sleep.
 * Return: the counter array or an ERR_PTR(), see __mmcid_counter_create().
 */
#define mmcid_counter_create_many(mm, nr)				\
({									\
	static struct lock_class_key __key;				\
									\
	__mmcid_counter_create(mm, nr, &__key);				\
})

struct mmcid_counter *__mmcid_counter_create_in(struct mmcid_mm *ctx,
						struct mm_struct *mm,
						unsigned int nr,
						struct lock_class_key *key);

/**
 * mmcid_counter_create_in() - a counter in an owned per-mm context
 * @ctx: from mmcid_mm_create()
 * @mm: the mm of @ctx
 *
 * See __mmcid_counter_create_in(); one static lockdep class per call site.
 *
 * Context: Process context, may sleep.
 * Return: the counter or an ERR_PTR().
 */
#define mmcid_counter_create_in(ctx, mm)				\
({									\
	static struct lock_class_key __key;				\
									\
	__mmcid_counter_create_in(ctx, mm, 1, &__key);			\
})

/**
 * mmcid_counter_create_many_in() - an array of counters in an owned
 *				    per-mm context
 * @ctx: from mmcid_mm_create()
 * @mm: the mm of @ctx
 * @nr: counters in the array
 *
 * See __mmcid_counter_create_in(); one static lockdep class per call site.
 *
 * Context: Process context, may sleep.
 * Return: the counter array or an ERR_PTR().
 */
#define mmcid_counter_create_many_in(ctx, mm, nr)			\
({									\
	static struct lock_class_key __key;				\
									\
	__mmcid_counter_create_in(ctx, mm, nr, &__key);			\
})

/*
 * A cid slot of a counter holds at most this much unfolded, either way:
 * an add that reaches it moves the slot's value into the counter's
 * remote slot, which mmcid_counter_read_at() reads in O(1).
 */
#define MMCID_COUNTER_BATCH	32

void mmcid_counter_destroy(struct mmcid_counter *c);
int __mmcid_counter_add_task(const struct mmcid_pcpu_fast *f,
			     unsigned int idx, s64 delta, gfp_t gfp,
			     unsigned int *cpu, unsigned int subclass);
void __mmcid_counter_fold(const struct mmcid_pcpu_fast *f, local64_t *v,
			  unsigned int idx, unsigned int subclass);
s64 mmcid_counter_sum_at(struct mmcid_counter *c, unsigned int idx);
s64 mmcid_counter_read_at(struct mmcid_counter *c, unsigned int idx);
int mmcid_counter_sum_many(struct mmcid_counter *c, unsigned int first,
			   unsigned int nr, s64 *sums);

/**
 * mmcid_counter_sum() - the value of counter 0 (of a counter of one)
 * @c: the counter
 *
 * See mmcid_counter_sum_at().
 *
 * Context: As mmcid_counter_sum_at().
 * Return: the sum of the counter's cid slots and its remote slot.
 */
static inline s64 mmcid_counter_sum(struct mmcid_counter *c)
{
	return mmcid_counter_sum_at(c, 0);
}

/*
 * The inline part of the counter's add: the caller's cid slot when the
 * cid is in block 0 and the slot is initialised.
 *
 * With CONFIG_SCHED_MM_CID only a user thread of an mm has a cid of it.
 * Kernel threads never get one, kthread_use_mm() or not.  Exit and exec
 * drop it before the mm changes.  A task without a cid reads -1 on 6.12,
 * MM_CID_UNSET (INT_MIN) on 7.x.  Both are huge as unsigned, so they fail
 * the bound.  So the mm test and the cid bound are the whole "is this a
 * thread of the mm" check.
 *
 * Without CONFIG_SCHED_MM_CID the cid is the CPU number, and everything
 * goes through __mmcid_counter_add_task(), which tells kernel threads
 * apart.
 *
 * The ready bit is read with acquire ordering before @slot0, which was
 * set before any ready bit.  pn_task_mm_cid() is a marked load: on 7.x
 * other CPUs write flag bits of a running task's cid.  The other fields
 * read here are written only by mmcid_pcpu.c.
 */
static __always_inline int __mmcid_counter_add_inline(struct mmcid_counter *c,
						      unsigned int idx,
						      s64 delta, gfp_t gfp,
						      unsigned int *cpu,
						      unsigned int subclass)
{
	const struct mmcid_pcpu_fast *f = (const struct mmcid_pcpu_fast *)c;
	unsigned int cid;

	if (IS_ENABLED(CONFIG_DEBUG_ATOMIC_SLEEP))
		might_sleep_if(gfpflags_allow_blocking(gfp));
	if (IS_ENABLED(CONFIG_SCHED_MM_CID)) {
		preempt_disable();
		cid = pn_task_mm_cid(current);
		/* a constant 0 needs no test: every counter has one */
		if (likely(current->mm == f->mm && cid < f->nr0 &&
			   ((__builtin_constant_p(idx) && !idx) ||
			    idx < f->nr) &&
			   test_bit_acquire(cid, &f->ready0))) {
			local64_t *v = (local64_t *)(READ_ONCE(f->slot0) +
						     cid * f->stride) + idx;
			s64 n = local64_add_return(delta, v);

			if (unlikely(n >= MMCID_COUNTER_BATCH ||
				     n <= -MMCID_COUNTER_BATCH))
				__mmcid_counter_fold(f, v, idx, subclass);
			if (cpu)
				*cpu = smp_processor_id();
			preempt_enable();
			return cid;
		}
		preempt_enable();
	}
	return __mmcid_counter_add_task(f, idx, delta, gfp, cpu, subclass);
}

/**
 * mmcid_counter_add() - add to the caller's cid slot (or the remote slot)
 * @c: the counter
 * @delta: the amount
 * @gfp: as for mmcid_pcpu_get()
 * @cpu: if not NULL, set to the CPU the add ran on
 *
 * Interrupt safe: the slot is updated with local64_add_return().  The
 * path of a thread of the mm whose cid is in block 0 and whose slot is
 * initialised is inline (preemption disabled around that add); once the
 * slot holds MMCID_COUNTER_BATCH either way, it is folded into the remote
 * slot under the storage's lock (__mmcid_counter_fold()).  Everything
 * else (first use of a cid, a missing block, a higher cid) is
 * __mmcid_counter_add_task(); a caller without a cid slot adds to the
 * remote slot with one atomic add, no lock.
 *
 * Context: As for mmcid_pcpu_get(): any context but NMI if @gfp cannot
 * block, else process context that may sleep.  Not inside an access to
 * @c's storage (between mmcid_pcpu_get() and mmcid_pcpu_put()).
 * Return: the cid whose slot was used, or MMCID_PCPU_REMOTE.
 */
static __always_inline int mmcid_counter_add(struct mmcid_counter *c,
					     s64 delta, gfp_t gfp,
					     unsigned int *cpu)
{
	return __mmcid_counter_add_inline(c, 0, delta, gfp, cpu, 0);
}

/**
 * mmcid_counter_add_at() - add to one counter of an array
 * @c: the counter array
 * @idx: the counter, below the number given at creation
 * @delta: the amount
 * @gfp: as for mmcid_pcpu_get()
 * @cpu: if not NULL, set to the CPU the add ran on
 *
 * mmcid_counter_add() on counter @idx: the same inline path, one more
 * offset.  An @idx beyond the array sends the add out of line, which
 * refuses it (logged once): nothing is added anywhere.
 *
 * Context: As mmcid_counter_add().
 * Return: the cid whose slot was used, MMCID_PCPU_REMOTE, or -EINVAL for
 * an @idx beyond the array.
 */
static __always_inline int mmcid_counter_add_at(struct mmcid_counter *c,
						unsigned int idx, s64 delta,
						gfp_t gfp, unsigned int *cpu)
{
	return __mmcid_counter_add_inline(c, idx, delta, gfp, cpu, 0);
}

/**
 * mmcid_counter_add_nested() - mmcid_counter_add() inside an access to
 *				another object of the same lockdep class
 * @c: the counter (not the object whose access is in progress)
 * @delta: the amount
 * @gfp: allocation flags; must not block (the caller is atomic)
 * @cpu: if not NULL, set to the CPU the add ran on
 *
 * See mmcid_pcpu_get_nested(): a fold of the caller's cid slot takes the
 * storage's lock with subclass SINGLE_DEPTH_NESTING (a remote add takes
 * none).
 *
 * Context: Inside an access to another storage object; atomic, does not
 * sleep.
 * Return: the cid whose slot was used, or MMCID_PCPU_REMOTE.
 */
static __always_inline int mmcid_counter_add_nested(struct mmcid_counter *c,
						    s64 delta, gfp_t gfp,
						    unsigned int *cpu)
{
	return __mmcid_counter_add_inline(c, 0, delta, gfp, cpu,
					  SINGLE_DEPTH_NESTING);
}

struct mmcid_pcpu *mmcid_counter_storage(struct mmcid_counter *c);

#endif /* _PCPU_NEXT_MMCID_PCPU_H */
