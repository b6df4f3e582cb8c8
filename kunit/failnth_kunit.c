// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite pcpu_next_failnth: every allocation-failure path of the
 * module, driven by the kernel's own fault injection the way syzkaller
 * drives a system call through /proc/thread-self/fail-nth.
 *
 * Method.  With CONFIG_FAULT_INJECTION every task has a fail_nth count.
 * While it is non-zero, every fault-injection check the task makes in
 * task context (should_fail_ex(): failslab for slab allocations,
 * fail_page_alloc for page allocations) decrements it, and the check
 * that brings it to zero fails; every later check passes.  For one API
 * sequence the suite runs, for n = 1, 2, 3, ...:
 *
 *	prepare (outside the window: fresh mm, empty size classes, stats)
 *	current->fail_nth = n;
 *	run the sequence: module calls and plain stores only, no KUnit
 *	call and no bookkeeping allocation
 *	left = current->fail_nth;  current->fail_nth = 0;
 *	check what the run recorded and the state it left behind
 *
 * If left is still non-zero, the n-th check was never reached: the
 * sequence makes n - 1 checks, its failure points; run n had nothing
 * injected, must have succeeded in full, and ends the loop.  Each
 * earlier run had exactly one injected failure, each at a different
 * point.  Such a run either succeeded (the failure was absorbed:
 * kmemleak's or KASAN's own metadata, a magazine the allocator can do
 * without, a retry) or failed with the sequence's documented error
 * (NULL, -ENOMEM, ERR_PTR(-ENOMEM), the remote-slot fallback); any
 * other outcome fails the case, and so does a state that is not
 * consistent afterwards: cache statistics (every object accounted for in
 * exactly one place, nothing in use, every chunk released by the shrink
 * unless the chunk tree's own allocation undid its release, one failed
 * chunk creation per NULL), every constructed object destructed once,
 * exact counter sums, lazy counters all lazy or all upgraded, module-wide
 * statistics back where they were, size classes with as many objects in
 * use as before the run, every initialised mm_cid slot folded and
 * finalised once, the storage backing off exactly when a block
 * allocation failed.  At most
 * one operation may fail per run: the cache, counter or storage must
 * work again at once.  kmemleak, scanned by the guest after the run,
 * catches what leaked outside the module's own accounting.  n is capped
 * at FN_MAX_NTH; reaching the cap fails the case.  One line per sequence
 * reports, for the n - 1 runs with a failure injected (F + S = K):
 *
 *	# <sequence>: <K> failure points, <F> runs failed cleanly, <S> succeeded
 *
 * K is a property of this kernel configuration and state, not of the
 * module alone: while fail_nth is armed the allocations the kernel makes
 * for itself in this task are checks too (kmemleak objects, KASAN stack
 * depot pools, maple tree nodes, debug objects, new slab pages, page
 * tables), and whether a slab needs a page varies from run to run, so a
 * run may end the loop while another state would have had more checks.
 *
 * Knobs.  failslab and fail_page_alloc skip allocations that may sleep
 * unless their ignore-gfp-wait is N, and fail_page_alloc skips orders
 * below min-order (1 by default) and __GFP_HIGHMEM requests (which is
 * what the kernel's per-CPU allocator uses for its pages) unless
 * ignore-gfp-highmem is N.  The guest writes, before insmod, N to
 * failslab/ignore-gfp-wait and fail_page_alloc/ignore-gfp-wait, 0 to
 * fail_page_alloc/min-order and 0 to both verbose files.  fn_init()
 * probes the first two settings with fail_nth = 1 on a kmalloc() and an
 * order-0 page and skips, naming the knob, when the check is not made;
 * without CONFIG_FAULT_INJECTION and CONFIG_FAILSLAB (the kunit.py
 * kernel) every case skips.  verbose cannot be probed: left at its
 * default it prints a stack dump for every injected failure.
 *
 * Every allocation the sequences request passes __GFP_NOWARN, so that
 * an injected failure inside the kernel's per-CPU allocator does not
 * print its "allocation failed" warning with a stack dump (a splat
 * fails the lane); failslab and fail_page_alloc check such requests
 * all the same.  Allocations the module makes with its own flags
 * (pn_cache_create(), the automatic upgrade) cannot be given the flag.
 *
 * The test thread is pinned to one CPU, so that magazines and chunk
 * counts do not depend on migration.  The automatic lazy upgrade runs
 * in a kworker, out of reach of this task's fail_nth; its work function
 * is run synchronously here through the struct work_struct that
 * lazy_counter_auto_init() set up, which is what the kworker would run.
 * mm_cid storage is driven with explicit cids (MMCID_SRC_FIXED) on an
 * mm from mm_alloc(), as in mmcid_pcpu_kunit.c.
 */

#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/gfp.h>
#include <linux/kernel.h>
#include <linux/limits.h>
#include <linux/mm.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include <pcpu_next/counter_tree.h>
#include <pcpu_next/lazy_counter.h>
#include <pcpu_next/mmcid_pcpu.h>
#include <pcpu_next/pcpu_alloc.h>

#include "internal/counter_tree.h"
#include "internal/lazy_counter.h"
#include "internal/mmcid_pcpu.h"
#include "internal/pcpu_alloc.h"

#define FN_MAX_NTH	2000U	/* largest n tried; reaching it fails the case */
#define FN_GFP		(GFP_KERNEL | __GFP_NOWARN)
#define FN_MAGIC	0xfa11f00dc0ffee00ULL
#define FN_MAX_CLASSES	8

#define FN_HAVE_FAILNTH	(IS_ENABLED(CONFIG_FAULT_INJECTION) && \
			 IS_ENABLED(CONFIG_FAILSLAB))

/* ---- the fail-nth loop ------------------------------------------------- */

/**
 * fn_arm() - make the @n-th fault-injection check of this task fail
 * @n: 1 for the next check
 *
 * Context: Process context (the check counts only in task context).
 */
static void fn_arm(unsigned int n)
{
#ifdef CONFIG_FAULT_INJECTION
	WRITE_ONCE(current->fail_nth, n);
#endif
}

/**
 * fn_disarm() - stop injecting, tell whether the armed check was reached
 *
 * Context: Process context.
 * Return: true if the count reached zero, i.e. a failure was injected.
 */
static bool fn_disarm(void)
{
#ifdef CONFIG_FAULT_INJECTION
	unsigned int left = READ_ONCE(current->fail_nth);

	WRITE_ONCE(current->fail_nth, 0);
	return !left;
#else
	return false;
#endif
}

enum fn_result {
	FN_OK,		/* every operation of the sequence succeeded */
	FN_FAILED,	/* one reported its documented error or fallback */
};

/**
 * struct fn_run - one run of a sequence, as its check sees it
 * @test: the test
 * @n: the value fail_nth was armed with
 * @injected: the n-th check was reached and failed
 * @bad: a check of this run failed
 */
struct fn_run {
	struct kunit *test;
	unsigned int n;
	bool injected;
	bool bad;
};

