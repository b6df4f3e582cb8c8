// SPDX-License-Identifier: GPL-2.0
/*
 * mmcid_pcpu: per-mm storage indexed by the rseq concurrency id (mm_cid).
 *
 * Per-CPU data gives every possible CPU its own copy.  For data that
 * belongs to one process (the RSS counters of an mm are the example) that
 * is wasteful: a 4-thread process on a 256-CPU machine pays for 256 copies
 * and zeroes all of them at fork.  The scheduler already hands every
 * running thread of an mm a small id, task_mm_cid(), that no other
 * running thread of that mm holds at the same time (it is what rseq
 * exposes as mm_cid).  What 6.12 guarantees is only that it is below
 * nr_cpu_ids: it is the first zero bit of mm_cidmask when allocated, and a
 * CPU keeps the cid of the last thread of the mm it ran lazily, until
 * task_mm_cid_work() (a scan every 100 ms at most) takes it back, so the
 * cids in use are usually near the number of concurrently running threads
 * but may run above it for a while (and above nr_cpus_allowed).  Indexing
 * by it instead of the CPU number keeps the "only I touch this copy"
 * property while the storage follows the cids the process has used.
 *
 *   struct mmcid_mm (one per mm: an mmu_notifier from mmu_notifier_get())
 *   +---------------------------------------------------------------+
 *   | objs: the mm's storage objects     units: the mm's unit sets  |
 *   +---------------------------------------------------------------+
 *                                             |
 *   struct mmcid_units (kzalloc)              v      blocks (kmalloc, on
 *   +----------------------------+                    demand, <= PAGE_SIZE)
 *   | unit = 64 bytes, map, ...  |
 *   | blk[0] ---------------------> | cid 0 unit | cid 1 unit | .. cid 3 |
 *   | blk[1] ---------------------> | cid 4 unit | .. cid 7 unit |  doubling
 *   | ...                        |   ...                       then L each
 *   +----------------------------+
 *   a unit (one cid):  [ obj A 8 B | obj B 8 B | obj C 16 B | free ...    ]
 *                        off 0       off 8       off 16
 *
 *   struct mmcid_pcpu (kvzalloc, one per storage object)
 *   +-------------------------------------------------------------+
 *   | fast: slot0 (its slot of cid 0), ready0, mm, stride, nr0     |
 *   | blk (= its unit set's blk[]), off, geometry                 |
 *   | ops, lock, ...   ready word of block k (k >= 1; block 0's is |
 *   |                  fast.ready0): bit i = its slot of cid       |
 *   |                  first(k) + i initialised                    |
 *   | remote slot                                                 |
 *   +-------------------------------------------------------------+
 *
 * Units.  This is the per-CPU allocator's layout turned on its side: the
 * per-CPU allocator gives every CPU a unit of a chunk and every object
 * the same offset in each unit; here every cid gets a unit of a unit set,
 * every storage object of the mm the same byte range [off, off + size)
 * of each unit, and units are allocated only for the cids that are used.
 * A unit is ALIGN(size, SMP_CACHE_BYTES) bytes, and a set holds objects
 * of one unit size only (every object of up to a cache line shares
 * 64-byte units; a big object never lands in a set of bigger units), so
 * two cids never share a cache line (the property per-CPU memory gets
 * from its units), while the objects of one cid, all written by the one
 * thread that holds it, share lines.  A new object takes the first free
 * range of its size, in MMCID_GRAIN (8) byte steps, aligned to its size
 * rounded up to a power of two (at most a cache line, as kmalloc aligns
 * small objects), in the first unit set of its unit size with room (a
 * bitmap per set, under the context's lock), else in a new set.  The
 * set header, with one block pointer per block, is kvzalloc()ed.
 * Four 8-byte counters of an mm thus live in one 64-byte unit per cid:
 * 256 bytes of units for four cids, where per-CPU counters take
 * 4 * 8 * nr_possible bytes.
 *
 * Geometry.  Units are stride = unit bytes apart.  A block holds at most
 * L units, L the largest power of two with L * unit <= PAGE_SIZE and
 * L <= BITS_PER_LONG: every block is one kmalloc of at most PAGE_SIZE
 * bytes, whatever the unit size or the number of CPUs (a kmalloc bucket,
 * not a page allocation: SLUB may back the 1k..4k buckets with order-3
 * slabs opportunistically and falls back to smaller orders, so no block
 * ever needs a high-order page), and an object's ready bits for a block
 * fit in one word.  Below L, blocks double: block 0 holds b0 = min(4, L)
 * cids, block k >= 1 holds [b0 << (k - 1), b0 << k); from cid L on, every
 * block holds L cids.  A mm whose largest cid ever used is c owns at most
 * max(b0, 2 * (c + 1)) units per set and never nr_cpu_ids of them unless
 * it used cid nr_cpu_ids - 1.  Memory follows the highest cid ever seen,
 * not the current one: a block, once allocated, stays until mm teardown
 * (or until the set's last object is destroyed), even when the cids it
 * covers are no longer used.  The object header has one ready word per
 * block (nr_cpu_ids / L of them, about; one per cid for page-sized
 * units), which is why it is kvzalloc()ed.  Slots are not initialised
 * when a block is allocated: the first use of a cid by each object runs
 * ops->init (or zeroes its range) and sets that object's ready bit, so a
 * range another object left behind is never seen.
 *
 * Access.  mmcid_pcpu_get() disables preemption and reads
 * task_mm_cid(current).  Disabled preemption, not migrate_disable() or a
 * local_lock_t, is what keeps a cid exclusive, on PREEMPT_RT as anywhere:
 * a preempted task keeps its cid only as its CPU's cid, which the
 * scheduler hands to the next thread of the mm that runs on that CPU (and
 * cid compaction may take it from a CPU that runs another mm and give it
 * to a thread elsewhere); only a running task owns its cid.  So a cid slot
 * is used with preemption disabled from get to put, on every kernel, like
 * this_cpu_ptr() under get_cpu().  The hot path (block present, slot
 * initialised) is a few loads and one bit test.  The counter's add goes
 * further: mmcid_counter_add() is inline in the public header (where
 * percpu_counter_add() calls out to percpu_counter_add_batch(); the bench
 * compares what a client calls, each with its own inlining) and, for a
 * cid of block 0 (every cid of a process
 * that runs at most four threads at a time), reads only the first line
 * of the object (struct mmcid_pcpu_fast: the mm, block 0's ready word,
 * the object's slot of cid 0 in block 0 and the unit size) around one
 * local64_add(); a higher cid, a first use or a missing block calls
 * __mmcid_counter_add_task().  fast.slot0 is stored by every owner that
 * initialises a slot of block 0, before its ready bit (the same value
 * each time: block 0 of a unit set never moves while a member can reach
 * it), so an adder that sees the bit with acquire ordering sees slot0.
 * A caller that is not a thread of the mm (a
 * kernel thread, including one that borrowed the mm with
 * kthread_use_mm(), a ptrace or get_user_pages_remote() style caller, a
 * thread that has already dropped its cid on exit) gets the remote slot
 * instead, under s->lock, a raw spinlock, with interrupts disabled.
 * Either way the caller is atomic between get and put, PREEMPT_RT
 * included: it must not sleep, allocate memory or take a sleeping lock
 * (mutex, and spinlock_t on PREEMPT_RT) there.  Readers
 * (mmcid_pcpu_for_each(), the counter's sum) visit every ready slot and
 * the remote slot under s->lock.
 *
 * Allocation.  Nothing is allocated inside that atomic section.  When the
 * cid's block is missing, get leaves its preempt-disabled section,
 * allocates the block with preemption enabled and starts over (the cid may
 * have changed meanwhile; after MMCID_GROW_TRIES rounds it settles for the
 * remote slot).  It allocates only where that is allowed on every kernel:
 * when the caller itself is preemptible (preemptible(): preemption and
 * interrupts enabled; on PREEMPT_RT that includes holding a spinlock_t),
 * whatever @gfp says.  A caller in atomic context (interrupt, softirq, raw
 * spinlock, disabled preemption or interrupts; on !PREEMPT_RT a spinlock_t
 * too) gets the remote slot; it must pass GFP_NOWAIT or GFP_ATOMIC (a
 * blocking mask there is a caller bug: with CONFIG_DEBUG_ATOMIC_SLEEP,
 * mmcid_might_sleep() at the start of get and of the counter's add
 * reports it on every call, and the grow path WARNs once and falls back
 * instead of sleeping; without that option only the paths that may
 * allocate call might_sleep_if(), so that the fast path of a blocking
 * caller does not become a voluntary preemption point, which
 * might_sleep() is on non-debug kernels and which would cost more than
 * the add itself):
 * PREEMPT_RT forbids kmalloc() there even with GFP_ATOMIC (the slab
 * allocator takes sleeping locks), and under a raw spinlock or in a hard
 * interrupt PROVE_RAW_LOCK_NESTING reports those locks on every kernel.
 * (Without CONFIG_PREEMPT_COUNT, which PREEMPT_RT and lockdep always
 * have, the context cannot be told and @gfp is trusted as usual.)  So
 * mmcid_pcpu_get() never fails.  A block is an optimisation whose failure
 * has a designed fallback, so it is allocated with __GFP_NOWARN, without
 * the emergency reserves (__GFP_HIGH) and without the OOM killer
 * (__GFP_NORETRY).  After a failure the object backs off: no block of it
 * is tried again for MMCID_GROW_BACKOFF (one second), everyone takes the
 * remote slot meanwhile, so memory pressure does not turn every access
 * into a failing allocation.  A dead object (mm torn down) allocates
 * nothing.  With CONFIG_FAULT_INJECTION a block's allocation first asks
 * the kernel's fault injection (should_fail() on the fault_attr
 * mmcid_fail_grow, debugfs pcpu_next/fault/fail_mmcid/ with the
 * standard knobs, fail-nth too): an injected failure takes exactly the
 * path of a failed kmalloc (backoff, remote slot), so a get still never
 * fails and every sum stays exact.
 *
 * Invariants:
 *  - A cid slot is written only by the task that holds that cid, with
 *    preemption disabled, or by an interrupt on that task's CPU (callers
 *    that use the storage from interrupts must update slots with
 *    interrupt-safe operations, as with this_cpu_ptr(); the counter uses
 *    local64_t).  The scheduler never gives one cid to two running tasks
 *    of an mm.  A task's cid changes while it is switched out (context
 *    switch, cid compaction) and, in its own context, in
 *    sched_mm_cid_exit_signals(), sched_mm_cid_before_execve() and
 *    sched_mm_cid_after_execve(); those run with preemption enabled and
 *    outside any get/put of ours, so within a get/put (preemption
 *    disabled) the cid cannot change.
 *  - A slot is initialised exactly once: only the cid owner initialises,
 *    with interrupts disabled (so no interrupt on its CPU sees it half
 *    done), and test_and_set_bit() of the ready bit WARNs if anyone else
 *    did it in the meantime (which would mean the exclusivity above broke).
 *  - An object's ready word for block k is zero whenever the block is
 *    not allocated: a ready bit implies an allocated block.  Blocks are
 *    published through an object of the set, under its s->lock, only
 *    while it is not dead (cmpxchg, so two members publishing the same
 *    block keep one).  A set counts its members and its live members
 *    (not folded by a teardown) under ctx->lock.  Its blocks are freed
 *    when its last member leaves (destroy), or, once the mm is gone
 *    (ctx->dead), when its last live member was folded or left: then
 *    every member is dead (no publication) and has zero ready words (no
 *    walker or owner looks at a unit).  So a walker under s->lock goes by
 *    its ready words, and no unit is freed under an object that can
 *    still reach it.
 *  - The byte ranges of a set's members are disjoint (the set's map);
 *    a range is given back only by destroy, after the object's slots
 *    were finalised.
 *  - Every slot whose init ran gets exactly one fini, cid slots after the
 *    fold at mm teardown or at destroy, the remote slot at destroy.  The
 *    remote slot exists for the whole life of the object.
 *
 * Locking:
 *  - s->lock (raw_spinlock_t, irqsave) protects the remote slot, block
 *    publication, s->dead and the fold at teardown, and makes readers see
 *    one consistent picture (they never count a folded slot twice).  It is
 *    raw so that the remote slot works in every context a cid slot does
 *    (hard interrupts, under other raw locks, on PREEMPT_RT too), as
 *    percpu_counter's lock is; what runs under it (the caller's remote
 *    access, ops->fold, the callback of mmcid_pcpu_for_each()) obeys the
 *    raw spinlock rules, the same the cid slot path has anyway.  Nothing
 *    is allocated or freed under it.  Hold times: the caller's access;
 *    one block's fold at teardown (at most MMCID_BLK_BYTES of slots);
 *    for a reader (for_each, the counter's sum) O(initialised cids), as
 *    percpu_counter_sum() is O(CPUs) under its raw lock: one hold is what
 *    makes such a walk exact against teardown.  memory, slots and max_cid
 *    take no lock at all.
 *    Lockdep classes: one static key per creation site
 *    (mmcid_pcpu_create() and mmcid_counter_create() are macros, as
 *    percpu_counter_init() and mutex_init() are), never one per object:
 *    a dynamic key costs a synchronize_rcu() at destroy and one of the
 *    kernel-wide MAX_LOCKDEP_KEYS per live object (per-mm objects would
 *    exhaust them), and per-object classes would hide real A-B/B-A
 *    inversions between objects of one kind.  Nesting: objects created at
 *    different sites nest like any two locks, lockdep checks their order.
 *    Two objects of the same site (same class) nest one level deep only
 *    through mmcid_pcpu_get_nested() and mmcid_counter_add_nested(),
 *    which take the inner remote lock with SINGLE_DEPTH_NESTING; the
 *    caller keeps their order consistent (lockdep cannot check it within
 *    a class), and the inner call must pass a non-blocking gfp (the
 *    caller is atomic).  Readers (for_each, sum) have no nested variant:
 *    they do not nest inside an access to an object of their class.  One
 *    object's lock never nests in itself: between get and put, no
 *    for_each, sum, mm_gone or another get on the same object.  For the
 *    remote slot that is a self-deadlock, which lockdep reports as
 *    recursive locking before it hangs.
 *  - ctx->lock (spinlock_t) protects ctx->objs (list membership of storage
 *    objects), ctx->units, ctx->dead, and in each unit set the map, the
 *    member and live counts and the freeing of the blocks (kfree() under
 *    it, which is allowed under a spinlock_t on PREEMPT_RT too).  It is
 *    taken in process context only, nests outside nothing and is never
 *    held together with s->lock.
 *
 * Memory ordering: a block's slot pointer is published with
 * smp_store_release() (its ready word is zero already) and read with
 * smp_load_acquire().  A slot's ready bit is set with test_and_set_bit()
 * (fully ordered) after the slot was initialised, and read with
 * test_bit_acquire(), so a reader that sees the bit sees the initialised
 * slot.  The hand-over of a cid from one task to the next goes through the
 * scheduler's rq locks and the fully ordered cmpxchg on the mm's per-CPU
 * cid, which orders the old owner's slot updates before the new owner's.
 * A ->release that worked on an object drops its reference with release
 * ordering; mmcid_pcpu_destroy() reads it back with acquire ordering
 * before freeing what ->release left.
 *
 * Lifetime: each storage object holds one reference on its mm's context
 * (mmu_notifier_get/put), which holds mm_count.  When the mm is torn down
 * (the last mm_users reference, even if the process never said goodbye),
 * ->release marks the context dead, takes each object off the list and
 * marks it dead (no more publication), then block by block folds the
 * object's ready cid slots into its remote slot (ops->fold) and clears
 * its ready word in one hold of s->lock, drops the lock, runs ops->fini
 * on those slots and reschedules; the last live member of a unit set to
 * be folded frees the set's blocks: memory drops to the headers, sums
 * stay exact at every step, the remote slot stays usable.  No thread of
 * the mm exists any more then, so no cid access can race with it.  The
 * object itself goes when its creator calls mmcid_pcpu_destroy(), which
 * first waits for a ->release working on it, then finalises what is left
 * (cid slots without a fold if the mm is still alive, the remote slot),
 * gives its range back (the last member frees the unit set) and frees
 * it; when destroy returns, no callback of the object runs any more.  The
 * last object of an mm drops the context with mmu_notifier_put(), which
 * frees it later through SRCU; module unload waits for that with
 * mmu_notifier_synchronize() (pn_mmcid_exit()).
 *
 * Index source.  The exported accesses (mmcid_pcpu_get(), _get_nested(),
 * mmcid_counter_add(), _add_nested()) take the index from task_mm_cid()
 * only, with preemption disabled; a caller without a cid (a kernel
 * thread, an exiting thread, another mm) gets the remote slot.  Kernel
 * threads never own an mm_cid, kthread_use_mm() or not, so KUnit and the
 * harness, whose code runs in kernel threads, reach the cid slots through
 * __mmcid_pcpu_get() and __mmcid_counter_add() of internal/mmcid_pcpu.h
 * (not exported, compiled only with KUnit or the harness) with the CPU
 * number or a fixed cid as the index (enum mmcid_src).  The access code
 * is always inlined with the source as a constant, so the exported
 * instances contain no test branch: their fast path is the mm_cid read,
 * the block and ready-bit tests and, for the counter, the local64_add()
 * (the counter's inline block-0 path in the header reads task_mm_cid()
 * only).
 *
 * Statistics.  mmcid_pcpu counts nothing on its fast paths (a get, a put,
 * an add), so CONFIG_PCPU_NEXT_STATS changes nothing here.  The one
 * statistic it keeps is slow-path and always on: the block allocations
 * attempted per object (s->grow_attempts, with the backoff deadline
 * s->grow_retry), read by KUnit through mmcid_pcpu_grow_attempts().
 * Memory, slots and max_cid are not counters but computed from the
 * blocks themselves, exactly, with any configuration.
 *
 * Files and dependencies.  This file is the library alone: it includes
 * kernel headers, <kunit/visibility.h>, the public header
 * <pcpu_next/mmcid_pcpu.h> (the client API) and the module's private
 * internal/core.h (pn_fault_hit(), the component init and exit) and
 * internal/mmcid_pcpu.h (the test entry points and KUnit-only accessors
 * above).  The stress and bench (test=mmcid of the control plane) and
 * the debugfs file pcpu_next/mmcid, through which user threads add to a
 * counter of their own mm for the selftests, are test code and live in
 * torture/mmcid_pcpu_torture.c (CONFIG_PCPU_NEXT_TORTURE); the KUnit
 * suite is kunit/mmcid_pcpu_kunit.c, and kunit/failnth_kunit.c runs the
 * API under fail-nth.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitops.h>
#include <linux/cache.h>
#include <linux/err.h>
#include <linux/jiffies.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/module.h>
#include <linux/preempt.h>
#include <linux/refcount.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/wait_bit.h>
#include <asm/local64.h>
#include <kunit/visibility.h>

#include <pcpu_next/mmcid_pcpu.h>
#include "internal/core.h"
#include "internal/mmcid_pcpu.h"

#define MMCID_B0_SHIFT	2		/* block 0: up to 4 slots */
#define MMCID_BLK_BYTES	PAGE_SIZE	/* bound on a block's slot array */
#define MMCID_MAX_SLOT	PAGE_SIZE	/* largest slot accepted */
#define MMCID_GROW_TRIES 3		/* allocation rounds per get */
#define MMCID_GROW_BACKOFF HZ		/* no block allocation after a failure */
#define MMCID_GRAIN	8		/* unit space is handed out in these */

