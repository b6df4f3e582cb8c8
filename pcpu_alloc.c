// SPDX-License-Identifier: GPL-2.0
/*
 * pcpu_alloc: per-CPU object caches with magazines, a depot and chunks.
 *
 * The kernel's dynamic per-CPU allocator takes one global mutex (and a
 * spinlock) for every allocation and every free, searches a bitmap, and
 * zeroes the area on every possible CPU each time.  This file puts an
 * object cache in front of it, in the style of the slab magazine layer:
 *
 *   pn_cache_alloc / pn_cache_free          (see Context: of each)
 *        |
 *        v   local_lock_irqsave(cache->cpu->lock)
 *   +-------------------------- per CPU (struct pn_cpu_cache) -------+
 *   |  loaded: [o o o o . . .]   prev: [o o o o o o o] (full|empty)   |
 *   +-----------------------------------------------------------------+
 *        |  loaded empty on alloc / full on free: exchange with depot
 *        v   spin_lock(cache->lock)
 *   +-------------------------- per cache (depot) --------------------+
 *   |  full_mags:  [M][M][M]   (at most depot_max, excess flushed)    |
 *   |  empty_mags: [ ][ ]                                             |
 *   |  chunks_partial / chunks_free / chunks_full                     |
 *   |  reserve: free chunk objects kept for non-blocking callers      |
 *   +-----------------------------------------------------------------+
 *        |  nothing for this caller: drop every lock, then
 *        v
 *   pn_grow(): pn_chunk_create(): __alloc_percpu_gfp(nr_objs * size),
 *        constructor on each object (with the caller's gfp), insert
 *        [base, base+bytes) into pn_chunk_tree (maple tree, global), link
 *        the chunk and hand its first object to the caller.
 *
 *   Beside the chunks, "direct" objects come straight from
 *   __alloc_percpu_gfp(), one per request: non-blocking requests that
 *   find nothing cached and, in a module, memcg-accounted requests (see
 *   GFP below).
 *
 * A chunk is one __alloc_percpu_gfp() area carved into nr_objs objects of
 * cache->size bytes; object i is base + i * size, so it is a genuine
 * __percpu pointer (this_cpu_*() and per_cpu_ptr() work on it) aligned to
 * cache->align on every CPU (unit offsets are page aligned).
 *
 * Finding the chunk of an object: pn_chunk_tree maps the range of __percpu
 * addresses of every live chunk to the chunk.  Distinct per-CPU areas never
 * overlap, so one global tree serves every cache, and the sized API's free
 * finds the size class from the pointer alone.  Lookups (mtree_load()) are
 * lockless under RCU; the tree is written only when a chunk is created or
 * released (process context, no pcpu_next spinlock held).  A pointer that
 * no chunk covers is a direct object.
 *
 * Invariants
 *  - An object of a chunk is in exactly one place: handed out, in one
 *    magazine (of a CPU or of the depot), or free in its chunk's free_map.
 *  - cc->prev is NULL, empty or full; cc->loaded may be partially filled.
 *  - A chunk is on chunks_free iff nr_free == nr_objs, on chunks_full iff
 *    nr_free == 0, else on chunks_partial.  Only chunks_free chunks are
 *    released, so a chunk that owns a handed-out or magazine object is
 *    alive, which is what makes the lockless lookup of a live object safe.
 *  - A chunk is erased from pn_chunk_tree before anything else of its
 *    release happens.  The erase allocates (the tree is in RCU mode, nodes
 *    are replaced, not edited) and can fail; a chunk whose erase failed is
 *    linked back as free, intact, and counted in release_fails.  So the
 *    tree never points at a released chunk.
 *  - With a constructor, every object of a chunk is constructed while the
 *    chunk exists: objects are constructed when the chunk is created and
 *    destroyed when it is released.  The contract for users: an object
 *    must be freed in its constructed state, because the next allocation
 *    hands it out again without running the constructor.
 *  - Without a constructor and with PN_CACHE_ZERO (the sized API), the
 *    allocation is zeroed on every possible CPU, as alloc_percpu() does.
 *  - A cache never frees memory that an object handed out lives in:
 *    pn_cache_destroy() with live objects keeps the cache and the chunks
 *    that hold them (as kmem_cache_destroy() does) until pcpu_next is
 *    unloaded; the objects of kept chunks are never destructed (their
 *    owner may be gone by then).
 *
 * Locking
 *  - cache->cpu->lock (local_lock, IRQ-saving): this CPU's magazines and
 *    (CONFIG_PCPU_NEXT_STATS) its fast-path counters.  Taken on every
 *    fast-path operation; it is per CPU, so there is no shared lock and no
 *    atomic on the fast path.  On PREEMPT_RT it is a per-CPU sleeping lock
 *    with migration disabled.
 *  - cache->lock (spinlock_t, IRQ-safe): depot lists, chunk lists and every
 *    chunk's free_map/nr_free, the depot counters.  Nests inside the local
 *    lock.  Nothing is allocated, freed or constructed under it, and it is
 *    held for bounded work only (reclaim flushes a few magazines at a time,
 *    destroy drains one CPU at a time).
 *  - pn_caches_lock (mutex): the list of caches.  Never held across an
 *    allocation, a constructor or a destructor.
 *  - pn_shrink_lock (mutex, trylocked by the shrinker): one scan at a time
 *    owns the caches' shrink_node links.  Only the KUnit suite waits for it.
 *  - pn_drain_lock (mutex): the per-CPU drain work items (pn_drain_works).
 *  - pn_direct's xa_lock (spinlock_t, IRQ-safe): the direct objects of
 *    debug and destructor caches.  Taken alone, never with another
 *    pcpu_next lock held; a chunk object's free does not take it.
 *  - Remote CPUs' magazines are touched only (a) by pn_cpu_dead() after the
 *    CPU is dead, (b) by a drain work item running on the owning CPU under
 *    its local lock (pn_drain_all_cpus(), as SLUB's flush_all_cpus_locked()
 *    does: no IPI, so nothing runs in hard-IRQ context and RT is fine), and
 *    (c) by pn_cache_destroy(), when the caller guarantees no other use.
 *  - Lifetime against the shrinker: a scan pins each cache (cache->refs)
 *    under pn_caches_lock and works on it after dropping that lock; destroy
 *    unlinks the cache, waits for the pins to go (cache->unpinned), then
 *    cancels drain_work and maint_work.  A scan runs no destructor and
 *    waits for nothing, so a destructor (which runs in process context,
 *    see Reclaim) may create and destroy other caches.
 *
 * GFP
 *  - The kernel allocator (chunks, magazines, tree nodes) is only called
 *    with no pcpu_next spinlock held; constructors get the caller's gfp.
 *  - A request that cannot block (GFP_NOWAIT, GFP_ATOMIC) is served from
 *    magazines, depot and chunks, including a reserve of free chunk
 *    objects (cache->reserve) that blocking requests leave alone once a
 *    non-blocking request has been seen, and that non-blocking requests
 *    take one object at a time (no CPU's magazine swallows it); it never
 *    creates a chunk.  If
 *    nothing is left it kicks cache->maint_work (which refills the reserve
 *    in process context) and, for caches without a constructor, falls back
 *    to __alloc_percpu_gfp() with the caller's gfp, which the kernel serves
 *    from its own populated reserve; a constructor cache returns NULL.
 *  - Accounted requests (__GFP_ACCOUNT).  Built in: the object is charged
 *    to the caller's memcg with obj_cgroup_charge() and served like any
 *    other; its chunk keeps the obj_cgroup, and the free uncharges it (the
 *    memcg section of the code).  As a module, where that function is not exported: a
 *    direct object, charged by the kernel's allocator (constructed with
 *    the caller's gfp; a destructor runs after the free, from drain_work,
 *    so that a free stays any-context).
 *  - A free never allocates: a blocking allocation that fills a magazine
 *    from the chunks adds an empty magazine to the depot for the frees to
 *    come; when none is at hand anyway the object goes back to its chunk
 *    and maint_work tops up the empty magazines.
 *
 * Memory bounds: a CPU caches at most 2 * mag_cap objects, and mag_cap is
 * chosen so that those pin at most cpu_cache_bytes (module parameter,
 * default 1 MiB) counting every
 * possible CPU's copy (so large classes on machines with many possible
 * CPUs cache few or no objects: mag_cap 0 makes a magazine-less cache whose
 * operations go to the chunks under cache->lock).  The bound is per CPU:
 * together the CPUs of one cache may pin nr_online * cpu_cache_bytes,
 * which the shrinker gives back.  The depot keeps at most PN_DEPOT_BYTES
 * of full magazines.
 *
 * Memory ordering: all shared state is protected by cache->lock, the local
 * lock or a mutex.  A chunk is inserted into pn_chunk_tree before any of
 * its objects is published (under cache->lock), and erased after it was
 * unlinked from every list; its struct is freed through RCU.
 *
 * Sized API: thirteen caches, one per power of two from 8 B to 32 KiB,
 * created with PN_CACHE_ZERO; an object of class 2^k is aligned to
 * min(2^k, PAGE_SIZE).  Zeroing on every possible CPU is the price of
 * alloc_percpu() semantics and dominates the cost when possible CPUs are
 * many; a constructor cache (objects kept in constructed state) avoids it.
 *
 * Reclaim: the shrinker counts full depot magazines, the free chunks it
 * would release (beyond the reserve) and what the CPUs' magazines may hold.
 * Its scan honours nr_to_scan: it flushes depot magazines a few at a time
 * and unlinks free chunks, under the cache lock only; it runs no
 * destructor and drains no CPU, because memory reclaim can run under the
 * kernel's per-CPU allocator mutex (a GFP_KERNEL __alloc_percpu_gfp()
 * filling pages) or the CPU hotplug lock.  It hands the unlinked chunks to
 * the cache's drain_work (WQ_MEM_RECLAIM), which releases them in process
 * context and, when the scan found the CPUs' magazines out of its reach,
 * empties them by per-CPU work and reclaims what that freed.  (The kernel
 * returns freed per-CPU pages to the page allocator asynchronously in any
 * case.)  A scan that reaches nothing returns SHRINK_STOP.  So destructors
 * run only in process context with no pcpu_next lock held: from
 * drain_work, pn_cache_shrink() and pn_cache_destroy().  A chunk created
 * for a waiting allocation is never seen free by the shrinker: pn_grow()
 * links it with the caller's object already taken.  A dead CPU's
 * magazines are drained by the cpuhp multi-instance "dead" callback (one
 * instance per cache).
 *
 * Observability: /sys/kernel/debug/pcpu_next/alloc/stats (0400) has a row
 * per cache (pn_stats_show(), pn_cache_get_stats()).  Tracepoints (system
 * pcpu_next_alloc, internal/trace_pcpu_alloc.h): pn_chunk_create,
 * pn_chunk_release, pn_depot_refill, pn_depot_flush.
 *
 * Statistics, as SLUB_STATS does for slab: the counters a per-operation
 * fast path would update exist only with CONFIG_PCPU_NEXT_STATS (default
 * n): per CPU, under the CPU's local lock, allocs, frees, magazine hits and
 * magazine misses (struct pn_cpu_cache, pn_stat()).  Without it pn_stat()
 * is empty, the locked and direct paths do not take the local lock they
 * took only to count (pn_stat_op()), struct pn_cache_stats reads 0 for the
 * four and the stats file prints "-" in their columns.  Always kept, being
 * slow-path or misuse counts: depot refills and flushes, chunk creations,
 * releases and their failures, reserve refills, direct objects, double
 * frees, poison errors, bad frees.  in_use is not a counter: it is derived
 * at snapshot time from the chunk accounting (objects of live chunks, less
 * those free in them, less those in CPU and depot magazines, plus the live
 * direct objects), under cache->lock, so it is exact whenever the cache is
 * quiet, with or without the statistics; readers that assert on objects
 * in use (the KUnit suites, the stress) rely on that.
 *
 * Fault injection, the kernel's only (CONFIG_FAULT_INJECTION; none on a
 * fast path, nothing home-grown): chunk creation checks the fault_attr
 * pn_fail_chunk through pn_fault_hit(PN_FAULT_CHUNK) (the site is the
 * module core's, debugfs pcpu_next/fault/fail_chunk/; a stress line's
 * faults= arms it), chunk release the file-local pn_fail_release
 * (alloc/fail_release/, the standard knobs; the KUnit suite arms it per
 * task with pn_alloc_fail_releases()).  Both are reached by fail-nth.
 *
 * Layout: this file is the library only.  It includes kernel headers, its
 * API <pcpu_next/pcpu_alloc.h>, and the module-private internal/core.h
 * (pn_debugfs_dir(), pn_fault_hit(), its init and exit),
 * internal/pcpu_alloc.h (what the KUnit suite and the harness may call:
 * test hooks and accessors, none exported but to KUnit) and
 * internal/trace_pcpu_alloc.h; never anything of torture/.  The stress
 * and bench of test=alloc are in torture/pcpu_alloc_torture.c, built with
 * CONFIG_PCPU_NEXT_TORTURE; the KUnit suite is kunit/pcpu_alloc_kunit.c.
 *
 * Debug mode (PN_CACHE_DEBUG, or alloc_debug=1 for every cache): the
 * magazines are bypassed, every operation goes to the chunk layer under
 * cache->lock, where the free_map is exact.  A free of a free object is a
 * reported double free and is ignored; a pointer that is not an object of
 * the cache is reported and ignored; objects without constructor are
 * poisoned on every possible CPU when freed and checked at allocation; the
 * allocation site of every object is kept and printed for leaks at destroy.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": alloc: " fmt

#include <linux/atomic.h>
#include <linux/bitmap.h>
#include <linux/completion.h>
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/fault-inject.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/local_lock.h>
#include <linux/log2.h>
#include <linux/maple_tree.h>
#include <linux/math64.h>
#include <linux/memcontrol.h>
#include <linux/mmdebug.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/sched/mm.h>
#include <linux/seq_file.h>
#include <linux/shrinker.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <kunit/visibility.h>

#include <pcpu_next/pcpu_alloc.h>

#include "internal/core.h"
#include "internal/pcpu_alloc.h"

#define CREATE_TRACE_POINTS
#include "internal/trace_pcpu_alloc.h"

#define PN_CHUNK_TARGET		8192U	/* bytes per CPU a chunk aims for */
#define PN_CHUNK_MAX_OBJS	1024U
#define PN_MAG_MAX		32U	/* objects per magazine, at most */
#define PN_DEPOT_MAX		256U	/* full magazines kept in a depot, at most */
/* What a depot's full magazines may pin, likewise. */
#define PN_DEPOT_BYTES		(16UL << 20)
#define PN_EMPTY_MAGS_MIN	2U	/* empty magazines maint_work keeps */
#define PN_RECLAIM_BATCH	4U	/* depot magazines flushed per lock hold */
#define PN_RECLAIM_CHUNKS	16UL	/* free chunks unlinked per lock hold */
#define PN_MAINT_CHUNKS		4U	/* chunks one maint_work run may add */
#define PN_DESTROY_TRIES	8U	/* destroy's attempts at a failing release */
#define PN_POISON		0x6b
#define PN_ZERO_WORDS_MAX	64U	/* zero up to this with word stores */
#define PN_LEAKS_LISTED		16U

