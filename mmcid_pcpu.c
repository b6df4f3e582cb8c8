// SPDX-License-Identifier: GPL-2.0
/*
 * mmcid_pcpu: per-mm storage indexed by the rseq concurrency id (mm_cid).
 *
 * Per-CPU data gives every possible CPU its own copy.  For data of one
 * process, such as the RSS counters of an mm, that is wasteful.  A
 * 4-thread process on a 256-CPU machine pays for 256 copies.
 *
 * The scheduler gives the threads of an mm small ids, task_mm_cid(), that
 * rseq exposes as mm_cid.  Indexing by it keeps the "only I touch this
 * copy" property of per-CPU data, and the storage follows the cids in use.
 * Linux 6.19 rewrote the cid allocator; pn_task_mm_cid() reads both:
 *
 *   what             6.12                         7.x
 *   owner            the CPU running the thread   the task, fork to exit;
 *                                                 in per-CPU mode the CPU
 *   changes          at switch-in; a scan every   at switch-in, only when it is
 *                    100 ms compacts cids         not below max_cids
 *   bound            nr_cpu_ids                   max_cids, see below
 *   4 threads        cids 0..3, more for a while  cids 0..3; after threads
 *                    after migrations             came and went, 4 for good
 *   kthread, exited  -1                           MM_CID_UNSET, INT_MIN
 *
 * On 7.x, max_cids = min(opt + opt / 4, num_possible_cpus()), where opt
 * is the smaller of the thread count and the mm's allowed CPUs: the union
 * of its threads' affinity masks, every possible CPU by default.  So with
 * 4 of 64 possible CPUs online, an 8-thread process holds cids 0..7, up
 * to 9.  An mm with more threads than max_cids goes to per-CPU mode.
 *
 * Both give what this file needs.  A cid is below nr_cpu_ids.  No two
 * running threads of the mm share one.  It does not change while its
 * task runs with preemption disabled.  Kernel threads have none, with
 * kthread_use_mm() or without: their cid reads negative.
 *
 *   struct mmcid_mm (one per mm: the mmu_notifier of mmu_notifier_get(),
 *   kmalloc-128 without lock debugging, kmalloc-192 on PREEMPT_RT)
 *   +----------------------------------------------------------------+
 *   | mn | lock | objs: the mm's storage objects (by ->next)          |
 *   | set0: the first unit set  --next-->  further unit sets (kzalloc) |
 *   +----------------------------------------------------------------+
 *
 *   struct mmcid_units (set0, or kzalloc)
 *   +----------------------------+    blocks (kmalloc, on demand, <= PAGE_SIZE)
 *   | unit = 64 bytes, map, ...  |
 *   | blk0 ------------------------> | cid 0 unit | cid 1 unit | .. b0 - 1 |
 *   | dir (with the first block  |
 *   |  above 0) --> [blk 1] ------> | cid b0 unit | .. 2 b0 - 1 | doubling
 *   |               [blk 2] ...  |   ...                       then L each
 *   +----------------------------+
 *   a unit (one cid):  [ obj A 8 B | obj B 8 B | obj C 16 B | free ...    ]
 *                        off 0       off 8       off 16
 *
 *   struct mmcid_pcpu (kmalloc, one per storage object; a counter array
 *   of four is kmalloc-128 without lock debugging)
 *   +--------------------------------------------------------------+
 *   | fast: slot0 (its slot of cid 0), ready0, mm, stride, nr0,     |
 *   |       dead, folded                                           |
 *   | units, ctx, ops, arg                                         |
 *   | ready (with its first slot above block 0) --> [word of blk 1] |
 *   |       bit i: its slot of cid first(k) + i initialised   ...  |
 *   | next, lock, ref, off, size                                   |
 *   | remote slot                                                  |
 *   +--------------------------------------------------------------+
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
 * one-word bitmap per set, under the context's lock, see mmcid_grain()),
 * else in the embedded set0 if it is empty (its last member left; it then
 * takes the new object's unit), else in a new set.  A set header holds
 * block 0's pointer.  A dir of the other blocks' pointers comes with the
 * first of them, so an mm whose cids stay in block 0 has none.
 *
 * Four 8-byte counters of an mm as one counter array
 * (mmcid_counter_create_many()) share one 64-byte unit per cid.  Block 0
 * is b0 units: 4 on 6.12, 8 on 7.x (compat.h), fewer on small machines.
 * The context with the set header is 128 bytes, the array's header with
 * its remote slot 128.  So an array whose cids stay in block 0 costs 512
 * bytes in all on 6.12, 768 on 7.x.  Per-CPU counters take 4 * 8 *
 * nr_possible bytes, 2048 at 64 possible CPUs.  Four separate objects pay
 * four headers instead of one.
 *
 * Geometry.  Units are stride = unit bytes apart.  A block holds at most
 * L units, L the largest power of two with L * unit <= PAGE_SIZE and
 * L <= BITS_PER_LONG: every block is one kmalloc of at most PAGE_SIZE
 * bytes, whatever the unit size or the number of CPUs (a kmalloc bucket,
 * not a page allocation: SLUB may back the 1k..4k buckets with order-3
 * slabs opportunistically and falls back to smaller orders, so no block
 * ever needs a high-order page), and an object's ready bits for a block
 * fit in one word.  Below L, blocks double: block 0 holds b0 = min(B0, L)
 * cids, block k >= 1 holds [b0 << (k - 1), b0 << k); from cid L on, every
 * block holds L cids.  A mm whose largest cid ever used is c owns at most
 * max(b0, 2 * (c + 1)) units per set and never nr_cpu_ids of them unless
 * it used cid nr_cpu_ids - 1.  Memory follows the highest cid ever seen,
 * not the current one: a block, once allocated, stays until mm teardown
 * (or until the set's last object is destroyed), even when the cids it
 * covers are no longer used.  On 7.x a cid up to num_possible_cpus() can
 * show up briefly while an mm switches ownership mode; its block stays
 * too.  An object has one ready word per block: block 0's in its header,
 * the others (nr_cpu_ids / L of them, about; one per cid for page-sized
 * units) in an array allocated (kvcalloc()) with the object's first slot
 * above block 0, as the set's dir is with the set's first block above 0.
 * Slots are not initialised when a block is allocated: the first use of
 * a cid by each object runs ops->init (or zeroes its range) and sets that
 * object's ready bit, so a range another object left behind is never
 * seen.
 *
 * Access.  mmcid_pcpu_get() disables preemption and reads the caller's
 * cid with pn_task_mm_cid().  Disabled preemption, not migrate_disable()
 * or a local_lock_t, keeps a cid exclusive, PREEMPT_RT included.  On 6.12
 * a preempted task's cid stays with its CPU, which hands it to the next
 * thread of the mm there.  On 7.x the same happens in per-CPU mode, and a
 * cid in transit is dropped at switch-out.  Only a running task surely
 * owns its cid.  So a cid slot is used with preemption disabled from get
 * to put, like this_cpu_ptr() under get_cpu().
 *
 * The hot path (slot initialised) is a few loads and one bit test: for a
 * cid of block 0 on the object's first line alone (fast.slot0 and
 * fast.ready0), above it through the set's dir and the object's ready
 * words.  The counter's add is inline in the public header.  For a cid of
 * block 0 (cids 0..3 on 6.12, 0..7 on 7.x; see compat.h) it reads only
 * the object's first line, struct
 * mmcid_pcpu_fast, around one local64_add_return().  A higher cid, a first use
 * or a missing block calls __mmcid_counter_add_task().  fast.slot0 is
 * stored by every owner that initialises a slot of block 0, before its
 * ready bit (the same value each time: block 0 of a unit set never moves
 * while a member can reach it), so an adder that sees the bit with
 * acquire ordering sees slot0.
 *
 * A caller that is not a thread of the mm gets the remote slot instead,
 * under s->lock, a raw spinlock, with interrupts disabled.  That is a
 * kernel thread, with kthread_use_mm() or not, a ptrace or
 * get_user_pages_remote() style caller, or a thread without a cid: on
 * exit, or on 7.x in per-CPU mode before its first switch-in.  Either way
 * the caller is atomic between get and put, PREEMPT_RT included: it must
 * not sleep, allocate memory or take a sleeping lock (mutex, and
 * spinlock_t on PREEMPT_RT) there.  Readers (mmcid_pcpu_for_each(), the
 * counter's sum) visit every ready slot and the remote slot under
 * s->lock.
 *
 * Counters.  A counter's remote slot is its central value, as a
 * percpu_counter's count.  It takes atomic adds without the lock: an add
 * with no cid slot is one atomic64_add(), so reclaim of a big process by
 * many CPUs does not serialise on s->lock.  A cid slot that reaches
 * MMCID_COUNTER_BATCH either way is folded into the remote slot under
 * s->lock, so the exact sum, which walks under it, sees each amount once.
 * The fast read, mmcid_counter_read_at(), is one load of the remote slot,
 * within (MMCID_COUNTER_BATCH - 1) per cid used of the exact sum.
 *
 * Allocation.  Nothing is allocated inside that atomic section.  When the
 * cid's block is missing (or, above block 0, the set's dir or the
 * object's ready words), get leaves its preempt-disabled section,
 * allocates what is missing with preemption enabled and starts over (the
 * cid may have changed meanwhile; after MMCID_GROW_TRIES rounds it
 * settles for the remote slot).  It allocates only where that is allowed on every kernel:
 * when the caller itself is preemptible (preemptible(): preemption and
 * interrupts enabled; on PREEMPT_RT that includes holding a spinlock_t),
 * whatever @gfp says.  A caller in atomic context (interrupt, softirq, raw
 * spinlock, disabled preemption or interrupts; on !PREEMPT_RT a spinlock_t
 * too) gets the remote slot; it must pass GFP_NOWAIT or GFP_ATOMIC.  A
 * blocking mask there is a caller bug: mmcid_might_sleep() reports it on
 * debug kernels, and the grow path WARNs once and falls back.
 * PREEMPT_RT forbids kmalloc() there even with GFP_ATOMIC (the slab
 * allocator takes sleeping locks), and under a raw spinlock or in a hard
 * interrupt PROVE_RAW_LOCK_NESTING reports those locks on every kernel.
 * (Without CONFIG_PREEMPT_COUNT, which PREEMPT_RT and lockdep always
 * have, the context cannot be told and @gfp is trusted as usual.)  So
 * mmcid_pcpu_get() never fails.  A block is an optimisation whose failure
 * has a designed fallback, so it is allocated with __GFP_NOWARN, without
 * the emergency reserves (__GFP_HIGH) and without the OOM killer
 * (__GFP_NORETRY).  After a failure the unit set backs off (its blocks
 * are shared by its objects, so they all do): nothing of it is tried
 * again for MMCID_GROW_BACKOFF (one second), everyone takes the remote
 * slot meanwhile, so memory pressure does not turn every access into a
 * failing allocation.  A dead object (mm torn down) allocates
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
 *    of an mm.  A cid changes while its task is switched out, and in the
 *    task's own context at exit and exec: sched_mm_cid_exit_signals() on
 *    6.12, sched_mm_cid_exit() on 7.x, sched_mm_cid_before_execve() and
 *    _after_execve() on both.  Those run preemptible, outside any get/put
 *    of ours.  On 7.x other CPUs may flip the ONCPU and TRANSIT bits of a
 *    running task's cid, which pn_task_mm_cid() masks off.  So within a
 *    get/put the cid cannot change.
 *  - A slot is initialised exactly once: only the cid owner initialises,
 *    with interrupts disabled (so no interrupt on its CPU sees it half
 *    done), and test_and_set_bit() of the ready bit WARNs if anyone else
 *    did it in the meantime (which would mean the exclusivity above broke).
 *  - An object's ready word for block k is zero whenever the block is
 *    not allocated: a ready bit implies an allocated block.  Blocks, a
 *    set's dir and an object's ready words are published through an
 *    object of the set, under its s->lock, only while it is not dead
 *    (cmpxchg, so two members or threads publishing the same one keep
 *    one), zeroed where they hold pointers or bits.  A set's dir goes
 *    only with the set (its last member leaving), an object's ready
 *    words only with the object, so lockless readers of either never
 *    see them freed.  A set counts its members and its live members
 *    (not folded by a teardown) under ctx->lock.  Its blocks are freed
 *    when its last member leaves (destroy), or, once the mm is gone
 *    (ctx->dead), when its last live member was folded or left: then
 *    every member is dead (no publication) and has zero ready words (no
 *    walker or owner looks at a unit).  So a walker under s->lock goes by
 *    its ready words, and no unit is freed under an object that can
 *    still reach it.  The set that dies may be set0, which stays in the
 *    context for reuse: its block and dir pointers are cleared under
 *    ctx->lock before the lock is dropped, and the old ones freed from a
 *    copy, so the next member never sees them.
 *  - The byte ranges of a set's members are disjoint (the set's map);
 *    a range is given back only by destroy, after the object's slots
 *    were finalised.
 *  - Every slot whose init ran gets exactly one fini, cid slots after the
 *    fold at mm teardown or at destroy, the remote slot at destroy.  The
 *    remote slot exists for the whole life of the object.
 *
 * Locking:
 *  - s->lock (raw_spinlock_t, irqsave) protects the remote slot, the
 *    publication of blocks, dir and ready words, fast.dead and the fold
 *    at teardown, and makes readers see
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
 *  - ctx->lock (spinlock_t) protects ctx->objs (the objects, linked by
 *    their next: a destroy walks the few objects of an mm to unlink
 *    one), the list of unit sets, ctx->dead, and in each unit set the
 *    map, unit and geometry (set0 takes a new unit when reused), the
 *    member and live counts, and the decision to free blocks: a dying
 *    set is detached under it, its blocks and dir freed after it is
 *    dropped.  It is taken in process context only, nests outside nothing
 *    and is never held together with s->lock.
 *
 * Memory ordering: a block's slot pointer, a set's dir and an object's
 * ready words are published with cmpxchg_release() (the object's ready
 * word for the block is zero already; the arrays are zeroed) and read
 * with smp_load_acquire().  A slot's ready bit is set with test_and_set_bit()
 * (fully ordered) after the slot was initialised, and read with
 * test_bit_acquire(), so a reader that sees the bit sees the initialised
 * slot.  The hand-over of a cid orders the old owner's slot updates before
 * the new owner's.  On 6.12 it goes through the rq locks and the fully
 * ordered cmpxchg on the mm's per-CPU cid.  On 7.x the old owner drops
 * the cid with clear_bit() on the mm's cid bitmap: at a switch after
 * smp_mb__after_spinlock(), at exit or exec under mm_cid.mutex, which a
 * fork that takes the cid holds too.  The new owner takes it with the
 * fully ordered test_and_set_bit().
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
 * be folded frees the set's blocks: memory drops to the headers (with
 * the dir and ready words, which go with the set and the objects), sums
 * stay exact at every step, the remote slot stays usable.  No thread of
 * the mm exists any more then, so no cid access can race with it.  The
 * object itself goes when its creator calls mmcid_pcpu_destroy(), which
 * first waits for a ->release working on it, then finalises what is left
 * (cid slots without a fold if the mm is still alive, the remote slot),
 * gives its range back (the last member frees the unit set) and frees
 * it; when destroy returns, no callback of the object runs any more.  The
 * last object of an mm drops the context with mmu_notifier_put(), which
 * frees it later from an SRCU callback; module unload waits for those
 * callbacks by count (pn_mmcid_exit()).
 *
 * Index source.  The exported accesses (mmcid_pcpu_get(), _get_nested(),
 * mmcid_counter_add(), _add_at(), _add_nested()) take the index from
 * pn_task_mm_cid() only, with preemption disabled; a caller without a cid
 * (a kernel thread, an exiting thread, another mm) gets the remote slot.
 * Kernel threads never own an mm_cid, kthread_use_mm() or not, so KUnit
 * and the harness, whose code runs in kernel threads, reach the cid slots
 * through __mmcid_pcpu_get() and __mmcid_counter_add() of
 * internal/mmcid_pcpu.h (not exported, compiled only with KUnit or the
 * harness) with the CPU number or a fixed cid as the index (enum
 * mmcid_src).  The access code is always inlined with the source as a
 * constant, so the exported instances contain no test branch.
 *
 * Statistics.  None on the fast paths, so CONFIG_PCPU_NEXT_STATS changes
 * nothing here.  The block allocations attempted per object
 * (s->grow_attempts) are counted always, for KUnit.  Memory, slots and
 * max_cid are computed from the blocks themselves, exactly.
 *
 * Files.  This file is the library alone.  Besides kernel headers it
 * includes the public <pcpu_next/mmcid_pcpu.h>, and the private
 * internal/core.h and internal/mmcid_pcpu.h.  Test code lives elsewhere:
 * the stress, bench and debugfs file pcpu_next/mmcid in
 * torture/mmcid_pcpu_torture.c, KUnit in kunit/mmcid_pcpu_kunit.c and
 * kunit/failnth_kunit.c.
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
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/wait_bit.h>
#include <asm/local64.h>
#include <kunit/visibility.h>

#include <pcpu_next/mmcid_pcpu.h>
#include "internal/core.h"
#include "internal/mmcid_pcpu.h"

#define MMCID_BLK_BYTES	PAGE_SIZE	/* bound on a block's slot array */
/* Largest slot accepted: a page, at most 32 KiB (sizes are 16 bits). */
#define MMCID_MAX_SLOT	min_t(size_t, PAGE_SIZE, SZ_32K)
/* The largest unit (fast.stride) and size fit their 16 bits. */
static_assert(ALIGN(SZ_32K, SMP_CACHE_BYTES) <= U16_MAX);
#define MMCID_GROW_TRIES 3		/* allocation rounds per get */
#define MMCID_GROW_BACKOFF HZ		/* no block allocation after a failure */
#define MMCID_GRAIN	8		/* unit space is handed out in these */
/* mmcid_get() flag, beside the lockdep subclass: a counter's remote slot, no lock */
#define MMCID_GET_LOCKLESS	0x100U

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
 * Block 0's pointer is here; the pointers of blocks 1 .. nblk - 1 are in
 * @dir, allocated with the first of those blocks (an mm whose cids stay
 * in block 0 has none).  The map has one bit
 * per grain of the unit (mmcid_grain(): MMCID_GRAIN, or for units above
 * BITS_PER_LONG grains the power of two that brings them to at most
 * that many): an object bigger than a cache line has a set of its own
 * anyway (it is more than half of its unit, ALIGN(size,
 * SMP_CACHE_BYTES)), so one word is enough for any unit.  56 bytes: the
 * first set of an mm is embedded in its context.
 */