/*
 * Per-mm context: one mmu_notifier subscription shared by all objects of
 * the mm, and the unit sets their slots live in.
 */
struct mmcid_mm {
	struct mmu_notifier mn;		/* unused if owned */
	bool owned;			/* mmcid_mm_create(): no mmu_notifier */
	/*
	 * Protects objs, units, dead, and in every unit set the map, members
	 * and live counts and the freeing of its blocks.  Process context.
	 */
	spinlock_t lock;
	bool dead;			/* ->release began: the mm is gone */
	struct list_head objs;		/* storage objects not yet torn down */
	struct list_head units;		/* unit sets of the mm */
};

/*
 * Block sizes: b0 = 1 << b0_shift slots in block 0, doubling up to
 * L = 1 << l_shift slots; block k_base + 1 starts at cid L, and from there
 * on every block holds L slots (block 0 already does if b0 == L).
 */
struct mmcid_geo {
	u8 l_shift;
	u8 b0_shift;
	u8 k_base;			/* l_shift - b0_shift */
};

/*
 * A unit set: for every cid, one unit of @unit bytes, in blocks of units
 * allocated as cids are used (block k holds the units of the cids
 * mmcid_blk_first(k) .. + mmcid_blk_len(k) - 1, one after the other).
 * Storage objects of the mm own the same byte range [off, off + size) of
 * every unit: the per-CPU allocator's chunk layout, with cids for CPUs.
 */
struct mmcid_units {
	struct list_head node;		/* on ctx->units */
	u32 unit;			/* bytes per cid, a multiple of SMP_CACHE_BYTES */
	struct mmcid_geo geo;
	unsigned int nblk;		/* blocks that cover nr_cpu_ids cids */
	unsigned int members;		/* objects with a range here */
	unsigned int live;		/* members whose cid slots are not folded */
	unsigned long *map;		/* one bit per MMCID_GRAIN bytes of a unit */
	void *blk[];			/* nblk block pointers, then the map */
};

struct mmcid_pcpu {
	/*
	 * First line: what the inline counter add reads (the mm, block 0's
	 * slot and ready word), then what get's fast path reads besides,
	 * blk[k] and the ready word of block k (mmcid_ready()).  Packed
	 * without holes: at 256 possible CPUs the header with its 7 ready
	 * words and an 8-byte remote slot still fits kmalloc-192.
	 */
	struct mmcid_pcpu_fast fast;	/* must stay first: see the header */
	void **blk;			/* units->blk */
	u32 off;			/* our bytes in every unit */
	struct mmcid_geo geo;		/* the unit set's */
	bool dead;			/* mm torn down, cid slots folded */
	unsigned int nblk;		/* the unit set's */
	u32 size;			/* slot payload */
	struct mmcid_mm *ctx;
	struct mmcid_units *units;
	const struct mmcid_pcpu_ops *ops;
	void *arg;
	unsigned long grow_retry;	/* no block before this (jiffies), 0: any time */
	struct list_head node;		/* on ctx->objs, under ctx->lock */
	/* Protects the remote slot, block publication, dead; see above. */
	raw_spinlock_t lock;
	refcount_t ref;			/* creator + a running ->release */
	atomic_t grow_attempts;		/* block allocations tried (statistic) */
	bool folded;			/* teardown folded and finalised the cid slots */
	/*
	 * nblk - 1 words for blocks 1..nblk-1 (block 0's is fast.ready0):
	 * bit i of block k's word set once slot i of block k is initialised
	 */
	unsigned long ready[];
	/* followed by the remote slot */
};