/* Internal flag: no magazines, every operation on the chunks (mag_cap 0, or destroyed). */
#define PN_CACHE_NOMAGS		0x80000000U
#define PN_CACHE_LOCKED		(PN_CACHE_DEBUG | PN_CACHE_NOMAGS)

static bool pn_alloc_debug;
module_param_named(alloc_debug, pn_alloc_debug, bool, 0444);
MODULE_PARM_DESC(alloc_debug, "Debug mode (poison, double-free detection, leak listing) for every pcpu_next cache");

/*
 * What one CPU's two magazines of a cache may pin, counting every possible
 * CPU's copy of each object; read when a cache is created.  The KUnit
 * suite lowers it around a pn_cache_create() (internal/pcpu_alloc.h).
 */
VISIBLE_IF_KUNIT unsigned long pn_cpu_cache_bytes = 1UL << 20;
EXPORT_SYMBOL_IF_KUNIT(pn_cpu_cache_bytes);
module_param_named(cpu_cache_bytes, pn_cpu_cache_bytes, ulong, 0444);
MODULE_PARM_DESC(cpu_cache_bytes, "Bytes (over all possible CPUs' copies) one CPU may cache per cache; 0: no magazines");

/* A magazine: a stack of free objects. */
struct pn_mag {
	struct list_head list;		/* in cache->full_mags or empty_mags */
	unsigned int nr;
	void __percpu *objs[];
};

/*
 * Fast-path statistics (CONFIG_PCPU_NEXT_STATS), per CPU under the CPU's
 * local lock.  Allocations and frees are counted on every path but a size
 * class's direct objects (those are pn_sized_direct); hits and misses on
 * the magazine paths only.
 */
enum pn_stat_item {
	PN_STAT_ALLOC,		/* objects handed out */
	PN_STAT_FREE,		/* objects given back */
	PN_STAT_MAG_HIT,	/* alloc or free served by the CPU's magazines */
	PN_STAT_MAG_MISS,	/* alloc or free that went to the depot */
	PN_NR_STAT_ITEMS,
};

/* One CPU's front end of a cache; protected by @lock on that CPU. */
struct pn_cpu_cache {
	local_lock_t lock;
	struct pn_mag *loaded;
	struct pn_mag *prev;
	/* Objects in loaded and prev, for the shrinker's count (racy reads). */
	unsigned int held;
#ifdef CONFIG_PCPU_NEXT_STATS
	unsigned long stat[PN_NR_STAT_ITEMS];
#endif
};

struct pn_chunk {
	struct pn_cache *cache;
	void __percpu *base;
	struct list_head list;		/* in one of the cache's chunk lists */
	unsigned int nr_free;		/* set bits of free_map */
	bool dead;			/* unlinked, being released */
	unsigned long *callers;		/* debug: allocation site per object */
	struct obj_cgroup **objcgs;	/* built in: the memcg charged per object */
	struct rcu_head rcu;
	unsigned long free_map[];	/* bit set: object free in the chunk */
};

struct pn_cache {
	/*
	 * Read by every pn_cache_alloc()/pn_cache_free() and by the sized
	 * API's fast path, and written only at creation (reserve_on and
	 * charged: once; nr_direct: by direct objects, which are rare except
	 * in a module's cache whose callers all pass __GFP_ACCOUNT, where
	 * every operation is a direct one and the magazines are not used):
	 * the first cache line, and nothing else on it.  Checked by the static_assert below; pahole
	 * output in the closing note of issue 13.
	 */
	struct pn_cpu_cache __percpu *cpu;
	unsigned int flags;
	unsigned int size;		/* object stride, multiple of align */
	unsigned int mag_cap;		/* 0: magazine-less (PN_CACHE_NOMAGS) */
	unsigned int align;
	pn_ctor_t ctor;
	atomic_long_t nr_direct;	/* live direct objects (not the sized API's) */
	bool sized;			/* a size class of the sized API */
	bool charged;			/* a chunk object was charged to a memcg */
	bool reserve_on;		/* a non-blocking request was seen */
	bool dead;			/* destroyed with live objects */

	/* Read-mostly, slow paths only. */
	char name[PN_CACHE_NAME_MAX] ____cacheline_aligned_in_smp;
	unsigned int nr_objs;		/* objects per chunk */
	unsigned int chunk_bytes;	/* nr_objs * size */
	unsigned int depot_max;		/* full magazines the depot keeps */
	unsigned int reserve;		/* free chunk objects kept for atomic callers */
	pn_dtor_t dtor;
	void *priv;

	/* lock protects everything from here to the end of the depot block */
	spinlock_t lock ____cacheline_aligned_in_smp;
	struct list_head full_mags;
	struct list_head empty_mags;
	unsigned int nr_full_mags;
	unsigned int nr_empty_mags;
	unsigned int nr_cpu_mags;	/* magazines attached to CPUs */
	struct list_head chunks_partial;
	struct list_head chunks_free;
	struct list_head chunks_full;
	struct list_head chunks_dying;	/* unlinked by a scan, released by drain_work */
	bool drain_wanted;		/* a scan asked drain_work to drain the CPUs */
	unsigned long drain_budget;	/* objects those scans still wanted */
	unsigned long nr_chunks;
	unsigned long nr_free_chunks;
	unsigned long nr_chunk_free;	/* free objects in all chunks */
	unsigned long depot_refills;
	unsigned long depot_flushes;
	unsigned long chunk_creates;
	unsigned long chunk_releases;
	unsigned long release_fails;
	unsigned long reserve_refills;
	/* end of the cache->lock block */

	atomic_long_t chunk_fails;
	atomic_long_t reserve_fails;
	atomic_long_t direct_allocs;
	atomic_long_t double_frees;
	atomic_long_t poison_errors;
	atomic_long_t bad_frees;
	struct work_struct maint_work;	/* refill the reserve, top up empty magazines */
	struct work_struct drain_work;	/* after a scan: release, drain, reclaim */
	refcount_t refs;		/* creation + each shrinker pin */
	struct completion unpinned;	/* refs reached 0 */
	struct hlist_node cpuhp_node;
	struct list_head node;		/* in pn_caches or pn_dead_caches, under pn_caches_lock */
	struct list_head shrink_node;	/* on a scan's list, under pn_shrink_lock */
};

/* The fast path's fields fit the first line (the struct is line-aligned). */
static_assert(offsetofend(struct pn_cache, dead) <= SMP_CACHE_BYTES);

/*
 * Live chunks by __percpu address range; see the essay above.  RCU mode:
 * lockless readers need replaced tree nodes to be freed after a grace
 * period.
 */
static struct maple_tree pn_chunk_tree = MTREE_INIT(pn_chunk_tree, MT_FLAGS_USE_RCU);

/* pn_caches_lock protects pn_caches and pn_dead_caches. */
static DEFINE_MUTEX(pn_caches_lock);
static LIST_HEAD(pn_caches);
static LIST_HEAD(pn_dead_caches);	/* destroyed with live objects */

/* pn_shrink_lock: one scan at a time owns every cache's shrink_node. */
static DEFINE_MUTEX(pn_shrink_lock);

/* Drain of one CPU's magazines, run on that CPU. */
struct pn_drain_work {
	struct work_struct work;
	struct pn_cache *cache;
};

/* pn_drain_lock protects pn_drain_works (one drain of all CPUs at a time). */
static DEFINE_MUTEX(pn_drain_lock);
static DEFINE_PER_CPU(struct pn_drain_work, pn_drain_works);

static struct workqueue_struct *pn_drain_wq;	/* per-CPU drain items */
static struct workqueue_struct *pn_maint_wq;	/* drain_work (WQ_MEM_RECLAIM) */

static enum cpuhp_state pn_cpuhp_state;
static struct shrinker *pn_shrinker;
static struct dentry *pn_alloc_dir;

#define PN_NR_CLASSES	13	/* 8 B .. 32 KiB, powers of two */
static struct pn_cache *pn_size_caches[PN_NR_CLASSES];
/* Live direct objects of the size classes (their free cannot tell the class). */
static atomic_long_t pn_sized_direct = ATOMIC_LONG_INIT(0);

/*
 * Every live direct object, by address, to its cache: a free of a pointer
 * found neither here nor in pn_chunk_tree is a misuse, reported, never
 * handed to free_percpu().  The xa_lock (irq-safe: frees come from any
 * context) orders a free against a second free of the same object.  A
 * destructor cache's freed direct objects stay, marked PN_DIRECT_DYING,
 * until its drain_work destructs them in process context.
 */
static DEFINE_XARRAY_FLAGS(pn_direct, XA_FLAGS_LOCK_IRQ);
#define PN_DIRECT_DYING		XA_MARK_0

static inline unsigned long pn_addr(const void __percpu *p)
{
	return (__force unsigned long)p;
}

static inline void __percpu *pn_obj(struct pn_cache *c, struct pn_chunk *ch,
				    unsigned int idx)
{
	return (void __percpu *)((char __percpu *)ch->base + idx * c->size);
}

static inline unsigned int pn_idx(struct pn_cache *c, struct pn_chunk *ch,
				  void __percpu *obj)
{
	return (pn_addr(obj) - pn_addr(ch->base)) / c->size;
}

/* Caller holds rcu_read_lock() unless it owns an object of the chunk. */
static inline struct pn_chunk *pn_chunk_lookup(const void __percpu *obj)
{
	return mtree_load(&pn_chunk_tree, pn_addr(obj));
}

/* Caller holds @cc's local lock.  Empty without CONFIG_PCPU_NEXT_STATS. */
static inline void pn_stat(struct pn_cpu_cache *cc, enum pn_stat_item si)
{
#ifdef CONFIG_PCPU_NEXT_STATS
	cc->stat[si]++;
#endif
}

/*
 * Count an allocation or free that bypassed the magazines; the local lock
 * is taken for the count alone, so not at all without the statistics.
 */
static inline void pn_stat_op(struct pn_cache *c, enum pn_stat_item si)
{
#ifdef CONFIG_PCPU_NEXT_STATS
	unsigned long flags;

	local_lock_irqsave(&c->cpu->lock, flags);
	pn_stat(this_cpu_ptr(c->cpu), si);
	local_unlock_irqrestore(&c->cpu->lock, flags);
#endif
}

/*
 * maint_work allocates (GFP_KERNEL) and runs constructors: not on the
 * WQ_MEM_RECLAIM workqueue, whose rescuer must stay free for drain_work,
 * which gives memory back.
 */
static void pn_maint_kick(struct pn_cache *c)
{
	if (!READ_ONCE(c->dead))
		queue_work(system_dfl_wq, &c->maint_work);
}

/* ---- memcg: accounted objects from the chunks (built in) ---------------- */

/*
 * Built into the kernel, an accounted request is charged per object, as
 * slab charges its objects and mm/percpu.c its areas: the charge goes to
 * the caller's memcg before the object is taken, the chunk keeps the
 * obj_cgroup beside the object, and pn_cache_free() takes it back.  The
 * object then comes from the magazines like any other.  An object in a
 * magazine is charged to nobody, as a free slab object is not.  With
 * memcg's kmem accounting off (CONFIG_MEMCG=n, cgroup.memory=nokmem)
 * there is nothing to charge: the request is served like any other, as
 * slab serves it.  A module cannot charge (obj_cgroup_charge() is not
 * exported): its accounted requests are direct objects, which the
 * kernel's allocator charges.
 */
#ifdef MODULE
#define PN_ACCOUNTED_DIRECT	true
#else
#define PN_ACCOUNTED_DIRECT	false
#endif

#if defined(CONFIG_MEMCG) && !defined(MODULE)
static bool pn_memcg_enabled(void)
{
	return !mem_cgroup_disabled() && !mem_cgroup_kmem_disabled();
}

/*
 * What an object costs its memcg: every possible CPU's copy of its size
 * class and its obj_cgroup pointer (mm/percpu.c charges the size asked
 * for; a class object is what the caller holds).
 */
static size_t pn_memcg_bytes(struct pn_cache *c)
{
	return (size_t)c->size * num_possible_cpus() + sizeof(struct obj_cgroup *);
}

/*
 * Charge an accounted request before it is served.  *@objcgp is NULL if
 * there is nothing to charge (no memcg, the root).  Returns false if the
 * memcg refused the charge.
 */
static bool pn_memcg_charge(struct pn_cache *c, gfp_t gfp,
			    struct obj_cgroup **objcgp)
{
	struct obj_cgroup *objcg;

	*objcgp = NULL;
	if (!memcg_kmem_online())
		return true;
	objcg = current_obj_cgroup();
	if (!objcg || obj_cgroup_is_root(objcg))
		return true;
	if (obj_cgroup_charge(objcg, gfp, pn_memcg_bytes(c)))
		return false;
	*objcgp = objcg;
	return true;
}

static void pn_memcg_stat(struct obj_cgroup *objcg, long bytes)
{
	rcu_read_lock();
	mod_memcg_state(obj_cgroup_memcg(objcg), MEMCG_PERCPU_B, bytes);
	rcu_read_unlock();
}

/* The request that was charged failed. */
static void pn_memcg_cancel(struct pn_cache *c, struct obj_cgroup *objcg)
{
	obj_cgroup_uncharge(objcg, pn_memcg_bytes(c));
}

/*
 * @obj was served for a charged request: note the charge in its chunk.  A
 * direct object carries the kernel allocator's own charge, so ours is
 * given back.
 */
static void pn_memcg_commit(struct pn_cache *c, void __percpu *obj,
			    struct obj_cgroup *objcg)
{
	struct pn_chunk *ch = pn_chunk_lookup(obj);	/* we own @obj */

	if (!ch || !ch->objcgs) {
		pn_memcg_cancel(c, objcg);
		return;
	}
	obj_cgroup_get(objcg);
	/* a charge left behind would pin its memcg for good */
	VM_WARN_ON_ONCE(READ_ONCE(ch->objcgs[pn_idx(c, ch, obj)]));
	WRITE_ONCE(ch->objcgs[pn_idx(c, ch, obj)], objcg);
	pn_memcg_stat(objcg, pn_memcg_bytes(c));
	if (!READ_ONCE(c->charged))
		WRITE_ONCE(c->charged, true);
}