/* A failed check of run @r: report it, with n, and mark the run bad. */
#define FN_EXPECT(r, cond, fmt, ...)					\
	do {								\
		struct fn_run *__r = (r);				\
									\
		if (!(cond)) {						\
			KUNIT_FAIL(__r->test, "fail_nth=%u%s: " fmt,	\
				   __r->n,				\
				   __r->injected ? "" : " (not reached)", \
				   ##__VA_ARGS__);			\
			__r->bad = true;				\
		}							\
	} while (0)

/**
 * struct fn_seq - an API sequence
 * @prepare: reset the context before a run (outside the window; may use
 *	     KUNIT_ASSERT_*())
 * @run: the sequence itself, the only code run with fail_nth armed
 * @check: check what @run recorded and the state it left (outside the
 *	   window)
 */
struct fn_seq {
	void (*prepare)(struct fn_run *r, void *ctx);
	enum fn_result (*run)(void *ctx);
	void (*check)(struct fn_run *r, void *ctx, enum fn_result res);
};

/**
 * fn_drive() - run a sequence with fail_nth = 1, 2, ... until it is not
 *		reached, check every run, report the counts
 * @test: the test
 * @seq: the sequence
 * @ctx: its context, allocated by the caller
 *
 * Stops at the first run whose check fails (the rest would repeat it).
 *
 * Context: Process context, the KUnit case's thread.
 */
static void fn_drive(struct kunit *test, const struct fn_seq *seq, void *ctx)
{
	struct fn_run r = { .test = test };
	unsigned int failed = 0, absorbed = 0;
	enum fn_result res;

	for (r.n = 1; r.n <= FN_MAX_NTH; r.n++) {
		seq->prepare(&r, ctx);
		fn_arm(r.n);
		res = seq->run(ctx);
		r.injected = fn_disarm();
		seq->check(&r, ctx, res);
		if (!r.injected) {
			FN_EXPECT(&r, res == FN_OK,
				  "the sequence failed with nothing injected");
			break;
		}
		if (r.bad)
			break;
		if (res == FN_OK)
			absorbed++;
		else
			failed++;
		cond_resched();
	}
	if (r.n > FN_MAX_NTH)
		KUNIT_FAIL(test, "check %u still reached: more failure points than the bound",
			   FN_MAX_NTH);
	kunit_info(test, "%u failure points, %u runs failed cleanly, %u succeeded\n",
		   failed + absorbed, failed, absorbed);
}

/* ---- setup: configuration, knobs, pinning ------------------------------ */

/**
 * fn_probe_slab() - does failslab check a sleeping kmalloc()?
 *
 * A warm-up allocation first, so that the probe is served from a slab
 * that has room and reaches no page allocator check.
 *
 * Context: Process context.
 * Return: true if the probe allocation failed as injected.
 */
static bool fn_probe_slab(void)
{
	void *warm = kmalloc(64, GFP_KERNEL);
	void *p;

	fn_arm(1);
	p = kmalloc(64, GFP_KERNEL | __GFP_NOWARN);
	fn_disarm();
	kfree(p);
	kfree(warm);
	return !p;
}

/**
 * fn_probe_page() - does fail_page_alloc check a sleeping order-0 page?
 *
 * Context: Process context.
 * Return: true if the probe allocation failed as injected.
 */
static bool fn_probe_page(void)
{
	struct page *page;

	fn_arm(1);
	page = alloc_page(GFP_KERNEL | __GFP_NOWARN);
	fn_disarm();
	if (page)
		__free_page(page);
	return !page;
}

/**
 * fn_init() - per-case setup: skip unless fail_nth can fail GFP_KERNEL
 *	       allocations here, then pin the case's thread
 * @test: the test
 *
 * Each case runs in its own kthread, so the pinning ends with the case.
 *
 * Context: Process context.
 * Return: 0 (or the case is skipped).
 */
static int fn_init(struct kunit *test)
{
	if (!FN_HAVE_FAILNTH)
		kunit_skip(test, "needs CONFIG_FAULT_INJECTION and CONFIG_FAILSLAB");
	if (!fn_probe_slab())
		kunit_skip(test,
			   "failslab does not fail GFP_KERNEL: write N to /sys/kernel/debug/failslab/ignore-gfp-wait before loading");
	if (IS_ENABLED(CONFIG_FAIL_PAGE_ALLOC) && !fn_probe_page())
		kunit_skip(test,
			   "fail_page_alloc does not fail order-0 GFP_KERNEL pages: write N to /sys/kernel/debug/fail_page_alloc/ignore-gfp-wait and 0 to min-order");
	set_cpus_allowed_ptr(current, cpumask_of(raw_smp_processor_id()));
	return 0;
}

/* ---- per-CPU object helpers -------------------------------------------- */

static unsigned long fn_addr(const void __percpu *p)
{
	return (__force unsigned long)p;
}

/**
 * fn_zeroed() - is an object zero on every possible CPU?
 * @p: the object
 * @size: bytes to look at
 *
 * Return: true if all of them are zero.
 */
static bool fn_zeroed(void __percpu *p, size_t size)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		if (memchr_inv(per_cpu_ptr(p, cpu), 0, size))
			return false;
	return true;
}

static u64 fn_stamp_val(unsigned int tag, unsigned int cpu)
{
	return FN_MAGIC ^ ((u64)tag << 32) ^ cpu;
}

/**
 * fn_stamp() - write a tag into an object's first word on every CPU
 * @p: the object, at least 8 bytes
 * @tag: distinguishes the objects of one run
 */
static void fn_stamp(void __percpu *p, unsigned int tag)
{
	unsigned int cpu;
	u64 *w;

	for_each_possible_cpu(cpu) {
		w = per_cpu_ptr(p, cpu);
		*w = fn_stamp_val(tag, cpu);
	}
}

/**
 * fn_stamped() - does an object still hold the tag fn_stamp() wrote?
 * @p: the object
 * @tag: the tag
 *
 * Return: false if another object (or the allocator) overwrote it.
 */
static bool fn_stamped(void __percpu *p, unsigned int tag)
{
	unsigned int cpu;
	u64 *w;

	for_each_possible_cpu(cpu) {
		w = per_cpu_ptr(p, cpu);
		if (*w != fn_stamp_val(tag, cpu))
			return false;
	}
	return true;
}

/* ---- size classes of the sized API ------------------------------------- */

/**
 * struct fn_classes - size classes a sequence allocates from
 * @nr: classes in use
 * @cache: the classes' caches (from pn_cache_of())
 * @in_use: objects in use in each before the run
 */
struct fn_classes {
	unsigned int nr;
	struct pn_cache *cache[FN_MAX_CLASSES];
	u64 in_use[FN_MAX_CLASSES];
};

/**
 * fn_class_add() - find the class that serves (@size, @align) and track it
 * @test: the test
 * @cls: the set
 * @size: bytes
 * @align: alignment
 *
 * Context: Process context, outside the window.
 * Return: the class's cache.
 */
static struct pn_cache *fn_class_add(struct kunit *test, struct fn_classes *cls,
				     size_t size, size_t align)
{
	void __percpu *p = pn_alloc_percpu_gfp(size, align, GFP_KERNEL);
	struct pn_cache *c;
	unsigned int i;

	KUNIT_ASSERT_NE(test, fn_addr(p), 0UL);
	c = pn_cache_of(p);
	pn_free_percpu(p);
	KUNIT_ASSERT_NOT_NULL(test, c);
	for (i = 0; i < cls->nr; i++)
		if (cls->cache[i] == c)
			return c;
	KUNIT_ASSERT_LT(test, cls->nr, FN_MAX_CLASSES);
	cls->cache[cls->nr++] = c;
	return c;
}

static u64 fn_in_use(struct pn_cache *c)
{
	struct pn_cache_stats st;

	pn_cache_get_stats(c, &st);
	return st.in_use;
}

/**
 * fn_classes_reset() - before a run: remember what the classes have in use
 * @cls: the set
 * @shrink: release their free chunks first (beyond a class's reserve for
 *	    non-blocking callers, which blocking requests leave alone), so
 *	    that the run has to create chunks and reaches the chunk creation
 *	    failure points
 *
 * The classes' maintenance work (reserve refills, empty magazines, queued
 * by earlier runs or suites) is waited for first, so that it does not
 * add chunks while the run is in its window.  Nothing else in the module
 * runs during KUnit; shrinking a class only returns cached memory.
 *
 * Context: Process context, outside the window; may sleep.
 */
static void fn_classes_reset(struct fn_classes *cls, bool shrink)
{
	unsigned int i;

	for (i = 0; i < cls->nr; i++) {
		pn_cache_flush_work(cls->cache[i]);
		if (shrink)
			pn_cache_shrink(cls->cache[i]);
		cls->in_use[i] = fn_in_use(cls->cache[i]);
	}
}

/**
 * fn_classes_check() - after a run: nothing left allocated in the classes
 * @r: the run
 * @cls: the set
 *
 * in_use counts what callers hold (derived from the chunk accounting,
 * see struct pn_cache_stats); reserve refills and magazine top-ups do not
 * change it, so it must be exactly what it was before the run.
 *
 * Context: Process context, outside the window; may sleep.
 */