static_assert(offsetof(struct mmcid_pcpu, fast) == 0);
/* The packing above, where locks carry no debug state. */
static_assert(IS_ENABLED(CONFIG_DEBUG_SPINLOCK) ||
	      IS_ENABLED(CONFIG_DEBUG_LOCK_ALLOC) ||
	      offsetof(struct mmcid_pcpu, ready) <= 128);

/* The ready word of block k: block 0's is on the first line, for the add. */
static __always_inline unsigned long *mmcid_ready(struct mmcid_pcpu *s,
						  unsigned int k)
{
	return k ? &s->ready[k - 1] : &s->fast.ready0;
}

static __always_inline unsigned int mmcid_blk_of(const struct mmcid_geo *g,
						 unsigned int cid)
{
	if (cid >> g->l_shift)
		return g->k_base + (cid >> g->l_shift);
	return cid >> g->b0_shift ? fls(cid) - g->b0_shift : 0;
}

static __always_inline unsigned int mmcid_blk_first(const struct mmcid_geo *g,
						    unsigned int k)
{
	if (k > g->k_base)
		return (k - g->k_base) << g->l_shift;
	return k ? 1U << (g->b0_shift + k - 1) : 0;
}

/* Slots in block k, capped so that no block reaches past @ncids cids. */
static unsigned int mmcid_blk_len_n(const struct mmcid_geo *g, unsigned int k,
				    unsigned int ncids)
{
	unsigned int len;

	if (k > g->k_base)
		len = 1U << g->l_shift;
	else
		len = 1U << (k ? g->b0_shift + k - 1 : g->b0_shift);
	return min(len, ncids - mmcid_blk_first(g, k));
}

static unsigned int mmcid_blk_len(const struct mmcid_geo *g, unsigned int k)
{
	return mmcid_blk_len_n(g, k, nr_cpu_ids);
}

/* The shape of the blocks for slots @stride bytes apart. */
static void mmcid_geo_init(struct mmcid_geo *g, unsigned int stride)
{
	unsigned int per = min_t(unsigned int, MMCID_BLK_BYTES / stride,
				 BITS_PER_LONG);

	g->l_shift = ilog2(per);
	g->b0_shift = min_t(unsigned int, g->l_shift, MMCID_B0_SHIFT);
	g->k_base = g->l_shift - g->b0_shift;
}

static size_t mmcid_hdr_size(unsigned int nblk)
{
	return ALIGN(struct_size_t(struct mmcid_pcpu, ready, nblk - 1),
		     sizeof(long));
}

/* Bytes of a unit set's header for @unit-byte units: pointers, then map. */
static size_t mmcid_units_size(unsigned int nblk, unsigned int unit)
{
	return struct_size_t(struct mmcid_units, blk, nblk) +
		BITS_TO_LONGS(unit / MMCID_GRAIN) * sizeof(long);
}

/* Blocks needed for nr_cpu_ids cids with @unit-byte units. */
static unsigned int mmcid_nblk(unsigned int unit)
{
	struct mmcid_geo g;

	mmcid_geo_init(&g, unit);
	return mmcid_blk_of(&g, nr_cpu_ids - 1) + 1;
}

static void *mmcid_remote(struct mmcid_pcpu *s)
{
	return (void *)s + mmcid_hdr_size(s->nblk);
}

/* ---- per-mm context ------------------------------------------------------ */

static void mmcid_teardown(struct mmcid_pcpu *s);

static struct mmcid_mm *mmcid_ctx_alloc(gfp_t gfp)
{
	struct mmcid_mm *ctx = kzalloc(sizeof(*ctx), gfp);

	if (!ctx)
		return NULL;
	spin_lock_init(&ctx->lock);
	INIT_LIST_HEAD(&ctx->objs);
	INIT_LIST_HEAD(&ctx->units);
	return ctx;
}

static struct mmu_notifier *mmcid_mm_alloc(struct mm_struct *mm)
{
	struct mmcid_mm *ctx = mmcid_ctx_alloc(GFP_KERNEL);

	return ctx ? &ctx->mn : ERR_PTR(-ENOMEM);
}

static void mmcid_mm_free(struct mmu_notifier *mn)
{
	struct mmcid_mm *ctx = container_of(mn, struct mmcid_mm, mn);

	/* Every object left its unit set before it dropped the context. */
	WARN_ON_ONCE(!list_empty(&ctx->units));
	kfree(ctx);
}

/*
 * The mm's last user is gone (exit_mmap()).  Mark the context dead (no
 * object joins or publishes any more), then take the objects off the list
 * one at a time, with a reference so that a concurrent destroy waits for
 * us, and fold each into its remote slot; the last member of a unit set
 * to be folded frees the set's blocks.  Process context, may sleep
 * (ops->fini).
 */
static void mmcid_ctx_release(struct mmcid_mm *ctx)
{
	struct mmcid_pcpu *s;

	spin_lock(&ctx->lock);
	ctx->dead = true;
	spin_unlock(&ctx->lock);
	for (;;) {
		spin_lock(&ctx->lock);
		s = list_first_entry_or_null(&ctx->objs, struct mmcid_pcpu, node);
		if (s) {
			list_del_init(&s->node);
			refcount_inc(&s->ref);
		}
		spin_unlock(&ctx->lock);
		if (!s)
			break;
		mmcid_teardown(s);
		/* Never the last reference: the creator holds one. */
		refcount_dec(&s->ref);
		/* Order the decrement before the waiter check in wake_up_var(). */
		smp_mb__after_atomic();
		wake_up_var(&s->ref);	/* @s may be gone now: address only */
	}
}

static void mmcid_mn_release(struct mmu_notifier *mn, struct mm_struct *mm)
{
	mmcid_ctx_release(container_of(mn, struct mmcid_mm, mn));
}

/* An object's reference on its context: the mmu_notifier's, if any. */
static void mmcid_ctx_put(struct mmcid_mm *ctx)
{
	if (!ctx->owned)
		mmu_notifier_put(&ctx->mn);
}

static const struct mmu_notifier_ops mmcid_mm_ops = {
	.release = mmcid_mn_release,
	.alloc_notifier = mmcid_mm_alloc,
	.free_notifier = mmcid_mm_free,
};

/* ---- unit sets ----------------------------------------------------------- */

/*
 * Free a unit set's blocks; nobody may use or publish them any more, and
 * the caller keeps the set itself alive (a member, or the pin of
 * mmcid_units_unpin()).  No lock held: up to nblk kfree()s, rescheduling.
 */
static void mmcid_units_free_blocks(struct mmcid_units *u)
{
	unsigned int k;

	for (k = 0; k < u->nblk; k++) {
		void *slots = u->blk[k];

		if (!slots)
			continue;
		/* Lockless readers (memory, slots) look at the pointer only. */
		WRITE_ONCE(u->blk[k], NULL);
		kfree(slots);
		cond_resched();
	}
}

/* The unit size of objects of @size bytes: a cache line at least. */
static u32 mmcid_unit_of(size_t size)
{
	return ALIGN(size, SMP_CACHE_BYTES);
}

/*
 * Alignment of an object's range in its unit, in bytes: its size rounded
 * up to a power of two, at least MMCID_GRAIN, at most a cache line (as
 * the slab allocator aligns small kmalloc objects), so a 16-byte object
 * may hold a u128 and nothing of size <= a cache line straddles one.
 */
static u32 mmcid_align_of(size_t size)
{
	return clamp_t(u32, roundup_pow_of_two(size), MMCID_GRAIN,
		       SMP_CACHE_BYTES);
}

/*
 * Drop the pin taken to free a set's blocks outside ctx->lock; the last
 * reference (pin or member) frees the set.
 */
static void mmcid_units_unpin(struct mmcid_mm *ctx, struct mmcid_units *u)
{
	bool gone;

	spin_lock(&ctx->lock);
	gone = !--u->members;
	if (gone)
		list_del(&u->node);
	spin_unlock(&ctx->lock);
	if (gone)
		kvfree(u);
}

/*
 * Give @size bytes of every unit to a new object: first fit in the unit
 * sets of @ctx whose unit is the one of @size (mmcid_unit_of(): objects
 * of up to a cache line share 64-byte units, a bigger object never lands
 * in a set of bigger units than its own), else in a new set.  Ranges are
 * aligned as mmcid_align_of() says.  The new member counts as live (its
 * slots are not folded).
 *
 * Context: Process context, may sleep; @ctx is alive (not dead).
 * Return: 0 with *@up and *@offp set, or -ENOMEM.
 */
static int mmcid_units_join(struct mmcid_mm *ctx, u32 size,
			    struct mmcid_units **up, u32 *offp)
{
	unsigned int need = DIV_ROUND_UP(size, MMCID_GRAIN);
	unsigned long align = mmcid_align_of(size) / MMCID_GRAIN - 1;
	u32 unit = mmcid_unit_of(size);
	struct mmcid_units *u, *fresh = NULL;
	unsigned int nbits, start, nblk;

	for (;;) {
		spin_lock(&ctx->lock);
		list_for_each_entry(u, &ctx->units, node) {
			if (u->unit != unit)
				continue;
			nbits = u->unit / MMCID_GRAIN;
			start = bitmap_find_next_zero_area(u->map, nbits, 0,
							   need, align);
			if (start < nbits)
				goto found;
		}
		if (fresh) {
			u = fresh;
			fresh = NULL;
			list_add_tail(&u->node, &ctx->units);
			start = 0;
			goto found;
		}
		spin_unlock(&ctx->lock);

		nblk = mmcid_nblk(unit);
		/* nblk pointers: up to one per cid for page-sized units */
		fresh = kvzalloc(mmcid_units_size(nblk, unit), GFP_KERNEL_ACCOUNT);
		if (!fresh)
			return -ENOMEM;
		fresh->unit = unit;
		mmcid_geo_init(&fresh->geo, unit);
		fresh->nblk = nblk;
		fresh->map = (unsigned long *)&fresh->blk[nblk];
	}
found:
	bitmap_set(u->map, start, need);
	u->members++;
	u->live++;
	spin_unlock(&ctx->lock);
	kvfree(fresh);
	*up = u;
	*offp = start * MMCID_GRAIN;
	return 0;
}

/*
 * An object leaves its unit set: its range is free again.  @live: its cid
 * slots were not folded by a teardown (it still counted as live).  The
 * last member frees the set; once the mm is gone, the last live member
 * frees the blocks (the folded members only look at their zero ready
 * words).
 *
 * Context: Process context; the object's cid slots are finalised.
 */
static void mmcid_units_leave(struct mmcid_mm *ctx, struct mmcid_units *u,
			      u32 off, u32 size, bool live)
{
	bool gone, pin = false;

	spin_lock(&ctx->lock);
	bitmap_clear(u->map, off / MMCID_GRAIN, DIV_ROUND_UP(size, MMCID_GRAIN));
	if (live)
		u->live--;
	gone = !--u->members;
	if (gone) {
		list_del(&u->node);
	} else if (live && ctx->dead && !u->live) {
		u->members++;		/* pinned while its blocks are freed */
		pin = true;
	}
	spin_unlock(&ctx->lock);
	if (gone) {
		mmcid_units_free_blocks(u);
		kvfree(u);
	} else if (pin) {
		mmcid_units_free_blocks(u);
		mmcid_units_unpin(ctx, u);
	}
}