/*
 * pn_cache_free() of @obj: give back its charge, if it has one.  @ch is
 * @obj's chunk if the caller looked it up, else NULL.  A slot is written
 * only if it holds a charge; the xchg() makes a second free of the
 * object find none.
 */
static void pn_memcg_uncharge(struct pn_cache *c, void __percpu *obj,
			      struct pn_chunk *ch)
{
	struct obj_cgroup *objcg = NULL, **slot;
	unsigned long off;

	rcu_read_lock();
	if (!ch)
		ch = pn_chunk_lookup(obj);
	if (ch && ch->objcgs && ch->cache == c) {
		off = pn_addr(obj) - pn_addr(ch->base);
		slot = &ch->objcgs[off / c->size];
		if (!(off % c->size) && READ_ONCE(*slot))
			objcg = xchg(slot, NULL);
	}
	rcu_read_unlock();
	if (!objcg)
		return;
	obj_cgroup_uncharge(objcg, pn_memcg_bytes(c));
	pn_memcg_stat(objcg, -(long)pn_memcg_bytes(c));
	obj_cgroup_put(objcg);
}
#else
static bool pn_memcg_enabled(void)
{
	return false;
}

static bool pn_memcg_charge(struct pn_cache *c, gfp_t gfp,
			    struct obj_cgroup **objcgp)
{
	*objcgp = NULL;
	return true;
}

static void pn_memcg_cancel(struct pn_cache *c, struct obj_cgroup *objcg)
{
}

static void pn_memcg_commit(struct pn_cache *c, void __percpu *obj,
			    struct obj_cgroup *objcg)
{
}

static void pn_memcg_uncharge(struct pn_cache *c, void __percpu *obj,
			      struct pn_chunk *ch)
{
}
#endif

/* ---- chunk layer (cache->lock) ------------------------------------------ */

static void pn_chunk_put_idx(struct pn_cache *c, struct pn_chunk *ch,
			     unsigned int idx)
{
	lockdep_assert_held(&c->lock);
	__set_bit(idx, ch->free_map);
	c->nr_chunk_free++;
	if (++ch->nr_free == c->nr_objs) {
		list_move(&ch->list, &c->chunks_free);
		c->nr_free_chunks++;
	} else if (ch->nr_free == 1) {
		list_move(&ch->list, &c->chunks_partial);
	}
}

/*
 * Give an object that is not free in its chunk back to the chunk.  A
 * pointer that is no object of this cache (a misuse the magazines took in
 * without looking) is counted, reported and dropped here.
 */
static void pn_chunk_put_obj(struct pn_cache *c, void __percpu *obj)
{
	struct pn_chunk *ch;

	lockdep_assert_held(&c->lock);
	rcu_read_lock();
	ch = pn_chunk_lookup(obj);
	if (unlikely(!ch || ch->cache != c ||
		     (pn_addr(obj) - pn_addr(ch->base)) % c->size ||
		     test_bit(pn_idx(c, ch, obj), ch->free_map))) {
		rcu_read_unlock();
		atomic_long_inc(&c->bad_frees);
		pr_err_ratelimited("%s: a freed pointer was not a live object of this cache; dropped\n",
				   c->name);
		return;
	}
	rcu_read_unlock();
	pn_chunk_put_idx(c, ch, pn_idx(c, ch, obj));
}

/*
 * How many of @want objects a request may take from the chunks: what lies
 * beyond the reserve; once only the reserve is left, nothing for a
 * blocking request (it creates a chunk) and one object at a time for a
 * non-blocking one (so that no CPU's magazine swallows the reserve).
 */
static unsigned int pn_takeable(struct pn_cache *c, bool atomic,
				unsigned int want)
{
	unsigned long avail = c->nr_chunk_free;
	unsigned long keep = READ_ONCE(c->reserve_on) ? c->reserve : 0;

	lockdep_assert_held(&c->lock);
	if (avail > keep)
		return min_t(unsigned long, avail - keep, want);
	return atomic && avail && want ? 1 : 0;
}

/* Take up to @n free objects out of the chunks; partial chunks first. */
static unsigned int pn_chunks_take(struct pn_cache *c, void __percpu **objs,
				   unsigned int n)
{
	unsigned int got = 0, idx;
	struct pn_chunk *ch;

	lockdep_assert_held(&c->lock);
	while (got < n) {
		ch = list_first_entry_or_null(&c->chunks_partial,
					      struct pn_chunk, list);
		if (!ch)
			ch = list_first_entry_or_null(&c->chunks_free,
						      struct pn_chunk, list);
		if (!ch)
			break;
		if (ch->nr_free == c->nr_objs)
			c->nr_free_chunks--;
		while (got < n && ch->nr_free) {
			idx = find_first_bit(ch->free_map, c->nr_objs);
			__clear_bit(idx, ch->free_map);
			ch->nr_free--;
			objs[got++] = pn_obj(c, ch, idx);
		}
		list_move(&ch->list, ch->nr_free ? &c->chunks_partial :
						    &c->chunks_full);
	}
	c->nr_chunk_free -= got;
	/* Below the reserve that non-blocking callers count on: refill it. */
	if (READ_ONCE(c->reserve_on) && c->nr_chunk_free < c->reserve)
		pn_maint_kick(c);
	return got;
}

static void pn_mag_flush(struct pn_cache *c, struct pn_mag *m)
{
	unsigned int i;

	lockdep_assert_held(&c->lock);
	for (i = 0; i < m->nr; i++)
		pn_chunk_put_obj(c, m->objs[i]);
	m->nr = 0;
}

/* Empty one CPU's magazines into the chunks; the CPU must not run them. */
static void pn_drain_cpu(struct pn_cache *c, struct pn_cpu_cache *cc)
{
	struct pn_mag *mags[2] = { cc->loaded, cc->prev };
	unsigned int i;

	lockdep_assert_held(&c->lock);
	cc->loaded = NULL;
	cc->prev = NULL;
	WRITE_ONCE(cc->held, 0);
	for (i = 0; i < ARRAY_SIZE(mags); i++) {
		if (!mags[i])
			continue;
		pn_mag_flush(c, mags[i]);
		list_add(&mags[i]->list, &c->empty_mags);
		c->nr_empty_mags++;
		c->nr_cpu_mags--;
	}
}

/* Link a new chunk, all objects free. */
static void pn_chunk_link(struct pn_cache *c, struct pn_chunk *ch)
{
	lockdep_assert_held(&c->lock);
	ch->dead = false;
	list_add(&ch->list, &c->chunks_free);
	c->nr_chunks++;
	c->nr_free_chunks++;
	c->nr_chunk_free += c->nr_objs;
}

/*
 * Unlink free chunks for release, worth up to @max objects, keeping the
 * reserve unless @all.  Returns the objects unlinked.
 */
static unsigned long pn_chunks_unlink_free(struct pn_cache *c,
					   struct list_head *out,
					   unsigned long max, bool all)
{
	unsigned long n = 0;
	struct pn_chunk *ch;

	lockdep_assert_held(&c->lock);
	while (n < max) {
		ch = list_first_entry_or_null(&c->chunks_free, struct pn_chunk, list);
		if (!ch)
			break;
		if (!all && READ_ONCE(c->reserve_on) &&
		    c->nr_chunk_free < c->reserve + c->nr_objs)
			break;
		list_move(&ch->list, out);
		ch->dead = true;
		c->nr_free_chunks--;
		c->nr_chunks--;
		c->nr_chunk_free -= c->nr_objs;
		n += c->nr_objs;
	}
	return n;
}

/* ---- chunk creation and release (no spinlock held) ---------------------- */

/*
 * Kernel fault injection at the chunk-release site (debugfs
 * pcpu_next/alloc/fail_release, the standard fault_attr knobs; fail-nth
 * reaches it too): a release fails as if the chunk tree could not be
 * updated for want of memory.
 */
#ifdef CONFIG_FAULT_INJECTION
static DECLARE_FAULT_ATTR(pn_fail_release);

static bool pn_release_should_fail(void)
{
	return should_fail(&pn_fail_release, 1);
}
#else
static inline bool pn_release_should_fail(void)
{
	return false;
}
#endif

#if IS_ENABLED(CONFIG_KUNIT)
/**
 * pn_alloc_fail_releases() - fail the calling task's next chunk releases
 * @n: how many; 0 restores the defaults (probability 0: only fail-nth
 *     reaches the site)
 * @skip: releases that succeed before the first failure
 *
 * Arms pn_fail_release task-filtered, so no other task's release is hit.
 * Nothing without CONFIG_FAULT_INJECTION.
 *
 * Context: Process context, the task whose releases are to fail.
 */
VISIBLE_IF_KUNIT void pn_alloc_fail_releases(unsigned int n, unsigned int skip)
{
#ifdef CONFIG_FAULT_INJECTION
	current->make_it_fail = !!n;
	pn_fail_release.task_filter = !!n;
	atomic_set(&pn_fail_release.times, n ? n : 1);
	/* should_fail() passes while space exceeds the size, 1 here. */
	atomic_set(&pn_fail_release.space, n && skip ? skip + 1 : 0);
	pn_fail_release.probability = n ? 100 : 0;
#endif
}
EXPORT_SYMBOL_IF_KUNIT(pn_alloc_fail_releases);

/**
 * pn_alloc_fail_chunks() - fail the calling task's next chunk creations
 * @n: how many; 0 restores the defaults (probability 0: only fail-nth
 *     reaches the site)
 *
 * Arms the chunk-creation site's fault_attr (pn_fail_chunk, the module
 * core's) task-filtered: probability 100, times @n, so exactly the next
 * @n creations this task makes fail and no other task's.  Nothing without
 * CONFIG_FAULT_INJECTION.
 *
 * Context: Process context, the task whose creations are to fail.
 */
VISIBLE_IF_KUNIT void pn_alloc_fail_chunks(unsigned int n)
{
#ifdef CONFIG_FAULT_INJECTION
	struct fault_attr *a = pn_fault_attr(PN_FAULT_CHUNK);

	pn_fault_attr_reset(a);
	current->make_it_fail = !!n;
	if (!n)
		return;
	WRITE_ONCE(a->task_filter, true);
	atomic_set(&a->times, n);
	/* Last, so a concurrent should_fail() sees the rest set first. */
	smp_wmb();
	WRITE_ONCE(a->probability, 100);
#endif
}
EXPORT_SYMBOL_IF_KUNIT(pn_alloc_fail_chunks);
#endif

/* Chunk creation's fault_attr (the module core's pn_fail_chunk). */
static bool pn_should_fail_chunk(void)
{
	return pn_fault_hit(PN_FAULT_CHUNK);
}

static void pn_chunk_free_meta(struct pn_chunk *ch)
{
	kfree(ch->objcgs);
	kfree(ch->callers);
	kfree(ch);
}

static void pn_chunk_free_rcu(struct rcu_head *head)
{
	pn_chunk_free_meta(container_of(head, struct pn_chunk, rcu));
}

/* Counts a failure in chunk_fails; the caller links the chunk. */
static struct pn_chunk *pn_chunk_create(struct pn_cache *c, gfp_t gfp)
{
	unsigned int built = 0, cpu;
	struct pn_chunk *ch;

	might_sleep();
	/*
	 * Chunks are shared by every user: never charged to this caller.  A
	 * failure is the caller's NULL (and chunk_fails), not a warning.
	 */
	gfp = (gfp & ~(__GFP_ZERO | __GFP_ACCOUNT)) | __GFP_NOWARN;
	if (pn_should_fail_chunk())
		goto fail;
	ch = kzalloc(struct_size(ch, free_map, BITS_TO_LONGS(c->nr_objs)), gfp);
	if (!ch)
		goto fail;
	if (c->flags & PN_CACHE_DEBUG) {
		ch->callers = kcalloc(c->nr_objs, sizeof(*ch->callers), gfp);
		if (!ch->callers)
			goto free_meta;
	}
	if (pn_memcg_enabled()) {
		ch->objcgs = kcalloc(c->nr_objs, sizeof(*ch->objcgs), gfp);
		if (!ch->objcgs)
			goto free_meta;
	}
	ch->base = __alloc_percpu_gfp(c->chunk_bytes, c->align, gfp);
	if (!ch->base)
		goto free_meta;
	ch->cache = c;
	INIT_LIST_HEAD(&ch->list);
	ch->nr_free = c->nr_objs;
	bitmap_fill(ch->free_map, c->nr_objs);

	if (c->ctor) {
		for (built = 0; built < c->nr_objs; built++)
			if (c->ctor(pn_obj(c, ch, built), c->priv, gfp))
				goto destruct;
	} else if (c->flags & PN_CACHE_DEBUG) {
		for_each_possible_cpu(cpu)
			memset(per_cpu_ptr(ch->base, cpu), PN_POISON,
			       c->chunk_bytes);
	}
	if (mtree_insert_range(&pn_chunk_tree, pn_addr(ch->base),
			       pn_addr(ch->base) + c->chunk_bytes - 1, ch, gfp))
		goto destruct;
	trace_pn_chunk_create(c->name, c->chunk_bytes, c->nr_objs, 0);
	return ch;

destruct:
	while (c->dtor && built--)
		c->dtor(pn_obj(c, ch, built), c->priv);
	free_percpu(ch->base);
free_meta:
	pn_chunk_free_meta(ch);
fail:
	atomic_long_inc(&c->chunk_fails);
	trace_pn_chunk_create(c->name, c->chunk_bytes, c->nr_objs, -ENOMEM);
	return NULL;
}

/*
 * Release an unlinked chunk: tree entry first, then destructors, per-CPU
 * memory and struct.  The erase may fail for want of memory; then nothing
 * else is done and false is returned, so that the caller links the chunk
 * back (the tree must never point at freed memory).
 */
static bool pn_chunk_release(struct pn_cache *c, struct pn_chunk *ch)
{
	unsigned int i;

	if (pn_release_should_fail())
		return false;
	mtree_erase(&pn_chunk_tree, pn_addr(ch->base));
	/* mtree_erase() returns the entry even when it could not erase it. */
	if (unlikely(mtree_load(&pn_chunk_tree, pn_addr(ch->base)) == ch))
		return false;
	if (c->dtor)
		for_each_set_bit(i, ch->free_map, c->nr_objs)
			c->dtor(pn_obj(c, ch, i), c->priv);
	free_percpu(ch->base);
	/* every object is free, so uncharged */
	VM_WARN_ON_ONCE(ch->objcgs &&
			memchr_inv(ch->objcgs, 0, c->nr_objs * sizeof(*ch->objcgs)));
	trace_pn_chunk_release(c->name, c->chunk_bytes, c->nr_objs);
	call_rcu(&ch->rcu, pn_chunk_free_rcu);
	return true;
}

