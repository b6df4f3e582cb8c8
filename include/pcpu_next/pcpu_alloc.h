/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pcpu_next per-CPU object caches: a magazine-and-depot allocator on top
 * of the kernel's dynamic per-CPU allocator.  See pcpu_alloc.c for the
 * design, and for the kernel-doc of every function declared here.  Every
 * object is a genuine `void __percpu *`: this_cpu_*() and per_cpu_ptr()
 * work on it exactly as on memory from alloc_percpu().
 *
 * This is the API for client modules and nothing else; what only the
 * module's KUnit suite and test harness use is in internal/pcpu_alloc.h.
 */
#ifndef _PCPU_NEXT_PCPU_ALLOC_H
#define _PCPU_NEXT_PCPU_ALLOC_H

#include <linux/compiler_types.h>
#include <linux/gfp_types.h>
#include <linux/types.h>

struct pn_cache;

/*
 * Cache flags for pn_cache_create().  PN_CACHE_DEBUG costs the magazines:
 * every operation of the cache goes to the chunk layer under its lock.
 */
#define PN_CACHE_ZERO	0x1U	/* alloc returns memory zeroed on every possible CPU */
#define PN_CACHE_DEBUG	0x2U	/* poison/check, double-free detection, leak listing */
#define PN_CACHE_VALID_FLAGS	(PN_CACHE_ZERO | PN_CACHE_DEBUG)

#define PN_CACHE_NAME_MAX	32	/* with the NUL */
#define PN_ALLOC_MAX_SIZE	(32U * 1024U)	/* largest object */

/**
 * typedef pn_ctor_t - object constructor
 * @obj: the object, on every possible CPU
 * @priv: the private pointer given to pn_cache_create()
 * @gfp: the allocation flags of the request that needs the object (for
 *	 an object of a chunk, which no caller owns alone, without
 *	 __GFP_ZERO and __GFP_ACCOUNT and with __GFP_NOWARN); any memory the
 *	 constructor allocates must honour them (a GFP_NOFS caller must not
 *	 recurse into the filesystem through a constructor)
 *
 * Runs once per object lifetime in its chunk, when the chunk is created:
 * for a blocking request in its process context, or from the cache's
 * maintenance work (GFP_KERNEL) when it refills the reserve; never from
 * memory reclaim.  For an
 * accounted request (__GFP_ACCOUNT) it runs on that request's own object,
 * with its gfp, which may not allow blocking.  No pcpu_next lock is held.
 * It may sleep only if @gfp allows blocking.
 *
 * Return: 0, or -errno; a failure makes the allocation fail (NULL).
 */
typedef int (*pn_ctor_t)(void __percpu *obj, void *priv, gfp_t gfp);

/**
 * typedef pn_dtor_t - object destructor
 * @obj: the object, in constructed state
 * @priv: the private pointer given to pn_cache_create()
 *
 * Runs when the object's chunk is released, in process context with no
 * pcpu_next lock held: from the cache's work item (after memory reclaim
 * asked for memory back), from pn_cache_shrink() or pn_cache_destroy().
 * It may sleep, and may create, use and destroy other caches.  For an
 * object of an accounted request it runs after pn_cache_free(), from the
 * cache's work item.
 */
typedef void (*pn_dtor_t)(void __percpu *obj, void *priv);