/*
 * Teardown folded and finalised @s's cid slots: it stops counting as live,
 * and if it was the last live member the set's blocks go (outside the
 * lock, the set pinned meanwhile).
 */
static void mmcid_units_folded(struct mmcid_pcpu *s)
{
	struct mmcid_units *u = s->units;
	bool pin;

	spin_lock(&s->ctx->lock);
	s->folded = true;
	pin = !--u->live && s->ctx->dead;
	if (pin)
		u->members++;
	spin_unlock(&s->ctx->lock);
	if (pin) {
		mmcid_units_free_blocks(u);
		mmcid_units_unpin(s->ctx, u);
	}
}

/* ---- storage object -------------------------------------------------------- */

/* Run ops->fini on @s's initialised slots of block k (still allocated). */
static void mmcid_fini_block(struct mmcid_pcpu *s, unsigned int k, void *slots,
			     unsigned long ready)
{
	void (*fini)(void *slot, void *arg) = s->ops ? s->ops->fini : NULL;
	unsigned int i;

	if (!fini)
		return;
	for_each_set_bit(i, &ready, mmcid_blk_len(&s->geo, k))
		fini(slots + i * s->fast.stride + s->off, s->arg);
}

/*
 * Call @fn on every ready cid slot; s->lock held.  A ready bit means the
 * slot's block is allocated: blocks are freed only after every member of
 * the unit set was folded (ready words zero) or left.  So this also works
 * while teardown folds the object block by block.  Cost: one word per
 * block plus the ready slots, with interrupts off.
 */
static void mmcid_walk(struct mmcid_pcpu *s,
		       void (*fn)(struct mmcid_pcpu *s, void *slot, int cid,
				  void *data), void *data)
{
	unsigned int k, i;

	lockdep_assert_held(&s->lock);
	for (k = 0; k < s->nblk; k++) {
		unsigned int first = mmcid_blk_first(&s->geo, k);
		/* Pairs with test_and_set_bit() after the slot's init. */
		unsigned long ready = smp_load_acquire(mmcid_ready(s, k));
		void *slots;

		if (!ready)
			continue;
		slots = READ_ONCE(s->blk[k]);
		for_each_set_bit(i, &ready, mmcid_blk_len(&s->geo, k))
			fn(s, slots + i * s->fast.stride + s->off, first + i, data);
	}
}

/*
 * The mm is gone.  Set s->dead (no block is published through @s any
 * more), then block by block: under s->lock fold the block's ready slots
 * into the remote slot and clear the ready word, drop the lock, finalise
 * those slots, reschedule.  Interrupts are off for one block (at most
 * MMCID_BLK_BYTES of units) at a time, not for all cids.  A reader holds
 * s->lock for its whole walk, and every block's fold and ready-word clear
 * happen in one lock hold, so a reader sees each slot either in its block
 * or in the remote slot, never both nor neither: sums stay exact.  The
 * blocks themselves are shared with the other objects of the unit set
 * and go when the last live member is folded (mmcid_units_folded()).
 * Called only from ->release, process context that may sleep (mmput()
 * may sleep; exit_mmap() runs the notifiers under SRCU).
 */
static void mmcid_teardown(struct mmcid_pcpu *s)
{
	void (*fold)(void *remote, const void *slot, void *arg) =
		s->ops ? s->ops->fold : NULL;
	unsigned long flags, ready;
	unsigned int k, i;
	void *slots;
	bool first;

	raw_spin_lock_irqsave(&s->lock, flags);
	first = !s->dead;
	WRITE_ONCE(s->dead, true);
	raw_spin_unlock_irqrestore(&s->lock, flags);
	if (!first)
		return;

	for (k = 0; k < s->nblk; k++) {
		raw_spin_lock_irqsave(&s->lock, flags);
		ready = *mmcid_ready(s, k);
		slots = s->blk[k];
		if (ready) {
			if (fold) {
				for_each_set_bit(i, &ready,
						 mmcid_blk_len(&s->geo, k))
					fold(mmcid_remote(s),
					     slots + i * s->fast.stride + s->off,
					     s->arg);
			}
			WRITE_ONCE(*mmcid_ready(s, k), 0);
		}
		raw_spin_unlock_irqrestore(&s->lock, flags);
		if (!ready)
			continue;
		mmcid_fini_block(s, k, slots, ready);
		cond_resched();
	}
	mmcid_units_folded(s);
}

/* Free an object nobody else can reach; process context, may sleep. */
static void mmcid_free(struct mmcid_pcpu *s)
{
	unsigned int k;

	/* Not folded: the blocks stay while we count as live. */
	for (k = 0; !s->folded && k < s->nblk; k++) {
		unsigned long ready = *mmcid_ready(s, k);

		if (!ready)
			continue;
		*mmcid_ready(s, k) = 0;
		mmcid_fini_block(s, k, s->blk[k], ready);
		cond_resched();
	}
	if (s->ops && s->ops->fini)
		s->ops->fini(mmcid_remote(s), s->arg);
	mmcid_units_leave(s->ctx, s->units, s->off, s->size, !s->folded);
	mmcid_ctx_put(s->ctx);
	kvfree(s);
}

/*
 * A new object in @ctx, which stays alive meanwhile (the caller's
 * reference: mmu_notifier_get() or the owner's).  Process context.
 */
static struct mmcid_pcpu *mmcid_create_in(struct mmcid_mm *ctx,
					  struct mm_struct *mm, size_t size,
					  const struct mmcid_pcpu_ops *ops,
					  void *arg, struct lock_class_key *key)
{
	struct mmcid_units *u;
	struct mmcid_pcpu *s;
	u32 off;
	int ret;

	ret = mmcid_units_join(ctx, size, &u, &off);
	if (ret)
		return ERR_PTR(ret);
	s = kvzalloc(mmcid_hdr_size(u->nblk) + size, GFP_KERNEL_ACCOUNT);
	if (!s) {
		mmcid_units_leave(ctx, u, off, size, true);
		return ERR_PTR(-ENOMEM);
	}
	s->blk = u->blk;
	s->off = off;
	s->fast.stride = u->unit;
	s->fast.mm = mm;
	s->fast.nr0 = mmcid_blk_len(&u->geo, 0);
	s->geo = u->geo;
	s->nblk = u->nblk;
	s->ctx = ctx;
	s->units = u;
	s->ops = ops;
	s->arg = arg;
	s->size = size;
	/* One lockdep class per creation site, not per object: see above. */
	raw_spin_lock_init(&s->lock);
	lockdep_set_class_and_name(&s->lock, key, "mmcid_pcpu->lock");
	refcount_set(&s->ref, 1);
	atomic_set(&s->grow_attempts, 0);
	INIT_LIST_HEAD(&s->node);

	if (ops && ops->init)
		ops->init(mmcid_remote(s), arg);
	spin_lock(&ctx->lock);
	list_add(&s->node, &ctx->objs);
	spin_unlock(&ctx->lock);
	return s;
}

/**
 * __mmcid_pcpu_create() - create storage for an mm, indexed by mm_cid
 * @mm: the mm; the caller holds mm_users (mmget() or it is current->mm)
 * @size: bytes per slot, 1..PAGE_SIZE
 * @ops: slot init/fold/fini callbacks, or NULL (zeroed slots, nothing
 *	 folded or finalised)
 * @arg: passed to the callbacks
 * @key: lockdep class of the storage's lock; mmcid_pcpu_create() passes
 *	 a static key of its call site
 *
 * Use mmcid_pcpu_create().  Allocates the header with the remote slot
 * (ops->init runs on it here) and takes @size bytes of every cid's unit
 * in one of @mm's unit sets (a new set if none has room; units come in
 * blocks as cids are used, shared by every object of the set).  The
 * storage stays usable after @mm is torn down (all accesses then go to
 * the remote slot) until mmcid_pcpu_destroy().  The header and a new
 * unit set are charged to the caller's memory cgroup
 * (GFP_KERNEL_ACCOUNT); a block is allocated with the @gfp of the access
 * that first needs it (add __GFP_ACCOUNT there to charge blocks too; a
 * block is shared by the set's objects and charged once).
 *
 * Context: Process context, may sleep (takes @mm's mmap_lock for writing).
 * Return: the storage, or an ERR_PTR(): -EINVAL for a bad @size or no @mm;
 * -ESRCH if @mm has no users left (already torn down); -ENOMEM; -EINTR if
 * a signal is pending while the first storage object of @mm subscribes to
 * it (mmu_notifier_get() gives up in mm_take_all_locks() then; nothing
 * was set up, the caller may retry once the signal was handled, e.g. by
 * returning -ERESTARTNOINTR from a system call).
 */
struct mmcid_pcpu *__mmcid_pcpu_create(struct mm_struct *mm, size_t size,
				       const struct mmcid_pcpu_ops *ops,
				       void *arg, struct lock_class_key *key)
{
	struct mmu_notifier *mn;
	struct mmcid_pcpu *s;

	might_sleep();
	if (!mm || !size || size > MMCID_MAX_SLOT)
		return ERR_PTR(-EINVAL);
	/*
	 * A caller without mm_users would hit the BUG_ON() in
	 * __mmu_notifier_register(); hold a reference of our own meanwhile.
	 * With it, ->release cannot run: the context stays alive.
	 */
	if (!mmget_not_zero(mm))
		return ERR_PTR(-ESRCH);
	mn = mmu_notifier_get(&mmcid_mm_ops, mm);
	if (IS_ERR(mn)) {
		/* -EINTR, -ENOMEM: no slot was initialised yet. */
		s = ERR_CAST(mn);
		goto put_mm;
	}
	s = mmcid_create_in(container_of(mn, struct mmcid_mm, mn), mm, size,
			    ops, arg, key);
	if (IS_ERR(s))
		mmu_notifier_put(mn);
put_mm:
	mmput(mm);	/* never the last one: the caller holds mm_users */
	return s;
}
EXPORT_SYMBOL_GPL(__mmcid_pcpu_create);

/**
 * mmcid_pcpu_destroy() - free storage created by mmcid_pcpu_create()
 * @s: the storage (NULL or an ERR_PTR() is ignored); no access to it may
 *     be in progress or follow
 *
 * Waits for a concurrent mm teardown that is folding @s, runs ops->fini on
 * every initialised slot left (the cid slots unless the mm was torn down,
 * then the remote slot), gives its range of the units back and frees the
 * header (and the unit set with its blocks if @s was its last member).
 * When it returns, no callback of @s runs any more.
 *
 * Context: Process context, may sleep.  Must not hold a lock that ops->fini
 * or a concurrent teardown of @s's mm needs.
 */
void mmcid_pcpu_destroy(struct mmcid_pcpu *s)
{
	if (IS_ERR_OR_NULL(s))
		return;
	might_sleep();
	spin_lock(&s->ctx->lock);
	list_del_init(&s->node);
	spin_unlock(&s->ctx->lock);
	/* Off the list: ->release cannot take a new reference. */
	wait_var_event(&s->ref, refcount_read(&s->ref) == 1);
	/* Pairs with the release ordering of refcount_dec() in ->release. */
	smp_acquire__after_ctrl_dep();
	mmcid_free(s);
}
EXPORT_SYMBOL_GPL(mmcid_pcpu_destroy);

static int mmcid_grow(struct mmcid_pcpu *s, unsigned int k, gfp_t gfp);