/**
 * pn_chunks_release() - release unlinked free chunks
 * @c: their cache
 * @list: the chunks, unlinked by pn_chunks_unlink_free(), all objects free
 * @failed: if not NULL, incremented once per chunk linked back
 *
 * A chunk whose tree entry could not be erased is linked back.  Each chunk
 * leaves @list before its release: a released chunk's struct is freed
 * after a grace period, and a neighbour's unlink must not write into it.
 *
 * Context: Process context, no pcpu_next lock held (destructors run).
 * Return: The objects freed.  @list is empty.
 */
VISIBLE_IF_KUNIT unsigned long pn_chunks_release(struct pn_cache *c,
						 struct list_head *list,
						 unsigned long *failed)
{
	unsigned long freed = 0, released = 0;
	struct pn_chunk *ch, *tch;
	unsigned long flags;
	LIST_HEAD(back);

	list_for_each_entry_safe(ch, tch, list, list) {
		list_del(&ch->list);
		if (pn_chunk_release(c, ch)) {
			released++;
			freed += c->nr_objs;
		} else {
			list_add_tail(&ch->list, &back);
		}
	}
	spin_lock_irqsave(&c->lock, flags);
	c->chunk_releases += released;
	list_for_each_entry_safe(ch, tch, &back, list) {
		list_del(&ch->list);
		pn_chunk_link(c, ch);
		c->release_fails++;
		if (failed)
			(*failed)++;
	}
	spin_unlock_irqrestore(&c->lock, flags);
	return freed;
}
EXPORT_SYMBOL_IF_KUNIT(pn_chunks_release);

#if IS_ENABLED(CONFIG_KUNIT)
/**
 * pn_cache_unlink_free_chunks() - unlink every free chunk of a cache
 * @cache: the cache
 * @out: receives the chunks, for pn_chunks_release()
 *
 * Context: Process context.
 * Return: The chunks unlinked.
 */
VISIBLE_IF_KUNIT unsigned long pn_cache_unlink_free_chunks(struct pn_cache *cache,
							   struct list_head *out)
{
	unsigned long flags, n;

	spin_lock_irqsave(&cache->lock, flags);
	n = pn_chunks_unlink_free(cache, out, ULONG_MAX, true);
	spin_unlock_irqrestore(&cache->lock, flags);
	return n / cache->nr_objs;
}
EXPORT_SYMBOL_IF_KUNIT(pn_cache_unlink_free_chunks);
#endif

/*
 * A magazine is optional: a request goes on without one.  So its
 * allocation takes the request's context but neither its __GFP_NOFAIL
 * (an unbounded wait for something not needed) nor its charge, and gives
 * up early and quietly.
 */
static struct pn_mag *pn_mag_new(struct pn_cache *c, gfp_t gfp)
{
	struct pn_mag *m;

	gfp &= ~(__GFP_ACCOUNT | __GFP_ZERO | __GFP_NOFAIL);
	gfp |= __GFP_NOWARN | __GFP_NORETRY;
	m = kmalloc(struct_size(m, objs, c->mag_cap), gfp);
	if (m)
		m->nr = 0;
	return m;
}

/*
 * Add a chunk for a blocking caller and hand it the chunk's first object
 * (so no shrinker can see the chunk free before the caller took from it);
 * add an empty magazine too if the depot has none.
 */
static void __percpu *pn_grow(struct pn_cache *c, gfp_t gfp,
			      unsigned long caller)
{
	struct pn_mag *m = NULL;
	struct pn_chunk *ch;
	unsigned long flags;

	ch = pn_chunk_create(c, gfp);
	if (!ch)
		return NULL;
	if (!READ_ONCE(c->nr_empty_mags) && !(c->flags & PN_CACHE_LOCKED))
		m = pn_mag_new(c, gfp);

	spin_lock_irqsave(&c->lock, flags);
	c->chunk_creates++;
	INIT_LIST_HEAD(&ch->list);
	__clear_bit(0, ch->free_map);
	ch->nr_free = c->nr_objs - 1;
	list_add(&ch->list, ch->nr_free ? &c->chunks_partial : &c->chunks_full);
	c->nr_chunks++;
	c->nr_chunk_free += ch->nr_free;
	if (ch->callers)
		ch->callers[0] = caller;
	if (m) {
		list_add(&m->list, &c->empty_mags);
		c->nr_empty_mags++;
	}
	spin_unlock_irqrestore(&c->lock, flags);
	pn_stat_op(c, PN_STAT_ALLOC);
	return pn_obj(c, ch, 0);
}

/*
 * Give the depot one more empty magazine (up to depot_max): for the frees
 * to come, which must not allocate.  False if none was added.
 */
static bool pn_mag_add_empty(struct pn_cache *c, gfp_t gfp)
{
	unsigned long flags;
	struct pn_mag *m;

	if (READ_ONCE(c->nr_empty_mags) >= c->depot_max)
		return false;
	m = pn_mag_new(c, gfp);
	if (!m)
		return false;
	spin_lock_irqsave(&c->lock, flags);
	list_add(&m->list, &c->empty_mags);
	c->nr_empty_mags++;
	spin_unlock_irqrestore(&c->lock, flags);
	return true;
}

/*
 * maint_work: in process context, bring the reserve back to cache->reserve
 * free chunk objects (once a non-blocking request was seen) and keep a
 * couple of empty magazines, so that frees find one without allocating.
 */
static void pn_maint_fn(struct work_struct *work)
{
	struct pn_cache *c = container_of(work, struct pn_cache, maint_work);
	struct pn_chunk *ch;
	unsigned long flags;
	unsigned int i;

	for (i = 0; i < PN_MAINT_CHUNKS; i++) {
		if (!READ_ONCE(c->reserve_on) ||
		    READ_ONCE(c->nr_chunk_free) >= c->reserve)
			break;
		ch = pn_chunk_create(c, GFP_KERNEL | __GFP_NOWARN);
		if (!ch) {
			atomic_long_inc(&c->reserve_fails);
			break;
		}
		spin_lock_irqsave(&c->lock, flags);
		pn_chunk_link(c, ch);
		c->chunk_creates++;
		c->reserve_refills++;
		spin_unlock_irqrestore(&c->lock, flags);
	}
	if (c->flags & PN_CACHE_LOCKED)
		return;
	while (READ_ONCE(c->nr_empty_mags) < PN_EMPTY_MAGS_MIN)
		if (!pn_mag_add_empty(c, GFP_KERNEL))
			break;
}

/* ---- magazine layer ----------------------------------------------------- */

/* After a depot exchange: what the CPU's magazines hold now. */
static void pn_cc_held(struct pn_cpu_cache *cc)
{
	WRITE_ONCE(cc->held, (cc->loaded ? cc->loaded->nr : 0) +
			     (cc->prev ? cc->prev->nr : 0));
}

/*
 * Both locks held; loaded is NULL or empty, prev is NULL or empty.  Sets
 * *@refilled when a magazine was filled from the chunks.
 */
static void __percpu *pn_depot_alloc(struct pn_cache *c,
				     struct pn_cpu_cache *cc, bool atomic,
				     bool *refilled)
{
	void __percpu *obj;
	struct pn_mag *m;

	lockdep_assert_held(&c->lock);
	m = list_first_entry_or_null(&c->full_mags, struct pn_mag, list);
	if (m) {
		list_del(&m->list);
		c->nr_full_mags--;
		c->nr_cpu_mags++;
		c->depot_refills++;
		trace_pn_depot_refill(c->name, c->nr_full_mags);
		if (cc->prev) {
			list_add(&cc->prev->list, &c->empty_mags);
			c->nr_empty_mags++;
			c->nr_cpu_mags--;
		}
		cc->prev = cc->loaded;
		cc->loaded = m;
		return m->objs[--m->nr];
	}

	m = cc->loaded;
	if (!m && cc->prev) {
		m = cc->prev;
		cc->prev = NULL;
	} else if (!m) {
		m = list_first_entry_or_null(&c->empty_mags, struct pn_mag, list);
		if (m) {
			list_del(&m->list);
			c->nr_empty_mags--;
			c->nr_cpu_mags++;
		}
	}
	cc->loaded = m;
	if (m) {
		m->nr = pn_chunks_take(c, m->objs,
				       pn_takeable(c, atomic, c->mag_cap));
		*refilled = m->nr;
		return m->nr ? m->objs[--m->nr] : NULL;
	}
	return pn_chunks_take(c, &obj, pn_takeable(c, atomic, 1)) ? obj : NULL;
}

static void __percpu *pn_mag_alloc(struct pn_cache *c, bool atomic,
				   bool *refilled)
{
	struct pn_cpu_cache *cc;
	void __percpu *obj;
	unsigned long flags;
	struct pn_mag *m;

	local_lock_irqsave(&c->cpu->lock, flags);
	cc = this_cpu_ptr(c->cpu);
	m = cc->loaded;
	if (likely(m && m->nr))
		goto hit;
	if (cc->prev && cc->prev->nr) {
		swap(cc->loaded, cc->prev);
		m = cc->loaded;
		goto hit;
	}
	pn_stat(cc, PN_STAT_MAG_MISS);
	spin_lock(&c->lock);
	obj = pn_depot_alloc(c, cc, atomic, refilled);
	pn_cc_held(cc);
	spin_unlock(&c->lock);
	if (obj)
		pn_stat(cc, PN_STAT_ALLOC);
	local_unlock_irqrestore(&c->cpu->lock, flags);
	return obj;
hit:
	obj = m->objs[--m->nr];
	WRITE_ONCE(cc->held, cc->held - 1);
	pn_stat(cc, PN_STAT_MAG_HIT);
	pn_stat(cc, PN_STAT_ALLOC);
	local_unlock_irqrestore(&c->cpu->lock, flags);
	return obj;
}

/* Both locks held; loaded is NULL or full, prev is NULL or full. */
static void pn_depot_free(struct pn_cache *c, struct pn_cpu_cache *cc,
			  void __percpu *obj)
{
	struct pn_mag *m;

	lockdep_assert_held(&c->lock);
	if (cc->loaded) {
		if (cc->prev) {
			list_add(&cc->prev->list, &c->full_mags);
			c->nr_full_mags++;
			c->nr_cpu_mags--;
			c->depot_flushes++;
			trace_pn_depot_flush(c->name, c->nr_full_mags);
		}
		cc->prev = cc->loaded;
		cc->loaded = NULL;
	}
	m = list_first_entry_or_null(&c->empty_mags, struct pn_mag, list);
	if (m) {
		list_del(&m->list);
		c->nr_empty_mags--;
		c->nr_cpu_mags++;
		cc->loaded = m;
		m->objs[m->nr++] = obj;
	} else {
		/* A free never allocates: to the chunk, and more magazines later. */
		pn_chunk_put_obj(c, obj);
		pn_maint_kick(c);
	}
	/* Bound the depot: the oldest full magazines go back to the chunks. */
	while (c->nr_full_mags > c->depot_max) {
		m = list_last_entry(&c->full_mags, struct pn_mag, list);
		pn_mag_flush(c, m);
		list_move(&m->list, &c->empty_mags);
		c->nr_full_mags--;
		c->nr_empty_mags++;
	}
}

static void pn_mag_free(struct pn_cache *c, void __percpu *obj)
{
	struct pn_cpu_cache *cc;
	unsigned long flags;
	struct pn_mag *m;

	local_lock_irqsave(&c->cpu->lock, flags);
	cc = this_cpu_ptr(c->cpu);
	pn_stat(cc, PN_STAT_FREE);
	m = cc->loaded;
	if (likely(m && m->nr < c->mag_cap))
		goto hit;
	if (cc->prev && !cc->prev->nr) {
		swap(cc->loaded, cc->prev);
		m = cc->loaded;
		goto hit;
	}
	pn_stat(cc, PN_STAT_MAG_MISS);
	spin_lock(&c->lock);
	pn_depot_free(c, cc, obj);
	pn_cc_held(cc);
	spin_unlock(&c->lock);
	local_unlock_irqrestore(&c->cpu->lock, flags);
	return;
hit:
	m->objs[m->nr++] = obj;
	WRITE_ONCE(cc->held, cc->held + 1);
	pn_stat(cc, PN_STAT_MAG_HIT);
	local_unlock_irqrestore(&c->cpu->lock, flags);
}

/* ---- locked path: debug mode and magazine-less caches ------------------- */

static bool pn_poison_intact(struct pn_cache *c, void __percpu *obj)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		if (memchr_inv(per_cpu_ptr(obj, cpu), PN_POISON, c->size))
			return false;
	return true;
}

static void __percpu *pn_locked_alloc(struct pn_cache *c, bool atomic,
				      unsigned long caller)
{
	struct pn_chunk *ch;
	void __percpu *obj;
	unsigned long flags;

	spin_lock_irqsave(&c->lock, flags);
	if (!pn_chunks_take(c, &obj, pn_takeable(c, atomic, 1))) {
		spin_unlock_irqrestore(&c->lock, flags);
		return NULL;
	}
	if (c->flags & PN_CACHE_DEBUG) {
		ch = pn_chunk_lookup(obj);
		ch->callers[pn_idx(c, ch, obj)] = caller;
	}
	spin_unlock_irqrestore(&c->lock, flags);

	if ((c->flags & PN_CACHE_DEBUG) && !c->ctor && !pn_poison_intact(c, obj)) {
		atomic_long_inc(&c->poison_errors);
		pr_err_ratelimited("%s: free object modified after free (use after free?)\n",
				   c->name);
	}
	pn_stat_op(c, PN_STAT_ALLOC);
	return obj;
}

/* callers[] of an object being freed (poisoned with the lock dropped). */
#define PN_FREEING	1UL

/*
 * True if @idx of @ch is free, being freed, or @ch is being released: a
 * double free.  The allocation site is copied out under the lock, for the
 * report: once the lock and the RCU read side are dropped, @ch may be
 * freed.
 */
static bool pn_double_free(struct pn_cache *c, struct pn_chunk *ch,
			   unsigned int idx, unsigned long *site)
{
	lockdep_assert_held(&c->lock);
	if (!ch->dead && !test_bit(idx, ch->free_map) &&
	    !(ch->callers && ch->callers[idx] == PN_FREEING))
		return false;
	*site = ch->callers ? ch->callers[idx] : 0;
	if (*site == PN_FREEING)
		*site = 0;
	return true;
}