static void fn_classes_check(struct fn_run *r, struct fn_classes *cls)
{
	unsigned int i;
	u64 now;

	for (i = 0; i < cls->nr; i++) {
		pn_cache_flush_work(cls->cache[i]);
		now = fn_in_use(cls->cache[i]);
		FN_EXPECT(r, now == cls->in_use[i],
			  "size class %u: %llu objects in use, %llu before the run",
			  i, now, cls->in_use[i]);
	}
}

/* ---- caches: plain, and with constructor and destructor ---------------- */

#define FN_PLAIN_SIZE	512	/* 16 objects a chunk: two chunks stay cheap */
#define FN_CTOR_SIZE	1024	/* 8 objects a chunk, 8 constructor calls */
#define FN_CTOR_MEM	32	/* what each constructor call allocates */
#define FN_CACHE_MAX	256	/* objects per run, whatever the layout */

/* The start of every object of both caches. */
struct fn_obj {
	u64 stamp;		/* written by the user (fn_stamp()) */
	u64 magic;		/* constructed state: FN_MAGIC ... */
	void *mem;		/* ... and the constructor's allocation */
};

/**
 * struct fn_cache - context of the two cache sequences
 * @ctor: the cache has a constructor and a destructor
 * @size: object size
 * @per_chunk: objects per chunk, from a probe cache
 * @nr: objects allocated per run: one more than a chunk holds
 * @objs: the objects, @nr slots
 * @create_err: pn_cache_create()'s error, or 0
 * @got: successful allocations
 * @nulls: allocations that returned NULL
 * @dirty: objects handed out not zeroed (plain) or not constructed (ctor)
 * @overlap: stamps found overwritten before the frees
 * @live: statistics with every object allocated
 * @after: statistics after the frees and the shrink
 * @shrunk: pn_cache_shrink()'s return
 * @leaked: pn_cache_destroy()'s return
 * @built: constructor calls that succeeded
 * @destroyed: destructor calls
 * @bad_dtor: destructor calls on an object not in constructed state
 */
struct fn_cache {
	bool ctor;
	size_t size;
	unsigned int per_chunk;
	unsigned int nr;
	void __percpu **objs;
	long create_err;
	unsigned int got;
	unsigned int nulls;
	unsigned int dirty;
	unsigned int overlap;
	struct pn_cache_stats live;
	struct pn_cache_stats after;
	unsigned long shrunk;
	unsigned long leaked;
	atomic_t built;
	atomic_t destroyed;
	atomic_t bad_dtor;
};

static bool fn_constructed(void __percpu *p)
{
	struct fn_obj *o;
	unsigned int cpu;
	void *mem = NULL;

	for_each_possible_cpu(cpu) {
		o = per_cpu_ptr(p, cpu);
		if (!mem)
			mem = o->mem;
		if (o->magic != FN_MAGIC || !o->mem || o->mem != mem)
			return false;
	}
	return true;
}

/*
 * The constructor allocates, with the request's flags as its contract
 * asks, so that a constructor failure is one of the failure points: every
 * copy of the object records the allocation, the destructor frees it.
 */
static int fn_ctor(void __percpu *obj, void *priv, gfp_t gfp)
{
	struct fn_cache *fc = priv;
	struct fn_obj *o;
	unsigned int cpu;
	void *mem;

	mem = kmalloc(FN_CTOR_MEM, gfp);
	if (!mem)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		o = per_cpu_ptr(obj, cpu);
		o->magic = FN_MAGIC;
		o->mem = mem;
	}
	atomic_inc(&fc->built);
	return 0;
}

static void fn_dtor(void __percpu *obj, void *priv)
{
	struct fn_cache *fc = priv;
	struct fn_obj *o;
	unsigned int cpu;
	void *mem;

	if (!fn_constructed(obj))
		atomic_inc(&fc->bad_dtor);
	o = per_cpu_ptr(obj, cpumask_first(cpu_possible_mask));
	mem = o->mem;
	for_each_possible_cpu(cpu) {
		o = per_cpu_ptr(obj, cpu);
		o->magic = 0;
		o->mem = NULL;
	}
	kfree(mem);
	atomic_inc(&fc->destroyed);
}

static struct pn_cache *fn_cache_create(struct fn_cache *fc)
{
	if (fc->ctor)
		return pn_cache_create("failnth-ctor", fc->size, 0, 0, fn_ctor,
				       fn_dtor, fc);
	return pn_cache_create("failnth-plain", fc->size, 0, PN_CACHE_ZERO,
			       NULL, NULL, NULL);
}

static void fn_cache_prepare(struct fn_run *r, void *ctx)
{
	struct fn_cache *fc = ctx;

	memset(fc->objs, 0, fc->nr * sizeof(*fc->objs));
	fc->create_err = 0;
	fc->got = 0;
	fc->nulls = 0;
	fc->dirty = 0;
	fc->overlap = 0;
	memset(&fc->live, 0, sizeof(fc->live));
	memset(&fc->after, 0, sizeof(fc->after));
	fc->shrunk = 0;
	fc->leaked = 0;
	atomic_set(&fc->built, 0);
	atomic_set(&fc->destroyed, 0);
	atomic_set(&fc->bad_dtor, 0);
}

/*
 * create, alloc x nr (two chunks), free all, shrink, destroy; the objects
 * are checked (zeroed or constructed, not overlapping) in between.
 */
static enum fn_result fn_cache_run(void *ctx)
{
	struct fn_cache *fc = ctx;
	struct pn_cache *c;
	void __percpu *p;
	unsigned int i;

	c = fn_cache_create(fc);
	if (IS_ERR(c)) {
		fc->create_err = PTR_ERR(c);
		return FN_FAILED;
	}
	for (i = 0; i < fc->nr; i++) {
		p = pn_cache_alloc(c, FN_GFP);
		fc->objs[i] = p;
		if (!p) {
			fc->nulls++;
			continue;
		}
		fc->got++;
		if (fc->ctor ? !fn_constructed(p) : !fn_zeroed(p, fc->size))
			fc->dirty++;
		fn_stamp(p, i);
	}
	for (i = 0; i < fc->nr; i++)
		if (fc->objs[i] && !fn_stamped(fc->objs[i], i))
			fc->overlap++;
	pn_cache_get_stats(c, &fc->live);
	for (i = 0; i < fc->nr; i++)
		pn_cache_free(c, fc->objs[i]);
	fc->shrunk = pn_cache_shrink(c);
	pn_cache_get_stats(c, &fc->after);
	fc->leaked = pn_cache_destroy(c);
	return fc->nulls ? FN_FAILED : FN_OK;
}

/**
 * fn_conserved() - is every object of a cache's chunks in exactly one place?
 * @st: a snapshot taken while nobody used the cache
 * @per_chunk: objects per chunk
 *
 * Handed out (less the direct objects, which live in no chunk), in a CPU's
 * magazines, in a full depot magazine, or free in its chunk.
 *
 * Return: true if the counts add up.
 */
static bool fn_conserved(const struct pn_cache_stats *st,
			 unsigned int per_chunk)
{
	return st->chunks * per_chunk ==
	       st->in_use - st->direct_live + st->cpu_cached +
	       st->full_mags * st->mag_cap + st->chunk_free_objs;
}