/**
 * mmcid_mm_create() - a per-mm context whose lifetime the caller manages
 * @gfp: allocation flags (GFP_KERNEL_ACCOUNT from the mm's creation)
 *
 * For code that is part of the mm's own lifecycle (mm_init() .. __mmput()
 * .. __mmdrop()), which cannot use an mmu_notifier: objects created in
 * the context with mmcid_pcpu_create_in() or mmcid_counter_create_in()
 * behave as those of mmcid_pcpu_create(), except that the owner calls
 * mmcid_mm_release() where ->release would run (after exit_mmap()), and
 * mmcid_mm_destroy() once every object of the context was destroyed.
 *
 * Context: Process context if @gfp may sleep.
 * Return: the context, or NULL if out of memory.
 */
struct mmcid_mm *mmcid_mm_create(gfp_t gfp)
{
	struct mmcid_mm *ctx = mmcid_ctx_alloc(gfp);

	if (ctx)
		ctx->owned = true;
	return ctx;
}
EXPORT_SYMBOL_GPL(mmcid_mm_create);

/**
 * mmcid_mm_release() - the mm of an owned context is torn down
 * @ctx: from mmcid_mm_create()
 *
 * What an mmu_notifier's ->release does for mmcid_pcpu_create() objects:
 * marks @ctx dead, folds every object's cid slots into its remote slot
 * (sums stay exact, later accesses use the remote slot) and frees the
 * unit sets' blocks.  No thread of the mm may use a cid slot any more
 * (the mm has no users).  Idempotent.
 *
 * Context: Process context, may sleep.
 */
void mmcid_mm_release(struct mmcid_mm *ctx)
{
	might_sleep();
	WARN_ON_ONCE(!ctx->owned);
	mmcid_ctx_release(ctx);
}
EXPORT_SYMBOL_GPL(mmcid_mm_release);

/**
 * mmcid_mm_destroy() - free an owned context
 * @ctx: from mmcid_mm_create(), with no object left (NULL is ignored)
 *
 * Context: Any context; only kfree().
 */
void mmcid_mm_destroy(struct mmcid_mm *ctx)
{
	if (!ctx)
		return;
	WARN_ON_ONCE(!ctx->owned || !list_empty(&ctx->objs) ||
		     !list_empty(&ctx->units));
	kfree(ctx);
}
EXPORT_SYMBOL_GPL(mmcid_mm_destroy);

/**
 * __mmcid_pcpu_create_in() - mmcid_pcpu_create() in an owned context
 * @ctx: from mmcid_mm_create(), not yet released
 * @mm: the mm the context belongs to
 * @size: bytes per slot, 1..PAGE_SIZE
 * @ops: slot callbacks, or NULL
 * @arg: passed to the callbacks
 * @key: lockdep class of the storage's lock
 *
 * Use mmcid_pcpu_create_in().  No mm reference is taken: the owner keeps
 * @mm alive.
 *
 * Context: Process context, may sleep.
 * Return: the storage, or ERR_PTR(-EINVAL) for bad arguments or a
 * context that is not owned, ERR_PTR(-ESRCH) if @ctx was released,
 * ERR_PTR(-ENOMEM).
 */
struct mmcid_pcpu *__mmcid_pcpu_create_in(struct mmcid_mm *ctx,
					  struct mm_struct *mm, size_t size,
					  const struct mmcid_pcpu_ops *ops,
					  void *arg, struct lock_class_key *key)
{
	bool dead;

	might_sleep();
	if (!ctx || !ctx->owned || !mm || !size || size > MMCID_MAX_SLOT)
		return ERR_PTR(-EINVAL);
	spin_lock(&ctx->lock);
	dead = ctx->dead;
	spin_unlock(&ctx->lock);
	/* The owner does not create and release concurrently. */
	if (dead)
		return ERR_PTR(-ESRCH);
	return mmcid_create_in(ctx, mm, size, ops, arg, key);
}
EXPORT_SYMBOL_GPL(__mmcid_pcpu_create_in);

/**
 * mmcid_pcpu_prepare() - allocate the units of cids 0 .. @max_cid now
 * @s: the storage
 * @max_cid: the highest cid to cover (capped at nr_cpu_ids - 1)
 * @gfp: allocation flags
 *
 * Allocates the blocks that hold the units of cids 0 .. @max_cid of @s's
 * unit set, where missing, so that threads with those cids find their
 * slot even when they access it from atomic context, where a missing
 * block sends them to the remote slot.  Shared by every object of the
 * set.  A block that exists costs one load.
 *
 * Context: Process context, may sleep if @gfp allows.
 * Return: 0, -ENOMEM (the accesses still work, through the remote slot),
 * or -ENOENT if @s's mm was already torn down.
 */
int mmcid_pcpu_prepare(struct mmcid_pcpu *s, unsigned int max_cid, gfp_t gfp)
{
	unsigned int k, last;
	int ret;

	might_sleep_if(gfpflags_allow_blocking(gfp));
	last = mmcid_blk_of(&s->geo, min(max_cid, nr_cpu_ids - 1));
	for (k = 0; k <= last && k < s->nblk; k++) {
		if (READ_ONCE(s->blk[k]))
			continue;
		ret = mmcid_grow(s, k, gfp);
		if (ret)
			return ret;
	}
	return 0;
}
EXPORT_SYMBOL_GPL(mmcid_pcpu_prepare);

/*
 * The context check of an access that may allocate with @gfp: on debug
 * kernels (CONFIG_DEBUG_ATOMIC_SLEEP) at every access, fast path
 * included; elsewhere nothing here, and might_sleep_if() only where a
 * block is about to be allocated (mmcid_grow()'s caller).
 */
static __always_inline void mmcid_might_sleep(gfp_t gfp)
{
	if (IS_ENABLED(CONFIG_DEBUG_ATOMIC_SLEEP))
		might_sleep_if(gfpflags_allow_blocking(gfp));
}

/*
 * May a caller that found no block allocate one now?  Our own preemption
 * disabling is undone by now, so what counts is the caller's context.
 */
static bool mmcid_may_grow(struct mmcid_pcpu *s, gfp_t gfp)
{
	unsigned long retry = READ_ONCE(s->grow_retry);

	if (READ_ONCE(s->dead))
		return false;		/* nothing would be published */
	if (retry && time_before(jiffies, retry))
		return false;		/* backing off after a failure */
	/*
	 * Never kmalloc() in atomic context, whatever @gfp says: PREEMPT_RT
	 * forbids it, and a blocking mask there would sleep in atomic
	 * context.  A blocking mask from atomic context is a caller bug
	 * (might_sleep_if() at the start of get reports it too); it gets
	 * the remote slot like GFP_ATOMIC.  Without CONFIG_PREEMPT_COUNT the
	 * context cannot be told: trust @gfp.
	 */
	if (IS_ENABLED(CONFIG_PREEMPT_COUNT) && !preemptible()) {
		WARN_ON_ONCE(gfpflags_allow_blocking(gfp));
		return false;
	}
	return true;
}

/*
 * Allocate and publish block k, with preemption enabled by us.  0 if it
 * exists afterwards, else -errno; a failure starts the backoff.
 */
static int mmcid_grow(struct mmcid_pcpu *s, unsigned int k, gfp_t gfp)
{
	unsigned long flags;
	void *slots;
	int ret = 0;

	atomic_inc(&s->grow_attempts);
	/* An optimisation with a fallback: no reserves, OOM killer, warning. */
	gfp &= ~(__GFP_HIGH | __GFP_NOFAIL);
	gfp |= __GFP_NOWARN | __GFP_NORETRY;
	/* At most MMCID_BLK_BYTES; slots are initialised on first use. */
	slots = pn_fault_hit(PN_FAULT_MMCID) ? NULL :
		kmalloc_array(mmcid_blk_len(&s->geo, k), s->fast.stride, gfp);
	if (!slots) {
		unsigned long retry = jiffies + MMCID_GROW_BACKOFF;

		WRITE_ONCE(s->grow_retry, retry ?: 1);	/* 0 means none */
		return -ENOMEM;
	}

	/*
	 * Publish only while @s is not dead: teardown sets dead under this
	 * lock before it folds, and the set's blocks are freed only after
	 * every live member was folded, so nothing is published into a set
	 * whose blocks are being freed.  Another member of the set may
	 * publish the same block at the same time (under its own lock):
	 * the cmpxchg picks one, the other allocation is freed.  Our ready
	 * word for the block is zero; the release pairs with the acquire in
	 * get.
	 */
	raw_spin_lock_irqsave(&s->lock, flags);
	if (s->dead)
		ret = -ENOENT;
	else if (!cmpxchg_release(&s->blk[k], NULL, slots))
		slots = NULL;
	raw_spin_unlock_irqrestore(&s->lock, flags);
	kfree(slots);
	if (!ret && READ_ONCE(s->grow_retry))
		WRITE_ONCE(s->grow_retry, 0);
	return ret;
}

/* First use of a slot by its cid owner (preemption disabled). */
static void mmcid_init_slot(struct mmcid_pcpu *s, void *slot,
			    unsigned long *ready, unsigned int bit)
{
	unsigned long flags;

	local_irq_save(flags);
	if (!test_bit(bit, ready)) {
		if (s->ops && s->ops->init)
			s->ops->init(slot, s->arg);
		else
			memset(slot, 0, s->size);
		WARN_ON_ONCE(test_and_set_bit(bit, ready));
	}
	local_irq_restore(flags);
}

/*
 * The cid to index with, or -1 for the remote slot.  Preemption is off.
 * Every exported access passes the constant MMCID_SRC_TASK, through
 * always-inlined code only, so its instance of this is the first case
 * alone; the chosen sources are compiled only into the test entry points
 * (see "Index source" above).
 */
static __always_inline int mmcid_pick(struct mmcid_pcpu *s,
				      enum mmcid_src src, int cid)
{
	switch (src) {
	case MMCID_SRC_TASK:
		if (current->mm != s->fast.mm || (current->flags & PF_KTHREAD))
			return -1;
		/*
		 * Without CONFIG_SCHED_MM_CID this is the CPU number, which
		 * is exclusive under preempt_disable() just the same.  A
		 * thread that already gave its cid back (exit, exec) has -1.
		 */
		cid = task_mm_cid(current);
		break;
	case MMCID_SRC_CPU:
		cid = smp_processor_id();
		break;
	case MMCID_SRC_FIXED:
		break;
	}
	if (cid < 0 || cid >= nr_cpu_ids)
		return -1;
	return cid;
}

/*
 * The hot path: the caller's cid slot if its block exists and the slot is
 * initialised, else NULL (the caller then takes __mmcid_pcpu_get()).
 * Preemption is off and stays off while the slot is used.
 */
static __always_inline void *mmcid_fast_slot(struct mmcid_pcpu *s,
					     enum mmcid_src src, int cid,
					     int *used)
{
	unsigned int k, bit;
	void *slots;
	int c;

	c = mmcid_pick(s, src, cid);
	if (unlikely(c < 0))
		return NULL;
	k = mmcid_blk_of(&s->geo, c);
	/* Pairs with the release in mmcid_grow(). */
	slots = smp_load_acquire(&s->blk[k]);
	if (unlikely(!slots))
		return NULL;
	bit = c - mmcid_blk_first(&s->geo, k);
	if (unlikely(!test_bit_acquire(bit, mmcid_ready(s, k))))
		return NULL;
	*used = c;
	return slots + bit * s->fast.stride + s->off;
}