struct mmcid_units {
	struct mmcid_units *next;	/* the mm's next set, under ctx->lock */
	void *blk0;			/* block 0 */
	void **dir;			/* blocks 1 .. nblk - 1, or NULL */
	unsigned long grow_retry;	/* no block before this (jiffies), 0: any time */
	u32 unit;			/* bytes per cid, a multiple of SMP_CACHE_BYTES */
	u16 members;			/* objects with a range here */
	u16 live;			/* members whose cid slots are not folded */
	struct mmcid_geo geo;
	u16 nblk;			/* blocks that cover nr_cpu_ids cids */
	unsigned long map;		/* one bit per grain of a unit */
};

/*
 * Per-mm context: one mmu_notifier subscription shared by all objects of
 * the mm, and the unit sets their slots live in, the first one embedded.
 * Without lock debugging 128 bytes (one kmalloc-128 per mm); 160 on
 * PREEMPT_RT, whose spinlock_t is an rt_mutex.
 */
struct mmcid_mm {
	struct mmu_notifier mn;		/* unused if owned */
	/*
	 * Protects objs (and every object's next), dead, the set list
	 * (set0.next ...), and in every unit set the map, unit, geo, dir
	 * pointer's freeing, the members and live counts and the freeing of
	 * its blocks.  Process context.
	 */
	spinlock_t lock;
	bool owned;			/* mmcid_mm_create(): no mmu_notifier */
	bool dead;			/* ->release began: the mm is gone */
	struct mmcid_pcpu *objs;	/* objects not yet torn down, by ->next */
	struct mmcid_units set0;	/* first unit set; more at set0.next */
};