static void fn_cache_check(struct fn_run *r, void *ctx, enum fn_result res)
{
	struct fn_cache *fc = ctx;
	const struct pn_cache_stats *lv = &fc->live, *af = &fc->after;
	unsigned int built = atomic_read(&fc->built);
	unsigned int destroyed = atomic_read(&fc->destroyed);

	FN_EXPECT(r, built == destroyed, "%u objects constructed, %u destructed",
		  built, destroyed);
	FN_EXPECT(r, !atomic_read(&fc->bad_dtor),
		  "%d objects destructed out of constructed state",
		  atomic_read(&fc->bad_dtor));
	if (fc->create_err) {
		FN_EXPECT(r, fc->create_err == -ENOMEM,
			  "pn_cache_create() returned %ld", fc->create_err);
		return;
	}
	FN_EXPECT(r, fc->nulls <= 1, "%u allocations failed", fc->nulls);
	/* a blocking allocation fails only when its chunk creation did */
	FN_EXPECT(r, af->chunk_fails - af->reserve_fails == fc->nulls,
		  "%llu failed chunk creations (%llu for the reserve) for %u NULL allocations",
		  af->chunk_fails, af->reserve_fails, fc->nulls);
	FN_EXPECT(r, !fc->dirty, "%u objects handed out %s", fc->dirty,
		  fc->ctor ? "not constructed" : "not zeroed");
	FN_EXPECT(r, !fc->overlap, "%u objects overwritten by others",
		  fc->overlap);
	FN_EXPECT(r, !fc->ctor || built >= fc->got,
		  "%u objects handed out, %u constructed", fc->got, built);

	/* every object allocated */
	FN_EXPECT(r, lv->in_use == fc->got &&
		  (!IS_ENABLED(CONFIG_PCPU_NEXT_STATS) || lv->allocs == fc->got) &&
		  !lv->direct_live,
		  "allocated: in_use %llu allocs %llu direct %llu, %u objects held",
		  lv->in_use, lv->allocs, lv->direct_live, fc->got);
	FN_EXPECT(r, lv->chunks >= DIV_ROUND_UP(fc->got, fc->per_chunk) &&
		  lv->chunks == lv->chunk_creates - lv->chunk_releases,
		  "allocated: %llu chunks (%llu created, %llu released) for %u objects",
		  lv->chunks, lv->chunk_creates, lv->chunk_releases, fc->got);
	FN_EXPECT(r, fn_conserved(lv, fc->per_chunk),
		  "allocated: %llu chunks of %u: %llu in use, %llu cached, %llu full magazines of %llu, %llu free",
		  lv->chunks, fc->per_chunk, lv->in_use, lv->cpu_cached,
		  lv->full_mags, lv->mag_cap, lv->chunk_free_objs);

	/*
	 * Every object freed, the cache shrunk: no chunk left, unless a
	 * release was undone because the chunk tree could not be updated
	 * (documented: the chunk stays intact and free, and reclaim stops
	 * there; destroy releases what is left).
	 */
	FN_EXPECT(r, !af->in_use &&
		  (!IS_ENABLED(CONFIG_PCPU_NEXT_STATS) ||
		   (af->allocs == fc->got && af->frees == fc->got)),
		  "shrunk: in_use %llu allocs %llu frees %llu, %u objects freed",
		  af->in_use, af->allocs, af->frees, fc->got);
	FN_EXPECT(r, (!af->chunks || af->release_fails) &&
		  af->free_chunks == af->chunks && !af->cpu_cached &&
		  !af->full_mags &&
		  af->chunk_creates == af->chunk_releases + af->chunks,
		  "shrunk: %llu chunks (%llu free, %llu releases undone), %llu cached, %llu full magazines, %llu created, %llu released",
		  af->chunks, af->free_chunks, af->release_fails,
		  af->cpu_cached, af->full_mags, af->chunk_creates,
		  af->chunk_releases);
	FN_EXPECT(r, fn_conserved(af, fc->per_chunk),
		  "shrunk: %llu chunks, %llu objects free in them",
		  af->chunks, af->chunk_free_objs);
	FN_EXPECT(r, fc->shrunk % fc->per_chunk == 0 &&
		  fc->shrunk <= af->chunk_releases * fc->per_chunk,
		  "shrink released %lu objects, %llu chunks of %u released",
		  fc->shrunk, af->chunk_releases, fc->per_chunk);
	FN_EXPECT(r, !af->double_frees && !af->bad_frees && !af->poison_errors,
		  "debug counters: %llu double, %llu bad frees, %llu poison",
		  af->double_frees, af->bad_frees, af->poison_errors);
	FN_EXPECT(r, !fc->leaked, "pn_cache_destroy() found %lu live objects",
		  fc->leaked);
}

static const struct fn_seq fn_cache_seq = {
	.prepare = fn_cache_prepare,
	.run = fn_cache_run,
	.check = fn_cache_check,
};

/**
 * fn_cache_ctx() - the context of a cache sequence
 * @test: the test
 * @ctor: with constructor and destructor
 *
 * The objects per chunk come from a probe cache of the same geometry,
 * created and destroyed before the loop.
 *
 * Return: the context (test-managed).
 */
static struct fn_cache *fn_cache_ctx(struct kunit *test, bool ctor)
{
	struct fn_cache *fc = kunit_kzalloc(test, sizeof(*fc), GFP_KERNEL);
	struct pn_cache *c;

	KUNIT_ASSERT_NOT_NULL(test, fc);
	fc->ctor = ctor;
	fc->size = ctor ? FN_CTOR_SIZE : FN_PLAIN_SIZE;
	c = fn_cache_create(fc);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, c);
	fc->per_chunk = pn_cache_objs_per_chunk(c);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
	KUNIT_ASSERT_GT(test, fc->per_chunk, 0U);
	KUNIT_ASSERT_LT(test, fc->per_chunk, FN_CACHE_MAX);
	fc->nr = fc->per_chunk + 1;
	fc->objs = kunit_kcalloc(test, fc->nr, sizeof(*fc->objs), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, fc->objs);
	return fc;
}

/* pn_cache_create(), two chunks of zeroed objects, free, shrink, destroy */
static void failnth_cache(struct kunit *test)
{
	fn_drive(test, &fn_cache_seq, fn_cache_ctx(test, false));
}

/* the same with a constructor that allocates and a destructor */
static void failnth_cache_ctor(struct kunit *test)
{
	fn_drive(test, &fn_cache_seq, fn_cache_ctx(test, true));
}

/* ---- sized API --------------------------------------------------------- */

#define FN_SIZED_EACH	2	/* objects of each size: two chunks of 32 KiB */

static const struct {
	size_t size;
	size_t align;
} fn_sizes[] = {
	{ 8, 8 }, { 24, 8 }, { 40, 64 }, { 200, 8 }, { 1000, 16 },
	{ 4096, 4096 }, { PN_ALLOC_MAX_SIZE, 8 },
};

/**
 * struct fn_sized - context of the sized-API sequence
 * @cls: the classes of fn_sizes[]
 * @class_of: the class each entry of fn_sizes[] comes from
 * @p: the objects
 * @got: successful allocations
 * @nulls: allocations that returned NULL
 * @dirty: objects not zeroed over their size on every possible CPU
 * @misaligned: objects not aligned as asked on some CPU
 * @wrong_class: objects pn_cache_of() did not find in their class
 * @overlap: stamps found overwritten before the frees
 */
struct fn_sized {
	struct fn_classes cls;
	struct pn_cache *class_of[ARRAY_SIZE(fn_sizes)];
	void __percpu *p[ARRAY_SIZE(fn_sizes)][FN_SIZED_EACH];
	unsigned int got;
	unsigned int nulls;
	unsigned int dirty;
	unsigned int misaligned;
	unsigned int wrong_class;
	unsigned int overlap;
};

static bool fn_aligned(void __percpu *p, size_t align)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		if (!IS_ALIGNED((unsigned long)per_cpu_ptr(p, cpu), align))
			return false;
	return true;
}

static void fn_sized_prepare(struct fn_run *r, void *ctx)
{
	struct fn_sized *s = ctx;

	fn_classes_reset(&s->cls, true);
	memset(s->p, 0, sizeof(s->p));
	s->got = 0;
	s->nulls = 0;
	s->dirty = 0;
	s->misaligned = 0;
	s->wrong_class = 0;
	s->overlap = 0;
}

/* pn_alloc_percpu_gfp() of every size (new chunks each), pn_free_percpu() */
static enum fn_result fn_sized_run(void *ctx)
{
	struct fn_sized *s = ctx;
	unsigned int i, j;
	void __percpu *p;