/*
 * get, with the lockdep subclass to take the remote slot's lock with.
 * Always inlined into its two instances below, so that the index source
 * is a constant in the one the exported API uses.
 */
static __always_inline void *mmcid_get(struct mmcid_pcpu *s,
				       struct mmcid_pcpu_ref *ref, gfp_t gfp,
				       enum mmcid_src src, int cid,
				       unsigned int subclass)
{
	unsigned int k, bit, tries = 0;
	void *slots, *slot;
	int c;

	mmcid_might_sleep(gfp);
again:
	preempt_disable();
	c = mmcid_pick(s, src, cid);
	if (c < 0) {
		preempt_enable();
		goto remote;
	}
	k = mmcid_blk_of(&s->geo, c);
	/* Pairs with the release in mmcid_grow(). */
	slots = smp_load_acquire(&s->blk[k]);
	if (likely(slots)) {
		bit = c - mmcid_blk_first(&s->geo, k);
		slot = slots + bit * s->fast.stride + s->off;
		if (unlikely(!test_bit_acquire(bit, mmcid_ready(s, k)))) {
			/*
			 * A folded object never initialises a cid slot
			 * again: the blocks it sees belong to live members
			 * and go when they are folded.
			 */
			if (unlikely(READ_ONCE(s->dead))) {
				preempt_enable();
				goto remote;
			}
			/*
			 * Block 0's slots are reached from fast.slot0 by the
			 * inline add; set it before our ready bit (the fully
			 * ordered test_and_set_bit() in mmcid_init_slot()).
			 * Every owner stores the same value.
			 */
			if (!k)
				WRITE_ONCE(s->fast.slot0, slots + s->off);
			mmcid_init_slot(s, slot, mmcid_ready(s, k), bit);
		}
		ref->cpu = smp_processor_id();
		ref->cid = c;
		ref->slot = slot;
		return slot;
	}
	/*
	 * No block: allocate only outside our atomic section, then start
	 * over, because the cid may have changed while we were preemptible.
	 */
	preempt_enable();
	if (tries++ < MMCID_GROW_TRIES && mmcid_may_grow(s, gfp)) {
		might_sleep_if(gfpflags_allow_blocking(gfp));
		if (!mmcid_grow(s, k, gfp))
			goto again;
	}

remote:
	/* A raw spinlock an NMI could find held by the code it interrupted. */
	WARN_ON_ONCE(in_nmi());
	raw_spin_lock_irqsave_nested(&s->lock, ref->flags, subclass);
	/* Held until mmcid_pcpu_put(); tell sparse it leaves with the caller. */
	__release(&s->lock);
	ref->cpu = smp_processor_id();
	ref->cid = MMCID_PCPU_REMOTE;
	ref->slot = mmcid_remote(s);
	return ref->slot;
}

/* The exported accesses' instance: the caller's own mm_cid, nothing else. */
static void *mmcid_get_task(struct mmcid_pcpu *s, struct mmcid_pcpu_ref *ref,
			    gfp_t gfp, unsigned int subclass)
{
	return mmcid_get(s, ref, gfp, MMCID_SRC_TASK, 0, subclass);
}

/*
 * The test entry points' instance, a chosen index source: referenced
 * only from __mmcid_pcpu_get() and the chosen-source instances of the
 * counter's add, so without KUnit and the harness it is not compiled in.
 */
static void *__maybe_unused mmcid_get_chosen(struct mmcid_pcpu *s,
					     struct mmcid_pcpu_ref *ref,
					     gfp_t gfp, enum mmcid_src src,
					     int cid)
{
	return mmcid_get(s, ref, gfp, src, cid, 0);
}

/**
 * mmcid_pcpu_get() - the calling thread's slot
 * @s: the storage
 * @ref: filled in; pass it to mmcid_pcpu_put()
 * @gfp: allocation flags if the cid's block does not exist yet.  The
 *	 block is allocated only if the caller is preemptible, whatever the
 *	 mask (always without CONFIG_PREEMPT_COUNT, where that cannot be
 *	 told); otherwise, or when the allocation fails (after which the
 *	 storage backs off for a while), the caller gets the remote slot.
 *	 With a blocking mask (GFP_KERNEL) the call may sleep: only from
 *	 process context that may (with CONFIG_DEBUG_ATOMIC_SLEEP
 *	 might_sleep_if() checks it at every call; from atomic context the
 *	 grow path WARNs once and falls back).  Atomic callers,
 *	 nested ones included, pass GFP_NOWAIT or GFP_ATOMIC.
 *
 * A thread of @s's mm gets the slot of its mm_cid, initialised on first
 * use, with preemption disabled until mmcid_pcpu_put().  Anyone else gets
 * the remote slot, with @s's raw spinlock held and interrupts disabled.
 * In between, on every kernel (PREEMPT_RT included), the caller is atomic:
 * it must not sleep, allocate, take a mutex or a spinlock_t (a sleeping
 * lock on PREEMPT_RT), or call any other function on @s (on the remote
 * slot that self-deadlocks; lockdep reports it as recursive locking).
 * Other storage objects may be used: those created at another call site
 * (another lockdep class) directly, those of the same class through
 * mmcid_pcpu_get_nested() or mmcid_counter_add_nested() (one level, a
 * non-blocking @gfp).  Like this_cpu_ptr(), a cid
 * slot is not protected against interrupts on the same CPU: use
 * interrupt-safe updates (local_t, local64_t) if the storage is also used
 * from interrupts.
 *
 * Context: Any context but NMI (hard or soft interrupt, raw spinlock held,
 * preemption or interrupts disabled) if @gfp cannot block; process context
 * that may sleep if it can.
 * Return: the slot (never NULL).
 */
void *mmcid_pcpu_get(struct mmcid_pcpu *s, struct mmcid_pcpu_ref *ref,
		     gfp_t gfp)
{
	return mmcid_get_task(s, ref, gfp, 0);
}
EXPORT_SYMBOL_GPL(mmcid_pcpu_get);

/**
 * mmcid_pcpu_get_nested() - mmcid_pcpu_get() inside an access to another
 *			     storage object of the same lockdep class
 * @s: the storage (not the one whose access is in progress)
 * @ref: filled in; pass it to mmcid_pcpu_put()
 * @gfp: allocation flags; must not block (the caller is atomic)
 *
 * As mmcid_pcpu_get(), but the remote slot's lock is taken with lockdep
 * subclass SINGLE_DEPTH_NESTING, so that holding the remote slots of two
 * objects created at the same call site (one lockdep class) is not
 * reported as recursive locking.  One level only, and the caller must
 * order the two objects consistently (lockdep cannot check that within
 * one class).  Objects created at different call sites have different
 * classes and nest with plain mmcid_pcpu_get().
 *
 * Context: Inside an access (between mmcid_pcpu_get() and
 * mmcid_pcpu_put()) to another storage object; atomic, does not sleep.
 * Return: the slot (never NULL).
 */
void *mmcid_pcpu_get_nested(struct mmcid_pcpu *s, struct mmcid_pcpu_ref *ref,
			    gfp_t gfp)
{
	return mmcid_get_task(s, ref, gfp, SINGLE_DEPTH_NESTING);
}
EXPORT_SYMBOL_GPL(mmcid_pcpu_get_nested);

/**
 * mmcid_pcpu_put() - end the access begun by mmcid_pcpu_get()
 * @s: the storage
 * @ref: what mmcid_pcpu_get() filled in
 *
 * Context: The context that called mmcid_pcpu_get(), still atomic; does
 * not sleep.
 */
void mmcid_pcpu_put(struct mmcid_pcpu *s, struct mmcid_pcpu_ref *ref)
{
	if (ref->cid == MMCID_PCPU_REMOTE) {
		__acquire(&s->lock);	/* taken in mmcid_get() */
		raw_spin_unlock_irqrestore(&s->lock, ref->flags);
	} else {
		preempt_enable();
	}
}
EXPORT_SYMBOL_GPL(mmcid_pcpu_put);

struct mmcid_each {
	void (*fn)(const void *slot, int cid, void *data);
	void *data;
};

static void mmcid_each_one(struct mmcid_pcpu *s, void *slot, int cid,
			   void *data)
{
	struct mmcid_each *e = data;

	e->fn(slot, cid, e->data);
}

/**
 * mmcid_pcpu_for_each() - visit every initialised slot and the remote slot
 * @s: the storage
 * @fn: called with each slot and its cid (MMCID_PCPU_REMOTE last)
 * @data: passed to @fn
 *
 * @fn runs with @s's raw spinlock held and interrupts disabled: it must
 * not sleep, allocate or take a sleeping lock (spinlock_t on PREEMPT_RT).
 * Cid slots may be updated by their owners meanwhile; the remote slot and
 * the set of slots are stable.  Cost: O(initialised cids) calls of @fn
 * (plus one word per block) in one hold of the raw lock with interrupts
 * off, as percpu_counter_sum() walks every CPU under its raw lock; one
 * hold is what makes a walk that races with mm teardown exact (every slot
 * is seen either in its block or folded into the remote slot).
 *
 * Context: Any context but NMI; does not sleep.  Not between
 * mmcid_pcpu_get() and mmcid_pcpu_put() of @s (self-deadlock on the
 * remote slot, reported by lockdep as recursive locking).
 */
void mmcid_pcpu_for_each(struct mmcid_pcpu *s,
			 void (*fn)(const void *slot, int cid, void *data),
			 void *data)
{
	struct mmcid_each e = { .fn = fn, .data = data };
	unsigned long flags;

	raw_spin_lock_irqsave(&s->lock, flags);
	mmcid_walk(s, mmcid_each_one, &e);
	fn(mmcid_remote(s), MMCID_PCPU_REMOTE, data);
	raw_spin_unlock_irqrestore(&s->lock, flags);
}
EXPORT_SYMBOL_GPL(mmcid_pcpu_for_each);

/* The header's allocation: its kmalloc bucket, or its pages if vmalloc()ed. */
static size_t mmcid_hdr_bytes(struct mmcid_pcpu *s)
{
	size_t bytes = mmcid_hdr_size(s->nblk) + s->size;

	return is_vmalloc_addr(s) ? PAGE_ALIGN(bytes) :
		kmalloc_size_roundup(bytes);
}

/**
 * mmcid_pcpu_memory() - bytes the storage occupies
 * @s: the storage
 *
 * The header with the remote slot (its kmalloc bucket, or the pages if it
 * was vmalloc()ed) and the object's share of its unit set: its slot size
 * (rounded up to 8 bytes) for every cid slot in the allocated blocks.  The
 * rest of the units, the unit sets' headers and the per-mm context are
 * shared by the objects of the mm: mmcid_pcpu_mm_memory() counts them.
 * Lockless: with concurrent growth or teardown, each block is counted as
 * it is at the moment it is looked at.
 *
 * Context: Any context; does not sleep, takes no lock (may be called
 * between mmcid_pcpu_get() and mmcid_pcpu_put() of @s).
 * Return: the byte count.
 */
size_t mmcid_pcpu_memory(struct mmcid_pcpu *s)
{
	return mmcid_hdr_bytes(s) +
		(size_t)ALIGN(s->size, MMCID_GRAIN) * mmcid_pcpu_slots(s);
}
EXPORT_SYMBOL_GPL(mmcid_pcpu_memory);

