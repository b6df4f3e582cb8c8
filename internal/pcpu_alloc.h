/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pcpu_alloc internals shared with the KUnit suites and the test harness;
 * not an API (clients use include/pcpu_next/pcpu_alloc.h).  Nothing here
 * is exported but to KUnit (EXPORT_SYMBOL_IF_KUNIT), and nothing here is
 * on a fast path.  The kernel-doc of each function is at its definition in
 * pcpu_alloc.c.
 *
 * Users:
 *  - the harness (torture/pcpu_alloc_torture.c, CONFIG_PCPU_NEXT_TORTURE):
 *    pn_alloc_reclaim(), pn_cache_flush_work(), pn_alloc_size_class(),
 *    pn_alloc_sized_direct();
 *  - the KUnit suites (kunit/pcpu_alloc_kunit.c, kunit/failnth_kunit.c):
 *    pn_alloc_reclaim() and the CONFIG_KUNIT block.
 */
#ifndef _PCPU_NEXT_INTERNAL_PCPU_ALLOC_H
#define _PCPU_NEXT_INTERNAL_PCPU_ALLOC_H

#include <linux/list.h>
#include <linux/types.h>

#include <pcpu_next/pcpu_alloc.h>

#if IS_ENABLED(CONFIG_KUNIT) || IS_ENABLED(CONFIG_PCPU_NEXT_TORTURE)
/* One shrinker scan that waits for its locks (stress, KUnit). */
unsigned long pn_alloc_reclaim(unsigned long nr);
/* Wait for a cache's drain and maintenance work (stress, KUnit). */
void pn_cache_flush_work(struct pn_cache *cache);
#endif

#if IS_ENABLED(CONFIG_PCPU_NEXT_TORTURE)
/* The sized API's classes, 0 (8 B) upwards, NULL past the last (stress). */
struct pn_cache *pn_alloc_size_class(unsigned int idx);
/* Live direct objects of the sized API, which no class counts (stress). */
unsigned long pn_alloc_sized_direct(void);
#endif

#if IS_ENABLED(CONFIG_KUNIT)
/*
 * Module parameter cpu_cache_bytes, read by pn_cache_create(): the suite
 * lowers it around a creation to get a magazine-less cache.
 */
extern unsigned long pn_cpu_cache_bytes;

/* Test hooks: the chunk-creation and release fault sites, this task. */
void pn_alloc_fail_chunks(unsigned int n);
void pn_alloc_fail_releases(unsigned int n, unsigned int skip);

/* A release batch as reclaim makes it: every free chunk, then release. */
unsigned long pn_cache_unlink_free_chunks(struct pn_cache *cache,
					  struct list_head *out);
unsigned long pn_chunks_release(struct pn_cache *c, struct list_head *list,
				unsigned long *failed);

/* The bytes of one of the cache's magazines, as kmalloc() is asked. */
size_t pn_cache_mag_bytes(struct pn_cache *cache);
/* What the shrinker counts of one cache. */
unsigned long pn_cache_reclaim_count(struct pn_cache *cache);

/* Reclaim as the shrinker does it, and waiting for what it queued. */
unsigned long pn_alloc_reclaim_count(void);
unsigned long pn_cache_scan(struct pn_cache *cache, unsigned long nr);

/* Geometry and state a test needs to know what to expect. */
unsigned int pn_cache_cpu_objects(struct pn_cache *cache, unsigned int cpu);
unsigned int pn_cache_objs_per_chunk(struct pn_cache *cache);
bool pn_alloc_debug_forced(void);
#endif

#endif /* _PCPU_NEXT_INTERNAL_PCPU_ALLOC_H */