	for (i = 0; i < ARRAY_SIZE(fn_sizes); i++) {
		for (j = 0; j < FN_SIZED_EACH; j++) {
			p = pn_alloc_percpu_gfp(fn_sizes[i].size,
						fn_sizes[i].align, FN_GFP);
			s->p[i][j] = p;
			if (!p) {
				s->nulls++;
				continue;
			}
			s->got++;
			if (!fn_zeroed(p, fn_sizes[i].size))
				s->dirty++;
			if (!fn_aligned(p, fn_sizes[i].align))
				s->misaligned++;
			if (pn_cache_of(p) != s->class_of[i])
				s->wrong_class++;
			fn_stamp(p, i * FN_SIZED_EACH + j);
		}
	}
	for (i = 0; i < ARRAY_SIZE(fn_sizes); i++) {
		for (j = 0; j < FN_SIZED_EACH; j++) {
			p = s->p[i][j];
			if (p && !fn_stamped(p, i * FN_SIZED_EACH + j))
				s->overlap++;
			pn_free_percpu(p);
		}
	}
	return s->nulls ? FN_FAILED : FN_OK;
}

static void fn_sized_check(struct fn_run *r, void *ctx, enum fn_result res)
{
	struct fn_sized *s = ctx;

	FN_EXPECT(r, s->nulls <= 1, "%u allocations failed", s->nulls);
	FN_EXPECT(r, s->got + s->nulls == ARRAY_SIZE(fn_sizes) * FN_SIZED_EACH,
		  "%u allocations made", s->got + s->nulls);
	FN_EXPECT(r, !s->dirty, "%u objects not zeroed", s->dirty);
	FN_EXPECT(r, !s->misaligned, "%u objects misaligned", s->misaligned);
	FN_EXPECT(r, !s->wrong_class, "%u objects outside their class",
		  s->wrong_class);
	FN_EXPECT(r, !s->overlap, "%u objects overwritten by others",
		  s->overlap);
	fn_classes_check(r, &s->cls);
}

static const struct fn_seq fn_sized_seq = {
	.prepare = fn_sized_prepare,
	.run = fn_sized_run,
	.check = fn_sized_check,
};

static void failnth_sized(struct kunit *test)
{
	struct fn_sized *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, s);
	for (i = 0; i < ARRAY_SIZE(fn_sizes); i++)
		s->class_of[i] = fn_class_add(test, &s->cls, fn_sizes[i].size,
					      fn_sizes[i].align);
	fn_drive(test, &fn_sized_seq, s);
}

/* ---- lazy counters ----------------------------------------------------- */

#define FN_LAZY_NR	4	/* counters per array, as rss_stat */
#define FN_LAZY_BASE	100

/**
 * struct fn_lazy - context of the lazy-counter sequences
 * @target: what the array is upgraded to
 * @automatic: upgrade through the automatic upgrade's work function
 * @c: the array
 * @a: its automatic-upgrade state (@automatic)
 * @cls: the size class of the flat target's storage or the tree's level 0
 * @before: module-wide statistics before the run
 * @expect: what each counter must read, kept along by the run
 * @ret: the two upgrade calls' returns (@automatic: 0 if the array was
 *	 upgraded after the call, else -ENOMEM)
 * @lazy: mode of each counter after each upgrade call
 * @sum: lazy_counter_sum() of each counter after each upgrade call
 * @want: @expect at the same moments
 * @read_off: a lazy_counter_read() was beyond the counter's slack
 */
struct fn_lazy {
	enum lazy_counter_target target;
	bool automatic;
	struct lazy_counter c[FN_LAZY_NR];
	struct lazy_counter_auto a;
	struct fn_classes cls;
	struct lazy_counter_stats before;
	s64 expect[FN_LAZY_NR];
	int ret[2];
	bool lazy[2][FN_LAZY_NR];
	s64 sum[2][FN_LAZY_NR];
	s64 want[2][FN_LAZY_NR];
	bool read_off;
};

/* Round @round of updates: local and remote, below and beyond the batch. */
static void fn_lazy_adds(struct fn_lazy *l, int round)
{
	unsigned int i;
	s64 v;

	for (i = 0; i < FN_LAZY_NR; i++) {
		v = round * 7 + i;
		lazy_counter_add_local(&l->c[i], v);
		lazy_counter_add_local(&l->c[i], 1000 * v);
		l->expect[i] += 1001 * v;
		v = -(s64)(round * 3 + i) * 100 - 1;
		if (l->automatic)
			lazy_counter_add_remote_auto(&l->a, i, v);
		else
			lazy_counter_add_remote(&l->c[i], v);
		l->expect[i] += v;
	}
}

/* Record modes and sums after upgrade call @k. */
static void fn_lazy_snap(struct fn_lazy *l, unsigned int k)
{
	unsigned int i;
	s64 read, sum;

	for (i = 0; i < FN_LAZY_NR; i++) {
		l->lazy[k][i] = lazy_counter_is_lazy(&l->c[i]);
		sum = lazy_counter_sum(&l->c[i]);
		read = lazy_counter_read(&l->c[i]);
		l->sum[k][i] = sum;
		l->want[k][i] = l->expect[i];
		if ((u64)abs(read - sum) > lazy_counter_read_slack(&l->c[i]))
			l->read_off = true;
	}
}

/* One upgrade call, explicit or through the automatic upgrade's work. */
static int fn_lazy_upgrade(struct fn_lazy *l)
{
	if (!l->automatic)
		return lazy_counter_upgrade_many(l->c, FN_LAZY_NR, l->target,
						 FN_GFP);
	/* what the kworker runs when the rate threshold is crossed */
	l->a.work.func(&l->a.work);
	return lazy_counter_is_lazy(&l->c[0]) ? -ENOMEM : 0;
}

static void fn_lazy_prepare(struct fn_run *r, void *ctx)
{
	struct fn_lazy *l = ctx;

	/* the automatic upgrade allocates without __GFP_NOWARN: no new chunk */
	fn_classes_reset(&l->cls, !l->automatic);
	lazy_counter_get_stats(&l->before);
	memset(l->ret, 0, sizeof(l->ret));
	l->read_off = false;
}

/*
 * init, adds, upgrade, adds, upgrade again (a retry after a failure, a
 * no-op after a success), adds, destroy; modes and sums recorded after
 * each upgrade call.
 */
static enum fn_result fn_lazy_run(void *ctx)
{
	struct fn_lazy *l = ctx;
	unsigned int i;

	lazy_counter_init_many(l->c, FN_LAZY_BASE, FN_LAZY_NR);
	for (i = 0; i < FN_LAZY_NR; i++)
		l->expect[i] = FN_LAZY_BASE;
	if (l->automatic)	/* threshold never reached: nothing queued */
		lazy_counter_auto_init(&l->a, l->c, FN_LAZY_NR, l->target,
				       UINT_MAX);
	fn_lazy_adds(l, 1);
	l->ret[0] = fn_lazy_upgrade(l);
	fn_lazy_snap(l, 0);
	fn_lazy_adds(l, 2);
	l->ret[1] = fn_lazy_upgrade(l);
	fn_lazy_adds(l, 3);
	fn_lazy_snap(l, 1);
	if (l->automatic)
		lazy_counter_auto_destroy(&l->a);
	else
		lazy_counter_destroy_many(l->c, FN_LAZY_NR);
	return l->ret[0] ? FN_FAILED : FN_OK;
}