/**
 * mmcid_pcpu_mm_memory() - bytes all mm_cid storage of @s's mm occupies
 * @s: a storage object of the mm
 * @unit_bytes: if not NULL, set to the bytes of the allocated unit blocks
 *	(the cid slots of every object of the mm, with the units' padding)
 *
 * Every allocation the mm's storage made, by kmalloc bucket (pages for
 * a vmalloc()ed header): the per-mm context, every unit set's header and
 * allocated blocks, and the header of every object not yet torn down
 * (teardown takes objects off the mm's list; their headers stay until
 * mmcid_pcpu_destroy(), see mmcid_pcpu_memory()).
 *
 * Context: Process context (takes the context's spinlock_t).
 * Return: the byte count.
 */
size_t mmcid_pcpu_mm_memory(struct mmcid_pcpu *s, size_t *unit_bytes)
{
	struct mmcid_mm *ctx = s->ctx;
	size_t bytes = kmalloc_size_roundup(sizeof(*ctx)), blocks = 0;
	struct mmcid_units *u;
	struct mmcid_pcpu *o;
	unsigned int k;

	spin_lock(&ctx->lock);
	list_for_each_entry(u, &ctx->units, node) {
		size_t sz = mmcid_units_size(u->nblk, u->unit);

		bytes += is_vmalloc_addr(u) ? PAGE_ALIGN(sz) :
			 kmalloc_size_roundup(sz);
		for (k = 0; k < u->nblk; k++)
			if (READ_ONCE(u->blk[k]))
				blocks += kmalloc_size_roundup(mmcid_blk_len(&u->geo, k) *
							       u->unit);
	}
	list_for_each_entry(o, &ctx->objs, node)
		bytes += mmcid_hdr_bytes(o);
	spin_unlock(&ctx->lock);
	if (unit_bytes)
		*unit_bytes = blocks;
	return bytes + blocks;
}
EXPORT_SYMBOL_GPL(mmcid_pcpu_mm_memory);

/**
 * mmcid_pcpu_slots() - cid slots allocated (initialised or not)
 * @s: the storage
 *
 * Lockless, as mmcid_pcpu_memory().
 *
 * Context: Any context; does not sleep, takes no lock.
 * Return: the number of slots in the allocated blocks.
 */
unsigned int mmcid_pcpu_slots(struct mmcid_pcpu *s)
{
	unsigned int k, n = 0;

	/* Lockless: block pointers only, never dereferenced. */
	for (k = 0; k < s->nblk; k++)
		if (READ_ONCE(s->blk[k]))
			n += mmcid_blk_len(&s->geo, k);
	return n;
}
EXPORT_SYMBOL_GPL(mmcid_pcpu_slots);

/**
 * mmcid_pcpu_max_cid() - the largest cid whose slot was initialised
 * @s: the storage
 *
 * Lockless, reads one word per block at most (no slot): a snapshot when
 * slots are initialised or torn down concurrently.
 *
 * Context: Any context; does not sleep, takes no lock.
 * Return: that cid, or -1 if none (or after the mm was torn down).
 */
int mmcid_pcpu_max_cid(struct mmcid_pcpu *s)
{
	unsigned int k = s->nblk;

	/*
	 * Lockless, from the last block down, ready words only (no slot is
	 * touched).  Teardown clears a block's ready word before the block
	 * is freed, and publication needs a zero ready word, so a bit seen
	 * here belongs to a slot that was initialised.
	 */
	while (k--) {
		unsigned long ready = READ_ONCE(*mmcid_ready(s, k));

		if (ready)
			return mmcid_blk_first(&s->geo, k) + __fls(ready);
	}
	return -1;
}
EXPORT_SYMBOL_GPL(mmcid_pcpu_max_cid);

/**
 * mmcid_pcpu_mm_gone() - has the storage's mm been torn down?
 * @s: the storage
 *
 * Context: Any context but NMI; does not sleep.  Not between
 * mmcid_pcpu_get() and mmcid_pcpu_put() of @s.
 * Return: true once the mm's teardown began: the cid slots are being or
 * have been folded into the remote slot and freed (block by block; sums
 * are exact throughout).
 */
bool mmcid_pcpu_mm_gone(struct mmcid_pcpu *s)
{
	unsigned long flags;
	bool dead;

	raw_spin_lock_irqsave(&s->lock, flags);
	dead = s->dead;
	raw_spin_unlock_irqrestore(&s->lock, flags);
	return dead;
}
EXPORT_SYMBOL_GPL(mmcid_pcpu_mm_gone);

/* ---- KUnit-only accessors (internal/mmcid_pcpu.h) ------------------------ */

#if IS_ENABLED(CONFIG_KUNIT)
/**
 * mmcid_pcpu_grow_attempts() - block allocations tried so far (KUnit only)
 * @s: the storage
 * @retry: set to the jiffies before which no block is tried after a
 *	   failure, 0 if the storage is not backing off
 *
 * Context: Any context.
 * Return: how many block allocations mmcid_grow() attempted.
 */
VISIBLE_IF_KUNIT unsigned int mmcid_pcpu_grow_attempts(struct mmcid_pcpu *s,
						       unsigned long *retry)
{
	*retry = READ_ONCE(s->grow_retry);
	return atomic_read(&s->grow_attempts);
}
EXPORT_SYMBOL_IF_KUNIT(mmcid_pcpu_grow_attempts);

/**
 * mmcid_pcpu_lock_key() - the lockdep class key of the lock (KUnit only)
 * @s: the storage
 *
 * Context: Any context.
 * Return: the key its creation site passed; NULL without
 * CONFIG_DEBUG_LOCK_ALLOC, where locks carry no class.
 */
VISIBLE_IF_KUNIT const struct lock_class_key *
mmcid_pcpu_lock_key(struct mmcid_pcpu *s)
{
#ifdef CONFIG_DEBUG_LOCK_ALLOC
	return s->lock.dep_map.key;
#else
	return NULL;
#endif
}
EXPORT_SYMBOL_IF_KUNIT(mmcid_pcpu_lock_key);

/**
 * mmcid_pcpu_geo_blk() - the block of a cid (KUnit only)
 * @stride: slot distance in bytes, a multiple of SMP_CACHE_BYTES up to
 *	    PAGE_SIZE
 * @cid: the cid
 *
 * Context: Any context.
 * Return: mmcid_blk_of() for the geometry of @stride.
 */
VISIBLE_IF_KUNIT unsigned int mmcid_pcpu_geo_blk(unsigned int stride,
						 unsigned int cid)
{
	struct mmcid_geo g;

	mmcid_geo_init(&g, stride);
	return mmcid_blk_of(&g, cid);
}
EXPORT_SYMBOL_IF_KUNIT(mmcid_pcpu_geo_blk);

/**
 * mmcid_pcpu_geo_block() - where a block starts and how long it is (KUnit)
 * @stride: as for mmcid_pcpu_geo_blk()
 * @ncids: the number of cids (nr_cpu_ids in real use)
 * @k: the block, below mmcid_pcpu_geo_blk(@stride, @ncids - 1) + 1
 * @first: set to its first cid
 * @len: set to its number of slots (capped at @ncids)
 *
 * Context: Any context.
 */
VISIBLE_IF_KUNIT void mmcid_pcpu_geo_block(unsigned int stride,
					   unsigned int ncids, unsigned int k,
					   unsigned int *first, unsigned int *len)
{
	struct mmcid_geo g;

	mmcid_geo_init(&g, stride);
	*first = mmcid_blk_first(&g, k);
	*len = mmcid_blk_len_n(&g, k, ncids);
}
EXPORT_SYMBOL_IF_KUNIT(mmcid_pcpu_geo_block);
#endif /* CONFIG_KUNIT */

/* ---- counter ------------------------------------------------------------------ */

/*
 * A counter is a storage object whose slots are one local64_t each.
 * struct mmcid_counter is never defined: it is the storage object under a
 * distinct type, so that counter and raw storage are not mixed up.
 */
static struct mmcid_pcpu *ctr_store(struct mmcid_counter *c)
{
	return (struct mmcid_pcpu *)c;
}

static void mmcid_counter_fold(void *remote, const void *slot, void *arg)
{
	local64_add(local64_read((local64_t *)slot), (local64_t *)remote);
}

static const struct mmcid_pcpu_ops mmcid_counter_ops = {
	.fold = mmcid_counter_fold,
};

/**
 * __mmcid_counter_create() - a counter of an mm, one local64_t per cid
 * @mm: as for mmcid_pcpu_create()
 * @key: lockdep class; mmcid_counter_create() passes its call site's
 *
 * Use mmcid_counter_create().
 *
 * Context: Process context, may sleep.
 * Return: the counter or an ERR_PTR(), as mmcid_pcpu_create(): -EINVAL,
 * -ESRCH, -ENOMEM, or -EINTR when a signal is pending.
 */
struct mmcid_counter *__mmcid_counter_create(struct mm_struct *mm,
					     struct lock_class_key *key)
{
	struct mmcid_pcpu *s = __mmcid_pcpu_create(mm, sizeof(local64_t),
						   &mmcid_counter_ops, NULL,
						   key);

	return IS_ERR(s) ? ERR_CAST(s) : (struct mmcid_counter *)s;
}
EXPORT_SYMBOL_GPL(__mmcid_counter_create);

/**
 * __mmcid_counter_create_in() - mmcid_counter_create() in an owned context
 * @ctx: from mmcid_mm_create()
 * @mm: its mm
 * @key: lockdep class; mmcid_counter_create_in() passes its call site's
 *
 * Context: Process context, may sleep.
 * Return: the counter or an ERR_PTR(), as __mmcid_pcpu_create_in().
 */
struct mmcid_counter *__mmcid_counter_create_in(struct mmcid_mm *ctx,
						struct mm_struct *mm,
						struct lock_class_key *key)
{
	struct mmcid_pcpu *s = __mmcid_pcpu_create_in(ctx, mm, sizeof(local64_t),
						      &mmcid_counter_ops, NULL,
						      key);

	return IS_ERR(s) ? ERR_CAST(s) : (struct mmcid_counter *)s;
}
EXPORT_SYMBOL_GPL(__mmcid_counter_create_in);

/**
 * mmcid_counter_destroy() - free a counter
 * @c: the counter (NULL or an ERR_PTR() is ignored)
 *
 * Context: Process context, may sleep (see mmcid_pcpu_destroy()).
 */
void mmcid_counter_destroy(struct mmcid_counter *c)
{
	if (!IS_ERR_OR_NULL(c))
		mmcid_pcpu_destroy(ctr_store(c));
}
EXPORT_SYMBOL_GPL(mmcid_counter_destroy);

/**
 * mmcid_counter_storage() - the storage object under a counter
 * @c: the counter
 *
 * Context: Any context.
 * Return: the storage, for mmcid_pcpu_memory() and friends.
 */
struct mmcid_pcpu *mmcid_counter_storage(struct mmcid_counter *c)
{
	return ctr_store(c);
}
EXPORT_SYMBOL_GPL(mmcid_counter_storage);

/*
 * The add's slow path (first use of the slot, a missing block, or the
 * remote slot), out of line so that the fast path keeps no
 * struct mmcid_pcpu_ref on its stack (zeroed on entry by kernels with
 * CONFIG_INIT_STACK_ALL_ZERO, Debian's among them).  Always inlined into
 * two instances, so that each has its index source as a constant.
 */