/*
 * A storage object.  The first line holds what the inline counter add
 * reads (struct mmcid_pcpu_fast: the mm, block 0's slot and ready word,
 * the unit size) and the state bytes dead and folded; get's path for a
 * cid above block 0 reads units (the set's geometry and dir) and ready.
 * Packed without holes: without lock debugging the header is 96 bytes,
 * so that an object with a 32-byte remote slot (four counters) is one
 * kmalloc-128.
 */
struct mmcid_pcpu {
	struct mmcid_pcpu_fast fast;	/* must stay first: see the header */
	struct mmcid_units *units;	/* our unit set */
	struct mmcid_mm *ctx;
	const struct mmcid_pcpu_ops *ops;
	void *arg;
	/*
	 * Ready words of blocks 1 .. nblk - 1 (block 0's is fast.ready0),
	 * allocated with our first slot above block 0, or NULL: bit i of
	 * block k's word set once slot i of block k is initialised.
	 */
	unsigned long *ready;
	struct mmcid_pcpu *next;	/* on ctx->objs, under ctx->lock */
	/* Protects the remote slot, block publication, dead; see above. */
	raw_spinlock_t lock;
	refcount_t ref;			/* creator + a running ->release */
	atomic_t grow_attempts;		/* block allocations tried (statistic) */
	u16 off;			/* our bytes in every unit */
	u16 size;			/* slot payload */
	/* Then the remote slot, @size bytes: see mmcid_remote_off(). */
};

static_assert(offsetof(struct mmcid_pcpu, fast) == 0);
/*
 * The packing above, where locks carry no debug state.  On PREEMPT_RT
 * the context's spinlock_t is an rt_mutex (32 bytes): 160 bytes there.
 */
static_assert(IS_ENABLED(CONFIG_DEBUG_SPINLOCK) ||
	      IS_ENABLED(CONFIG_DEBUG_LOCK_ALLOC) ||
	      (sizeof(struct mmcid_pcpu) <= 96 &&
	       (IS_ENABLED(CONFIG_PREEMPT_RT) ||
		sizeof(struct mmcid_mm) <= 128)));
static_assert(sizeof(struct mmcid_units) <= 56);

/* The word that holds block k's pointer, or NULL if dir is not there yet. */
static __always_inline void **mmcid_blkp(struct mmcid_units *u, unsigned int k)
{
	void **dir;

	if (!k)
		return &u->blk0;
	/* Pairs with the release in mmcid_grow(): a zeroed array. */
	dir = smp_load_acquire(&u->dir);
	return dir ? &dir[k - 1] : NULL;
}

/* Block k's slot array, or NULL. */
static __always_inline void *mmcid_blk(struct mmcid_units *u, unsigned int k)
{
	void **p = mmcid_blkp(u, k);

	/* Pairs with the release in mmcid_grow(). */
	return p ? smp_load_acquire(p) : NULL;
}

/*
 * The ready word of block k, or NULL while we have no words above block
 * 0 (then no slot of ours above block 0 is initialised): block 0's is on
 * the first line, for the add.
 */
static __always_inline unsigned long *mmcid_ready(struct mmcid_pcpu *s,
						  unsigned int k)
{
	unsigned long *r;

	if (!k)
		return &s->fast.ready0;
	/* Pairs with the release in mmcid_grow(): a zeroed array. */
	r = smp_load_acquire(&s->ready);
	return r ? &r[k - 1] : NULL;
}