static void fn_lazy_check(struct fn_run *r, void *ctx, enum fn_result res)
{
	struct fn_lazy *l = ctx;
	struct lazy_counter_stats now;
	bool failed = l->ret[0];
	unsigned int i, k;

	FN_EXPECT(r, !l->ret[0] || l->ret[0] == -ENOMEM,
		  "first upgrade returned %d", l->ret[0]);
	FN_EXPECT(r, !l->ret[1], "second upgrade returned %d", l->ret[1]);
	for (i = 0; i < FN_LAZY_NR; i++) {
		FN_EXPECT(r, l->lazy[0][i] == failed,
			  "counter %u %s after the first upgrade returned %d", i,
			  l->lazy[0][i] ? "lazy" : "upgraded", l->ret[0]);
		FN_EXPECT(r, !l->lazy[1][i],
			  "counter %u lazy after the second upgrade", i);
		for (k = 0; k < 2; k++)
			FN_EXPECT(r, l->sum[k][i] == l->want[k][i],
				  "counter %u after upgrade %u: sum %lld, expected %lld",
				  i, k + 1, l->sum[k][i], l->want[k][i]);
	}
	FN_EXPECT(r, !l->read_off, "a read was beyond the slack of its counter");

	lazy_counter_get_stats(&now);
	FN_EXPECT(r, now.upgrades - l->before.upgrades == 1,
		  "%llu upgrades counted", now.upgrades - l->before.upgrades);
	FN_EXPECT(r, now.upgrade_failures - l->before.upgrade_failures == failed,
		  "%llu upgrade failures counted, first upgrade returned %d",
		  now.upgrade_failures - l->before.upgrade_failures, l->ret[0]);
	FN_EXPECT(r, now.upgrade_races == l->before.upgrade_races,
		  "%llu upgrade races counted",
		  now.upgrade_races - l->before.upgrade_races);
	FN_EXPECT(r, now.live_groups == l->before.live_groups,
		  "%llu live groups, %llu before the run", now.live_groups,
		  l->before.live_groups);
	FN_EXPECT(r, now.misuse == l->before.misuse,
		  "%llu uses of destroyed counters",
		  now.misuse - l->before.misuse);
	if (l->automatic) {
		/* the no-op second call returns 0 and counts too */
		FN_EXPECT(r, now.auto_upgrades - l->before.auto_upgrades == 2 - failed,
			  "%llu automatic upgrades counted",
			  now.auto_upgrades - l->before.auto_upgrades);
		FN_EXPECT(r, now.auto_triggers == l->before.auto_triggers,
			  "the threshold triggered an upgrade");
	}
	fn_classes_check(r, &l->cls);
}

static const struct fn_seq fn_lazy_seq = {
	.prepare = fn_lazy_prepare,
	.run = fn_lazy_run,
	.check = fn_lazy_check,
};

static void fn_lazy_case(struct kunit *test, enum lazy_counter_target target,
			 bool automatic)
{
	struct fn_lazy *l = kunit_kzalloc(test, sizeof(*l), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, l);
	l->target = target;
	l->automatic = automatic;
	/* the targets' one per-CPU allocation, as lazy_counter.c sizes it */
	if (target == LAZY_COUNTER_FLAT)
		fn_class_add(test, &l->cls, FN_LAZY_NR * sizeof(s32),
			     __alignof__(s32));
	else
		fn_class_add(test, &l->cls, FN_LAZY_NR * sizeof(unsigned long),
			     __alignof__(unsigned long));
	fn_drive(test, &fn_lazy_seq, l);
}

static void failnth_lazy_flat(struct kunit *test)
{
	fn_lazy_case(test, LAZY_COUNTER_FLAT, false);
}

static void failnth_lazy_tree(struct kunit *test)
{
	fn_lazy_case(test, LAZY_COUNTER_TREE, false);
}

static void failnth_lazy_auto(struct kunit *test)
{
	fn_lazy_case(test, LAZY_COUNTER_FLAT, true);
}

/* ---- counter tree ------------------------------------------------------ */

#define FN_TREE_BATCH	32UL
#define FN_TREE_MANY	2
#define FN_TREE_SUMS	(FN_TREE_MANY + 2)	/* the single tree twice */

/**
 * struct fn_ctree - context of the counter-tree sequence
 * @trees: the array for pn_ctree_init_many()
 * @one: the tree for pn_ctree_init()
 * @items: the items of @trees, then those of @one
 * @cls: the size classes of the level-0 counters
 * @ret: pn_ctree_init_many()'s and pn_ctree_init()'s returns
 * @sum: precise sums of @trees, then of @one before and after a set
 * @want: what they must be
 * @approx_off: an approximate sum was outside its accuracy range
 */
struct fn_ctree {
	struct pn_ctree trees[FN_TREE_MANY];
	struct pn_ctree one;
	struct pn_ctree_item *items;
	struct fn_classes cls;
	int ret[2];
	long sum[FN_TREE_SUMS];
	long want[FN_TREE_SUMS];
	bool approx_off;
};

/* Adds to one tree, carries included; its precise and approximate sums. */
static void fn_ctree_use(struct fn_ctree *t, struct pn_ctree *tree,
			 unsigned int k, long start)
{
	long v, approx, lo, hi;
	unsigned int i;

	t->want[k] = start;
	for (i = 0; i < 8; i++) {
		v = (i & 1) ? -(long)(FN_TREE_BATCH * i + k) : (long)(i * 5 + 1);
		pn_ctree_add(tree, v);
		t->want[k] += v;
	}
	t->sum[k] = pn_ctree_precise_sum(tree);
	pn_ctree_approx_min_max(tree, &approx, &lo, &hi);
	if (t->want[k] < lo || t->want[k] > hi)
		t->approx_off = true;
}

static void fn_ctree_prepare(struct fn_run *r, void *ctx)
{
	struct fn_ctree *t = ctx;

	fn_classes_reset(&t->cls, true);
	memset(t->ret, 0, sizeof(t->ret));
	memset(t->sum, 0, sizeof(t->sum));
	memset(t->want, 0, sizeof(t->want));
	t->approx_off = false;
}

/* init_many, adds, destroy_many; init, adds, set, adds, destroy */
static enum fn_result fn_ctree_run(void *ctx)
{
	struct fn_ctree *t = ctx;
	struct pn_ctree_item *it;
	unsigned int k;

	t->ret[0] = pn_ctree_init_many(t->trees, t->items, FN_TREE_MANY,
				       FN_TREE_BATCH, FN_GFP);
	if (!t->ret[0]) {
		for (k = 0; k < FN_TREE_MANY; k++)
			fn_ctree_use(t, &t->trees[k], k, 0);
		pn_ctree_destroy_many(t->trees, FN_TREE_MANY);
	}
	it = (void *)t->items + pn_ctree_items_size_many(FN_TREE_MANY);
	t->ret[1] = pn_ctree_init(&t->one, it, FN_TREE_BATCH, FN_GFP);
	if (!t->ret[1]) {
		fn_ctree_use(t, &t->one, FN_TREE_MANY, 0);
		pn_ctree_set(&t->one, -77);
		fn_ctree_use(t, &t->one, FN_TREE_MANY + 1, -77);
		pn_ctree_destroy(&t->one);
	}
	return t->ret[0] || t->ret[1] ? FN_FAILED : FN_OK;
}

static void fn_ctree_check(struct fn_run *r, void *ctx, enum fn_result res)
{
	struct fn_ctree *t = ctx;
	unsigned int k;

	for (k = 0; k < 2; k++)
		FN_EXPECT(r, !t->ret[k] || t->ret[k] == -ENOMEM,
			  "%s returned %d",
			  k ? "pn_ctree_init()" : "pn_ctree_init_many()",
			  t->ret[k]);
	FN_EXPECT(r, !t->ret[0] || !t->ret[1], "both initialisations failed");
	for (k = 0; k < FN_TREE_SUMS; k++)
		FN_EXPECT(r, t->sum[k] == t->want[k],
			  "sum %u: precise sum %ld, expected %ld", k, t->sum[k],
			  t->want[k]);
	FN_EXPECT(r, !t->approx_off, "an approximate sum was out of range");
	fn_classes_check(r, &t->cls);
}

static const struct fn_seq fn_ctree_seq = {
	.prepare = fn_ctree_prepare,
	.run = fn_ctree_run,
	.check = fn_ctree_check,
};

static void failnth_ctree(struct kunit *test)
{
	struct fn_ctree *t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);
	/* the array's items, then the single tree's (whole cache lines) */
	size_t isz = pn_ctree_items_size_many(FN_TREE_MANY) +
		     pn_ctree_items_size();

	KUNIT_ASSERT_NOT_NULL(test, t);
	/* cache-line aligned: a power-of-two kmalloc() size is */
	t->items = kunit_kzalloc(test, roundup_pow_of_two(isz), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t->items);
	fn_class_add(test, &t->cls, FN_TREE_MANY * sizeof(u32),
		     __alignof__(u32));
	fn_class_add(test, &t->cls, sizeof(u32), __alignof__(u32));
	fn_drive(test, &fn_ctree_seq, t);
}

/* ---- mm_cid storage ---------------------------------------------------- */

#define FN_MMCID_CIDS	5
#define FN_NOT_MADE	(-2)	/* an add or get the run did not reach */

/* A slot of the raw storage object. */
struct fn_slot {
	u64 magic;
	s64 val;
};