static __always_inline int mmcid_counter_add_slow(struct mmcid_counter *c,
						  s64 delta, gfp_t gfp,
						  enum mmcid_src src, int cid,
						  unsigned int *cpu,
						  unsigned int subclass)
{
	struct mmcid_pcpu *s = ctr_store(c);
	struct mmcid_pcpu_ref ref;
	local64_t *v;

	if (src == MMCID_SRC_TASK)
		v = mmcid_get_task(s, &ref, gfp, subclass);
	else
		v = mmcid_get_chosen(s, &ref, gfp, src, cid);
	local64_add(delta, v);
	mmcid_pcpu_put(s, &ref);
	if (cpu)
		*cpu = ref.cpu;
	return ref.cid;
}

static noinline int mmcid_counter_slow_task(struct mmcid_counter *c,
					    s64 delta, gfp_t gfp,
					    unsigned int *cpu,
					    unsigned int subclass)
{
	return mmcid_counter_add_slow(c, delta, gfp, MMCID_SRC_TASK, 0, cpu,
				      subclass);
}

static noinline __maybe_unused int
mmcid_counter_slow_chosen(struct mmcid_counter *c, s64 delta, gfp_t gfp,
			  enum mmcid_src src, int cid, unsigned int *cpu)
{
	return mmcid_counter_add_slow(c, delta, gfp, src, cid, cpu, 0);
}

/*
 * The add, always inlined so that the index source is a constant in each
 * instance: MMCID_SRC_TASK in the exported ones, where the fast path is
 * then the caller's mm_cid, the block and ready-bit tests and the
 * local64_add(), with no test branch.
 */
static __always_inline int mmcid_counter_add_sub(struct mmcid_counter *c,
						 s64 delta, gfp_t gfp,
						 enum mmcid_src src, int cid,
						 unsigned int *cpu,
						 unsigned int subclass)
{
	local64_t *v;
	int used;

	mmcid_might_sleep(gfp);
	preempt_disable();
	v = mmcid_fast_slot(ctr_store(c), src, cid, &used);
	if (likely(v)) {
		local64_add(delta, v);
		if (cpu)
			*cpu = smp_processor_id();
		preempt_enable();
		return used;
	}
	preempt_enable();
	if (src == MMCID_SRC_TASK)
		return mmcid_counter_slow_task(c, delta, gfp, cpu, subclass);
	return mmcid_counter_slow_chosen(c, delta, gfp, src, cid, cpu);
}

/**
 * __mmcid_counter_add_task() - the counter's add, out of line
 * @f: the counter's first member (struct mmcid_pcpu_fast: the prototype
 *     names it so that the symbol's modversions CRC covers the layout a
 *     client's inline add was compiled against)
 * @delta: the amount
 * @gfp: as for mmcid_pcpu_get()
 * @cpu: if not NULL, set to the CPU the add ran on
 * @subclass: lockdep subclass for the remote slot's lock: 0, or
 *	      SINGLE_DEPTH_NESTING for mmcid_counter_add_nested() (any
 *	      nonzero value means that)
 *
 * Not for callers: mmcid_counter_add() and mmcid_counter_add_nested()
 * inline the block-0 path and call this for everything else (any cid
 * slot, with its first use and block allocation, or the remote slot).
 *
 * Context: As mmcid_counter_add().
 * Return: the cid whose slot was used, or MMCID_PCPU_REMOTE.
 */
int __mmcid_counter_add_task(const struct mmcid_pcpu_fast *f, s64 delta,
			     gfp_t gfp, unsigned int *cpu, unsigned int subclass)
{
	struct mmcid_counter *c = (struct mmcid_counter *)f;

	if (subclass)
		return mmcid_counter_add_sub(c, delta, gfp, MMCID_SRC_TASK, 0,
					     cpu, SINGLE_DEPTH_NESTING);
	return mmcid_counter_add_sub(c, delta, gfp, MMCID_SRC_TASK, 0, cpu, 0);
}
EXPORT_SYMBOL_GPL(__mmcid_counter_add_task);

static void mmcid_sum_one(const void *slot, int cid, void *data)
{
	*(s64 *)data += local64_read((local64_t *)slot);
}

/**
 * mmcid_counter_sum() - the counter's value
 * @c: the counter
 *
 * Exact when no add runs concurrently (and after the mm is torn down);
 * with concurrent adds, as percpu_counter_sum(): each slot is read once.
 *
 * Cost: as mmcid_pcpu_for_each(), O(initialised cids) under @c's raw
 * spinlock with interrupts off.
 *
 * Context: Any context but NMI; does not sleep.  Not inside an access to
 * @c's storage (self-deadlock on the remote slot, which lockdep reports
 * as recursive locking), nor inside one to another object of the same
 * lockdep class (there is no nested variant).
 * Return: the sum of every cid slot and the remote slot.
 */
s64 mmcid_counter_sum(struct mmcid_counter *c)
{
	s64 sum = 0;

	mmcid_pcpu_for_each(ctr_store(c), mmcid_sum_one, &sum);
	return sum;
}
EXPORT_SYMBOL_GPL(mmcid_counter_sum);

/* ---- entry points for the tests (internal/mmcid_pcpu.h) ------------------ */

#if IS_ENABLED(CONFIG_KUNIT) || IS_ENABLED(CONFIG_PCPU_NEXT_TORTURE)
/**
 * __mmcid_pcpu_get() - mmcid_pcpu_get() with a chosen index source
 * @s: the storage
 * @ref: filled in; pass it to mmcid_pcpu_put()
 * @gfp: allocation flags for a missing block, as for mmcid_pcpu_get()
 * @src: where the cid comes from: MMCID_SRC_CPU or MMCID_SRC_FIXED (a
 *	 test's choice), or MMCID_SRC_TASK (exactly mmcid_pcpu_get())
 * @cid: the cid for MMCID_SRC_FIXED; the caller guarantees that nobody
 *	 else uses it at the same time
 *
 * For KUnit and the harness, whose kernel threads own no mm_cid: the
 * same block, first-use and publication code as a real cid, the index
 * chosen by the test.  Not exported.
 *
 * Context: See mmcid_pcpu_get().
 * Return: the slot (never NULL).
 */
void *__mmcid_pcpu_get(struct mmcid_pcpu *s, struct mmcid_pcpu_ref *ref,
		       gfp_t gfp, enum mmcid_src src, int cid)
{
	if (src == MMCID_SRC_TASK)
		return mmcid_get_task(s, ref, gfp, 0);
	return mmcid_get_chosen(s, ref, gfp, src, cid);
}

/**
 * __mmcid_counter_add() - mmcid_counter_add() with a chosen index source
 * @c: the counter
 * @delta: the amount
 * @gfp: as for mmcid_pcpu_get()
 * @src: as for __mmcid_pcpu_get()
 * @cid: as for __mmcid_pcpu_get()
 * @cpu: if not NULL, set to the CPU the add ran on
 *
 * Each source has its own instance of the add (the source a constant in
 * it), so MMCID_SRC_CPU runs the same fast path as a user thread's
 * mm_cid, with the CPU number read in place of task_mm_cid(): what the
 * bench measures.  Not exported.
 *
 * Context: See mmcid_counter_add().
 * Return: the cid whose slot was used, or MMCID_PCPU_REMOTE.
 */
int __mmcid_counter_add(struct mmcid_counter *c, s64 delta, gfp_t gfp,
			enum mmcid_src src, int cid, unsigned int *cpu)
{
	switch (src) {
	case MMCID_SRC_CPU:
		return mmcid_counter_add_sub(c, delta, gfp, MMCID_SRC_CPU, 0,
					     cpu, 0);
	case MMCID_SRC_FIXED:
		return mmcid_counter_add_sub(c, delta, gfp, MMCID_SRC_FIXED,
					     cid, cpu, 0);
	case MMCID_SRC_TASK:
		break;
	}
	return mmcid_counter_add(c, delta, gfp, cpu);
}

/**
 * mmcid_pcpu_ctx_size() - bytes of one mm's shared context
 *
 * The per-mm context (struct mmcid_mm, the mmu_notifier subscription
 * with the list of the mm's storage objects) is one kmalloc shared by
 * every object of an mm; mmcid_pcpu_memory() leaves it out.  For the
 * bench's footprint report.  Not exported.
 *
 * Context: Any context.
 * Return: the size of its kmalloc bucket.
 */
size_t mmcid_pcpu_ctx_size(void)
{
	return kmalloc_size_roundup(sizeof(struct mmcid_mm));
}

/**
 * mmcid_pcpu_model_bytes() - what mmcid_pcpu_mm_memory() would report
 * @ncids: nr_cpu_ids of the machine computed for
 * @nobj: objects of the mm, created one after the other
 * @size: their slot size, 1..PAGE_SIZE
 * @cids: cids 0 .. @cids - 1 used by every object
 * @unit_bytes: set to the bytes of the unit blocks
 *
 * The same layout rules as the allocation code (a unit of @size rounded
 * up to the cache line, aligned first fit in MMCID_GRAIN-byte steps,
 * doubling blocks, kmalloc buckets; a unit set header assumed to come
 * from kmalloc, as it does below a page), evaluated for another
 * machine's nr_cpu_ids; for @ncids == nr_cpu_ids the bench and KUnit
 * check it against the measurement.
 * Not exported.
 *
 * Context: Any context.
 * Return: the bytes of the context, unit sets, blocks and headers.
 */
size_t mmcid_pcpu_model_bytes(unsigned int ncids, unsigned int nobj,
			      size_t size, unsigned int cids, size_t *unit_bytes)
{
	u32 unit = mmcid_unit_of(size);
	unsigned int per = unit / ALIGN(ALIGN(size, MMCID_GRAIN),
					mmcid_align_of(size));
	unsigned int nsets = DIV_ROUND_UP(nobj, per);
	unsigned int nblk, k, last;
	struct mmcid_geo g;
	size_t blocks = 0;

	mmcid_geo_init(&g, unit);
	nblk = mmcid_blk_of(&g, ncids - 1) + 1;
	last = cids ? mmcid_blk_of(&g, min(cids, ncids) - 1) : 0;
	for (k = 0; cids && k <= last; k++)
		blocks += kmalloc_size_roundup(mmcid_blk_len_n(&g, k, ncids) * unit);
	*unit_bytes = blocks * nsets;
	return kmalloc_size_roundup(sizeof(struct mmcid_mm)) +
		nsets * kmalloc_size_roundup(mmcid_units_size(nblk, unit)) +
		nobj * kmalloc_size_roundup(mmcid_hdr_size(nblk) + size) +
		*unit_bytes;
}
#endif /* CONFIG_KUNIT || CONFIG_PCPU_NEXT_TORTURE */

/* ---- module init and exit --------------------------------------------------- */

/**
 * pn_mmcid_init() - bring up mmcid_pcpu
 *
 * Nothing to set up: storage objects and their per-mm contexts are
 * created on demand by mmcid_pcpu_create().  (The harness's debugfs file
 * pcpu_next/mmcid is created by pn_mmcid_torture_start().)
 *
 * Context: Module init, after lazy_counter_module_init().
 * Return: 0.
 */
int pn_mmcid_init(void)
{
	return 0;
}

/**
 * pn_mmcid_exit() - wait for the per-mm contexts' free callbacks
 *
 * Every storage object is destroyed by now (a client module holds a
 * reference on this one; the harness stopped first), but the last
 * mmu_notifier_put() of a context frees it later, through SRCU, with
 * mmcid_mm_free(), which is module code.  In 6.12
 * mmu_notifier_synchronize() is synchronize_srcu() on the notifiers'
 * SRCU: when it returns, no such callback runs any more.
 *
 * Context: Module exit, after pn_control_stop(); may sleep.
 */
void pn_mmcid_exit(void)
{
	mmu_notifier_synchronize();
}