/**
 * struct pn_cache_stats - a snapshot of one cache's counters
 * @in_use: objects handed out and not yet freed: the objects of the
 *	cache's chunks that are neither free in their chunk nor in a CPU's or
 *	the depot's magazine, plus @direct_live.  Derived from the chunk
 *	accounting, so kept without CONFIG_PCPU_NEXT_STATS, and exact while
 *	the cache is quiet.  The sized API's direct objects belong to no
 *	class and are not counted.
 * @allocs: successful allocations (CONFIG_PCPU_NEXT_STATS, else 0)
 * @frees: frees (CONFIG_PCPU_NEXT_STATS, else 0)
 * @mag_hits: allocations and frees served by the CPU's magazines alone
 *	(CONFIG_PCPU_NEXT_STATS, else 0)
 * @mag_misses: allocations and frees that went to the depot
 *	(CONFIG_PCPU_NEXT_STATS, else 0)
 * @depot_refills: full magazines handed from the depot to a CPU
 * @depot_flushes: full magazines handed from a CPU to the depot
 * @chunks: chunks currently held
 * @free_chunks: chunks with every object free in the chunk layer
 * @chunk_free_objs: objects free in the chunk layer
 * @chunk_creates: chunks created
 * @chunk_releases: chunks released
 * @chunk_fails: chunk creations that failed (memory, injection, ctor)
 * @reserve_fails: those of @chunk_fails that refilled the reserve (no
 *	caller saw them)
 * @release_fails: chunk releases undone because the chunk tree could not
 *	be updated (memory); the chunk stayed, intact
 * @reserve_refills: chunks added by the maintenance work for the reserve
 * @reserve: free objects kept for non-blocking requests (0 until one came)
 * @mag_cap: objects per magazine (0: magazine-less cache)
 * @direct_allocs: objects that came straight from the kernel's allocator
 *	(accounted requests, non-blocking fallbacks)
 * @direct_live: of those, still allocated (cache API objects only)
 * @full_mags: full magazines in the depot
 * @empty_mags: empty magazines in the depot
 * @cpu_cached: objects in per-CPU magazines
 * @double_frees: frees of an already free object, seen where a free is
 *	checked: in debug mode, in a magazine-less cache, in a magazine flush,
 *	and for direct objects
 * @poison_errors: debug mode: free objects found modified at alloc
 * @bad_frees: pointers that are not an object of the cache, seen where
 *	@double_frees are
 * @mem_bytes: memory held: chunks on every possible CPU, plus metadata
 */
struct pn_cache_stats {
	u64 in_use;
	u64 allocs;
	u64 frees;
	u64 mag_hits;
	u64 mag_misses;
	u64 depot_refills;
	u64 depot_flushes;
	u64 chunks;
	u64 free_chunks;
	u64 chunk_free_objs;
	u64 chunk_creates;
	u64 chunk_releases;
	u64 chunk_fails;
	u64 reserve_fails;
	u64 release_fails;
	u64 reserve_refills;
	u64 reserve;
	u64 mag_cap;
	u64 direct_allocs;
	u64 direct_live;
	u64 full_mags;
	u64 empty_mags;
	u64 cpu_cached;
	u64 double_frees;
	u64 poison_errors;
	u64 bad_frees;
	u64 mem_bytes;
};

struct cpumask;

bool pcpu_next_ready(void);
const struct cpumask *pcpu_next_cpus_seen(void);

struct pn_cache *pn_cache_create(const char *name, size_t size, size_t align,
				 unsigned int flags, pn_ctor_t ctor,
				 pn_dtor_t dtor, void *priv);
void __percpu *pn_cache_alloc(struct pn_cache *cache, gfp_t gfp);
void pn_cache_free(struct pn_cache *cache, void __percpu *obj);
unsigned long pn_cache_shrink(struct pn_cache *cache);
unsigned long pn_cache_destroy(struct pn_cache *cache);
void pn_cache_get_stats(struct pn_cache *cache, struct pn_cache_stats *st);

void __percpu *pn_alloc_percpu_gfp(size_t size, size_t align, gfp_t gfp);
void pn_free_percpu(void __percpu *ptr);

struct pn_cache *pn_cache_of(void __percpu *ptr);

/**
 * pn_alloc_percpu_gfp_type() - typed pn_alloc_percpu_gfp(), as
 *				alloc_percpu_gfp()
 * @type: the object's type, at most PN_ALLOC_MAX_SIZE bytes
 * @gfp: allocation flags, as for pn_alloc_percpu_gfp()
 *
 * Context: As pn_alloc_percpu_gfp().
 * Return: a zeroed `typeof(type) __percpu *`, freed with pn_free_percpu(),
 * or NULL.
 */
#define pn_alloc_percpu_gfp_type(type, gfp)				\
	((typeof(type) __percpu *)pn_alloc_percpu_gfp(sizeof(type),	\
						      __alignof__(type), gfp))

/**
 * pn_alloc_percpu() - typed pn_alloc_percpu_gfp() with GFP_KERNEL, as
 *		       alloc_percpu()
 * @type: the object's type, at most PN_ALLOC_MAX_SIZE bytes
 *
 * Context: Process context, may sleep.
 * Return: a zeroed `typeof(type) __percpu *`, freed with pn_free_percpu(),
 * or NULL.
 */
#define pn_alloc_percpu(type)	pn_alloc_percpu_gfp_type(type, GFP_KERNEL)

#endif /* _PCPU_NEXT_PCPU_ALLOC_H */