/**
 * struct fn_mmcid_obj - what the run saw of one storage object
 * @err: its create's error, or 0
 * @cid: where each access for fn_mmcid.cids[] went
 * @nowait_cid: where the GFP_NOWAIT access went (counter only)
 * @remote_cid: where the access through the task's own cid went (counter
 *		only: a kernel thread has none, so the remote slot)
 * @fallbacks: accesses for a valid cid that got the remote slot before
 *	       the teardown
 * @retry: mmcid_pcpu_grow_attempts()'s backoff deadline before teardown
 * @sum: value before the teardown, after it, after a late add
 * @gone: the object saw its mm torn down
 * @slots_after: cid slots left after the teardown
 * @max_cid_after: mmcid_pcpu_max_cid() after the teardown
 * @late_cid: where an access after the teardown went
 */
struct fn_mmcid_obj {
	long err;
	int cid[FN_MMCID_CIDS];
	int nowait_cid;
	int remote_cid;
	unsigned int fallbacks;
	unsigned long retry;
	s64 sum[3];
	bool gone;
	unsigned int slots_after;
	int max_cid_after;
	int late_cid;
};

/**
 * struct fn_mmcid - context of the mm_cid sequence
 * @mm: the run's mm, from mm_alloc() in prepare, dropped by the run
 * @cids: distinct cids below nr_cpu_ids, one per block size used
 * @nr_cids: how many
 * @ctr: the counter's view
 * @st: the raw storage object's view (slots with init, fold and fini)
 * @want: the counter's value before the late add
 * @st_want: the storage object's total
 * @inits: the storage's slot init calls (remote slot included)
 * @folds: its fold calls
 * @finis: its fini calls
 * @finis_torn: @finis right after the mm's teardown
 * @bad_slot: a slot was used, folded or finalised without its init
 */
struct fn_mmcid {
	struct mm_struct *mm;
	int cids[FN_MMCID_CIDS];
	unsigned int nr_cids;
	struct fn_mmcid_obj ctr;
	struct fn_mmcid_obj st;
	s64 want;
	s64 st_want;
	atomic_t inits;
	atomic_t folds;
	atomic_t finis;
	int finis_torn;
	atomic_t bad_slot;
};

static void fn_slot_init(void *slot, void *arg)
{
	struct fn_mmcid *m = arg;
	struct fn_slot *s = slot;

	s->magic = FN_MAGIC;
	s->val = 0;
	atomic_inc(&m->inits);
}

static void fn_slot_fold(void *remote, const void *slot, void *arg)
{
	const struct fn_slot *s = slot;
	struct fn_mmcid *m = arg;
	struct fn_slot *rs = remote;

	if (s->magic != FN_MAGIC || rs->magic != FN_MAGIC)
		atomic_inc(&m->bad_slot);
	rs->val += s->val;
	atomic_inc(&m->folds);
}

static void fn_slot_fini(void *slot, void *arg)
{
	struct fn_mmcid *m = arg;
	struct fn_slot *s = slot;

	if (s->magic != FN_MAGIC)
		atomic_inc(&m->bad_slot);
	s->magic = 0;
	atomic_inc(&m->finis);
}

static const struct mmcid_pcpu_ops fn_slot_ops = {
	.init = fn_slot_init,
	.fold = fn_slot_fold,
	.fini = fn_slot_fini,
};

struct fn_slot_total {
	struct fn_mmcid *m;
	s64 sum;
};

static void fn_slot_add(const void *slot, int cid, void *data)
{
	const struct fn_slot *s = slot;
	struct fn_slot_total *t = data;

	if (s->magic != FN_MAGIC)
		atomic_inc(&t->m->bad_slot);
	t->sum += s->val;
}

static s64 fn_slot_total(struct fn_mmcid *m, struct mmcid_pcpu *st)
{
	struct fn_slot_total t = { .m = m };

	mmcid_pcpu_for_each(st, fn_slot_add, &t);
	return t.sum;
}

static void fn_mmcid_obj_reset(struct fn_mmcid_obj *o)
{
	unsigned int k;

	memset(o, 0, sizeof(*o));
	for (k = 0; k < FN_MMCID_CIDS; k++)
		o->cid[k] = FN_NOT_MADE;
	o->nowait_cid = FN_NOT_MADE;
	o->remote_cid = FN_NOT_MADE;
	o->late_cid = FN_NOT_MADE;
	o->max_cid_after = FN_NOT_MADE;
}

static void fn_mmcid_prepare(struct fn_run *r, void *ctx)
{
	struct fn_mmcid *m = ctx;

	m->mm = mm_alloc();
	KUNIT_ASSERT_NOT_NULL(r->test, m->mm);
	fn_mmcid_obj_reset(&m->ctr);
	fn_mmcid_obj_reset(&m->st);
	m->want = 0;
	m->st_want = 0;
	atomic_set(&m->inits, 0);
	atomic_set(&m->folds, 0);
	atomic_set(&m->finis, 0);
	m->finis_torn = 0;
	atomic_set(&m->bad_slot, 0);
}

/* Record where an access for a valid cid went; count a fallback. */
static void fn_mmcid_went(struct fn_mmcid_obj *o, int *where, int cid)
{
	*where = cid;
	if (cid == MMCID_PCPU_REMOTE)
		o->fallbacks++;
}

/* The counter: a non-blocking first use, every cid, the remote slot. */
static void fn_mmcid_counter_use(struct fn_mmcid *m, struct mmcid_counter *ctr)
{
	struct fn_mmcid_obj *o = &m->ctr;
	unsigned int k;

	/*
	 * GFP_NOWAIT from a preemptible caller allocates the block; if that
	 * fails the add goes to the remote slot and the counter backs off.
	 */
	fn_mmcid_went(o, &o->nowait_cid,
		      __mmcid_counter_add(ctr, 1, GFP_NOWAIT | __GFP_NOWARN,
					  MMCID_SRC_FIXED, m->cids[0], NULL));
	m->want += 1;
	for (k = 0; k < m->nr_cids; k++) {
		fn_mmcid_went(o, &o->cid[k],
			      __mmcid_counter_add(ctr, 10 + k, FN_GFP,
						  MMCID_SRC_FIXED, m->cids[k],
						  NULL));
		m->want += 10 + k;
	}
	o->remote_cid = mmcid_counter_add(ctr, 100, FN_GFP, NULL);
	m->want += 100;
	o->sum[0] = mmcid_counter_sum(ctr);
	mmcid_pcpu_grow_attempts(mmcid_counter_storage(ctr), &o->retry);
}

/* The raw storage object: first use of each cid's slot, the total. */
static void fn_mmcid_storage_use(struct fn_mmcid *m, struct mmcid_pcpu *st)
{
	struct fn_mmcid_obj *o = &m->st;
	struct mmcid_pcpu_ref ref;
	struct fn_slot *slot;
	unsigned int k;

	for (k = 0; k < m->nr_cids; k++) {
		slot = __mmcid_pcpu_get(st, &ref, FN_GFP, MMCID_SRC_FIXED,
					m->cids[k]);
		if (slot->magic != FN_MAGIC)
			atomic_inc(&m->bad_slot);
		slot->val += 1000 + k;
		mmcid_pcpu_put(st, &ref);
		fn_mmcid_went(o, &o->cid[k], ref.cid);
		m->st_want += 1000 + k;
	}
	o->sum[0] = fn_slot_total(m, st);
	mmcid_pcpu_grow_attempts(st, &o->retry);
}

/*
 * counter and storage create, first use of every cid (new blocks), the
 * remote slot, sums; mmput() tears the mm down (the cid slots are folded
 * into the remote slot and finalised); sums again, a late access,
 * destroy (the remote slots are finalised).
 */
static enum fn_result fn_mmcid_run(void *ctx)
{
	struct fn_mmcid *m = ctx;
	struct mmcid_counter *ctr;
	struct mmcid_pcpu_ref ref;
	struct mmcid_pcpu *st;