static void pn_report_double_free(struct pn_cache *c, unsigned int idx,
				  unsigned long site)
{
	atomic_long_inc(&c->double_frees);
	pr_err_ratelimited("%s: double free of object %u (allocated at %pS)\n",
			   c->name, idx, (void *)site);
}

static void pn_locked_free(struct pn_cache *c, void __percpu *obj)
{
	bool poison = (c->flags & PN_CACHE_DEBUG) && !c->ctor;
	unsigned long flags, site;
	unsigned int idx, cpu;
	struct pn_chunk *ch;

	rcu_read_lock();
	ch = pn_chunk_lookup(obj);
	if (!ch || ch->cache != c ||
	    (pn_addr(obj) - pn_addr(ch->base)) % c->size) {
		rcu_read_unlock();
		atomic_long_inc(&c->bad_frees);
		pr_err_ratelimited("%s: free of a pointer that is not an object of this cache\n",
				   c->name);
		return;
	}
	idx = pn_idx(c, ch, obj);
	spin_lock_irqsave(&c->lock, flags);
	if (pn_double_free(c, ch, idx, &site))
		goto double_free;
	if (poison) {
		/*
		 * Poison with the lock dropped: size x possible CPUs bytes
		 * is too long to keep interrupts off.  The free bit is still
		 * clear, so no allocation can hand the object out, and the
		 * chunk cannot be released, meanwhile; a second free finds
		 * PN_FREEING and is reported without touching the object.
		 */
		ch->callers[idx] = PN_FREEING;
		spin_unlock_irqrestore(&c->lock, flags);
		for_each_possible_cpu(cpu)
			memset(per_cpu_ptr(obj, cpu), PN_POISON, c->size);
		spin_lock_irqsave(&c->lock, flags);
		ch->callers[idx] = 0;
	}
	pn_chunk_put_idx(c, ch, idx);
	spin_unlock_irqrestore(&c->lock, flags);
	rcu_read_unlock();
	pn_stat_op(c, PN_STAT_FREE);
	return;

double_free:
	spin_unlock_irqrestore(&c->lock, flags);
	rcu_read_unlock();
	pn_report_double_free(c, idx, site);
}

/* ---- direct objects: one __alloc_percpu_gfp() each ---------------------- */

/*
 * Direct objects are tracked in pn_direct where a free needs more than
 * "not in a chunk": in debug mode (a second free is reported, never
 * handed to free_percpu()) and for a cache with a destructor (which runs
 * later, from drain_work).  The others keep the free of percpu_counter
 * users as it was: no lookup beyond the chunk tree.
 */
static bool pn_direct_tracked(struct pn_cache *c)
{
	return (c->flags & PN_CACHE_DEBUG) || c->dtor;
}

/* Enter @obj of @c in pn_direct.  Returns 0 or -ENOMEM. */
static int pn_direct_track(struct pn_cache *c, void __percpu *obj, gfp_t gfp)
{
	unsigned long flags;
	int ret;

	/* Charged as the object is (the caller's __GFP_ACCOUNT), quietly. */
	gfp = (gfp & ~__GFP_ZERO) | __GFP_NOWARN;
	if (gfpflags_allow_blocking(gfp))
		return xa_insert_irq(&pn_direct, pn_addr(obj), c, gfp);
	xa_lock_irqsave(&pn_direct, flags);
	ret = __xa_insert(&pn_direct, pn_addr(obj), c, gfp);
	xa_unlock_irqrestore(&pn_direct, flags);
	return ret;
}

static void pn_direct_untrack(void __percpu *obj)
{
	unsigned long flags;

	xa_lock_irqsave(&pn_direct, flags);
	__xa_erase(&pn_direct, pn_addr(obj));
	xa_unlock_irqrestore(&pn_direct, flags);
}

static void __percpu *pn_direct_alloc(struct pn_cache *c, size_t size,
				      gfp_t gfp)
{
	void __percpu *obj;

	/* Zeroed on every possible CPU by the kernel. */
	obj = __alloc_percpu_gfp(size, c->align, gfp & ~__GFP_ZERO);
	if (!obj)
		return NULL;
	if (pn_direct_tracked(c) && pn_direct_track(c, obj, gfp))
		goto free;
	if (c->ctor && c->ctor(obj, c->priv, gfp))
		goto untrack;
	atomic_long_inc(&c->direct_allocs);
	if (c->sized) {
		atomic_long_inc(&pn_sized_direct);
	} else {
		atomic_long_inc(&c->nr_direct);
		pn_stat_op(c, PN_STAT_ALLOC);
	}
	return obj;

untrack:
	if (pn_direct_tracked(c))
		pn_direct_untrack(obj);
free:
	free_percpu(obj);
	return NULL;
}

/*
 * A direct object has left pn_direct (or was never in it): destruct
 * (@dtor), free, count.
 */
static void pn_direct_release(struct pn_cache *c, void __percpu *obj, bool dtor)
{
	if (dtor && c->dtor)
		c->dtor(obj, c->priv);
	free_percpu(obj);
	if (c->sized) {
		atomic_long_dec(&pn_sized_direct);
	} else {
		atomic_long_dec(&c->nr_direct);
		pn_stat_op(c, PN_STAT_FREE);
	}
}

static bool pn_in_chunk(void __percpu *obj)
{
	bool found;

	rcu_read_lock();
	found = pn_chunk_lookup(obj);
	rcu_read_unlock();
	return found;
}

/* A free of a pointer that is no live object: counted, reported, dropped. */
static void pn_bad_free(struct pn_cache *c, const char *what)
{
	atomic_long_inc(&c->bad_frees);
	pr_err_ratelimited("%s: free of %s\n", c->name, what);
}

/*
 * Free @obj if it is a direct object: true if it was one (freed, or
 * queued for its destructor), or is no object at all (reported).  A
 * destructor may sleep and this may run in any context, so a destructor
 * cache's object is only marked here and destructed by drain_work; once
 * the cache was destroyed, not at all (its owner may be gone, as for the
 * objects of kept chunks).
 */
static bool pn_direct_free(struct pn_cache *c, void __percpu *obj)
{
	unsigned long flags, idx = pn_addr(obj);
	struct pn_cache *owner;

	if (!pn_direct_tracked(c)) {
		if (pn_in_chunk(obj))
			return false;
		pn_direct_release(c, obj, false);
		return true;
	}
	/* Chunk objects, the common case, take no lock here. */
	if (!xa_load(&pn_direct, idx)) {
		if (pn_in_chunk(obj))
			return false;
		pn_bad_free(c, "a pointer that is no live object (a second free?)");
		return true;
	}
	xa_lock_irqsave(&pn_direct, flags);
	owner = xa_load(&pn_direct, idx);
	if (owner != c || xa_get_mark(&pn_direct, idx, PN_DIRECT_DYING)) {
		xa_unlock_irqrestore(&pn_direct, flags);
		if (!owner || owner != c) {
			pn_bad_free(c, "an object of another cache");
		} else {
			atomic_long_inc(&c->double_frees);
			pr_err_ratelimited("%s: double free of a direct object\n",
					   c->name);
		}
		return true;
	}
	if (c->dtor && !READ_ONCE(c->dead)) {
		__xa_set_mark(&pn_direct, idx, PN_DIRECT_DYING);
		xa_unlock_irqrestore(&pn_direct, flags);
		queue_work(pn_maint_wq, &c->drain_work);
		return true;
	}
	__xa_erase(&pn_direct, idx);
	xa_unlock_irqrestore(&pn_direct, flags);
	pn_direct_release(c, obj, false);
	return true;
}

/*
 * Destruct and free @c's direct objects that pn_direct_free() marked.
 * Returns how many.
 */
static unsigned long pn_direct_reap(struct pn_cache *c)
{
	unsigned long idx, flags, n = 0;
	struct pn_cache *owner;

	might_sleep();
	xa_for_each_marked(&pn_direct, idx, owner, PN_DIRECT_DYING) {
		if (owner != c)
			continue;
		xa_lock_irqsave(&pn_direct, flags);
		owner = __xa_cmpxchg(&pn_direct, idx, c, NULL, GFP_NOWAIT);
		xa_unlock_irqrestore(&pn_direct, flags);
		if (owner != c)
			continue;
		pn_direct_release(c, (__force void __percpu *)idx, true);
		n++;
		cond_resched();
	}
	return n;
}

/* ---- cache API ---------------------------------------------------------- */

/*
 * Zero @bytes of @obj on every possible CPU.  Small objects (the common
 * case for counters) are cleared with word stores: a memset() call per CPU
 * costs more than the stores themselves.
 */
static void pn_zero(void __percpu *obj, size_t bytes)
{
	unsigned int cpu, i;
	u64 *w;

	if (bytes <= PN_ZERO_WORDS_MAX && IS_ALIGNED(pn_addr(obj) | bytes, sizeof(u64))) {
		for_each_possible_cpu(cpu) {
			w = per_cpu_ptr(obj, cpu);
			for (i = 0; i < bytes / sizeof(u64); i++)
				WRITE_ONCE(w[i], 0);
		}
		return;
	}
	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(obj, cpu), 0, bytes);
}

static void __percpu *__pn_cache_alloc(struct pn_cache *c, size_t size,
				       gfp_t gfp, size_t zero_bytes,
				       unsigned long caller)
{
	bool atomic = !gfpflags_allow_blocking(gfp);
	bool refilled = false;
	void __percpu *obj;

	struct obj_cgroup *objcg = NULL;
	gfp_t direct_gfp = gfp;

	might_alloc(gfp);
	if (unlikely(gfp & __GFP_ACCOUNT)) {
		/* A module: the kernel's allocator charges the object. */
		if (PN_ACCOUNTED_DIRECT)
			return pn_direct_alloc(c, size, gfp);
		if (pn_memcg_enabled() && !pn_memcg_charge(c, gfp, &objcg))
			return NULL;
		gfp &= ~__GFP_ACCOUNT;
	}
	if (unlikely(c->flags & PN_CACHE_LOCKED)) {
		obj = pn_locked_alloc(c, atomic, caller);
	} else {
		obj = pn_mag_alloc(c, atomic, &refilled);
		/* A magazine's worth left the chunks: room for their frees. */
		if (unlikely(refilled) && !atomic)
			pn_mag_add_empty(c, gfp);
	}
	if (unlikely(!obj)) {
		if (atomic) {
			if (!READ_ONCE(c->reserve_on))
				WRITE_ONCE(c->reserve_on, true);
			pn_maint_kick(c);
			/* Constructed objects cannot be made here. */
			if (c->ctor)
				goto out;
			/* the kernel's allocator charges a direct object */
			if (objcg) {
				pn_memcg_cancel(c, objcg);
				objcg = NULL;
			}
			obj = pn_direct_alloc(c, size, direct_gfp);
			goto out;
		}
		obj = pn_grow(c, gfp, caller);
		if (!obj)
			goto out;
	}
	if (zero_bytes)
		pn_zero(obj, zero_bytes);
out:
	if (unlikely(objcg)) {
		if (obj)
			pn_memcg_commit(c, obj, objcg);
		else
			pn_memcg_cancel(c, objcg);
	}
	return obj;
}

/**
 * pn_cache_alloc() - allocate one per-CPU object from a cache
 * @cache: the cache
 * @gfp: allocation flags.  A blocking @gfp (GFP_KERNEL) may create a chunk
 *	 and run the constructor with @gfp.  Non-blocking flags (GFP_NOWAIT,
 *	 GFP_ATOMIC) are served from what the cache holds, its reserve
 *	 included, else (no constructor) from the kernel's per-CPU allocator.
 *	 __GFP_ACCOUNT: the object is charged to the caller's memcg until it
 *	 is freed.  Built in, it is served as any other; in a module it comes
 *	 from the kernel's allocator, constructed with @gfp.
 *
 * The object is constructed if the cache has a constructor, zeroed on
 * every possible CPU if the cache was created with PN_CACHE_ZERO (or
 * @gfp has __GFP_ZERO and there is no constructor), and otherwise holds
 * whatever its previous user left in it.
 *
 * Context: Process context if @gfp allows blocking.  Otherwise any context
 * in which a spinlock_t may be taken: not NMI, never under a
 * raw_spinlock_t, and on PREEMPT_RT neither hard-IRQ context nor a section
 * with preemption or interrupts disabled (a spinlock_t section is fine).
 * Return: a __percpu pointer, or NULL if no memory (or the constructor
 * failed, which the caller sees as -ENOMEM).
 */
void __percpu *pn_cache_alloc(struct pn_cache *cache, gfp_t gfp)
{
	bool zero = (cache->flags & PN_CACHE_ZERO) ||
		    (!cache->ctor && (gfp & __GFP_ZERO));

	return __pn_cache_alloc(cache, cache->size, gfp,
				zero ? cache->size : 0, _RET_IP_);
}
EXPORT_SYMBOL_GPL(pn_cache_alloc);

/**
 * pn_cache_free() - free an object to its cache
 * @cache: the cache it was allocated from
 * @obj: the object, or NULL
 *
 * If the cache has a constructor, @obj must be in its constructed state
 * (see pn_cache_create()).  Never allocates, never sleeps.  The destructor
 * of a direct object (in a module: from an accounted allocation) runs
 * later, from the cache's work item.  A charged object is uncharged.
 *
 * Context: As pn_cache_alloc() with a non-blocking gfp.
 */
void pn_cache_free(struct pn_cache *cache, void __percpu *obj)
{
	if (!obj)
		return;
	if (unlikely(atomic_long_read(&cache->nr_direct)) &&
	    pn_direct_free(cache, obj))
		return;
	if (unlikely(READ_ONCE(cache->charged)))
		pn_memcg_uncharge(cache, obj, NULL);
	if (unlikely(cache->flags & PN_CACHE_LOCKED))
		pn_locked_free(cache, obj);
	else
		pn_mag_free(cache, obj);
}
EXPORT_SYMBOL_GPL(pn_cache_free);

/*
 * Reclaim from one cache: flush full depot magazines PN_RECLAIM_BATCH at a
 * time and unlink free chunks PN_RECLAIM_CHUNKS at a time (the lock is
 * dropped in between, so interrupts are never off for a whole depot or
 * chunk list), beyond the reserve (all free chunks if @all), and free
 * surplus empty magazines.  Stops once @nr objects were scanned.  The
 * unlinked chunks are released here (process context, no
 * lock held: destructors run), or with @defer (the shrinker: memory
 * reclaim must not run destructors) handed to drain_work.  Returns the
 * objects released, or handed over for release.
 */