/* The value of block k's ready word (0 if there is none). */
static __always_inline unsigned long mmcid_ready_word(struct mmcid_pcpu *s,
						      unsigned int k)
{
	unsigned long *r = mmcid_ready(s, k);

	return r ? READ_ONCE(*r) : 0;
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

static u32 mmcid_align_of(size_t size);

/*
 * Where the remote slot of an object with @size-byte slots starts: after
 * the header, aligned as a cid slot of that size is (mmcid_align_of()).
 */
static size_t mmcid_remote_off(size_t size)
{
	return ALIGN(sizeof(struct mmcid_pcpu), mmcid_align_of(size));
}

/*
 * Bytes of an object's header with a remote slot of @size bytes.  Above
 * 8 bytes of alignment, a power of two: kmalloc() aligns only those
 * naturally (and vmalloc() to a page).
 */
static size_t mmcid_hdr_size(size_t size)
{
	size_t bytes = mmcid_remote_off(size) + ALIGN(size, sizeof(long));

	return mmcid_align_of(size) > sizeof(u64) ? roundup_pow_of_two(bytes) : bytes;
}

/* Blocks needed for nr_cpu_ids cids with @unit-byte units. */
static unsigned int mmcid_nblk(unsigned int unit)
{
	struct mmcid_geo g;

	mmcid_geo_init(&g, unit);
	return mmcid_blk_of(&g, nr_cpu_ids - 1) + 1;
}

/* Bytes of the words (dir, ready) for blocks 1 .. @nblk - 1. */
static size_t mmcid_words_size(unsigned int nblk)
{
	return (nblk - 1) * sizeof(long);
}

/* What an allocation of @bytes at @p occupies: its bucket, or its pages. */
static size_t mmcid_alloc_bytes(const void *p, size_t bytes)
{
	return is_vmalloc_addr(p) ? PAGE_ALIGN(bytes) : kmalloc_size_roundup(bytes);
}

/*
 * Bytes of a unit's map grain: MMCID_GRAIN up to units of 64 grains, else
 * the power of two that brings a unit to at most BITS_PER_LONG grains
 * (rounded up, whatever SMP_CACHE_BYTES is), so that one word of map
 * covers any unit.  Units above 64 grains hold one object each (their
 * objects are bigger than half of them), so coarse grains lose nothing.
 */
static u32 mmcid_grain(u32 unit)
{
	if (unit <= BITS_PER_LONG * MMCID_GRAIN)
		return MMCID_GRAIN;
	return roundup_pow_of_two(DIV_ROUND_UP(unit, BITS_PER_LONG));
}

/* Grains of a unit (the last one may be partial): at most BITS_PER_LONG. */
static unsigned int mmcid_nbits(u32 unit)
{
	return DIV_ROUND_UP(unit, mmcid_grain(unit));
}

static void *mmcid_remote(struct mmcid_pcpu *s)
{
	return (void *)s + mmcid_remote_off(s->size);
}

/* ---- misuse ---------------------------------------------------------- */

/*
 * A misuse the library survives (it leaks rather than frees memory still
 * in use) WARNs once; KUnit announces its own (struct pn_misuse_budget).
 */
static struct pn_misuse_budget mmcid_misuse_budget;

#if IS_ENABLED(CONFIG_KUNIT)
/**
 * mmcid_pcpu_expect_misuse() - announce the next misuses (KUnit)
 * @n: how many are about to be made; 0 withdraws what is left
 *
 * Context: Any context.
 * Return: The budget left from the previous call.
 */
VISIBLE_IF_KUNIT unsigned int mmcid_pcpu_expect_misuse(unsigned int n)
{
	return pn_misuse_expect(&mmcid_misuse_budget, n);
}
EXPORT_SYMBOL_IF_KUNIT(mmcid_pcpu_expect_misuse);
#endif

static void mmcid_misuse(const char *what)
{
	if (!pn_misuse_expected(&mmcid_misuse_budget))
		WARN_ONCE(1, "mmcid_pcpu: %s\n", what);
}

/* ---- per-mm context ------------------------------------------------------ */

static void mmcid_teardown(struct mmcid_pcpu *s);

static struct mmcid_mm *mmcid_ctx_alloc(gfp_t gfp)
{
	struct mmcid_mm *ctx = kzalloc(sizeof(*ctx), gfp);

	if (!ctx)
		return NULL;
	spin_lock_init(&ctx->lock);
	return ctx;
}

/*
 * The context's last reference is gone: nothing of it may be left.  If
 * an object still uses its units, the context is kept (leaked) for it,
 * as kmem_cache_destroy() keeps a cache that has objects.
 */
static void mmcid_ctx_free(struct mmcid_mm *ctx)
{
	if (ctx->objs || ctx->set0.members || ctx->set0.next ||
	    ctx->set0.blk0 || ctx->set0.dir) {
		mmcid_misuse("context freed with objects left; kept");
		return;
	}
	kfree(ctx);
}

/*
 * mmu_notifier contexts whose free callback has not run yet: module
 * unload waits for them (pn_mmcid_exit()).
 */
static atomic_t mmcid_mn_live = ATOMIC_INIT(0);

static struct mmu_notifier *mmcid_mm_alloc(struct mm_struct *mm)
{
	struct mmcid_mm *ctx = mmcid_ctx_alloc(GFP_KERNEL);

	if (!ctx)
		return ERR_PTR(-ENOMEM);
	atomic_inc(&mmcid_mn_live);
	return &ctx->mn;
}

static void mmcid_mm_free(struct mmu_notifier *mn)
{
	mmcid_ctx_free(container_of(mn, struct mmcid_mm, mn));
	if (atomic_dec_and_test(&mmcid_mn_live))
		wake_up_var(&mmcid_mn_live);
}

/* Take @s off ctx->objs if it is there; ctx->lock held. */
static void mmcid_objs_del(struct mmcid_mm *ctx, struct mmcid_pcpu *s)
{
	struct mmcid_pcpu **pp;

	lockdep_assert_held(&ctx->lock);
	for (pp = &ctx->objs; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			s->next = NULL;
			return;
		}
	}
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
	WRITE_ONCE(ctx->dead, true);
	spin_unlock(&ctx->lock);
	for (;;) {
		spin_lock(&ctx->lock);
		s = ctx->objs;
		if (s) {
			ctx->objs = s->next;
			s->next = NULL;
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
 * mmcid_units_unpin()), or @u is a copy of a set nobody can reach (see
 * mmcid_units_drop()).  The dir array stays (it goes with the set).  No
 * lock held: up to nblk kfree()s, rescheduling.
 */
static void mmcid_units_free_blocks(struct mmcid_units *u)
{
	unsigned int k;

	for (k = 0; k < u->nblk; k++) {
		void **p = mmcid_blkp(u, k);
		void *slots;

		if (!p)		/* no dir: no block above block 0 */
			break;
		slots = *p;
		if (!slots)
			continue;
		/* Lockless readers (memory, slots) look at the pointer only. */
		WRITE_ONCE(*p, NULL);
		kfree(slots);
		cond_resched();
	}
}

/*
 * The last member of @u left (members is 0); ctx->lock held.  Copy what
 * is to be freed to @dying, and make @u unreachable: the embedded set0
 * is emptied for reuse (its block pointers cleared here, so that a new
 * member never sees the old blocks), any other set is unlinked.  The
 * caller frees the rest with mmcid_units_destroy() after unlocking.
 */
static void mmcid_units_drop(struct mmcid_mm *ctx, struct mmcid_units *u,
			     struct mmcid_units *dying)
{
	struct mmcid_units *p;

	lockdep_assert_held(&ctx->lock);
	*dying = *u;
	if (u == &ctx->set0) {
		WRITE_ONCE(u->blk0, NULL);
		WRITE_ONCE(u->dir, NULL);
		u->map = 0;
		u->grow_retry = 0;
		return;
	}
	for (p = &ctx->set0; p->next != u; p = p->next)
		;
	p->next = u->next;
}

/* Free what mmcid_units_drop() detached; no lock held, may reschedule. */
static void mmcid_units_destroy(struct mmcid_mm *ctx, struct mmcid_units *u,
				struct mmcid_units *dying)
{
	mmcid_units_free_blocks(dying);
	kvfree(dying->dir);
	if (u != &ctx->set0)
		kfree(u);
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

/* A unit set, new or emptied (set0), prepared for @unit-byte units. */
static void mmcid_units_init(struct mmcid_units *u, u32 unit)
{
	u->unit = unit;
	mmcid_geo_init(&u->geo, unit);
	u->nblk = mmcid_nblk(unit);
	u->map = 0;
	u->grow_retry = 0;
}

/* A new unit set for @unit-byte units, not linked yet. */
static struct mmcid_units *mmcid_units_alloc(u32 unit)
{
	struct mmcid_units *u = kzalloc(sizeof(*u), GFP_KERNEL_ACCOUNT);

	if (u)
		mmcid_units_init(u, unit);
	return u;
}

/*
 * Drop the pin taken to free a set's blocks outside ctx->lock; the last
 * reference (pin or member) frees the set.
 */
static void mmcid_units_unpin(struct mmcid_mm *ctx, struct mmcid_units *u)
{
	struct mmcid_units dying;
	bool gone;

	spin_lock(&ctx->lock);
	gone = !--u->members;
	if (gone)
		mmcid_units_drop(ctx, u, &dying);
	spin_unlock(&ctx->lock);
	if (gone)
		mmcid_units_destroy(ctx, u, &dying);
}

/*
 * Give @size bytes of every unit to a new object: first fit in the unit
 * sets of @ctx whose unit is the one of @size (mmcid_unit_of(): objects
 * of up to a cache line share 64-byte units, a bigger object never lands
 * in a set of bigger units than its own), else in the embedded set0 if
 * it is empty, else in a new set.  Ranges are aligned as
 * mmcid_align_of() says, in grains of the unit (mmcid_grain()).  The new
 * member counts as live (its slots are not folded).
 *
 * Context: Process context, may sleep; @ctx is alive (not dead).
 * Return: 0 with *@up and *@offp set, or -ENOMEM.
 */
static int mmcid_units_join(struct mmcid_mm *ctx, u32 size,
			    struct mmcid_units **up, u32 *offp)
{
	u32 unit = mmcid_unit_of(size), grain = mmcid_grain(unit);
	unsigned long align = max_t(u32, mmcid_align_of(size) / grain, 1) - 1;
	unsigned int need = DIV_ROUND_UP(size, grain);
	unsigned int nbits = mmcid_nbits(unit), start;
	struct mmcid_units *u, *last, *fresh = NULL;

	for (;;) {
		spin_lock(&ctx->lock);
		for (u = &ctx->set0; u; u = u->next) {
			last = u;
			if (!u->members) {	/* set0, empty */
				mmcid_units_init(u, unit);
				start = 0;
				goto found;
			}
			if (u->unit != unit)
				continue;
			start = bitmap_find_next_zero_area(&u->map, nbits, 0,
							   need, align);
			if (start < nbits)
				goto found;
		}
		if (fresh) {
			u = fresh;
			fresh = NULL;
			last->next = u;
			start = 0;
			goto found;
		}
		spin_unlock(&ctx->lock);

		fresh = mmcid_units_alloc(unit);
		if (!fresh)
			return -ENOMEM;
	}
found:
	bitmap_set(&u->map, start, need);
	u->members++;
	u->live++;
	spin_unlock(&ctx->lock);
	kfree(fresh);
	*up = u;
	*offp = start * grain;
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
	u32 grain = mmcid_grain(u->unit);
	struct mmcid_units dying;
	bool gone, pin = false;

	spin_lock(&ctx->lock);
	bitmap_clear(&u->map, off / grain, DIV_ROUND_UP(size, grain));
	if (live)
		u->live--;
	gone = !--u->members;
	if (gone) {
		mmcid_units_drop(ctx, u, &dying);
	} else if (live && ctx->dead && !u->live) {
		u->members++;		/* pinned while its blocks are freed */
		pin = true;
	}
	spin_unlock(&ctx->lock);
	if (gone) {
		mmcid_units_destroy(ctx, u, &dying);
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
	s->fast.folded = true;
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
	for_each_set_bit(i, &ready, mmcid_blk_len(&s->units->geo, k))
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
	struct mmcid_units *u = s->units;
	unsigned int k, i;

	lockdep_assert_held(&s->lock);
	for (k = 0; k < u->nblk; k++) {
		unsigned int first = mmcid_blk_first(&u->geo, k);
		unsigned long *r = mmcid_ready(s, k), ready;
		void *slots;

		if (!r)		/* no ready words above block 0 yet */
			break;
		/* Pairs with test_and_set_bit() after the slot's init. */
		ready = smp_load_acquire(r);
		if (!ready)
			continue;
		slots = mmcid_blk(u, k);
		for_each_set_bit(i, &ready, mmcid_blk_len(&u->geo, k))
			fn(s, slots + i * s->fast.stride + s->off, first + i, data);
	}
}

/*
 * The mm is gone.  Set fast.dead (nothing is published through @s any
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
	struct mmcid_units *u = s->units;
	unsigned long flags, ready, *r;
	unsigned int k, i;
	void *slots;
	bool first;

	raw_spin_lock_irqsave(&s->lock, flags);
	first = !s->fast.dead;
	WRITE_ONCE(s->fast.dead, true);
	raw_spin_unlock_irqrestore(&s->lock, flags);
	if (!first)
		return;

	/* Dead: no ready words are published any more, none come later. */
	for (k = 0; k < u->nblk && (r = mmcid_ready(s, k)); k++) {
		raw_spin_lock_irqsave(&s->lock, flags);
		ready = *r;
		slots = mmcid_blk(u, k);
		if (ready) {
			if (fold) {
				for_each_set_bit(i, &ready,
						 mmcid_blk_len(&u->geo, k))
					fold(mmcid_remote(s),
					     slots + i * s->fast.stride + s->off,
					     s->arg);
			}
			WRITE_ONCE(*r, 0);
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
	struct mmcid_units *u = s->units;
	unsigned long *r;
	unsigned int k;

	/* Not folded: the blocks stay while we count as live. */
	for (k = 0; !s->fast.folded && k < u->nblk; k++) {
		unsigned long ready;

		r = mmcid_ready(s, k);
		if (!r)		/* no ready words above block 0 */
			break;
		ready = *r;
		if (!ready)
			continue;
		*r = 0;
		mmcid_fini_block(s, k, mmcid_blk(u, k), ready);
		cond_resched();
	}
	if (s->ops && s->ops->fini)
		s->ops->fini(mmcid_remote(s), s->arg);
	mmcid_units_leave(s->ctx, u, s->off, s->size, !s->fast.folded);
	mmcid_ctx_put(s->ctx);
	kvfree(s->ready);
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
	s = kvzalloc(mmcid_hdr_size(size), GFP_KERNEL_ACCOUNT);
	if (!s) {
		mmcid_units_leave(ctx, u, off, size, true);
		return ERR_PTR(-ENOMEM);
	}
	s->off = off;
	s->fast.stride = u->unit;
	s->fast.mm = mm;
	s->fast.nr0 = mmcid_blk_len(&u->geo, 0);
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

	if (ops && ops->init)
		ops->init(mmcid_remote(s), arg);
	spin_lock(&ctx->lock);
	s->next = ctx->objs;
	ctx->objs = s;
	spin_unlock(&ctx->lock);
	return s;
}

/**
 * __mmcid_pcpu_create() - create storage for an mm, indexed by mm_cid
 * @mm: the mm; the caller holds mm_users (mmget() or it is current->mm)
 * @size: bytes per slot, 1..PAGE_SIZE (at most 32 KiB)
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
 * (GFP_KERNEL_ACCOUNT); a block, and above block 0 the set's dir and the
 * object's ready words, are allocated with the @gfp of the access (or
 * mmcid_pcpu_prepare()) that first needs them (add __GFP_ACCOUNT there
 * to charge them too; a block is shared by the set's objects and
 * charged once).
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
	mmcid_objs_del(s->ctx, s);
	spin_unlock(&s->ctx->lock);
	/* Off the list: ->release cannot take a new reference. */
	wait_var_event(&s->ref, refcount_read(&s->ref) == 1);
	/* Pairs with the release ordering of refcount_dec() in ->release. */
	smp_acquire__after_ctrl_dep();
	mmcid_free(s);
}
EXPORT_SYMBOL_GPL(mmcid_pcpu_destroy);

static int mmcid_grow(struct mmcid_pcpu *s, unsigned int k, gfp_t gfp,
		      bool asked);

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
 * A context that still has objects is a misuse: it WARNs once and frees
 * nothing, so the objects stay valid; destroy it again once they are gone.
 *
 * Context: Any context; only kfree().
 */
void mmcid_mm_destroy(struct mmcid_mm *ctx)
{
	if (!ctx)
		return;
	WARN_ON_ONCE(!ctx->owned);
	mmcid_ctx_free(ctx);
}
EXPORT_SYMBOL_GPL(mmcid_mm_destroy);

/**
 * __mmcid_pcpu_create_in() - mmcid_pcpu_create() in an owned context
 * @ctx: from mmcid_mm_create(), not yet released
 * @mm: the mm the context belongs to
 * @size: bytes per slot, 1..PAGE_SIZE (at most 32 KiB)
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
 * unit set, where missing, and above block 0 the set's dir and @s's ready
 * words, so that threads with those cids find their slot even when they
 * access it from atomic context, where anything missing sends them to
 * the remote slot.  The blocks and the dir are shared by every object of
 * the set, the ready words are @s's own: for the cids of block 0 one
 * prepare serves the whole set, above them every object that is used
 * from atomic context needs its own (one counter array needs one).
 * What exists costs a load or two.  The allocations are charged as
 * @gfp says (__GFP_ACCOUNT: to the caller's memory cgroup) and made with
 * @gfp as given: a failure here starts no backoff of the accesses'
 * allocations.
 *
 * Context: Process context, may sleep if @gfp allows.
 * Return: 0, -ENOMEM (the accesses still work, through the remote slot),
 * or -ENOENT if @s's mm was already torn down.
 */
int mmcid_pcpu_prepare(struct mmcid_pcpu *s, unsigned int max_cid, gfp_t gfp)
{
	struct mmcid_units *u = s->units;
	unsigned int k, last;
	int ret;

	might_sleep_if(gfpflags_allow_blocking(gfp));
	if (READ_ONCE(s->fast.dead))
		return -ENOENT;
	last = mmcid_blk_of(&u->geo, min(max_cid, nr_cpu_ids - 1));
	for (k = 0; k <= last && k < u->nblk; k++) {
		if (mmcid_blk(u, k) && mmcid_ready(s, k))
			continue;
		ret = mmcid_grow(s, k, gfp, true);
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
 * block is about to be allocated (mmcid_grow()'s caller).  On other
 * kernels might_sleep() is a voluntary preemption point, which would make
 * the fast path of a blocking caller cost more than the add itself.
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
	unsigned long retry = READ_ONCE(s->units->grow_retry);

	if (READ_ONCE(s->fast.dead))
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
	/*
	 * Preemptible is not "may sleep": an RCU read side (on PREEMPT_RT
	 * also a spinlock_t, which takes one) forbids it too.
	 */
	if (rcu_preempt_depth())
		return false;
	return true;
}

/*
 * Make block k usable for @s, with preemption enabled by us: allocate
 * and publish what is missing of the set's dir (k >= 1), our ready words
 * (k >= 1) and the block.  0 if all of it exists afterwards, else
 * -errno.  For an access (!@asked) the blocks are an optimisation with a
 * fallback: no reserves, no OOM killer, no warning, and a failure starts
 * the set's backoff.  mmcid_pcpu_prepare() (@asked) allocates with its
 * caller's @gfp as given, as fork does for the memory an mm needs: near
 * a memcg limit it reclaims rather than fails.
 */
static int mmcid_grow(struct mmcid_pcpu *s, unsigned int k, gfp_t gfp,
		      bool asked)
{
	struct mmcid_units *u = s->units;
	unsigned long flags, *ready = NULL;
	void **dir = NULL, *slots = NULL;
	unsigned long retry;
	gfp_t agfp = gfp;
	int ret = 0;

	atomic_inc(&s->grow_attempts);
	if (!asked) {
		gfp &= ~(__GFP_HIGH | __GFP_NOFAIL);
		gfp |= __GFP_NOWARN | __GFP_NORETRY;
		/*
		 * Up to one word per block (page-sized units): kvcalloc(),
		 * which takes __GFP_RETRY_MAYFAIL for "no OOM killer"
		 * instead of __GFP_NORETRY (a non-blocking @gfp makes it
		 * kmalloc() only).
		 */
		agfp = (gfp & ~__GFP_NORETRY) | __GFP_RETRY_MAYFAIL;
	}
	if (pn_fault_hit(PN_FAULT_MMCID))
		goto fail;
	if (k && !READ_ONCE(u->dir)) {
		dir = kvcalloc(u->nblk - 1, sizeof(*dir), agfp);
		if (!dir)
			goto fail;
	}
	if (k && !READ_ONCE(s->ready)) {
		ready = kvcalloc(u->nblk - 1, sizeof(*ready), agfp);
		if (!ready)
			goto fail;
	}
	/* At most MMCID_BLK_BYTES; slots are initialised on first use. */
	if (!mmcid_blk(u, k)) {
		slots = kmalloc_array(mmcid_blk_len(&u->geo, k), s->fast.stride,
				      gfp);
		if (!slots)
			goto fail;
	}

	/*
	 * Publish only while @s is not dead: teardown sets dead under this
	 * lock before it folds, and the set's blocks are freed only after
	 * every live member was folded, so nothing is published into a set
	 * whose blocks are being freed.  Another member of the set may
	 * publish the same dir or block at the same time (under its own
	 * lock), and another thread of the mm our ready words: each cmpxchg
	 * picks one, the other allocation is freed.  Our ready word for the
	 * block is zero; the releases pair with the acquires in get.
	 */
	raw_spin_lock_irqsave(&s->lock, flags);
	if (s->fast.dead) {
		ret = -ENOENT;
	} else {
		if (dir && !cmpxchg_release(&u->dir, NULL, dir))
			dir = NULL;
		if (ready && !cmpxchg_release(&s->ready, NULL, ready))
			ready = NULL;
		if (slots && !cmpxchg_release(mmcid_blkp(u, k), NULL, slots))
			slots = NULL;
	}
	raw_spin_unlock_irqrestore(&s->lock, flags);
	kvfree(dir);
	kvfree(ready);
	kfree(slots);
	if (!ret && READ_ONCE(u->grow_retry))
		WRITE_ONCE(u->grow_retry, 0);
	return ret;

fail:
	kvfree(dir);
	kvfree(ready);
	if (!asked) {
		retry = jiffies + MMCID_GROW_BACKOFF;
		WRITE_ONCE(u->grow_retry, retry ?: 1);	/* 0 means none */
	}
	return -ENOMEM;
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
 * A negative cid, or one at or above nr_cpu_ids, means the remote slot.
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
		 * thread without a cid reads a negative one: -1 on 6.12,
		 * MM_CID_UNSET (INT_MIN) on 7.x.
		 */
		cid = pn_task_mm_cid(current);
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
 * The hot path: the caller's cid slot if it is initialised, else NULL
 * (the caller then takes __mmcid_pcpu_get()).  Block 0 (cids below
 * fast.nr0) is reached from the first line alone, as the inline add
 * does; a higher cid reads the set's geometry and dir and our ready
 * words.  A ready bit implies an allocated block (see the invariants):
 * the bit is read first, with acquire ordering, then the block pointer
 * published before it.  Preemption is off and stays off while the slot
 * is used.
 */
static __always_inline void *mmcid_fast_slot(struct mmcid_pcpu *s,
					     enum mmcid_src src, int cid,
					     int *used)
{
	struct mmcid_units *u;
	unsigned long *r;
	unsigned int k, bit;
	int c;

	c = mmcid_pick(s, src, cid);
	if (unlikely(c < 0))
		return NULL;
	if (c < s->fast.nr0) {
		if (unlikely(!test_bit_acquire(c, &s->fast.ready0)))
			return NULL;
		*used = c;
		return READ_ONCE(s->fast.slot0) + c * s->fast.stride;
	}
	u = s->units;
	k = mmcid_blk_of(&u->geo, c);
	r = mmcid_ready(s, k);
	bit = c - mmcid_blk_first(&u->geo, k);
	if (unlikely(!r || !test_bit_acquire(bit, r)))
		return NULL;
	*used = c;
	return mmcid_blk(u, k) + bit * s->fast.stride + s->off;
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
	struct mmcid_units *u = s->units;
	unsigned int k, bit, tries = 0;
	void *slots, *slot;
	unsigned long *r;
	int c;

	mmcid_might_sleep(gfp);
again:
	preempt_disable();
	slot = mmcid_fast_slot(s, src, cid, &c);
	if (likely(slot)) {
		ref->cpu = smp_processor_id();
		ref->cid = c;
		ref->slot = slot;
		return slot;
	}
	c = mmcid_pick(s, src, cid);
	if (c < 0) {
		preempt_enable();
		goto remote;
	}
	k = mmcid_blk_of(&u->geo, c);
	bit = c - mmcid_blk_first(&u->geo, k);
	slots = mmcid_blk(u, k);
	r = mmcid_ready(s, k);
	if (likely(slots && r)) {
		slot = slots + bit * s->fast.stride + s->off;
		/*
		 * A folded object never initialises a cid slot again: the
		 * blocks it sees belong to live members and go when they
		 * are folded.
		 */
		if (unlikely(READ_ONCE(s->fast.dead))) {
			preempt_enable();
			goto remote;
		}
		/*
		 * Block 0's slots are reached from fast.slot0 by the fast
		 * paths; set it before our ready bit (the fully ordered
		 * test_and_set_bit() in mmcid_init_slot()).  Every owner
		 * stores the same value.
		 */
		if (!k)
			WRITE_ONCE(s->fast.slot0, slots + s->off);
		mmcid_init_slot(s, slot, r, bit);
		ref->cpu = smp_processor_id();
		ref->cid = c;
		ref->slot = slot;
		return slot;
	}
	/*
	 * No block, dir or ready words: allocate only outside our atomic
	 * section, then start over, because the cid may have changed while
	 * we were preemptible.
	 */
	preempt_enable();
	if (tries++ < MMCID_GROW_TRIES && mmcid_may_grow(s, gfp)) {
		might_sleep_if(gfpflags_allow_blocking(gfp));
		if (!mmcid_grow(s, k, gfp, false))
			goto again;
	}

remote:
	ref->cpu = raw_smp_processor_id();
	ref->cid = MMCID_PCPU_REMOTE;
	ref->slot = mmcid_remote(s);
	/* A counter's remote slot takes atomic adds, no lock. */
	if (subclass & MMCID_GET_LOCKLESS)
		return ref->slot;
	/* A raw spinlock an NMI could find held by the code it interrupted. */
	WARN_ON_ONCE(in_nmi());
	raw_spin_lock_irqsave_nested(&s->lock, ref->flags, subclass);
	/* Held until mmcid_pcpu_put(); tell sparse it leaves with the caller. */
	__release(&s->lock);
	ref->cpu = smp_processor_id();
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
					     int cid, unsigned int flags)
{
	return mmcid_get(s, ref, gfp, src, cid, flags);
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
 * from interrupts.  A counter array's remote slot (mmcid_counter_storage())
 * also takes lockless atomic adds: write it only with atomic64_t
 * operations.
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
	unsigned long *r = READ_ONCE(s->ready);
	size_t bytes = mmcid_alloc_bytes(s, mmcid_hdr_size(s->size));

	if (r)	/* allocated with our first slot above block 0 */
		bytes += mmcid_alloc_bytes(r, mmcid_words_size(s->units->nblk));
	return bytes;
}

/**
 * mmcid_pcpu_memory() - bytes the storage occupies
 * @s: the storage
 *
 * The header with the remote slot (its kmalloc bucket, or the pages if it
 * was vmalloc()ed), its ready words above block 0 if it has them, and
 * the object's share of its unit set: its slot size
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
 * a vmalloc()ed array): the per-mm context with the first unit set,
 * every further unit set's header, dir and allocated blocks, and the
 * header and ready words of every object not yet torn down
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
	void **dir;

	spin_lock(&ctx->lock);
	for (u = &ctx->set0; u; u = u->next) {
		if (u != &ctx->set0)	/* set0 is part of the context */
			bytes += kmalloc_size_roundup(sizeof(*u));
		/* Freed only by the last member, under this lock. */
		dir = READ_ONCE(u->dir);
		if (dir)
			bytes += mmcid_alloc_bytes(dir, mmcid_words_size(u->nblk));
		for (k = 0; u->members && k < u->nblk; k++) {
			void **p = k ? (dir ? &dir[k - 1] : NULL) : &u->blk0;

			if (p && READ_ONCE(*p))
				blocks += kmalloc_size_roundup(mmcid_blk_len(&u->geo, k) *
							       u->unit);
		}
	}
	for (o = ctx->objs; o; o = o->next)
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
	struct mmcid_units *u = s->units;
	unsigned int k, n = 0;

	/*
	 * Lockless: block pointers only, never dereferenced; the dir array
	 * goes only with the set, when its last member (us) leaves.
	 */
	for (k = 0; k < u->nblk; k++) {
		void **p = mmcid_blkp(u, k);

		if (!p)
			break;
		if (READ_ONCE(*p))
			n += mmcid_blk_len(&u->geo, k);
	}
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
	struct mmcid_units *u = s->units;
	unsigned int k = u->nblk;

	/*
	 * Lockless, from the last block down, ready words only (no slot is
	 * touched).  Teardown clears a block's ready word before the block
	 * is freed, and publication needs a zero ready word, so a bit seen
	 * here belongs to a slot that was initialised.
	 */
	while (k--) {
		unsigned long ready = mmcid_ready_word(s, k);

		if (ready)
			return mmcid_blk_first(&u->geo, k) + __fls(ready);
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
 * Return: true once the mm's teardown began: it marks the context first,
 * then folds each object's cid slots into its remote slot and frees them
 * (block by block; sums are exact throughout).
 */
bool mmcid_pcpu_mm_gone(struct mmcid_pcpu *s)
{
	unsigned long flags;
	bool dead;

	raw_spin_lock_irqsave(&s->lock, flags);
	dead = s->fast.dead;
	raw_spin_unlock_irqrestore(&s->lock, flags);
	/* Written under ctx->lock, read here without it: a snapshot. */
	return dead || READ_ONCE(s->ctx->dead);
}
EXPORT_SYMBOL_GPL(mmcid_pcpu_mm_gone);

/* ---- KUnit-only accessors (internal/mmcid_pcpu.h) ------------------------ */

#if IS_ENABLED(CONFIG_KUNIT)
/**
 * mmcid_pcpu_grow_attempts() - block allocations tried so far (KUnit only)
 * @s: the storage
 * @retry: set to the jiffies before which no block is tried after a
 *	   failure, 0 if @s's unit set is not backing off (the backoff is
 *	   the set's: every object of it backs off together)
 *
 * Context: Any context.
 * Return: how many block allocations mmcid_grow() attempted.
 */
VISIBLE_IF_KUNIT unsigned int mmcid_pcpu_grow_attempts(struct mmcid_pcpu *s,
						       unsigned long *retry)
{
	*retry = READ_ONCE(s->units->grow_retry);
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

/**
 * mmcid_pcpu_map_grain() - a unit set's map grain for a unit (KUnit only)
 * @unit: unit bytes, any multiple of 8 up to 32 KiB (whatever
 *	  SMP_CACHE_BYTES the test pretends)
 * @nbits: set to the grains of such a unit, the map bits it uses
 *
 * Context: Any context.
 * Return: mmcid_grain(@unit).
 */
VISIBLE_IF_KUNIT u32 mmcid_pcpu_map_grain(u32 unit, unsigned int *nbits)
{
	*nbits = mmcid_nbits(unit);
	return mmcid_grain(unit);
}
EXPORT_SYMBOL_IF_KUNIT(mmcid_pcpu_map_grain);
#endif /* CONFIG_KUNIT */

/* ---- counter ------------------------------------------------------------------ */

/*
 * A counter array is a storage object whose slots are nr local64_t each,
 * counter i at byte 8 * i of the object's range in every unit (and of its
 * remote slot): an array of four counters is one object, one header and
 * one 32-byte range of each cid's unit.  struct mmcid_counter is never
 * defined: it is the storage object under a distinct type, so that
 * counter and raw storage are not mixed up.  The fold callback gets nr
 * through its arg.
 */
static struct mmcid_pcpu *ctr_store(struct mmcid_counter *c)
{
	return (struct mmcid_pcpu *)c;
}

/* Counters in the array: the slot holds one local64_t each. */
static unsigned int ctr_nr(struct mmcid_counter *c)
{
	return ctr_store(c)->fast.nr;
}

/*
 * The remote slot of a counter array: nr atomic64_t, which other CPUs add
 * to without the lock.  Its words are read with local64_read() by the
 * generic walk, which is the same load.
 */
static atomic64_t *ctr_remote(struct mmcid_pcpu *s)
{
	return mmcid_remote(s);
}

static void mmcid_counter_fold(void *remote, const void *slot, void *arg)
{
	unsigned long i, nr = (unsigned long)arg;

	for (i = 0; i < nr; i++)
		atomic64_add(local64_read((local64_t *)slot + i),
			     (atomic64_t *)remote + i);
}

/*
 * Move cid slot @v of counter @idx into the remote slot.  Under the
 * storage's lock, so that an exact sum, which walks the slots under it,
 * sees the amount once: in the slot or in the remote slot.
 */
static void mmcid_counter_fold_slot(struct mmcid_pcpu *s, local64_t *v,
				    unsigned int idx, unsigned int subclass)
{
	unsigned long flags;

	/*
	 * An NMI may have interrupted this CPU inside s->lock: leave the
	 * amount in the slot, the next add outside NMI folds it.
	 */
	if (in_nmi())
		return;
	raw_spin_lock_irqsave_nested(&s->lock, flags, subclass);
	atomic64_add(local64_xchg(v, 0), ctr_remote(s) + idx);
	raw_spin_unlock_irqrestore(&s->lock, flags);
}

/**
 * __mmcid_counter_fold() - fold a cid slot that reached the batch
 * @f: the counter array's fast part
 * @v: the slot of counter @idx of the caller's cid
 * @idx: the counter
 * @subclass: lockdep subclass of the storage's lock
 *
 * Not for callers: the inline add calls it.
 *
 * Context: Preemption disabled, the caller owns the cid; any context but
 * NMI.
 */
void __mmcid_counter_fold(const struct mmcid_pcpu_fast *f, local64_t *v,
			  unsigned int idx, unsigned int subclass)
{
	mmcid_counter_fold_slot((struct mmcid_pcpu *)f, v, idx, subclass);
}
EXPORT_SYMBOL_GPL(__mmcid_counter_fold);

static const struct mmcid_pcpu_ops mmcid_counter_ops = {
	.fold = mmcid_counter_fold,
};

/* 1 .. MMCID_MAX_SLOT / 8 counters: the bytes of the slot, or 0. */
static size_t mmcid_counter_bytes(unsigned int nr)
{
	if (!nr || nr > MMCID_MAX_SLOT / sizeof(local64_t))
		return 0;
	return nr * sizeof(local64_t);
}

/**
 * __mmcid_counter_create() - an array of counters of an mm, one local64_t
 *			      per counter and cid
 * @mm: as for mmcid_pcpu_create()
 * @nr: counters in the array, 1 .. MMCID_MAX_SLOT / 8 (512 with 4 KiB
 *	pages)
 * @key: lockdep class; mmcid_counter_create() and
 *	 mmcid_counter_create_many() pass their call site's
 *
 * Use mmcid_counter_create() or mmcid_counter_create_many().  The @nr
 * counters share one storage object: one header, one lock, one remote
 * slot and one range of each cid's unit (@nr * 8 bytes), as
 * percpu_counter_init_many() shares one per-CPU allocation; they are
 * indexed 0 .. @nr - 1 by mmcid_counter_add_at() and
 * mmcid_counter_sum_at().
 *
 * Context: Process context, may sleep.
 * Return: the counter or an ERR_PTR(), as mmcid_pcpu_create(): -EINVAL
 * (also for a bad @nr), -ESRCH, -ENOMEM, or -EINTR when a signal is
 * pending.
 */
struct mmcid_counter *__mmcid_counter_create(struct mm_struct *mm,
					     unsigned int nr,
					     struct lock_class_key *key)
{
	size_t bytes = mmcid_counter_bytes(nr);
	struct mmcid_pcpu *s;

	if (!bytes)
		return ERR_PTR(-EINVAL);
	s = __mmcid_pcpu_create(mm, bytes, &mmcid_counter_ops,
				(void *)(unsigned long)nr, key);
	if (IS_ERR(s))
		return ERR_CAST(s);
	s->fast.nr = nr;	/* before anyone has the counter */
	return (struct mmcid_counter *)s;
}
EXPORT_SYMBOL_GPL(__mmcid_counter_create);

/**
 * __mmcid_counter_create_in() - mmcid_counter_create_many() in an owned
 *				 context
 * @ctx: from mmcid_mm_create()
 * @mm: its mm
 * @nr: counters in the array, as for __mmcid_counter_create()
 * @key: lockdep class; mmcid_counter_create_in() and
 *	 mmcid_counter_create_many_in() pass their call site's
 *
 * Context: Process context, may sleep.
 * Return: the counter or an ERR_PTR(), as __mmcid_pcpu_create_in().
 */
struct mmcid_counter *__mmcid_counter_create_in(struct mmcid_mm *ctx,
						struct mm_struct *mm,
						unsigned int nr,
						struct lock_class_key *key)
{
	size_t bytes = mmcid_counter_bytes(nr);
	struct mmcid_pcpu *s;

	if (!bytes)
		return ERR_PTR(-EINVAL);
	s = __mmcid_pcpu_create_in(ctx, mm, bytes, &mmcid_counter_ops,
				   (void *)(unsigned long)nr, key);
	if (IS_ERR(s))
		return ERR_CAST(s);
	s->fast.nr = nr;	/* before anyone has the counter */
	return (struct mmcid_counter *)s;
}
EXPORT_SYMBOL_GPL(__mmcid_counter_create_in);

/**
 * mmcid_counter_destroy() - free a counter array
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
						  unsigned int idx, s64 delta,
						  gfp_t gfp, enum mmcid_src src,
						  int cid, unsigned int *cpu,
						  unsigned int subclass)
{
	struct mmcid_pcpu *s = ctr_store(c);
	struct mmcid_pcpu_ref ref;
	local64_t *v;
	s64 n;

	if (src == MMCID_SRC_TASK)
		v = mmcid_get_task(s, &ref, gfp, subclass | MMCID_GET_LOCKLESS);
	else
		v = mmcid_get_chosen(s, &ref, gfp, src, cid, MMCID_GET_LOCKLESS);
	if (ref.cid == MMCID_PCPU_REMOTE) {
		atomic64_add(delta, ctr_remote(s) + idx);
	} else {
		n = local64_add_return(delta, v + idx);
		if (n >= MMCID_COUNTER_BATCH || n <= -MMCID_COUNTER_BATCH)
			mmcid_counter_fold_slot(s, v + idx, idx, subclass);
		mmcid_pcpu_put(s, &ref);
	}
	if (cpu)
		*cpu = ref.cpu;
	return ref.cid;
}

static noinline int mmcid_counter_slow_task(struct mmcid_counter *c,
					    unsigned int idx, s64 delta,
					    gfp_t gfp, unsigned int *cpu,
					    unsigned int subclass)
{
	return mmcid_counter_add_slow(c, idx, delta, gfp, MMCID_SRC_TASK, 0,
				      cpu, subclass);
}

static noinline __maybe_unused int
mmcid_counter_slow_chosen(struct mmcid_counter *c, unsigned int idx,
			  s64 delta, gfp_t gfp, enum mmcid_src src, int cid,
			  unsigned int *cpu)
{
	return mmcid_counter_add_slow(c, idx, delta, gfp, src, cid, cpu, 0);
}

/*
 * The add, always inlined so that the index source is a constant in each
 * instance: MMCID_SRC_TASK in the exported ones, where the fast path is
 * then the caller's mm_cid, the ready-bit test and the local64_add_return(),
 * with no test branch.
 */
static __always_inline int mmcid_counter_add_sub(struct mmcid_counter *c,
						 unsigned int idx, s64 delta,
						 gfp_t gfp, enum mmcid_src src,
						 int cid, unsigned int *cpu,
						 unsigned int subclass)
{
	local64_t *v;
	int used;

	mmcid_might_sleep(gfp);
	preempt_disable();
	v = mmcid_fast_slot(ctr_store(c), src, cid, &used);
	if (likely(v)) {
		s64 n = local64_add_return(delta, v + idx);

		if (unlikely(n >= MMCID_COUNTER_BATCH || n <= -MMCID_COUNTER_BATCH))
			mmcid_counter_fold_slot(ctr_store(c), v + idx, idx, subclass);
		if (cpu)
			*cpu = smp_processor_id();
		preempt_enable();
		return used;
	}
	preempt_enable();
	if (src == MMCID_SRC_TASK)
		return mmcid_counter_slow_task(c, idx, delta, gfp, cpu,
					       subclass);
	return mmcid_counter_slow_chosen(c, idx, delta, gfp, src, cid, cpu);
}

/*
 * Counters beyond the array are a caller bug: refuse them where they are
 * checked (every out-of-line call) rather than write past the object's
 * range into another object's, and say so once, with the caller (inlined
 * into the exported functions, so the return address is the client's).
 */
static __always_inline bool mmcid_counter_bad(struct mmcid_counter *c,
					      unsigned int first,
					      unsigned int nr)
{
	unsigned int n = ctr_nr(c);

	if (likely(nr && first < n && nr <= n - first))
		return false;
	pr_warn_once("mmcid_counter counters %u..+%u beyond an array of %u (from %pS)\n",
		     first, nr, n, __builtin_return_address(0));
	return true;
}

/**
 * __mmcid_counter_add_task() - the counter's add, out of line
 * @f: the counter's first member (struct mmcid_pcpu_fast: the prototype
 *     names it so that the symbol's modversions CRC covers the layout a
 *     client's inline add was compiled against)
 * @idx: the counter of the array
 * @delta: the amount
 * @gfp: as for mmcid_pcpu_get()
 * @cpu: if not NULL, set to the CPU the add ran on
 * @subclass: lockdep subclass for the remote slot's lock: 0, or
 *	      SINGLE_DEPTH_NESTING for mmcid_counter_add_nested() (any
 *	      nonzero value means that)
 *
 * Not for callers: mmcid_counter_add_at() and its variants inline the
 * block-0 path and call this for everything else (any cid slot, with its
 * first use and block allocation, or the remote slot).
 *
 * Context: As mmcid_counter_add().
 * Return: the cid whose slot was used, MMCID_PCPU_REMOTE, or -EINVAL
 * (logged once, nothing added) if @idx is beyond the array.
 */
int __mmcid_counter_add_task(const struct mmcid_pcpu_fast *f,
			     unsigned int idx, s64 delta, gfp_t gfp,
			     unsigned int *cpu, unsigned int subclass)
{
	struct mmcid_counter *c = (struct mmcid_counter *)f;

	if (mmcid_counter_bad(c, idx, 1))
		return -EINVAL;
	if (subclass)
		return mmcid_counter_add_sub(c, idx, delta, gfp, MMCID_SRC_TASK,
					     0, cpu, SINGLE_DEPTH_NESTING);
	return mmcid_counter_add_sub(c, idx, delta, gfp, MMCID_SRC_TASK, 0,
				     cpu, 0);
}
EXPORT_SYMBOL_GPL(__mmcid_counter_add_task);

struct mmcid_sum {
	s64 *sums;
	unsigned int first, nr;
};

static void mmcid_sum_one(const void *slot, int cid, void *data)
{
	struct mmcid_sum *m = data;
	unsigned int i;

	for (i = 0; i < m->nr; i++)
		m->sums[i] += local64_read((local64_t *)slot + m->first + i);
}

/* The sums of counters first .. first + nr - 1, checked; see below. */
static __always_inline int mmcid_counter_sums(struct mmcid_counter *c,
					      unsigned int first,
					      unsigned int nr, s64 *sums)
{
	struct mmcid_sum m = { .sums = sums, .first = first, .nr = nr };

	if (mmcid_counter_bad(c, first, nr))
		return -EINVAL;
	memset(sums, 0, nr * sizeof(*sums));
	mmcid_pcpu_for_each(ctr_store(c), mmcid_sum_one, &m);
	return 0;
}

/**
 * mmcid_counter_sum_many() - values of counters of an array, in one walk
 * @c: the counter array
 * @first: the first counter to sum
 * @nr: how many, from @first on
 * @sums: set to their values, @nr of them
 *
 * Each value as mmcid_counter_sum_at() gives it; one hold of the lock and
 * one walk over the slots for all @nr, so that the values are consistent
 * with each other against mm teardown.
 *
 * Cost: as mmcid_pcpu_for_each(), O(initialised cids) under @c's raw
 * spinlock with interrupts off, times @nr loads per slot: what a caller
 * that needs a bounded interrupt latency (PREEMPT_RT) must keep small
 * (four counters of a few cids are nothing; 512 counters of thousands of
 * cids are not).
 *
 * Context: As mmcid_counter_sum_at().
 * Return: 0, or -EINVAL (logged once, @sums untouched) if the range is
 * empty or beyond the array.
 */
int mmcid_counter_sum_many(struct mmcid_counter *c, unsigned int first,
			   unsigned int nr, s64 *sums)
{
	return mmcid_counter_sums(c, first, nr, sums);
}
EXPORT_SYMBOL_GPL(mmcid_counter_sum_many);

/**
 * mmcid_counter_sum_at() - the value of one counter of an array
 * @c: the counter array
 * @idx: the counter, below the number given at creation
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
 * Return: the sum of the counter's cid slots and its remote slot; 0
 * (logged once) if @idx is beyond the array.
 */
s64 mmcid_counter_sum_at(struct mmcid_counter *c, unsigned int idx)
{
	s64 sum = 0;

	mmcid_counter_sums(c, idx, 1, &sum);
	return sum;
}
EXPORT_SYMBOL_GPL(mmcid_counter_sum_at);

/**
 * mmcid_counter_read_at() - fast read of one counter of an array
 * @c: the counter array
 * @idx: the counter, below the number given at creation
 *
 * What has reached the remote slot: the remote adds and each cid slot's
 * folds.  Each initialised cid slot holds at most MMCID_COUNTER_BATCH - 1
 * more either way, so the value is within (MMCID_COUNTER_BATCH - 1) x
 * the cids used of mmcid_counter_sum_at(); exact once the mm is torn
 * down.  One load: no lock, no walk.
 *
 * Context: Any context (not NMI on a 32-bit kernel without native 64-bit
 * atomics).
 * Return: the approximate value; 0 (logged once) if @idx is beyond the
 * array.
 */
s64 mmcid_counter_read_at(struct mmcid_counter *c, unsigned int idx)
{
	if (mmcid_counter_bad(c, idx, 1))
		return 0;
	return atomic64_read(ctr_remote(ctr_store(c)) + idx);
}
EXPORT_SYMBOL_GPL(mmcid_counter_read_at);

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
	return mmcid_get_chosen(s, ref, gfp, src, cid, 0);
}

/**
 * __mmcid_counter_add_at() - mmcid_counter_add_at() with a chosen index source
 * @c: the counter array
 * @idx: the counter of the array
 * @delta: the amount
 * @gfp: as for mmcid_pcpu_get()
 * @src: as for __mmcid_pcpu_get()
 * @cid: as for __mmcid_pcpu_get()
 * @cpu: if not NULL, set to the CPU the add ran on
 *
 * Each source has its own instance of the add (the source a constant in
 * it), so MMCID_SRC_CPU runs the same fast path as a user thread's
 * mm_cid, with the CPU number read in place of pn_task_mm_cid(): what the
 * bench measures.  Not exported.
 *
 * Context: See mmcid_counter_add().
 * Return: the cid whose slot was used, MMCID_PCPU_REMOTE, or -EINVAL for
 * an @idx beyond the array.
 */
int __mmcid_counter_add_at(struct mmcid_counter *c, unsigned int idx,
			   s64 delta, gfp_t gfp, enum mmcid_src src, int cid,
			   unsigned int *cpu)
{
	if (mmcid_counter_bad(c, idx, 1))
		return -EINVAL;
	switch (src) {
	case MMCID_SRC_CPU:
		return mmcid_counter_add_sub(c, idx, delta, gfp, MMCID_SRC_CPU,
					     0, cpu, 0);
	case MMCID_SRC_FIXED:
		return mmcid_counter_add_sub(c, idx, delta, gfp,
					     MMCID_SRC_FIXED, cid, cpu, 0);
	case MMCID_SRC_TASK:
		break;
	}
	return mmcid_counter_add_at(c, idx, delta, gfp, cpu);
}

/**
 * mmcid_pcpu_ctx_size() - bytes of one mm's shared context
 *
 * The per-mm context (struct mmcid_mm: the mmu_notifier subscription,
 * the list of the mm's storage objects and the first unit set's header)
 * is one kmalloc shared by every object of an mm; mmcid_pcpu_memory()
 * leaves it out.  For the bench's footprint report.  Not exported.
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
 * up to the cache line, aligned first fit in grains of the unit, the
 * first unit set inside the context, doubling blocks, dir and ready
 * words once a cid above block 0 is used, kmalloc buckets; the word
 * arrays assumed to come from kmalloc, as they do below a page),
 * evaluated for another machine's nr_cpu_ids; for @ncids == nr_cpu_ids
 * the bench and KUnit check it against the measurement.
 * Not exported.
 *
 * Context: Any context.
 * Return: the bytes of the context, unit sets, blocks and headers.
 */
size_t mmcid_pcpu_model_bytes(unsigned int ncids, unsigned int nobj,
			      size_t size, unsigned int cids, size_t *unit_bytes)
{
	u32 unit = mmcid_unit_of(size), grain = mmcid_grain(unit);
	unsigned int per = max_t(unsigned int, 1,
				 unit / ALIGN(ALIGN(size, grain),
					      max(mmcid_align_of(size), grain)));
	unsigned int nsets = DIV_ROUND_UP(nobj, per);
	unsigned int nblk, k, last;
	size_t blocks = 0, words;
	struct mmcid_geo g;

	mmcid_geo_init(&g, unit);
	nblk = mmcid_blk_of(&g, ncids - 1) + 1;
	last = cids ? mmcid_blk_of(&g, min(cids, ncids) - 1) : 0;
	for (k = 0; cids && k <= last; k++)
		blocks += kmalloc_size_roundup(mmcid_blk_len_n(&g, k, ncids) * unit);
	*unit_bytes = blocks * nsets;
	/* A set's dir and every object's ready words, above block 0 only. */
	words = last ? kmalloc_size_roundup(mmcid_words_size(nblk)) : 0;
	return kmalloc_size_roundup(sizeof(struct mmcid_mm)) +
		(nsets ? nsets - 1 : 0) *
		kmalloc_size_roundup(sizeof(struct mmcid_units)) +
		nobj * kmalloc_size_roundup(mmcid_hdr_size(size)) +
		(nsets + nobj) * words + *unit_bytes;
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
 * mmu_notifier_put() of a context frees it later, from an SRCU callback,
 * with mmcid_mm_free(), which is module code.  mmu_notifier_synchronize()
 * is only synchronize_srcu() in 6.12 and 7.x: it waits for a grace
 * period, not for the callbacks queued before it (that would be
 * srcu_barrier(), on an SRCU struct the kernel keeps private).  So each
 * callback also counts itself out, and this waits for the count.  What
 * is left is the callback's return from module code after its wake-up.
 *
 * Context: Module exit, after pn_control_stop(); may sleep.
 */
void pn_mmcid_exit(void)
{
	mmu_notifier_synchronize();
	wait_var_event(&mmcid_mn_live, !atomic_read(&mmcid_mn_live));
}