	ctr = mmcid_counter_create(m->mm);
	if (IS_ERR(ctr))
		m->ctr.err = PTR_ERR(ctr);
	st = mmcid_pcpu_create(m->mm, sizeof(struct fn_slot), &fn_slot_ops, m);
	if (IS_ERR(st))
		m->st.err = PTR_ERR(st);
	if (!m->ctr.err)
		fn_mmcid_counter_use(m, ctr);
	if (!m->st.err)
		fn_mmcid_storage_use(m, st);

	mmput(m->mm);		/* the last user: exit_mmap() -> ->release */
	m->mm = NULL;
	m->finis_torn = atomic_read(&m->finis);

	if (!m->ctr.err) {
		m->ctr.gone = mmcid_pcpu_mm_gone(mmcid_counter_storage(ctr));
		m->ctr.sum[1] = mmcid_counter_sum(ctr);
		m->ctr.late_cid = __mmcid_counter_add(ctr, 5, FN_GFP,
						      MMCID_SRC_FIXED,
						      m->cids[0], NULL);
		m->ctr.sum[2] = mmcid_counter_sum(ctr);
		mmcid_counter_destroy(ctr);
	}
	if (!m->st.err) {
		m->st.gone = mmcid_pcpu_mm_gone(st);
		m->st.sum[1] = fn_slot_total(m, st);
		m->st.slots_after = mmcid_pcpu_slots(st);
		m->st.max_cid_after = mmcid_pcpu_max_cid(st);
		__mmcid_pcpu_get(st, &ref, FN_GFP, MMCID_SRC_FIXED, m->cids[0]);
		m->st.late_cid = ref.cid;
		mmcid_pcpu_put(st, &ref);
		mmcid_pcpu_destroy(st);
	}
	return m->ctr.err || m->st.err || m->ctr.fallbacks || m->st.fallbacks ?
	       FN_FAILED : FN_OK;
}

static bool fn_mmcid_create_ok(long err)
{
	return !err || err == -ENOMEM || err == -EINTR;
}

/* Checks common to the counter and the storage object. */
static void fn_mmcid_obj_check(struct fn_run *r, struct fn_mmcid *m,
			       struct fn_mmcid_obj *o, const char *what,
			       s64 want)
{
	unsigned int k;

	for (k = 0; k < m->nr_cids; k++)
		FN_EXPECT(r, o->cid[k] == m->cids[k] ||
			  o->cid[k] == MMCID_PCPU_REMOTE,
			  "%s: access for cid %d went to %d", what, m->cids[k],
			  o->cid[k]);
	/* a failed block allocation, and only that, starts the backoff */
	FN_EXPECT(r, !o->fallbacks == !o->retry,
		  "%s: %u accesses fell back to the remote slot, backoff %s",
		  what, o->fallbacks, o->retry ? "armed" : "not armed");
	FN_EXPECT(r, o->sum[0] == want && o->sum[1] == want,
		  "%s: value %lld, after teardown %lld, expected %lld", what,
		  o->sum[0], o->sum[1], want);
	FN_EXPECT(r, o->gone, "%s: mm teardown not seen", what);
	FN_EXPECT(r, o->late_cid == MMCID_PCPU_REMOTE,
		  "%s: access after teardown went to %d", what, o->late_cid);
}

static void fn_mmcid_check(struct fn_run *r, void *ctx, enum fn_result res)
{
	struct fn_mmcid *m = ctx;
	unsigned int k, own = 0;

	FN_EXPECT(r, !m->mm, "the run did not drop its mm");
	FN_EXPECT(r, fn_mmcid_create_ok(m->ctr.err),
		  "mmcid_counter_create() returned %ld", m->ctr.err);
	FN_EXPECT(r, fn_mmcid_create_ok(m->st.err),
		  "mmcid_pcpu_create() returned %ld", m->st.err);
	/*
	 * One injected failure: one create failed, or the accesses of one
	 * unit set fell back (both objects share a set, and the backoff is
	 * the set's: its blocks are shared too).
	 */
	FN_EXPECT(r, !!m->ctr.err + !!m->st.err +
		  !!(m->ctr.fallbacks + m->st.fallbacks) <= 1,
		  "create errors %ld, %ld; fallbacks %u, %u", m->ctr.err,
		  m->st.err, m->ctr.fallbacks, m->st.fallbacks);
	FN_EXPECT(r, !atomic_read(&m->bad_slot),
		  "%d slots used, folded or finalised uninitialised",
		  atomic_read(&m->bad_slot));

	if (!m->ctr.err) {
		FN_EXPECT(r, m->ctr.nowait_cid == m->cids[0] ||
			  m->ctr.nowait_cid == MMCID_PCPU_REMOTE,
			  "counter: GFP_NOWAIT add for cid %d went to %d",
			  m->cids[0], m->ctr.nowait_cid);
		FN_EXPECT(r, m->ctr.remote_cid == MMCID_PCPU_REMOTE,
			  "counter: a kernel thread's add went to cid %d",
			  m->ctr.remote_cid);
		fn_mmcid_obj_check(r, m, &m->ctr, "counter", m->want);
		FN_EXPECT(r, m->ctr.sum[2] == m->want + 5,
			  "counter: %lld after the late add, expected %lld",
			  m->ctr.sum[2], m->want + 5);
	}
	if (m->st.err) {
		FN_EXPECT(r, !atomic_read(&m->inits) && !atomic_read(&m->finis),
			  "storage that failed: %d inits, %d finis",
			  atomic_read(&m->inits), atomic_read(&m->finis));
		return;
	}
	fn_mmcid_obj_check(r, m, &m->st, "storage", m->st_want);
	for (k = 0; k < m->nr_cids; k++)
		own += m->st.cid[k] == m->cids[k];
	FN_EXPECT(r, atomic_read(&m->inits) == own + 1 &&
		  atomic_read(&m->folds) == own && m->finis_torn == own &&
		  atomic_read(&m->finis) == own + 1,
		  "storage: %u cid slots used: %d inits, %d folds, %d finis at teardown, %d in all",
		  own, atomic_read(&m->inits), atomic_read(&m->folds),
		  m->finis_torn, atomic_read(&m->finis));
	FN_EXPECT(r, !m->st.slots_after && m->st.max_cid_after == -1,
		  "storage after teardown: %u cid slots, largest cid %d",
		  m->st.slots_after, m->st.max_cid_after);
}

static const struct fn_seq fn_mmcid_seq = {
	.prepare = fn_mmcid_prepare,
	.run = fn_mmcid_run,
	.check = fn_mmcid_check,
};

static void failnth_mmcid(struct kunit *test)
{
	/* block 0, again block 0, block 1, a block of 64, the last one */
	const int cand[] = { 0, 1, MMCID_B0, BITS_PER_LONG, (int)nr_cpu_ids - 1 };
	struct fn_mmcid *m = kunit_kzalloc(test, sizeof(*m), GFP_KERNEL);
	unsigned int i, k;

	KUNIT_ASSERT_NOT_NULL(test, m);
	for (i = 0; i < ARRAY_SIZE(cand); i++) {
		if (cand[i] < 0 || (unsigned int)cand[i] >= nr_cpu_ids)
			continue;
		for (k = 0; k < m->nr_cids; k++)
			if (m->cids[k] == cand[i])
				break;
		if (k == m->nr_cids)
			m->cids[m->nr_cids++] = cand[i];
	}
	if (nr_cpu_ids <= MMCID_B0)
		kunit_info(test, "%u CPU ids: every cid is in block 0, no growth\n",
			   nr_cpu_ids);
	fn_drive(test, &fn_mmcid_seq, m);
}

static struct kunit_case fn_cases[] = {
	KUNIT_CASE(failnth_cache),
	KUNIT_CASE(failnth_cache_ctor),
	KUNIT_CASE(failnth_sized),
	KUNIT_CASE(failnth_lazy_flat),
	KUNIT_CASE(failnth_lazy_tree),
	KUNIT_CASE(failnth_lazy_auto),
	KUNIT_CASE(failnth_ctree),
	KUNIT_CASE(failnth_mmcid),
	{}
};

static struct kunit_suite fn_suite = {
	.name = "pcpu_next_failnth",
	.init = fn_init,
	.test_cases = fn_cases,
};

kunit_test_suite(fn_suite);