static unsigned long pn_cache_reclaim(struct pn_cache *c, unsigned long nr,
				      unsigned long *scanned, bool all,
				      bool defer)
{
	unsigned long flags, freed = 0, seen = 0, failed = 0;
	struct pn_mag *m, *tm;
	struct pn_chunk *ch;
	LIST_HEAD(chunks);
	LIST_HEAD(mags);
	bool progress, handed;
	unsigned int i;

	do {
		progress = false;
		spin_lock_irqsave(&c->lock, flags);
		for (i = 0; i < PN_RECLAIM_BATCH && seen < nr; i++) {
			m = list_first_entry_or_null(&c->full_mags,
						     struct pn_mag, list);
			if (!m)
				break;
			seen += m->nr;
			pn_mag_flush(c, m);
			list_move(&m->list, &c->empty_mags);
			c->nr_full_mags--;
			c->nr_empty_mags++;
			progress = true;
		}
		if (seen < nr) {
			unsigned long n = pn_chunks_unlink_free(c, &chunks,
					min(nr - seen, PN_RECLAIM_CHUNKS * c->nr_objs),
					all);

			seen += n;
			progress |= n;
		}
		while (c->nr_empty_mags > PN_EMPTY_MAGS_MIN) {
			m = list_first_entry(&c->empty_mags, struct pn_mag, list);
			list_move(&m->list, &mags);
			c->nr_empty_mags--;
		}
		handed = defer && !list_empty(&chunks);
		if (handed) {
			list_for_each_entry(ch, &chunks, list)
				freed += c->nr_objs;
			list_splice_init(&chunks, &c->chunks_dying);
		}
		spin_unlock_irqrestore(&c->lock, flags);
		if (handed)
			queue_work(pn_maint_wq, &c->drain_work);
		else if (!defer)
			freed += pn_chunks_release(c, &chunks, &failed);
		INIT_LIST_HEAD(&chunks);
		list_for_each_entry_safe(m, tm, &mags, list)
			kfree(m);
		INIT_LIST_HEAD(&mags);
		cond_resched();
		/* A failed release is not retried at once: memory is short. */
	} while (progress && !failed && seen < nr);
	if (scanned)
		*scanned += seen;
	return freed;
}

static void pn_drain_fn(struct work_struct *work)
{
	struct pn_drain_work *dw = container_of(work, struct pn_drain_work, work);
	struct pn_cache *c = dw->cache;
	unsigned long flags;

	local_lock_irqsave(&c->cpu->lock, flags);
	spin_lock(&c->lock);
	pn_drain_cpu(c, this_cpu_ptr(c->cpu));
	spin_unlock(&c->lock);
	local_unlock_irqrestore(&c->cpu->lock, flags);
}

/*
 * Empty every online CPU's magazines, each by a work item on that CPU
 * under its local lock.  A CPU with no magazine attached is skipped, and
 * with @held_only one whose magazines hold nothing (racy hints: what
 * changes meanwhile is left, as after any drain).
 */
static void pn_drain_all_cpus(struct pn_cache *c, bool held_only)
{
	struct pn_drain_work *dw;
	struct pn_cpu_cache *cc;
	unsigned int cpu;

	might_sleep();
	mutex_lock(&pn_drain_lock);
	cpus_read_lock();
	for_each_online_cpu(cpu) {
		dw = per_cpu_ptr(&pn_drain_works, cpu);
		cc = per_cpu_ptr(c->cpu, cpu);
		dw->cache = NULL;
		if (!READ_ONCE(cc->loaded) && !READ_ONCE(cc->prev))
			continue;
		if (held_only && !READ_ONCE(cc->held))
			continue;
		dw->cache = c;
		INIT_WORK(&dw->work, pn_drain_fn);
		queue_work_on(cpu, pn_drain_wq, &dw->work);
	}
	for_each_online_cpu(cpu) {
		dw = per_cpu_ptr(&pn_drain_works, cpu);
		if (dw->cache)
			flush_work(&dw->work);
	}
	cpus_read_unlock();
	mutex_unlock(&pn_drain_lock);
}

/*
 * drain_work: what a shrinker scan leaves to process context.  Release
 * the chunks it unlinked (destructors run here, with no lock held), and if
 * it asked for it, empty the CPUs' magazines (that takes the CPU hotplug
 * lock) and reclaim what that freed, beyond the reserve.
 */
static void pn_drain_work_fn(struct work_struct *work)
{
	struct pn_cache *c = container_of(work, struct pn_cache, drain_work);
	unsigned long flags, budget;
	LIST_HEAD(chunks);
	bool drain;

	pn_direct_reap(c);
	spin_lock_irqsave(&c->lock, flags);
	list_splice_init(&c->chunks_dying, &chunks);
	drain = c->drain_wanted;
	budget = c->drain_budget;
	c->drain_wanted = false;
	c->drain_budget = 0;
	spin_unlock_irqrestore(&c->lock, flags);
	pn_chunks_release(c, &chunks, NULL);
	if (drain) {
		/* Only CPUs that hold objects; then what the scans wanted. */
		pn_drain_all_cpus(c, true);
		pn_cache_reclaim(c, budget, NULL, false, false);
	}
}

/**
 * pn_cache_shrink() - return every cached object to its chunk, release
 *		       the chunks that are then entirely free
 * @cache: the cache
 *
 * Every online CPU's magazines are emptied (by a work item on that CPU),
 * the depot is flushed, free chunks beyond the reserve for non-blocking
 * callers are destructed and released.
 *
 * Context: Process context, may sleep.  It takes the CPU hotplug lock:
 * not from memory reclaim, not from a CPU hotplug callback, not with
 * cpus_read_lock() held.  No pcpu_next lock is held while destructors run.
 * Return: the number of objects released with their chunks.
 */
unsigned long pn_cache_shrink(struct pn_cache *cache)
{
	might_sleep();
	if (!(cache->flags & PN_CACHE_LOCKED))
		pn_drain_all_cpus(cache, false);
	return pn_cache_reclaim(cache, ULONG_MAX, NULL, false, false);
}
EXPORT_SYMBOL_GPL(pn_cache_shrink);

/*
 * Objects per magazine: at most PN_MAG_MAX, fewer for large objects, and
 * so that one CPU's two magazines pin at most pn_cpu_cache_bytes over all
 * possible CPUs' copies.  0 means no magazines.
 */
static unsigned int pn_mag_cap(unsigned int size)
{
	unsigned long fit = READ_ONCE(pn_cpu_cache_bytes) /
			    (2UL * size * num_possible_cpus());
	unsigned int cap;

	if (size <= 256)
		cap = PN_MAG_MAX;
	else if (size <= 2048)
		cap = 16;
	else
		cap = 8;
	return min_t(unsigned long, cap, fit);
}

static void pn_cache_put(struct pn_cache *c)
{
	if (refcount_dec_and_test(&c->refs))
		complete(&c->unpinned);
}

/**
 * pn_cache_create() - create a per-CPU object cache
 * @name: name for statistics and messages (shorter than PN_CACHE_NAME_MAX)
 * @size: object size, 1 .. PN_ALLOC_MAX_SIZE bytes
 * @align: alignment, a power of two up to PAGE_SIZE; 0 means 8
 * @flags: PN_CACHE_ZERO, PN_CACHE_DEBUG
 * @ctor: constructor or NULL; not allowed together with PN_CACHE_ZERO
 * @dtor: destructor or NULL; requires @ctor
 * @priv: passed to @ctor and @dtor
 *
 * Constructed-object contract: with a constructor, objects are allocated
 * in constructed state and must be freed in constructed state; the
 * constructor runs once per object lifetime in its chunk, the destructor
 * when the chunk is released (shrinker, pn_cache_shrink(), destroy).
 *
 * Context: Process context, may sleep.
 * Return: the cache, or ERR_PTR(-EINVAL) for bad arguments, or
 * ERR_PTR(-ENOMEM).
 */
struct pn_cache *pn_cache_create(const char *name, size_t size, size_t align,
				 unsigned int flags, pn_ctor_t ctor,
				 pn_dtor_t dtor, void *priv)
{
	unsigned long depot;
	struct pn_cache *c;
	unsigned int cpu;
	int ret;

	if (!align)
		align = 8;
	if (!name || strlen(name) >= PN_CACHE_NAME_MAX || !size ||
	    size > PN_ALLOC_MAX_SIZE || !is_power_of_2(align) ||
	    align > PAGE_SIZE || (flags & ~PN_CACHE_VALID_FLAGS) ||
	    (ctor && (flags & PN_CACHE_ZERO)) || (dtor && !ctor))
		return ERR_PTR(-EINVAL);

	/* A power-of-two kmalloc() size is aligned to it: line-aligned. */
	c = kzalloc(roundup_pow_of_two(sizeof(*c)), GFP_KERNEL);
	if (!c)
		return ERR_PTR(-ENOMEM);
	strscpy(c->name, name, sizeof(c->name));
	c->align = align;
	c->size = ALIGN(size, align);
	if (c->size > PN_ALLOC_MAX_SIZE) {
		ret = -EINVAL;
		goto free_cache;
	}
	c->flags = flags | (pn_alloc_debug ? PN_CACHE_DEBUG : 0);
	c->nr_objs = clamp(PN_CHUNK_TARGET / c->size, 1U, PN_CHUNK_MAX_OBJS);
	c->chunk_bytes = c->nr_objs * c->size;
	c->mag_cap = pn_mag_cap(c->size);
	if (!c->mag_cap)
		c->flags |= PN_CACHE_NOMAGS;
	depot = c->mag_cap ? PN_DEPOT_BYTES /
		((unsigned long)c->mag_cap * c->size * num_possible_cpus()) : 0;
	c->depot_max = clamp(depot, 1UL, (unsigned long)PN_DEPOT_MAX);
	c->reserve = clamp(c->mag_cap, 1U, c->nr_objs);
	c->ctor = ctor;
	c->dtor = dtor;
	c->priv = priv;
	spin_lock_init(&c->lock);
	INIT_LIST_HEAD(&c->full_mags);
	INIT_LIST_HEAD(&c->empty_mags);
	INIT_LIST_HEAD(&c->chunks_partial);
	INIT_LIST_HEAD(&c->chunks_free);
	INIT_LIST_HEAD(&c->chunks_full);
	INIT_LIST_HEAD(&c->chunks_dying);
	INIT_LIST_HEAD(&c->shrink_node);
	INIT_WORK(&c->maint_work, pn_maint_fn);
	INIT_WORK(&c->drain_work, pn_drain_work_fn);
	refcount_set(&c->refs, 1);
	init_completion(&c->unpinned);

	c->cpu = alloc_percpu_gfp(struct pn_cpu_cache, GFP_KERNEL | __GFP_NOWARN);
	if (!c->cpu) {
		ret = -ENOMEM;
		goto free_cache;
	}
	for_each_possible_cpu(cpu)
		local_lock_init(&per_cpu_ptr(c->cpu, cpu)->lock);

	ret = cpuhp_state_add_instance_nocalls(pn_cpuhp_state, &c->cpuhp_node);
	if (ret)
		goto free_cpu;

	mutex_lock(&pn_caches_lock);
	list_add_tail(&c->node, &pn_caches);
	mutex_unlock(&pn_caches_lock);
	return c;

free_cpu:
	free_percpu(c->cpu);
free_cache:
	kfree(c);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_GPL(pn_cache_create);

static void pn_list_leaks(struct pn_cache *c)
{
	struct list_head *lists[] = { &c->chunks_partial, &c->chunks_full };
	unsigned int idx, shown = 0, nr = 0, i;
	struct pn_chunk *ch;

	lockdep_assert_held(&c->lock);
	for (i = 0; i < ARRAY_SIZE(lists); i++) {
		list_for_each_entry(ch, lists[i], list) {
			for_each_clear_bit(idx, ch->free_map, c->nr_objs) {
				if (shown < PN_LEAKS_LISTED) {
					pr_warn("%s: leaked object %u of chunk %u, allocated at %pS\n",
						c->name, idx, nr,
						(void *)ch->callers[idx]);
					shown++;
				}
			}
			nr++;
		}
	}
}

/* Free a cache that holds no chunk and no direct object any more. */
static void pn_cache_free_struct(struct pn_cache *c)
{
	free_percpu(c->cpu);
	kfree(c);
}

/**
 * pn_cache_destroy() - release a cache and all its memory
 * @cache: the cache, or NULL
 *
 * Every object must have been freed, and no other user of @cache may
 * remain.  If objects are still allocated, one warning gives their number
 * (listed, in debug mode) and the cache is not freed: their memory stays
 * valid, pn_cache_free() of them still works (without magazines), and
 * what is left is released when pcpu_next is unloaded, as
 * kmem_cache_destroy() leaves a cache with objects in place.
 *
 * Context: Process context, may sleep.  It waits for the cache's work
 * items, which run its constructor and destructor and take the CPU hotplug
 * lock: not from a constructor or destructor of @cache, not holding a lock
 * they take, not from a CPU hotplug callback.
 * Return: the number of objects that were still allocated.
 */
unsigned long pn_cache_destroy(struct pn_cache *cache)
{
	unsigned long flags, live = 0, stuck;
	struct pn_cache *c = cache;
	unsigned int cpu, tries;
	LIST_HEAD(chunks);
	struct pn_mag *m, *tm;
	struct pn_chunk *ch;
	bool empty, busy;
	LIST_HEAD(mags);

	if (!c)
		return 0;
	might_sleep();
	mutex_lock(&pn_caches_lock);
	list_del(&c->node);
	mutex_unlock(&pn_caches_lock);
	/* No new shrinker pin can be taken; wait for the ones taken. */
	pn_cache_put(c);
	wait_for_completion(&c->unpinned);
	cancel_work_sync(&c->drain_work);
	pn_direct_reap(c);
	WRITE_ONCE(c->dead, true);
	cancel_work_sync(&c->maint_work);
	cpuhp_state_remove_instance_nocalls(pn_cpuhp_state, &c->cpuhp_node);

	/* Nobody else uses the cache: empty every CPU, one lock hold each. */
	for_each_possible_cpu(cpu) {
		spin_lock_irqsave(&c->lock, flags);
		pn_drain_cpu(c, per_cpu_ptr(c->cpu, cpu));
		spin_unlock_irqrestore(&c->lock, flags);
	}
	/*
	 * What a scan left for drain_work, then the depot in batches and every
	 * free chunk, reserve included; a release that failed for want of
	 * memory is tried again a few times.
	 */
	spin_lock_irqsave(&c->lock, flags);
	list_splice_init(&c->chunks_dying, &chunks);
	spin_unlock_irqrestore(&c->lock, flags);
	pn_chunks_release(c, &chunks, NULL);
	for (tries = 0; tries < PN_DESTROY_TRIES; tries++) {
		pn_cache_reclaim(c, ULONG_MAX, NULL, true, false);
		spin_lock_irqsave(&c->lock, flags);
		busy = c->nr_free_chunks || c->nr_full_mags;
		spin_unlock_irqrestore(&c->lock, flags);
		if (!busy)
			break;
		usleep_range(1000, 2000);
	}

	spin_lock_irqsave(&c->lock, flags);
	list_splice_init(&c->empty_mags, &mags);
	c->nr_empty_mags = 0;
	list_for_each_entry(ch, &c->chunks_partial, list)
		live += c->nr_objs - ch->nr_free;
	list_for_each_entry(ch, &c->chunks_full, list)
		live += c->nr_objs;
	if (live && (c->flags & PN_CACHE_DEBUG))
		pn_list_leaks(c);
	/* From now on, frees (of the live objects) go to the chunks. */
	c->flags |= PN_CACHE_NOMAGS;
	empty = !c->nr_chunks;
	stuck = c->nr_free_chunks;
	spin_unlock_irqrestore(&c->lock, flags);

	list_for_each_entry_safe(m, tm, &mags, list)
		kfree(m);
	live += atomic_long_read(&c->nr_direct);
	if (!live && empty) {
		pn_cache_free_struct(c);
		return 0;
	}
	if (stuck)
		pr_warn("%s: %lu free chunks could not be released (no memory); kept, not destructed, until unload\n",
			c->name, stuck);
	if (live)
		pr_warn("%s: destroyed with %lu objects still allocated; cache kept for them\n",
			c->name, live);
	mutex_lock(&pn_caches_lock);
	list_add_tail(&c->node, &pn_dead_caches);
	mutex_unlock(&pn_caches_lock);
	return live;
}
EXPORT_SYMBOL_GPL(pn_cache_destroy);

/*
 * Objects in one CPU's magazines.  cache->lock keeps both magazines from
 * leaving the CPU (and so from being freed); the CPU may still move objects
 * in and out, so this is a snapshot, exact when the CPU is quiet or dead.
 */
static unsigned int pn_cpu_cached(struct pn_cache *c, struct pn_cpu_cache *cc)
{
	unsigned int n = 0;
	struct pn_mag *m;

	lockdep_assert_held(&c->lock);
	m = READ_ONCE(cc->loaded);
	if (m)
		n += READ_ONCE(m->nr);
	m = READ_ONCE(cc->prev);
	if (m)
		n += READ_ONCE(m->nr);
	return n;
}

/**
 * pn_cache_get_stats() - snapshot a cache's counters
 * @cache: the cache
 * @st: filled in
 *
 * Per-CPU counters and the CPUs' magazines are read without stopping the
 * CPUs, so a snapshot taken while the cache is in use is approximate; one
 * taken while it is quiet is exact.  @st->in_use is derived from the chunk
 * accounting (see struct pn_cache_stats), so it is kept whether or not the
 * fast-path statistics (allocs, frees, mag_hits, mag_misses: 0 without
 * CONFIG_PCPU_NEXT_STATS) are compiled in.
 *
 * Context: Process context (it visits every possible CPU and the depot
 * under the cache lock).
 */
void pn_cache_get_stats(struct pn_cache *cache, struct pn_cache_stats *st)
{
	struct pn_cache *c = cache;
	unsigned long flags, held;
	struct pn_cpu_cache *cc;
	u64 depot = 0, cached;
	unsigned int cpu;
	struct pn_mag *m;

	memset(st, 0, sizeof(*st));
	spin_lock_irqsave(&c->lock, flags);
	for_each_possible_cpu(cpu) {
		cc = per_cpu_ptr(c->cpu, cpu);
#ifdef CONFIG_PCPU_NEXT_STATS
		/* Racy snapshot of counters the CPU owns. */
		st->allocs += READ_ONCE(cc->stat[PN_STAT_ALLOC]);
		st->frees += READ_ONCE(cc->stat[PN_STAT_FREE]);
		st->mag_hits += READ_ONCE(cc->stat[PN_STAT_MAG_HIT]);
		st->mag_misses += READ_ONCE(cc->stat[PN_STAT_MAG_MISS]);
#endif
		st->cpu_cached += pn_cpu_cached(c, cc);
	}
	/* Objects of live chunks not free in them: handed out or in a magazine. */
	held = c->nr_chunks * c->nr_objs - c->nr_chunk_free;
	list_for_each_entry(m, &c->full_mags, list)
		depot += m->nr;
	st->depot_refills = c->depot_refills;
	st->depot_flushes = c->depot_flushes;
	st->chunks = c->nr_chunks;
	st->free_chunks = c->nr_free_chunks;
	st->chunk_free_objs = c->nr_chunk_free;
	st->chunk_creates = c->chunk_creates;
	st->chunk_releases = c->chunk_releases;
	st->release_fails = c->release_fails;
	st->reserve_refills = c->reserve_refills;
	st->full_mags = c->nr_full_mags;
	st->empty_mags = c->nr_empty_mags;
	st->mem_bytes = c->nr_chunks * ((u64)c->chunk_bytes * num_possible_cpus() +
					 struct_size_t(struct pn_chunk, free_map,
						       BITS_TO_LONGS(c->nr_objs)) +
					 (pn_memcg_enabled() ?
					  c->nr_objs * sizeof(struct obj_cgroup *) : 0)) +
			(u64)(c->nr_full_mags + c->nr_empty_mags + c->nr_cpu_mags) *
			struct_size_t(struct pn_mag, objs, c->mag_cap);
	spin_unlock_irqrestore(&c->lock, flags);
	/* The CPUs' magazines are a racy snapshot: clamp rather than wrap. */
	cached = st->cpu_cached + depot;
	st->mag_cap = c->mag_cap;
	st->reserve = READ_ONCE(c->reserve_on) ? c->reserve : 0;
	st->direct_live = atomic_long_read(&c->nr_direct);
	st->in_use = (held > cached ? held - cached : 0) + st->direct_live;
	st->direct_allocs = atomic_long_read(&c->direct_allocs);
	st->chunk_fails = atomic_long_read(&c->chunk_fails);
	st->reserve_fails = atomic_long_read(&c->reserve_fails);
	st->double_frees = atomic_long_read(&c->double_frees);
	st->poison_errors = atomic_long_read(&c->poison_errors);
	st->bad_frees = atomic_long_read(&c->bad_frees);
}
EXPORT_SYMBOL_GPL(pn_cache_get_stats);

/* ---- sized API ---------------------------------------------------------- */

static struct pn_cache *pn_size_class(size_t size, size_t align)
{
	size_t sz;

	/* As __alloc_percpu_gfp(): 0 asks for no particular alignment. */
	if (!align)
		align = 1;
	if (!size || size > PN_ALLOC_MAX_SIZE ||
	    !is_power_of_2(align) || align > PAGE_SIZE)
		return NULL;
	sz = max3(size, align, (size_t)8);
	/* align may exceed the largest class on 64 KiB-page kernels. */
	if (sz > PN_ALLOC_MAX_SIZE)
		return NULL;
	return pn_size_caches[order_base_2(sz) - 3];
}

/**
 * pn_alloc_percpu_gfp() - drop-in replacement for __alloc_percpu_gfp()
 * @size: bytes, 1 .. PN_ALLOC_MAX_SIZE
 * @align: alignment, 0 or a power of two up to PAGE_SIZE
 * @gfp: allocation flags, as for pn_cache_alloc() (__GFP_ACCOUNT requests
 *	 are charged to the caller's memcg)
 *
 * Served from the power-of-two size class that fits @size and @align;
 * objects are naturally aligned up to PAGE_SIZE.  The first @size bytes
 * (rounded up to 8) are zeroed on every possible CPU.
 *
 * Context: As pn_cache_alloc().
 * Return: a __percpu pointer to be freed with pn_free_percpu(), or NULL.
 */
void __percpu *pn_alloc_percpu_gfp(size_t size, size_t align, gfp_t gfp)
{
	struct pn_cache *c = pn_size_class(size, align);

	if (!c)
		return NULL;
	/* The class object is a power of two >= 8: rounding stays inside. */
	return __pn_cache_alloc(c, size, gfp, ALIGN(size, sizeof(u64)),
				_RET_IP_);
}
EXPORT_SYMBOL_GPL(pn_alloc_percpu_gfp);

/**
 * pn_cache_of() - the cache an object belongs to
 * @ptr: a __percpu pointer
 *
 * Context: Any context but NMI.
 * Return: the cache whose chunk contains @ptr, or NULL (also for a direct
 * object, which lives in no chunk).
 */
struct pn_cache *pn_cache_of(void __percpu *ptr)
{
	struct pn_cache *c = NULL;
	struct pn_chunk *ch;

	rcu_read_lock();
	ch = pn_chunk_lookup(ptr);
	if (ch)
		c = ch->cache;
	rcu_read_unlock();
	return c;
}
EXPORT_SYMBOL_GPL(pn_cache_of);

/**
 * pn_free_percpu() - drop-in replacement for free_percpu()
 * @ptr: from pn_alloc_percpu_gfp(), or NULL
 *
 * Finds the size class from the pointer (one lockless tree lookup).  A
 * pointer in no chunk is a direct object (accounted in a module, or an
 * atomic fallback) and goes to free_percpu().  While no direct object is live,
 * and in debug mode unless it is one, such a pointer (and an object of a
 * cache of pn_cache_create()) is reported and ignored instead.  Never
 * allocates.
 *
 * Context: As pn_cache_free().
 */
void pn_free_percpu(void __percpu *ptr)
{
	struct pn_cache *c;

	if (!ptr)
		return;
	c = pn_cache_of(ptr);
	if (!c && atomic_long_read(&pn_sized_direct)) {
		/*
		 * A direct object of a class: in pn_direct in debug mode,
		 * else known by elimination (its count is global anyway).
		 */
		c = xa_load(&pn_direct, pn_addr(ptr));
		if (!c && !pn_alloc_debug)
			c = pn_size_caches[0];
		if (c && c->sized && pn_direct_free(c, ptr))
			return;
		c = NULL;
	}
	if (unlikely(!c || !c->sized)) {
		pr_err_ratelimited("%s() of a pointer that pn_alloc_percpu_gfp() did not return\n",
				   __func__);
		return;
	}
	pn_cache_free(c, ptr);
}
EXPORT_SYMBOL_GPL(pn_free_percpu);

/* ---- reclaim, hotplug -------------------------------------------------- */

/*
 * Objects the online CPUs' magazines hold: one racy load per CPU (an
 * offline CPU's magazines were drained when it went).
 */
static unsigned long pn_cache_cpu_held(struct pn_cache *c)
{
	unsigned long n = 0;
	unsigned int cpu;

	if (!READ_ONCE(c->nr_cpu_mags))
		return 0;
	for_each_online_cpu(cpu)
		n += READ_ONCE(per_cpu_ptr(c->cpu, cpu)->held);
	return n;
}

/*
 * What a scan can reach: full depot magazines, the free chunks it would
 * release (the rule of pn_chunks_unlink_free()), and what the CPUs'
 * magazines hold (for those the scan queues drain_work).
 */
static unsigned long pn_cache_reclaimable(struct pn_cache *c)
{
	unsigned long keep = READ_ONCE(c->reserve_on) ? c->reserve : 0;
	unsigned long fr = READ_ONCE(c->nr_chunk_free);
	unsigned long chunks = 0;

	if (fr > keep)
		chunks = min(READ_ONCE(c->nr_free_chunks), (fr - keep) / c->nr_objs);
	return (unsigned long)READ_ONCE(c->nr_full_mags) * c->mag_cap +
	       chunks * c->nr_objs + pn_cache_cpu_held(c);
}

static unsigned long pn_reclaim_count(void)
{
	unsigned long n = 0;
	struct pn_cache *c;

	lockdep_assert_held(&pn_caches_lock);
	list_for_each_entry(c, &pn_caches, node)
		n += pn_cache_reclaimable(c);
	return n;
}

/*
 * One shrinker scan: pin every cache under pn_caches_lock, then, with that
 * lock dropped, flush depots and unlink free chunks within the budget.
 * Releasing the chunks (destructors) and draining the CPUs' magazines are
 * left to each cache's drain_work: memory reclaim may run under the
 * kernel's per-CPU allocator mutex or the CPU hotplug lock, where neither
 * a destructor nor a drain may run.
 */
static unsigned long pn_shrink(unsigned long nr, unsigned long *scanned,
			       bool wait)
{
	unsigned long freed = 0, seen = 0, flags;
	struct pn_cache *c, *tc;
	LIST_HEAD(todo);

	if (wait)
		mutex_lock(&pn_shrink_lock);
	else if (!mutex_trylock(&pn_shrink_lock))
		return SHRINK_STOP;
	if (wait) {
		mutex_lock(&pn_caches_lock);
	} else if (!mutex_trylock(&pn_caches_lock)) {
		mutex_unlock(&pn_shrink_lock);
		return SHRINK_STOP;
	}
	list_for_each_entry(c, &pn_caches, node) {
		refcount_inc(&c->refs);
		list_add_tail(&c->shrink_node, &todo);
	}
	mutex_unlock(&pn_caches_lock);

	list_for_each_entry_safe(c, tc, &todo, shrink_node) {
		if (seen < nr) {
			freed += pn_cache_reclaim(c, nr - seen, &seen, false, true);
			/* What is left to find is in the CPUs' magazines. */
			if (seen < nr && pn_cache_cpu_held(c)) {
				spin_lock_irqsave(&c->lock, flags);
				c->drain_wanted = true;
				c->drain_budget = max(c->drain_budget, nr - seen);
				spin_unlock_irqrestore(&c->lock, flags);
				queue_work(pn_maint_wq, &c->drain_work);
			}
		}
		list_del_init(&c->shrink_node);
		pn_cache_put(c);
	}
	mutex_unlock(&pn_shrink_lock);
	if (scanned)
		*scanned = seen;
	/* Nothing within reach now (drain_work may free more later). */
	return seen ? freed : SHRINK_STOP;
}

static unsigned long pn_shrink_count(struct shrinker *s,
				     struct shrink_control *sc)
{
	unsigned long n;

	if (!mutex_trylock(&pn_caches_lock))
		return 0;
	n = pn_reclaim_count();
	mutex_unlock(&pn_caches_lock);
	return n ? n : SHRINK_EMPTY;
}

static unsigned long pn_shrink_scan(struct shrinker *s,
				    struct shrink_control *sc)
{
	unsigned long scanned = 0, freed;

	freed = pn_shrink(sc->nr_to_scan, &scanned, false);
	if (freed != SHRINK_STOP)
		sc->nr_scanned = scanned;
	return freed;
}

/* Runs on a control CPU after @cpu died: nothing else uses its magazines. */
static int pn_cpu_dead(unsigned int cpu, struct hlist_node *node)
{
	struct pn_cache *c = hlist_entry(node, struct pn_cache, cpuhp_node);
	unsigned long flags;

	spin_lock_irqsave(&c->lock, flags);
	pn_drain_cpu(c, per_cpu_ptr(c->cpu, cpu));
	spin_unlock_irqrestore(&c->lock, flags);
	return 0;
}

/* ---- for the KUnit suite and the harness (internal/pcpu_alloc.h) -------- */

#if IS_ENABLED(CONFIG_KUNIT) || IS_ENABLED(CONFIG_PCPU_NEXT_TORTURE)
/**
 * pn_cache_flush_work() - wait for a cache's drain and maintenance work
 * @cache: the cache
 *
 * For the KUnit suite and the stress: a refill by maint_work that hit an
 * injected fault has counted it in the cache's statistics when this
 * returns.
 *
 * Context: Process context, may sleep.
 */
void pn_cache_flush_work(struct pn_cache *cache)
{
	flush_work(&cache->drain_work);
	flush_work(&cache->maint_work);
}
EXPORT_SYMBOL_IF_KUNIT(pn_cache_flush_work);

/**
 * pn_alloc_reclaim() - run one shrinker scan, waiting for its locks
 * @nr: the scan's budget in objects (nr_to_scan)
 *
 * What memory reclaim's scan does (pn_shrink()), except that it waits for
 * a concurrent scan instead of giving up: flush depots and unlink free
 * chunks of every cache, leaving their release and the CPUs' drains to
 * each cache's drain_work.
 *
 * Context: Process context, may sleep.
 * Return: the objects released or handed to drain_work for release.
 */
unsigned long pn_alloc_reclaim(unsigned long nr)
{
	unsigned long freed = pn_shrink(nr, NULL, true);

	return freed == SHRINK_STOP ? 0 : freed;
}
EXPORT_SYMBOL_IF_KUNIT(pn_alloc_reclaim);
#endif

#if IS_ENABLED(CONFIG_PCPU_NEXT_TORTURE)
/**
 * pn_alloc_size_class() - a size class of the sized API
 * @idx: 0 for the 8-byte class, 1 for 16 bytes, ...
 *
 * Context: Any context, between pn_alloc_init() and pn_alloc_exit().
 * Return: the class's cache, or NULL when @idx is past the last class.
 */
struct pn_cache *pn_alloc_size_class(unsigned int idx)
{
	return idx < PN_NR_CLASSES ? pn_size_caches[idx] : NULL;
}

/**
 * pn_alloc_sized_direct() - live direct objects of the sized API
 *
 * Objects pn_alloc_percpu_gfp() took straight from the kernel's allocator
 * (non-blocking fallbacks; in a module, accounted requests) and
 * pn_free_percpu() has not
 * freed; no class counts them, because their free cannot tell the class.
 *
 * Context: Any context.
 * Return: their number.
 */
unsigned long pn_alloc_sized_direct(void)
{
	return atomic_long_read(&pn_sized_direct);
}
#endif

#if IS_ENABLED(CONFIG_KUNIT)
/**
 * pn_alloc_reclaim_count() - what the shrinker's count would report
 *
 * Context: Process context, may sleep.
 * Return: the objects a scan could reach over every cache (0 rather than
 * SHRINK_EMPTY).
 */
VISIBLE_IF_KUNIT unsigned long pn_alloc_reclaim_count(void)
{
	unsigned long n;

	mutex_lock(&pn_caches_lock);
	n = pn_reclaim_count();
	mutex_unlock(&pn_caches_lock);
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(pn_alloc_reclaim_count);

/**
 * pn_cache_scan() - a shrinker scan of one cache
 * @cache: the cache
 * @nr: the budget in objects
 *
 * Flushes depot magazines and unlinks free chunks as a scan does, handing
 * the chunks to drain_work.
 *
 * Context: Process context.
 * Return: the objects the scan went through.
 */
VISIBLE_IF_KUNIT unsigned long pn_cache_scan(struct pn_cache *cache,
					     unsigned long nr)
{
	unsigned long seen = 0;

	pn_cache_reclaim(cache, nr, &seen, false, true);
	return seen;
}
EXPORT_SYMBOL_IF_KUNIT(pn_cache_scan);

/**
 * pn_cache_cpu_objects() - objects in one CPU's magazines of a cache
 * @cache: the cache
 * @cpu: a possible CPU
 *
 * Context: Any context but NMI (takes the cache lock).
 * Return: a snapshot, exact when @cpu is quiet or dead.
 */
VISIBLE_IF_KUNIT unsigned int pn_cache_cpu_objects(struct pn_cache *cache,
						   unsigned int cpu)
{
	unsigned long flags;
	unsigned int n;

	spin_lock_irqsave(&cache->lock, flags);
	n = pn_cpu_cached(cache, per_cpu_ptr(cache->cpu, cpu));
	spin_unlock_irqrestore(&cache->lock, flags);
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(pn_cache_cpu_objects);

/**
 * pn_alloc_debug_forced() - is debug mode forced on every cache?
 *
 * Context: Any context.
 * Return: true if the module was loaded with alloc_debug=1 (no cache then
 * has magazines).
 */
VISIBLE_IF_KUNIT bool pn_alloc_debug_forced(void)
{
	return pn_alloc_debug;
}
EXPORT_SYMBOL_IF_KUNIT(pn_alloc_debug_forced);

/**
 * pn_cache_objs_per_chunk() - a cache's chunk geometry
 * @cache: the cache
 *
 * Context: Any context.
 * Return: the objects in one chunk of @cache.
 */
VISIBLE_IF_KUNIT unsigned int pn_cache_objs_per_chunk(struct pn_cache *cache)
{
	return cache->nr_objs;
}
EXPORT_SYMBOL_IF_KUNIT(pn_cache_objs_per_chunk);

/**
 * pn_cache_reclaim_count() - what the shrinker counts of one cache
 * @cache: the cache
 *
 * Context: Any context.
 * Return: the objects a scan could reach: full depot magazines, free
 * chunks beyond the reserve, and what the CPUs' magazines hold.
 */
VISIBLE_IF_KUNIT unsigned long pn_cache_reclaim_count(struct pn_cache *cache)
{
	return pn_cache_reclaimable(cache);
}
EXPORT_SYMBOL_IF_KUNIT(pn_cache_reclaim_count);

/**
 * pn_cache_mag_bytes() - the size of one of a cache's magazines
 * @cache: the cache
 *
 * Context: Any context.
 * Return: what pn_mag_new() asks kmalloc() for.
 */
VISIBLE_IF_KUNIT size_t pn_cache_mag_bytes(struct pn_cache *cache)
{
	struct pn_mag *m;

	return struct_size(m, objs, cache->mag_cap);
}
EXPORT_SYMBOL_IF_KUNIT(pn_cache_mag_bytes);
#endif

/* ---- debugfs ------------------------------------------------------------ */

/* A fast-path statistic's column: "-" without CONFIG_PCPU_NEXT_STATS. */
static const char *pn_stat_col(char *buf, size_t len, u64 v)
{
	if (!IS_ENABLED(CONFIG_PCPU_NEXT_STATS))
		return "-";
	snprintf(buf, len, "%llu", v);
	return buf;
}

/*
 * One row per cache; the columns are the same with or without the
 * fast-path statistics (mag_hits and mag_miss then read "-").
 */
static int pn_stats_show(struct seq_file *m, void *v)
{
	char hits[24], misses[24];
	struct pn_cache_stats st;
	struct pn_cache *c;

	seq_printf(m, "%-16s %6s %6s %4s %10s %10s %12s %10s %8s %8s %7s %6s %9s %9s %9s %6s %7s %8s %6s %6s %6s %6s %10s\n",
		   "cache", "size", "align", "cap", "in_use", "cpu_cached",
		   "mag_hits", "mag_miss", "refills", "flushes", "chunks",
		   "free", "created", "released", "fails", "relfail",
		   "reserve", "direct", "dfree", "poison", "badfr", "ctor",
		   "bytes");
	mutex_lock(&pn_caches_lock);
	list_for_each_entry(c, &pn_caches, node) {
		pn_cache_get_stats(c, &st);
		seq_printf(m, "%-16s %6u %6u %4u %10llu %10llu %12s %10s %8llu %8llu %7llu %6llu %9llu %9llu %9llu %6llu %7llu %8llu %6llu %6llu %6llu %6s %10llu\n",
			   c->name, c->size, c->align, c->mag_cap, st.in_use,
			   st.cpu_cached,
			   pn_stat_col(hits, sizeof(hits), st.mag_hits),
			   pn_stat_col(misses, sizeof(misses), st.mag_misses),
			   st.depot_refills, st.depot_flushes, st.chunks,
			   st.free_chunks, st.chunk_creates, st.chunk_releases,
			   st.chunk_fails, st.release_fails, st.reserve,
			   st.direct_allocs, st.double_frees, st.poison_errors,
			   st.bad_frees, c->ctor ? "yes" : "no", st.mem_bytes);
	}
	mutex_unlock(&pn_caches_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(pn_stats);

/* ---- module init/exit --------------------------------------------------- */

static void pn_destroy_size_caches(void)
{
	unsigned int i;

	for (i = 0; i < PN_NR_CLASSES; i++) {
		pn_cache_destroy(pn_size_caches[i]);
		pn_size_caches[i] = NULL;
	}
}

/*
 * Module unload: release what caches destroyed with live objects still
 * hold.  No user of pcpu_next is left (their modules depend on this one),
 * so the live objects are gone with their users.  No destructor runs: the
 * module that owned the cache may be gone too.
 */
static void pn_free_dead_caches(void)
{
	struct pn_chunk *ch, *tch;
	struct pn_cache *c, *tc;
	unsigned long idx;
	LIST_HEAD(chunks);
	bool any = false;
	LIST_HEAD(dead);

	/*
	 * A late free of a direct object may have queued drain_work, whose
	 * destructors may take pn_caches_lock: cancel with it dropped.
	 */
	mutex_lock(&pn_caches_lock);
	list_splice_init(&pn_dead_caches, &dead);
	mutex_unlock(&pn_caches_lock);
	list_for_each_entry(c, &dead, node)
		cancel_work_sync(&c->drain_work);
	list_for_each_entry_safe(c, tc, &dead, node) {
		any = true;
		list_del(&c->node);
		list_splice_init(&c->chunks_free, &chunks);
		list_splice_init(&c->chunks_partial, &chunks);
		list_splice_init(&c->chunks_full, &chunks);
		list_for_each_entry_safe(ch, tch, &chunks, list) {
			list_del(&ch->list);
			/* The whole tree goes below: no lookup can follow. */
			free_percpu(ch->base);
			pn_chunk_free_meta(ch);
		}
		pn_cache_free_struct(c);
	}
	if (any)
		mtree_destroy(&pn_chunk_tree);
	/* The dead caches' direct objects, likewise. */
	xa_for_each(&pn_direct, idx, c)
		free_percpu((__force void __percpu *)idx);
	xa_destroy(&pn_direct);
}

/**
 * pn_alloc_init() - set up the allocator: hotplug state, shrinker, size
 *		     classes, debugfs files
 *
 * Context: Module init (main.c), after the module's debugfs directory was
 * created and before any other component, which may allocate from it.
 * Return: 0 or -errno.
 */
int pn_alloc_init(void)
{
	char name[PN_CACHE_NAME_MAX];
	unsigned int i, sz;
	int ret;

	pn_drain_wq = alloc_workqueue("pcpu_next_drain", WQ_PERCPU | WQ_MEM_RECLAIM, 0);
	if (!pn_drain_wq)
		return -ENOMEM;
	pn_maint_wq = alloc_workqueue("pcpu_next_maint",
				      WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!pn_maint_wq) {
		ret = -ENOMEM;
		goto free_drain_wq;
	}
	ret = cpuhp_setup_state_multi(CPUHP_BP_PREPARE_DYN, "pcpu_next/alloc:dead",
				      NULL, pn_cpu_dead);
	if (ret < 0)
		goto free_maint_wq;
	pn_cpuhp_state = ret;

	pn_shrinker = shrinker_alloc(0, "pcpu_next-alloc");
	if (!pn_shrinker) {
		ret = -ENOMEM;
		goto remove_state;
	}
	pn_shrinker->count_objects = pn_shrink_count;
	pn_shrinker->scan_objects = pn_shrink_scan;

	for (i = 0; i < PN_NR_CLASSES; i++) {
		struct pn_cache *c;

		sz = 8U << i;
		snprintf(name, sizeof(name), "pcpu-%u", sz);
		c = pn_cache_create(name, sz, min_t(unsigned int, sz, PAGE_SIZE),
				    PN_CACHE_ZERO, NULL, NULL, NULL);
		if (IS_ERR(c)) {
			ret = PTR_ERR(c);
			goto free_caches;
		}
		c->sized = true;
		pn_size_caches[i] = c;
	}
	shrinker_register(pn_shrinker);

	pn_alloc_dir = debugfs_create_dir("alloc", pn_debugfs_dir());
	debugfs_create_file("stats", 0400, pn_alloc_dir, NULL, &pn_stats_fops);
#ifdef CONFIG_FAULT_INJECTION
	pn_fail_release.verbose = 0;	/* fail-nth runs print nothing */
#endif
#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
	fault_create_debugfs_attr("fail_release", pn_alloc_dir, &pn_fail_release);
#endif
	return 0;

free_caches:
	pn_destroy_size_caches();
	shrinker_free(pn_shrinker);
remove_state:
	cpuhp_remove_multi_state(pn_cpuhp_state);
free_maint_wq:
	destroy_workqueue(pn_maint_wq);
free_drain_wq:
	destroy_workqueue(pn_drain_wq);
	return ret;
}

/**
 * pn_alloc_exit() - tear the allocator down
 *
 * Context: Module exit (main.c), may sleep, after the other components and
 * any test run stopped.  Every cache but the size classes must have been
 * destroyed by its user.
 */
void pn_alloc_exit(void)
{
	debugfs_remove(pn_alloc_dir);	/* waits for readers in progress */
	shrinker_free(pn_shrinker);
	pn_destroy_size_caches();
	pn_free_dead_caches();
	cpuhp_remove_multi_state(pn_cpuhp_state);
	destroy_workqueue(pn_maint_wq);
	destroy_workqueue(pn_drain_wq);
	/* Chunk structs are freed through RCU. */
	rcu_barrier();
	WARN_ON(!mtree_empty(&pn_chunk_tree));
	mtree_destroy(&pn_chunk_tree);
}
