// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for pcpu_alloc: genuine per-CPU semantics, alignment,
 * zeroing on every possible CPU, constructed-object caching (constructor
 * and destructor counts, constructor failure), cross-CPU free, reclaim,
 * destroy with leaked objects, hotplug drain, injected chunk failures,
 * non-blocking allocations, and the debug mode's checks.
 *
 * Work that must run on a given CPU goes through work_on_cpu(): a per-CPU
 * kworker, bound to that CPU, is the pinned kthread.
 *
 * The suite is built whenever the kernel has KUnit, with or without the
 * test harness (torture/), so it uses the library's API, its test hooks
 * (internal/pcpu_alloc.h) and the module core's fault sites
 * (internal/core.h), never the harness.  Objects in use are asserted on
 * pn_cache_stats.in_use, which the library derives from its chunk
 * accounting whatever CONFIG_PCPU_NEXT_STATS says; with the fast-path
 * statistics compiled in, allocs - frees must say the same.
 */

#include <kunit/test.h>
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/fault-inject.h>
#include <linux/irqflags.h>
#include <linux/kthread.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/timer.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/string.h>
#include <linux/workqueue.h>
#include <trace/events/kmem.h>

#include <pcpu_next/compat.h>
#include <pcpu_next/pcpu_alloc.h>

#include "internal/core.h"
#include "internal/pcpu_alloc.h"
#include "internal/trace_pcpu_alloc.h"

#define PN_PATTERN	0x5eedf00dULL

/* allocs - frees, clamped: what in_use was before it was derived. */
static u64 pn_counted_in_use(const struct pn_cache_stats *st)
{
	return st->allocs > st->frees ? st->allocs - st->frees : 0;
}

/*
 * @n objects of the cache in use in the snapshot @st: by the chunk
 * accounting, and by the fast-path counters when they are compiled in.
 */
#define PN_EXPECT_IN_USE(test, st, n) do {				\
	const struct pn_cache_stats *__st = (st);			\
	struct kunit *__test = (test);					\
	u64 __n = (n);							\
									\
	KUNIT_EXPECT_EQ(__test, __st->in_use, __n);			\
	if (IS_ENABLED(CONFIG_PCPU_NEXT_STATS))				\
		KUNIT_EXPECT_EQ(__test, pn_counted_in_use(__st), __n);	\
} while (0)

static unsigned long pn_kaddr(const void __percpu *p)
{
	return (__force unsigned long)p;
}

static bool pn_all_bytes(void __percpu *obj, size_t size, int c)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		if (memchr_inv(per_cpu_ptr(obj, cpu), c, size))
			return false;
	return true;
}

static struct pn_cache *pn_kunit_cache(struct kunit *test, const char *name,
				       size_t size, unsigned int flags,
				       pn_ctor_t ctor, pn_dtor_t dtor, void *priv)
{
	struct pn_cache *c = pn_cache_create(name, size, 0, flags, ctor, dtor,
					     priv);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, c);
	return c;
}

/*
 * Keep the test thread on one CPU where a test relies on reusing what
 * this CPU's magazines hold.  Each case runs in its own kthread, so an
 * aborted case needs no unpinning.
 */
static void pn_pin_self(void)
{
	set_cpus_allowed_ptr(current, cpumask_of(raw_smp_processor_id()));
}

static void pn_unpin_self(void)
{
	set_cpus_allowed_ptr(current, cpu_possible_mask);
}

static void pn_pin_to(unsigned int cpu)
{
	set_cpus_allowed_ptr(current, cpumask_of(cpu));
}

/* ---- genuine per-CPU memory --------------------------------------------- */

struct pn_pcpu_arg {
	u64 __percpu *p;
};

static long pn_write_local(void *arg)
{
	u64 __percpu *p = ((struct pn_pcpu_arg *)arg)->p;

	this_cpu_write(p[0], PN_PATTERN + raw_smp_processor_id());
	this_cpu_add(p[1], 7);
	return 0;
}

static void pn_test_percpu_semantics(struct kunit *test)
{
	struct pn_pcpu_arg arg;
	u64 __percpu *p;
	unsigned int cpu;

	p = pn_alloc_percpu_gfp(2 * sizeof(u64), sizeof(u64), GFP_KERNEL);
	arg.p = p;
	KUNIT_ASSERT_NE(test, pn_kaddr(p), 0UL);

	cpus_read_lock();
	for_each_online_cpu(cpu)
		KUNIT_EXPECT_EQ(test, work_on_cpu(cpu, pn_write_local, &arg), 0);
	for_each_possible_cpu(cpu) {
		bool online = cpu_online(cpu);

		KUNIT_EXPECT_EQ_MSG(test, per_cpu_ptr(p, cpu)[0],
				    online ? PN_PATTERN + cpu : 0, "cpu %u", cpu);
		KUNIT_EXPECT_EQ_MSG(test, per_cpu_ptr(p, cpu)[1],
				    online ? 7ULL : 0ULL, "cpu %u", cpu);
	}
	cpus_read_unlock();
	pn_free_percpu(p);
}

static void pn_kunit_dtor(void __percpu *obj, void *priv)
{
}

/* ---- alignment ---------------------------------------------------------- */

static void pn_test_alignment(struct kunit *test)
{
	static const size_t sizes[] = { 1, 3, 8, 24, 100, 1000, 4000, 5000,
					PN_ALLOC_MAX_SIZE };
	void __percpu *p[2];
	unsigned int cpu, i, k;
	size_t align;

	for (align = 1; align <= PAGE_SIZE; align <<= 1) {
		for (i = 0; i < ARRAY_SIZE(sizes); i++) {
			for (k = 0; k < 2; k++) {
				p[k] = pn_alloc_percpu_gfp(sizes[i], align, GFP_KERNEL);
				KUNIT_ASSERT_NE(test, pn_kaddr(p[k]), 0UL);
				KUNIT_EXPECT_TRUE_MSG(test, IS_ALIGNED(pn_kaddr(p[k]), align),
						      "size %zu align %zu", sizes[i], align);
				for_each_possible_cpu(cpu) {
					unsigned long a = (unsigned long)per_cpu_ptr(p[k], cpu);

					KUNIT_EXPECT_TRUE(test, IS_ALIGNED(a, align));
				}
			}
			KUNIT_EXPECT_NE(test, pn_kaddr(p[0]), pn_kaddr(p[1]));
			pn_free_percpu(p[0]);
			pn_free_percpu(p[1]);
		}
	}
	/* Every size class is naturally aligned (up to a page). */
	for (i = 0; i < 13; i++) {
		size_t sz = 8U << i;

		p[0] = pn_alloc_percpu_gfp(sz, 1, GFP_KERNEL);
		KUNIT_ASSERT_NE(test, pn_kaddr(p[0]), 0UL);
		KUNIT_EXPECT_TRUE(test, IS_ALIGNED(pn_kaddr(p[0]),
						   min_t(size_t, sz, PAGE_SIZE)));
		pn_free_percpu(p[0]);
	}
	/* A cache with a non-power-of-two size keeps its alignment. */
	{
		struct pn_cache *c = pn_cache_create("kunit-align", 24, 16, 0,
						     NULL, NULL, NULL);

		KUNIT_ASSERT_NOT_ERR_OR_NULL(test, c);
		for (k = 0; k < 2; k++) {
			p[k] = pn_cache_alloc(c, GFP_KERNEL);
			KUNIT_ASSERT_NE(test, pn_kaddr(p[k]), 0UL);
			KUNIT_EXPECT_TRUE(test, IS_ALIGNED(pn_kaddr(p[k]), 16));
		}
		KUNIT_EXPECT_GE(test, abs_diff(pn_kaddr(p[0]), pn_kaddr(p[1])), 32UL);
		pn_cache_free(c, p[0]);
		pn_cache_free(c, p[1]);
		KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
	}
	/* The kernel's own per-CPU memory is not ours: refused, not freed. */
	{
		u64 __percpu *k = alloc_percpu(u64);

		KUNIT_ASSERT_NE(test, pn_kaddr(k), 0UL);
		KUNIT_EXPECT_NULL(test, pn_cache_of(k));
		pn_free_percpu(k);
		*per_cpu_ptr(k, cpumask_first(cpu_possible_mask)) = 1;
		free_percpu(k);
	}
	/* Bad arguments fail cleanly. */
	KUNIT_EXPECT_EQ(test, pn_kaddr(pn_alloc_percpu_gfp(0, 8, GFP_KERNEL)), 0UL);
	KUNIT_EXPECT_EQ(test, pn_kaddr(pn_alloc_percpu_gfp(PN_ALLOC_MAX_SIZE + 1, 8,
							   GFP_KERNEL)), 0UL);
	KUNIT_EXPECT_EQ(test, pn_kaddr(pn_alloc_percpu_gfp(8, 3, GFP_KERNEL)), 0UL);
	KUNIT_EXPECT_EQ(test, pn_kaddr(pn_alloc_percpu_gfp(8, 2 * PAGE_SIZE, GFP_KERNEL)), 0UL);
	KUNIT_EXPECT_TRUE(test, IS_ERR(pn_cache_create("x", 8, 0, 0, NULL, pn_kunit_dtor,
						       NULL)));
	KUNIT_EXPECT_TRUE(test, IS_ERR(pn_cache_create("x", 0, 0, 0, NULL, NULL, NULL)));
	KUNIT_EXPECT_TRUE(test, IS_ERR(pn_cache_create("x", 8, 0, 0x100, NULL, NULL, NULL)));
}

/* ---- zeroing ------------------------------------------------------------ */

#define PN_ZERO_N	64

static void pn_test_zeroing(struct kunit *test)
{
	void __percpu **p, **old;
	unsigned int round, i, j, cpu, reused = 0;
	const size_t size = 40;

	p = kunit_kcalloc(test, PN_ZERO_N, sizeof(*p), GFP_KERNEL);
	old = kunit_kcalloc(test, PN_ZERO_N, sizeof(*old), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, p);
	KUNIT_ASSERT_NOT_NULL(test, old);

	pn_pin_self();
	for (round = 0; round < 3; round++) {
		for (i = 0; i < PN_ZERO_N; i++) {
			p[i] = pn_alloc_percpu_gfp(size, 8, GFP_KERNEL);
			KUNIT_ASSERT_NE(test, pn_kaddr(p[i]), 0UL);
			KUNIT_EXPECT_TRUE_MSG(test, pn_all_bytes(p[i], size, 0),
					      "round %u object %u not zero", round, i);
			for (j = 0; j < PN_ZERO_N; j++)
				if (p[i] == old[j])
					reused++;
		}
		for (i = 0; i < PN_ZERO_N; i++) {
			for_each_possible_cpu(cpu)
				memset(per_cpu_ptr(p[i], cpu), 0xa5, size);
			old[i] = p[i];
			pn_free_percpu(p[i]);
		}
	}
	pn_unpin_self();
	/* The dirty objects did come back: zeroing was exercised on reuse. */
	KUNIT_EXPECT_GT(test, reused, 0U);
}

/* ---- constructor / destructor ------------------------------------------- */

struct pn_ctor_state {
	atomic_t ctor;
	atomic_t dtor;
	int fail_at;		/* fail the constructor call with this count, or -1 */
	bool bad_dtor;		/* a destructed object was not in constructed state */
};

static int pn_ctor(void __percpu *obj, void *priv, gfp_t gfp)
{
	struct pn_ctor_state *s = priv;
	unsigned int cpu;

	if (s->fail_at >= 0 && atomic_read(&s->ctor) == s->fail_at)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		u64 *w = per_cpu_ptr(obj, cpu);

		*w = PN_PATTERN ^ cpu;
	}
	atomic_inc(&s->ctor);
	return 0;
}

static void pn_dtor(void __percpu *obj, void *priv)
{
	struct pn_ctor_state *s = priv;
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		if (*(u64 *)per_cpu_ptr(obj, cpu) != (PN_PATTERN ^ cpu))
			s->bad_dtor = true;
	atomic_inc(&s->dtor);
}

static bool pn_constructed(void __percpu *obj)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		if (*(u64 *)per_cpu_ptr(obj, cpu) != (PN_PATTERN ^ cpu))
			return false;
	return true;
}

static void pn_test_ctor_dtor(struct kunit *test)
{
	struct pn_ctor_state s = { .fail_at = -1 };
	struct pn_cache_stats st;
	void __percpu **p;
	struct pn_cache *c;
	unsigned int n, i, round;

	c = pn_kunit_cache(test, "kunit-ctor", 32, 0, pn_ctor, pn_dtor, &s);
	n = pn_cache_objs_per_chunk(c);
	p = kunit_kcalloc(test, n + 1, sizeof(*p), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, p);

	pn_pin_self();
	for (round = 0; round < 2; round++) {
		for (i = 0; i < n + 1; i++) {
			p[i] = pn_cache_alloc(c, GFP_KERNEL);
			KUNIT_ASSERT_NE(test, pn_kaddr(p[i]), 0UL);
			KUNIT_EXPECT_TRUE(test, pn_constructed(p[i]));
		}
		/* Two chunks constructed in full, once, whatever the round. */
		KUNIT_EXPECT_EQ(test, atomic_read(&s.ctor), 2 * n);
		KUNIT_EXPECT_EQ(test, atomic_read(&s.dtor), 0);
		for (i = 0; i < n + 1; i++)
			pn_cache_free(c, p[i]);
	}
	pn_unpin_self();
	pn_cache_get_stats(c, &st);
	PN_EXPECT_IN_USE(test, &st, 0);
	KUNIT_EXPECT_EQ(test, st.chunks, 2ULL);

	/* Shrink: every object is back in a chunk, chunks and objects die. */
	KUNIT_EXPECT_EQ(test, pn_cache_shrink(c), 2UL * n);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.dtor), 2 * n);
	KUNIT_EXPECT_FALSE(test, s.bad_dtor);
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_EQ(test, st.chunks, 0ULL);
	KUNIT_EXPECT_EQ(test, st.chunk_releases, 2ULL);

	/* Allocating again constructs a fresh chunk. */
	p[0] = pn_cache_alloc(c, GFP_KERNEL);
	KUNIT_ASSERT_NE(test, pn_kaddr(p[0]), 0UL);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.ctor), 3 * n);
	pn_cache_free(c, p[0]);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.dtor), 3 * n);
}

static void pn_test_ctor_failure(struct kunit *test)
{
	struct pn_ctor_state s = { .fail_at = -1 };
	struct pn_cache_stats st;
	struct pn_cache *c;
	void __percpu *p;
	unsigned int n;

	c = pn_kunit_cache(test, "kunit-ctorfail", 16, 0, pn_ctor, pn_dtor, &s);
	n = pn_cache_objs_per_chunk(c);
	s.fail_at = n / 2;

	KUNIT_EXPECT_EQ(test, pn_kaddr(pn_cache_alloc(c, GFP_KERNEL)), 0UL);
	/* The constructed half was destructed again: nothing leaked. */
	KUNIT_EXPECT_EQ(test, atomic_read(&s.ctor), n / 2);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.dtor), n / 2);
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_EQ(test, st.chunks, 0ULL);
	KUNIT_EXPECT_EQ(test, st.chunk_fails, 1ULL);
	PN_EXPECT_IN_USE(test, &st, 0);

	s.fail_at = -1;
	p = pn_cache_alloc(c, GFP_KERNEL);
	KUNIT_ASSERT_NE(test, pn_kaddr(p), 0UL);
	KUNIT_EXPECT_TRUE(test, pn_constructed(p));
	pn_cache_free(c, p);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.ctor), atomic_read(&s.dtor));
	KUNIT_EXPECT_FALSE(test, s.bad_dtor);
}

/* ---- cross-CPU free ----------------------------------------------------- */

#define PN_XCPU_N	96

struct pn_xcpu {
	struct pn_cache *c;
	void __percpu *p[PN_XCPU_N];
	bool ok;
};

static long pn_xcpu_alloc(void *arg)
{
	struct pn_xcpu *x = arg;
	unsigned int i;

	x->ok = true;
	for (i = 0; i < PN_XCPU_N; i++) {
		x->p[i] = pn_cache_alloc(x->c, GFP_KERNEL);
		if (!x->p[i])
			x->ok = false;
		else
			this_cpu_ptr((u64 __percpu *)x->p[i])[1] = i;
	}
	return 0;
}

static long pn_xcpu_free(void *arg)
{
	struct pn_xcpu *x = arg;
	unsigned int i;

	for (i = 0; i < PN_XCPU_N; i++)
		pn_cache_free(x->c, x->p[i]);
	return 0;
}

static unsigned int pn_two_cpus(unsigned int *b)
{
	unsigned int a = cpumask_first(cpu_online_mask);

	*b = cpumask_next(a, cpu_online_mask);
	return a;
}

static void pn_test_cross_cpu_free(struct kunit *test)
{
	struct pn_cache_stats st;
	unsigned int a, b, i;
	struct pn_xcpu *x;

	if (pn_alloc_debug_forced())
		kunit_skip(test, "alloc_debug=1: no magazines to test");

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two online CPUs");
	x = kunit_kzalloc(test, sizeof(*x), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, x);
	x->c = pn_kunit_cache(test, "kunit-xcpu", 64, 0, NULL, NULL, NULL);

	cpus_read_lock();
	a = pn_two_cpus(&b);
	work_on_cpu(a, pn_xcpu_alloc, x);
	KUNIT_EXPECT_TRUE(test, x->ok);
	for (i = 0; i < PN_XCPU_N && x->ok; i++)
		KUNIT_EXPECT_EQ(test, per_cpu_ptr((u64 __percpu *)x->p[i], a)[1], (u64)i);
	work_on_cpu(b, pn_xcpu_free, x);
	/* B's magazines now hold A's objects. */
	KUNIT_EXPECT_GT(test, pn_cache_cpu_objects(x->c, b), 0U);
	cpus_read_unlock();

	pn_cache_get_stats(x->c, &st);
	PN_EXPECT_IN_USE(test, &st, 0);
	/* Everything goes back to its chunk: every chunk is released. */
	KUNIT_EXPECT_EQ(test, pn_cache_shrink(x->c),
			(unsigned long)st.chunks * pn_cache_objs_per_chunk(x->c));
	pn_cache_get_stats(x->c, &st);
	KUNIT_EXPECT_EQ(test, st.chunks, 0ULL);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(x->c), 0UL);
}

/* ---- reclaim ------------------------------------------------------------ */

static void pn_test_shrinker_reclaim(struct kunit *test)
{
	struct pn_ctor_state s = { .fail_at = -1 };
	struct pn_cache_stats st;
	struct pn_xcpu *x;
	unsigned int n, cpu;
	u64 before;

	if (pn_alloc_debug_forced())
		kunit_skip(test, "alloc_debug=1: no magazines to test");

	x = kunit_kzalloc(test, sizeof(*x), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, x);
	/* 1 KiB objects: 8 per chunk, 16 per magazine, 12 chunks for 96. */
	x->c = pn_kunit_cache(test, "kunit-shrink", 1024, 0, pn_ctor, pn_dtor, &s);
	n = pn_cache_objs_per_chunk(x->c);

	cpus_read_lock();
	cpu = cpumask_first(cpu_online_mask);
	work_on_cpu(cpu, pn_xcpu_alloc, x);
	KUNIT_EXPECT_TRUE(test, x->ok);
	work_on_cpu(cpu, pn_xcpu_free, x);
	cpus_read_unlock();

	pn_cache_get_stats(x->c, &st);
	before = st.chunks;
	KUNIT_EXPECT_EQ(test, before, (u64)DIV_ROUND_UP(PN_XCPU_N, n));
	PN_EXPECT_IN_USE(test, &st, 0);
	/* The CPU keeps at most two magazines; the rest is reclaimable. */
	KUNIT_EXPECT_LE(test, st.cpu_cached, 32ULL);
	KUNIT_EXPECT_GT(test, pn_alloc_reclaim_count(), 0UL);

	KUNIT_EXPECT_GT(test, pn_alloc_reclaim(ULONG_MAX), 0UL);
	/*
	 * The scan released what the depot and the chunks had, and queued the
	 * cache's drain work for what the CPU's magazines hold: once it ran,
	 * every chunk is gone, destructed in full.
	 */
	pn_cache_flush_work(x->c);
	pn_cache_get_stats(x->c, &st);
	KUNIT_EXPECT_EQ(test, st.cpu_cached, 0ULL);
	KUNIT_EXPECT_EQ(test, st.chunks, 0ULL);
	KUNIT_EXPECT_EQ(test, st.chunk_releases, before);
	KUNIT_EXPECT_EQ(test, (u64)atomic_read(&s.dtor), st.chunk_releases * n);
	KUNIT_EXPECT_EQ(test, st.free_chunks, 0ULL);
	KUNIT_EXPECT_EQ(test, st.full_mags, 0ULL);
	KUNIT_EXPECT_FALSE(test, s.bad_dtor);

	KUNIT_EXPECT_EQ(test, pn_cache_destroy(x->c), 0UL);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.dtor), atomic_read(&s.ctor));
}

/* ---- destroy with leaked objects ---------------------------------------- */

static void pn_test_destroy_leaked(struct kunit *test)
{
	struct pn_ctor_state s = { .fail_at = -1 };
	void __percpu *p[3];
	struct pn_cache *c;
	unsigned int i;

	c = pn_kunit_cache(test, "kunit-leak", 48, 0, pn_ctor, pn_dtor, &s);
	for (i = 0; i < 3; i++) {
		p[i] = pn_cache_alloc(c, GFP_KERNEL);
		KUNIT_ASSERT_NE(test, pn_kaddr(p[i]), 0UL);
	}
	pn_cache_free(c, p[1]);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 2UL);
	/*
	 * The cache and the chunk of the two live objects are kept: the
	 * objects are still constructed memory of that cache, not destructed,
	 * and freeing them later is fine (without magazines).
	 */
	KUNIT_EXPECT_PTR_EQ(test, pn_cache_of(p[0]), c);
	KUNIT_EXPECT_PTR_EQ(test, pn_cache_of(p[2]), c);
	KUNIT_EXPECT_TRUE(test, pn_constructed(p[0]));
	KUNIT_EXPECT_TRUE(test, pn_constructed(p[2]));
	KUNIT_EXPECT_EQ(test, atomic_read(&s.dtor), 0);
	pn_cache_free(c, p[0]);
	pn_cache_free(c, p[2]);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.dtor), 0);

	c = pn_kunit_cache(test, "kunit-leak-dbg", 48, PN_CACHE_DEBUG, NULL, NULL, NULL);
	p[0] = pn_cache_alloc(c, GFP_KERNEL);
	KUNIT_ASSERT_NE(test, pn_kaddr(p[0]), 0UL);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 1UL);
	KUNIT_EXPECT_PTR_EQ(test, pn_cache_of(p[0]), c);
	pn_cache_free(c, p[0]);
	pn_cache_free(c, p[0]);		/* still checked: a double free */
	{
		struct pn_cache_stats st;

		pn_cache_get_stats(c, &st);
		KUNIT_EXPECT_EQ(test, st.double_frees, 1ULL);
		PN_EXPECT_IN_USE(test, &st, 0);
	}
}

/* ---- hotplug ------------------------------------------------------------ */

static void pn_test_hotplug_drain(struct kunit *test)
{
	struct pn_cache_stats st;
	struct pn_xcpu *x;
	unsigned int cpu;
	int ret;

	if (pn_alloc_debug_forced())
		kunit_skip(test, "alloc_debug=1: no magazines to test");

	if (!IS_ENABLED(CONFIG_HOTPLUG_CPU))
		kunit_skip(test, "CONFIG_HOTPLUG_CPU is off");
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two online CPUs");
	x = kunit_kzalloc(test, sizeof(*x), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, x);
	x->c = pn_kunit_cache(test, "kunit-hotplug", 64, 0, NULL, NULL, NULL);

	cpus_read_lock();
	cpu = cpumask_last(cpu_online_mask);
	work_on_cpu(cpu, pn_xcpu_alloc, x);
	work_on_cpu(cpu, pn_xcpu_free, x);
	cpus_read_unlock();
	KUNIT_EXPECT_TRUE(test, x->ok);
	KUNIT_EXPECT_GT(test, pn_cache_cpu_objects(x->c, cpu), 0U);

	ret = remove_cpu(cpu);
	if (ret) {
		pn_cache_destroy(x->c);
		kunit_skip(test, "remove_cpu(%u) failed: %d", cpu, ret);
	}
	/* The dead CPU's magazines were drained; no CPU caches anything. */
	KUNIT_EXPECT_EQ(test, pn_cache_cpu_objects(x->c, cpu), 0U);
	pn_cache_get_stats(x->c, &st);
	KUNIT_EXPECT_EQ(test, st.cpu_cached, 0ULL);
	KUNIT_EXPECT_GT(test, st.chunks, 0ULL);
	/* So reclaim (depot flush) frees every chunk of the cache. */
	pn_alloc_reclaim(ULONG_MAX);
	pn_cache_get_stats(x->c, &st);
	KUNIT_EXPECT_EQ(test, st.chunks, 0ULL);
	KUNIT_EXPECT_EQ(test, add_cpu(cpu), 0);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(x->c), 0UL);
}

/* ---- injected failures, non-blocking requests --------------------------- */

static void pn_test_injected_failures(struct kunit *test)
{
	struct pn_ctor_state s = { .fail_at = -1 };
	struct pn_cache_stats st;
	struct pn_cache *c;
	void __percpu *p;

	if (!IS_ENABLED(CONFIG_FAULT_INJECTION))
		kunit_skip(test, "needs CONFIG_FAULT_INJECTION");
	c = pn_kunit_cache(test, "kunit-inject", 128, 0, pn_ctor, pn_dtor, &s);
	pn_alloc_fail_chunks(2);
	KUNIT_EXPECT_EQ(test, pn_kaddr(pn_cache_alloc(c, GFP_KERNEL)), 0UL);
	KUNIT_EXPECT_EQ(test, pn_kaddr(pn_cache_alloc(c, GFP_KERNEL)), 0UL);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.ctor), 0);
	p = pn_cache_alloc(c, GFP_KERNEL);
	KUNIT_EXPECT_NE(test, pn_kaddr(p), 0UL);
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_EQ(test, st.chunk_fails, 2ULL);
	KUNIT_EXPECT_EQ(test, st.chunks, 1ULL);
	pn_cache_free(c, p);
	pn_alloc_fail_chunks(0);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.ctor), atomic_read(&s.dtor));
}

#ifdef CONFIG_FAULT_INJECTION
/*
 * Open or close a fault window on every site of the module core, as a
 * stress line's faults= does (the harness's pn_fault_arm()), at @pct
 * percent: counts reset, unlimited times, no task filter.  Closing puts
 * every attr back to its load-time settings.
 */
static void pn_fault_window(bool open, unsigned long pct)
{
	struct fault_attr *attr;
	unsigned int i;

	for (i = 0; i < PN_FAULT_NR_SITES; i++) {
		attr = pn_fault_attr(i);
		pn_fault_attr_reset(attr);
		if (!open)
			continue;
		pn_fault_reset_count(i);
		atomic_set(&attr->times, -1);
		WRITE_ONCE(attr->probability, pct);
	}
}
#endif

/*
 * A fault window (faults=) reaches chunk creation through its fault_attr:
 * at 100 percent (faults=1000) every chunk creation in the window fails
 * (each counted once, the caller gets NULL, no constructor runs), the
 * stress constructor's site is reached by nothing of the library, and
 * after the window chunk creations work again.
 */
static void pn_test_fault_window(struct kunit *test)
{
#ifdef CONFIG_FAULT_INJECTION
	struct pn_ctor_state s = { .fail_at = -1 };
	struct pn_cache_stats st;
	struct pn_cache *c;
	void __percpu *p;
	unsigned int i;

	c = pn_kunit_cache(test, "kunit-faults", 64, 0, pn_ctor, pn_dtor, &s);
	pn_fault_window(true, 100);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, pn_kaddr(pn_cache_alloc(c, GFP_KERNEL)), 0UL);
	pn_fault_window(false, 0);
	KUNIT_EXPECT_GE(test, pn_fault_injected(PN_FAULT_CHUNK), 3UL);
	KUNIT_EXPECT_EQ(test, pn_fault_injected(PN_FAULT_CTOR), 0UL);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.ctor), 0);
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_EQ(test, st.chunk_fails - st.reserve_fails, 3ULL);
	KUNIT_EXPECT_EQ(test, st.chunks, 0ULL);

	p = pn_cache_alloc(c, GFP_KERNEL);	/* disarmed: works again */
	KUNIT_EXPECT_NE(test, pn_kaddr(p), 0UL);
	pn_cache_free(c, p);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.ctor), atomic_read(&s.dtor));
#else
	kunit_skip(test, "CONFIG_FAULT_INJECTION is off");
#endif
}

static void pn_test_nonblocking(struct kunit *test)
{
	struct pn_cache_stats st;
	struct pn_cache *c;
	unsigned long flags;
	void __percpu *p;

	/*
	 * Atomic context as the API defines it: under a spinlock_t (interrupts
	 * off on !PREEMPT_RT; on RT a spinlock_t section is where non-blocking
	 * callers live, interrupts-off sections may not allocate at all).
	 */
	static DEFINE_SPINLOCK(lock);

	c = pn_kunit_cache(test, "kunit-nowait", 16, PN_CACHE_ZERO, NULL, NULL, NULL);
	/*
	 * Nothing cached yet: a non-blocking request is served by the kernel's
	 * allocator (a direct object, zeroed), creates no chunk, and turns the
	 * cache's reserve on.
	 */
	spin_lock_irqsave(&lock, flags);
	p = pn_cache_alloc(c, GFP_NOWAIT);
	spin_unlock_irqrestore(&lock, flags);
	KUNIT_ASSERT_NE(test, pn_kaddr(p), 0UL);
	KUNIT_EXPECT_TRUE(test, pn_all_bytes(p, 16, 0));
	KUNIT_EXPECT_NULL(test, pn_cache_of(p));
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_EQ(test, st.direct_allocs, 1ULL);
	KUNIT_EXPECT_EQ(test, st.direct_live, 1ULL);
	pn_cache_free(c, p);
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_EQ(test, st.direct_live, 0ULL);
	PN_EXPECT_IN_USE(test, &st, 0);

	/* The maintenance work filled the reserve: served from the cache. */
	pn_cache_flush_work(c);
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_GT(test, st.reserve, 0ULL);
	KUNIT_EXPECT_GE(test, st.chunk_free_objs, st.reserve);
	spin_lock_irqsave(&lock, flags);
	p = pn_cache_alloc(c, GFP_ATOMIC);
	if (p) {
		this_cpu_write(*(u64 __percpu *)p, 1);
		pn_cache_free(c, p);
	}
	spin_unlock_irqrestore(&lock, flags);
	KUNIT_EXPECT_NE(test, pn_kaddr(p), 0UL);
	KUNIT_EXPECT_NOT_NULL(test, pn_cache_of(p));
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
}

/*
 * The reserve's promise: once the maintenance work has run, a burst of
 * cache->reserve non-blocking allocations succeeds, constructed, from a
 * timer (softirq; a thread on PREEMPT_RT), although a constructor cache
 * cannot fall back to the kernel's allocator; and no CPU's magazine takes
 * the reserve from the others.  256-byte objects: one chunk is exactly
 * the reserve, so every round needs the refill.  Objects are kept until
 * the end.
 */
#define PN_TIMER_MAX	64
#define PN_ROUNDS	3

struct pn_timer_arg {
	struct timer_list timer;
	struct pn_cache *c;
	struct completion done;
	void __percpu **p;
	unsigned int want;
	unsigned int got;
	bool constructed;
};

static void pn_timer_alloc(struct timer_list *t)
{
	struct pn_timer_arg *a = timer_container_of(a, t, timer);
	unsigned int i;

	a->got = 0;
	a->constructed = true;
	for (i = 0; i < a->want; i++) {
		a->p[i] = pn_cache_alloc(a->c, GFP_ATOMIC);
		if (!a->p[i])
			continue;
		a->got++;
		if (!pn_constructed(a->p[i]))
			a->constructed = false;
	}
	complete(&a->done);
}

/* A burst of @want atomic allocations from a timer on this CPU. */
static void pn_timer_burst(struct pn_timer_arg *a, void __percpu **p,
			   unsigned int want)
{
	a->p = p;
	a->want = want;
	init_completion(&a->done);
	timer_setup(&a->timer, pn_timer_alloc, 0);
	mod_timer(&a->timer, jiffies + 1);
	wait_for_completion(&a->done);
	timer_delete_sync(&a->timer);
}

static void pn_test_atomic_reserve(struct kunit *test)
{
	struct pn_ctor_state s = { .fail_at = -1 };
	static DEFINE_SPINLOCK(lock);
	void __percpu **objs, **p;
	struct pn_cache_stats st;
	struct pn_timer_arg *a;
	unsigned int round, i, n = 0, cpu_a, cpu_b;
	unsigned long flags;

	a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
	objs = kunit_kcalloc(test, PN_ROUNDS * PN_TIMER_MAX, sizeof(*objs), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_NOT_NULL(test, objs);
	a->c = pn_kunit_cache(test, "kunit-reserve", 256, 0, pn_ctor, pn_dtor, &s);
	cpu_a = pn_two_cpus(&cpu_b);
	if (cpu_b >= nr_cpu_ids)
		cpu_b = cpu_a;

	/* Cold constructor cache: nothing to hand out, the reserve is asked for. */
	KUNIT_EXPECT_EQ(test, pn_kaddr(pn_cache_alloc(a->c, GFP_NOWAIT)), 0UL);
	for (round = 0; round < PN_ROUNDS; round++) {
		pn_cache_flush_work(a->c);
		pn_cache_get_stats(a->c, &st);
		KUNIT_ASSERT_GT(test, st.reserve, 1ULL);
		KUNIT_ASSERT_LE(test, st.reserve, (u64)PN_TIMER_MAX);
		KUNIT_EXPECT_GE(test, st.chunk_free_objs, st.reserve);
		p = objs + n;
		if (!round) {
			/* One from CPU A under a spinlock, the rest from B's timer. */
			pn_pin_to(cpu_a);
			spin_lock_irqsave(&lock, flags);
			p[0] = pn_cache_alloc(a->c, GFP_ATOMIC);
			spin_unlock_irqrestore(&lock, flags);
			KUNIT_EXPECT_NE(test, pn_kaddr(p[0]), 0UL);
			pn_pin_to(cpu_b);
			pn_timer_burst(a, p + 1, st.reserve - 1);
			KUNIT_EXPECT_EQ(test, a->got + !!p[0], (unsigned int)st.reserve);
		} else {
			pn_timer_burst(a, p, st.reserve);
			KUNIT_EXPECT_EQ(test, a->got, (unsigned int)st.reserve);
		}
		KUNIT_EXPECT_TRUE(test, a->constructed);
		n += st.reserve;
	}
	pn_unpin_self();
	pn_cache_get_stats(a->c, &st);
	KUNIT_EXPECT_GE(test, st.reserve_refills, (u64)PN_ROUNDS);
	for (i = 0; i < n; i++)
		pn_cache_free(a->c, objs[i]);
	pn_cache_get_stats(a->c, &st);
	PN_EXPECT_IN_USE(test, &st, 0);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(a->c), 0UL);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.dtor), atomic_read(&s.ctor));
}

/*
 * memcg: an accounted request must be charged to its caller.  A module
 * cannot charge (obj_cgroup_charge() is not exported): the object must
 * not come out of a chunk, whose charge went to the chunk's creator, but
 * from the kernel's allocator.  Built in, the library charges the object
 * itself (when memcg's kmem accounting is on: the kunit.py lane boots with
 * it off) and serves it from the chunks like any other
 * (charging a non-root memcg is the rss lane's rss_check --memcg; a KUnit
 * thread's is the root, which is not charged).
 */
/*
 * The route an accounted request must take, known from how the suite and
 * the library were built (they are built alike), not asked of the library.
 */
#ifdef MODULE
#define PN_TEST_ACCOUNTED_CACHED	false
#else
#define PN_TEST_ACCOUNTED_CACHED	true
#endif

static void pn_test_accounted_charged(struct kunit *test)
{
	struct pn_ctor_state s = { .fail_at = -1 };
	struct pn_cache_stats st0, st;
	void __percpu *p, *q;
	struct pn_cache *c;

	q = pn_alloc_percpu_gfp(24, 8, GFP_KERNEL);
	KUNIT_ASSERT_NE(test, pn_kaddr(q), 0UL);
	pn_cache_get_stats(pn_cache_of(q), &st0);
	p = pn_alloc_percpu_gfp(24, 8, GFP_KERNEL_ACCOUNT);
	KUNIT_ASSERT_NE(test, pn_kaddr(p), 0UL);
	KUNIT_EXPECT_PTR_EQ(test, pn_cache_of(p), pn_cache_of(q));
	KUNIT_EXPECT_TRUE(test, pn_all_bytes(p, 24, 0));
	pn_cache_get_stats(pn_cache_of(q), &st);
	KUNIT_EXPECT_EQ(test, st.direct_allocs, st0.direct_allocs);
	pn_free_percpu(p);
	pn_free_percpu(q);

	/* A constructor cache: a constructed chunk object, kept at free. */
	c = pn_kunit_cache(test, "kunit-account", 32, 0, pn_ctor, pn_dtor, &s);
	p = pn_cache_alloc(c, GFP_KERNEL_ACCOUNT);
	KUNIT_ASSERT_NE(test, pn_kaddr(p), 0UL);
	KUNIT_EXPECT_PTR_EQ(test, pn_cache_of(p), c);
	KUNIT_EXPECT_TRUE(test, pn_constructed(p));
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_GE(test, st.chunks, 1ULL);
	KUNIT_EXPECT_EQ(test, st.direct_live, 0ULL);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.ctor), (int)pn_cache_objs_per_chunk(c));
	pn_cache_free(c, p);
	pn_cache_flush_work(c);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.dtor), 0);
	pn_cache_get_stats(c, &st);
	PN_EXPECT_IN_USE(test, &st, 0);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.dtor), atomic_read(&s.ctor));
}

static void pn_test_accounted(struct kunit *test)
{
	struct pn_ctor_state s = { .fail_at = -1 };
	struct pn_cache_stats st0, st;
	void __percpu *p, *q;
	struct pn_cache *c;

	if (PN_TEST_ACCOUNTED_CACHED) {
		pn_test_accounted_charged(test);
		return;
	}
	/* A warm class: an unaccounted object first, so a chunk exists. */
	q = pn_alloc_percpu_gfp(24, 8, GFP_KERNEL);
	KUNIT_ASSERT_NE(test, pn_kaddr(q), 0UL);
	pn_cache_get_stats(pn_cache_of(q), &st0);
	p = pn_alloc_percpu_gfp(24, 8, GFP_KERNEL_ACCOUNT);
	KUNIT_ASSERT_NE(test, pn_kaddr(p), 0UL);
	KUNIT_EXPECT_NULL(test, pn_cache_of(p));
	KUNIT_EXPECT_TRUE(test, pn_all_bytes(p, 24, 0));
	pn_cache_get_stats(pn_cache_of(q), &st);
	KUNIT_EXPECT_EQ(test, st.chunk_creates, st0.chunk_creates);
	KUNIT_EXPECT_EQ(test, st.direct_allocs, st0.direct_allocs + 1);
	pn_free_percpu(p);
	pn_free_percpu(q);

	/* A constructor cache: constructed with the gfp, destructed at free. */
	c = pn_kunit_cache(test, "kunit-account", 32, 0, pn_ctor, pn_dtor, &s);
	p = pn_cache_alloc(c, GFP_KERNEL_ACCOUNT);
	KUNIT_ASSERT_NE(test, pn_kaddr(p), 0UL);
	KUNIT_EXPECT_NULL(test, pn_cache_of(p));
	KUNIT_EXPECT_TRUE(test, pn_constructed(p));
	KUNIT_EXPECT_EQ(test, atomic_read(&s.ctor), 1);
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_EQ(test, st.chunks, 0ULL);
	KUNIT_EXPECT_EQ(test, st.direct_live, 1ULL);
	pn_cache_free(c, p);
	/* The destructor runs from the cache's work, in process context. */
	pn_cache_flush_work(c);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.dtor), 1);
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_EQ(test, st.direct_live, 0ULL);
	PN_EXPECT_IN_USE(test, &st, 0);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
}

/*
 * Review F3: a destructor may sleep, and pn_cache_free() may be called
 * under a spinlock; an accounted object's destructor must not run there.
 */
static struct {
	atomic_t runs;
	atomic_t atomic;
} pn_dtor_ctx;

static void pn_dtor_note_ctx(void __percpu *obj, void *priv)
{
	atomic_inc(&pn_dtor_ctx.runs);
	if (!preemptible() || rcu_preempt_depth())
		atomic_inc(&pn_dtor_ctx.atomic);
	might_sleep();
}

static int pn_ctor_any_ok(void __percpu *obj, void *priv, gfp_t gfp)
{
	return 0;
}

static void pn_test_accounted_dtor_context(struct kunit *test)
{
	static DEFINE_SPINLOCK(lock);
	struct pn_cache *c;
	void __percpu *p;

	if (!IS_ENABLED(CONFIG_PREEMPT_COUNT))
		kunit_skip(test, "needs CONFIG_PREEMPT_COUNT to tell atomic context");
	atomic_set(&pn_dtor_ctx.runs, 0);
	atomic_set(&pn_dtor_ctx.atomic, 0);
	c = pn_kunit_cache(test, "kunit-dtorctx", 32, 0, pn_ctor_any_ok,
			   pn_dtor_note_ctx, NULL);
	p = pn_cache_alloc(c, GFP_KERNEL_ACCOUNT);
	KUNIT_ASSERT_NE(test, pn_kaddr(p), 0UL);
	spin_lock(&lock);
	pn_cache_free(c, p);
	spin_unlock(&lock);
	pn_cache_flush_work(c);
	if (PN_TEST_ACCOUNTED_CACHED) {
		/* A charged chunk object: destructed when the cache goes. */
		KUNIT_EXPECT_EQ(test, atomic_read(&pn_dtor_ctx.runs), 0);
		KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
		KUNIT_EXPECT_GE(test, atomic_read(&pn_dtor_ctx.runs), 1);
	} else {
		KUNIT_EXPECT_EQ(test, atomic_read(&pn_dtor_ctx.runs), 1);
		KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&pn_dtor_ctx.atomic), 0);
}

/*
 * Review F6: a direct object freed twice is reported, not handed to
 * free_percpu() twice (nor to a magazine), and another live direct object
 * keeps its count: in debug mode with and without a destructor, and in a
 * magazine cache with one (whose objects wait for the cache's work).
 * Without either, a direct object is not tracked: a double free there is
 * as undetected as a chunk object's.
 */
static void pn_test_direct_double_free(struct kunit *test)
{
	struct pn_ctor_state s = { .fail_at = -1 };
	struct pn_cache_stats st;
	void __percpu *p, *q;
	struct pn_cache *c;
	unsigned int pass;

	if (PN_TEST_ACCOUNTED_CACHED)
		kunit_skip(test, "built in: accounted objects are not direct");
	for (pass = 0; pass < 3; pass++) {
		if (pass == 2)
			c = pn_kunit_cache(test, "kunit-ddf-mags", 32, 0,
					   pn_ctor, pn_dtor, &s);
		else if (pass)
			c = pn_kunit_cache(test, "kunit-ddf-dtor", 32, PN_CACHE_DEBUG,
					   pn_ctor, pn_dtor, &s);
		else
			c = pn_kunit_cache(test, "kunit-ddf", 32, PN_CACHE_DEBUG,
					   NULL, NULL, NULL);
		p = pn_cache_alloc(c, GFP_KERNEL_ACCOUNT);
		KUNIT_ASSERT_NE(test, pn_kaddr(p), 0UL);
		q = pn_cache_alloc(c, GFP_KERNEL_ACCOUNT);
		KUNIT_ASSERT_NE(test, pn_kaddr(q), 0UL);
		pn_cache_free(c, p);
		pn_cache_free(c, p);
		pn_cache_flush_work(c);
		pn_cache_get_stats(c, &st);
		KUNIT_EXPECT_EQ_MSG(test, st.double_frees + st.bad_frees, 1ULL, "pass %u", pass);
		KUNIT_EXPECT_EQ_MSG(test, st.direct_live, 1ULL, "pass %u", pass);
		pn_cache_free(c, q);
		pn_cache_flush_work(c);
		pn_cache_get_stats(c, &st);
		KUNIT_EXPECT_EQ_MSG(test, st.direct_live, 0ULL, "pass %u", pass);
		KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&s.ctor), 4);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.dtor), 4);
}

/*
 * Review r3: an accounted object freed after its destructor cache was
 * destroyed is freed without the destructor, as the objects of kept
 * chunks are: the cache's owner, its priv and its module may be gone.
 */
static void pn_test_direct_free_after_destroy(struct kunit *test)
{
	struct pn_ctor_state s = { .fail_at = -1 };
	struct pn_cache *c;
	void __percpu *p;

	if (PN_TEST_ACCOUNTED_CACHED)
		kunit_skip(test, "built in: accounted objects are not direct");
	c = pn_kunit_cache(test, "kunit-late-free", 32, 0, pn_ctor, pn_dtor, &s);
	p = pn_cache_alloc(c, GFP_KERNEL_ACCOUNT);
	KUNIT_ASSERT_NE(test, pn_kaddr(p), 0UL);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 1UL);
	pn_cache_free(c, p);
	pn_cache_flush_work(c);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.ctor), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.dtor), 0);
}

/* Review F12: like __alloc_percpu_gfp(), the sized API takes align 0. */
static void pn_test_sized_align_zero(struct kunit *test)
{
	void __percpu *p = pn_alloc_percpu_gfp(24, 0, GFP_KERNEL);

	KUNIT_ASSERT_NE(test, pn_kaddr(p), 0UL);
	KUNIT_EXPECT_EQ(test, pn_kaddr(p) % sizeof(u64), 0UL);
	KUNIT_EXPECT_TRUE(test, pn_all_bytes(p, 24, 0));
	pn_free_percpu(p);
	KUNIT_EXPECT_EQ(test, pn_kaddr(pn_alloc_percpu_gfp(24, 3, GFP_KERNEL)), 0UL);
}

/* The constructor sees the request's gfp (a GFP_NOFS caller stays NOFS). */
static gfp_t pn_seen_gfp;

static int pn_gfp_ctor(void __percpu *obj, void *priv, gfp_t gfp)
{
	WRITE_ONCE(pn_seen_gfp, gfp);
	return 0;
}

static void pn_test_ctor_gfp(struct kunit *test)
{
	struct pn_cache *c;
	void __percpu *p;
	unsigned int nofs;

	c = pn_kunit_cache(test, "kunit-gfp", 64, 0, pn_gfp_ctor, NULL, NULL);
	nofs = memalloc_nofs_save();
	p = pn_cache_alloc(c, GFP_NOFS);
	memalloc_nofs_restore(nofs);
	KUNIT_ASSERT_NE(test, pn_kaddr(p), 0UL);
	KUNIT_EXPECT_FALSE(test, !!(pn_seen_gfp & __GFP_FS));
	KUNIT_EXPECT_TRUE(test, !!(pn_seen_gfp & __GFP_IO));
	KUNIT_EXPECT_TRUE(test, !!(pn_seen_gfp & __GFP_DIRECT_RECLAIM));
	pn_cache_free(c, p);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
}

/*
 * A destructor may use the cache API on other caches: destructors run in
 * process context with no pcpu_next lock held, never inside the shrinker.
 */
struct pn_nest_state {
	atomic_t dtor;
	int nested;		/* 0: not tried, 1: create+destroy worked, -1: failed */
};

static struct pn_nest_state pn_nest;

static void pn_nest_dtor(void __percpu *obj, void *priv)
{
	struct pn_cache *other;

	atomic_inc(&pn_nest.dtor);
	if (pn_nest.nested)
		return;
	other = pn_cache_create("kunit-nested", 8, 0, 0, NULL, NULL, NULL);
	if (IS_ERR(other)) {
		pn_nest.nested = -1;
		return;
	}
	pn_nest.nested = pn_cache_destroy(other) ? -1 : 1;
}

static void pn_test_dtor_uses_api(struct kunit *test)
{
	struct pn_cache_stats st;
	struct pn_cache *c;
	void __percpu *p;

	unsigned long saved = pn_cpu_cache_bytes;

	memset(&pn_nest, 0, sizeof(pn_nest));
	/* No magazines: the free puts the object back in a free chunk. */
	WRITE_ONCE(pn_cpu_cache_bytes, 0);
	c = pn_cache_create("kunit-nest", 2048, 0, 0, pn_ctor_any_ok, pn_nest_dtor, NULL);
	WRITE_ONCE(pn_cpu_cache_bytes, saved);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, c);
	p = pn_cache_alloc(c, GFP_KERNEL);
	KUNIT_ASSERT_NE(test, pn_kaddr(p), 0UL);
	pn_cache_free(c, p);
	/*
	 * The scan unlinks the free chunk; the cache's work releases it and
	 * runs the destructor, in process context with no lock held.
	 */
	KUNIT_EXPECT_GT(test, pn_alloc_reclaim(ULONG_MAX), 0UL);
	pn_cache_flush_work(c);
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_EQ(test, st.chunks, 0ULL);
	KUNIT_EXPECT_GT(test, atomic_read(&pn_nest.dtor), 0);
	KUNIT_EXPECT_EQ(test, pn_nest.nested, 1);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
}

/*
 * Per-CPU caching is bounded in bytes: one CPU's two magazines pin at most
 * cpu_cache_bytes over all possible CPUs' copies (every size class); with
 * a bound too small for one object the cache works without magazines.
 */
static void pn_test_cache_bytes_bound(struct kunit *test)
{
	unsigned long saved = pn_cpu_cache_bytes;
	struct pn_cache_stats st;
	struct pn_cache *c;
	void __percpu *p[4];
	unsigned int sz, i;

	for (sz = 8; sz <= PN_ALLOC_MAX_SIZE; sz <<= 1) {
		p[0] = pn_alloc_percpu_gfp(sz, 8, GFP_KERNEL);
		KUNIT_ASSERT_NE(test, pn_kaddr(p[0]), 0UL);
		pn_cache_get_stats(pn_cache_of(p[0]), &st);
		KUNIT_EXPECT_LE_MSG(test, 2 * st.mag_cap * sz * num_possible_cpus(),
				    (u64)saved, "class %u", sz);
		pn_free_percpu(p[0]);
	}

	WRITE_ONCE(pn_cpu_cache_bytes, 0);
	c = pn_cache_create("kunit-nomags", 64, 0, 0, NULL, NULL, NULL);
	WRITE_ONCE(pn_cpu_cache_bytes, saved);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, c);
	for (i = 0; i < ARRAY_SIZE(p); i++) {
		p[i] = pn_cache_alloc(c, GFP_KERNEL);
		KUNIT_ASSERT_NE(test, pn_kaddr(p[i]), 0UL);
		this_cpu_write(*(u64 __percpu *)p[i], i);
	}
	for (i = 0; i < ARRAY_SIZE(p); i++)
		pn_cache_free(c, p[i]);
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_EQ(test, st.mag_cap, 0ULL);
	KUNIT_EXPECT_EQ(test, st.cpu_cached, 0ULL);
	PN_EXPECT_IN_USE(test, &st, 0);
	KUNIT_EXPECT_EQ(test, st.chunk_free_objs, st.chunks * pn_cache_objs_per_chunk(c));
	KUNIT_EXPECT_GT(test, pn_cache_shrink(c), 0UL);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
}

/*
 * The shrinker honours nr_to_scan: a small scan flushes a few depot
 * magazines, not the whole depot with interrupts off.
 */
#define PN_DEPOT_N	512

struct pn_depot_arg {
	struct pn_cache *c;
	void __percpu *p[PN_DEPOT_N];
};

static long pn_fill_depot(void *arg)
{
	struct pn_depot_arg *x = arg;
	unsigned int i;

	for (i = 0; i < PN_DEPOT_N; i++)
		x->p[i] = pn_cache_alloc(x->c, GFP_KERNEL);
	for (i = 0; i < PN_DEPOT_N; i++)
		pn_cache_free(x->c, x->p[i]);
	return 0;
}

static void pn_test_shrink_budget(struct kunit *test)
{
	struct pn_cache_stats st0, st;
	struct pn_depot_arg *x;

	if (pn_alloc_debug_forced())
		kunit_skip(test, "alloc_debug=1: no magazines to test");
	x = kunit_kzalloc(test, sizeof(*x), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, x);
	x->c = pn_kunit_cache(test, "kunit-budget", 8, 0, NULL, NULL, NULL);
	cpus_read_lock();
	work_on_cpu(cpumask_first(cpu_online_mask), pn_fill_depot, x);
	cpus_read_unlock();
	pn_cache_get_stats(x->c, &st0);
	KUNIT_ASSERT_GE(test, st0.full_mags, 4ULL);
	/* A budget of one object: one magazine flushed, the rest left. */
	KUNIT_EXPECT_EQ(test, pn_cache_scan(x->c, 1), st0.mag_cap);
	pn_cache_get_stats(x->c, &st);
	KUNIT_EXPECT_EQ(test, st.full_mags + 1, st0.full_mags);
	/* A budget of three magazines and a bit: four flushed. */
	KUNIT_EXPECT_EQ(test, pn_cache_scan(x->c, 3 * st0.mag_cap + 1), 4 * st0.mag_cap);
	pn_cache_get_stats(x->c, &st);
	KUNIT_EXPECT_EQ(test, st.full_mags + 5, st0.full_mags);
	pn_cache_shrink(x->c);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(x->c), 0UL);
}

/*
 * Review F4: the shrinker counts what the CPUs' magazines hold, not what
 * they could hold.  One CPU allocates a magazine's worth and a bit, so
 * it keeps a magazine that is empty or nearly: the count grows by what it
 * holds, and a scan that finds nothing else drains no empty magazine.
 */
struct pn_held_arg {
	struct pn_cache *c;
	void __percpu *p[64];
	unsigned int n;
};

static long pn_alloc_n(void *arg)
{
	struct pn_held_arg *x = arg;
	unsigned int i;

	for (i = 0; i < x->n; i++)
		x->p[i] = pn_cache_alloc(x->c, GFP_KERNEL);
	return 0;
}

static void pn_test_count_held(struct kunit *test)
{
	struct pn_cache_stats st0, st;
	struct pn_held_arg *x;
	unsigned long before;
	unsigned int i, cpu, held;

	if (pn_alloc_debug_forced())
		kunit_skip(test, "alloc_debug=1: no magazines to test");
	x = kunit_kzalloc(test, sizeof(*x), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, x);
	x->c = pn_kunit_cache(test, "kunit-held", 64, 0, NULL, NULL, NULL);
	pn_cache_get_stats(x->c, &st0);
	KUNIT_ASSERT_GE(test, st0.mag_cap, 2ULL);
	x->n = min_t(u64, st0.mag_cap + 1, ARRAY_SIZE(x->p));
	before = pn_cache_reclaim_count(x->c);

	cpus_read_lock();
	cpu = cpumask_first(cpu_online_mask);
	work_on_cpu(cpu, pn_alloc_n, x);
	cpus_read_unlock();
	for (i = 0; i < x->n; i++)
		KUNIT_ASSERT_NE(test, pn_kaddr(x->p[i]), 0UL);
	held = pn_cache_cpu_objects(x->c, cpu);
	pn_cache_get_stats(x->c, &st0);
	KUNIT_EXPECT_LT(test, (u64)held, st0.mag_cap);
	KUNIT_EXPECT_EQ(test, before, 0UL);
	KUNIT_EXPECT_EQ(test, pn_cache_reclaim_count(x->c), (unsigned long)held);

	if (!held) {
		/* Nothing to find anywhere in this cache: nothing drained. */
		pn_alloc_reclaim(1024);
		pn_cache_flush_work(x->c);
		pn_cache_get_stats(x->c, &st);
		KUNIT_EXPECT_EQ(test, st.empty_mags, st0.empty_mags);
	}
	for (i = 0; i < x->n; i++)
		pn_cache_free(x->c, x->p[i]);
	pn_cache_shrink(x->c);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(x->c), 0UL);
}

/*
 * A chunk created for a waiting allocation serves that allocation, even
 * with a reclaimer releasing every free chunk it sees: one object per
 * chunk, so every allocation needs exactly one chunk creation.  The
 * allocations start once the reclaimer made a pass, not whenever the
 * scheduler first runs it.
 */
static int pn_reclaim_hammer(void *arg)
{
	atomic_t *passes = arg;

	while (!kthread_should_stop()) {
		pn_alloc_reclaim(ULONG_MAX);
		atomic_inc(passes);
		cond_resched();
	}
	return 0;
}

#define PN_GROW_N	32
#define PN_GROW_WAIT_MS	10000	/* for the reclaimer's first pass */

static void pn_test_grow_vs_shrinker(struct kunit *test)
{
	atomic_t passes = ATOMIC_INIT(0);
	struct task_struct *hammer;
	struct pn_cache_stats st;
	void __percpu **p;
	struct pn_cache *c;
	unsigned long end;
	unsigned int i;

	p = kunit_kcalloc(test, PN_GROW_N, sizeof(*p), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, p);
	c = pn_kunit_cache(test, "kunit-grow", PN_ALLOC_MAX_SIZE, 0, NULL, NULL, NULL);
	KUNIT_ASSERT_EQ(test, pn_cache_objs_per_chunk(c), 1U);
	hammer = kthread_run(pn_reclaim_hammer, &passes, "pn-kunit-reclaim");
	KUNIT_ASSERT_FALSE(test, IS_ERR(hammer));
	end = jiffies + msecs_to_jiffies(PN_GROW_WAIT_MS);
	while (!atomic_read(&passes) && time_before(jiffies, end))
		schedule_timeout_uninterruptible(1);
	KUNIT_EXPECT_GT_MSG(test, atomic_read(&passes), 0,
			    "the reclaimer did not run within %d ms", PN_GROW_WAIT_MS);
	for (i = 0; i < PN_GROW_N; i++) {
		p[i] = pn_cache_alloc(c, GFP_KERNEL);
		KUNIT_EXPECT_NE(test, pn_kaddr(p[i]), 0UL);
	}
	kthread_stop(hammer);
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_EQ(test, st.chunk_creates, (u64)PN_GROW_N);
	KUNIT_EXPECT_EQ(test, st.chunk_releases, 0ULL);
	for (i = 0; i < PN_GROW_N; i++)
		pn_cache_free(c, p[i]);
	pn_cache_shrink(c);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
}

/*
 * Fault injection with fail-nth (current->fail_nth): needs failslab with
 * ignore-gfp-wait off, which the test VMs set before loading the module.
 */
static bool pn_failnth_ready(struct kunit *test)
{
#ifdef CONFIG_FAULT_INJECTION
	void *probe;
	bool ready;

	if (!IS_ENABLED(CONFIG_FAILSLAB))
		return false;
	current->fail_nth = 1;
	probe = kmalloc(8, GFP_KERNEL);
	ready = !probe;
	current->fail_nth = 0;
	kfree(probe);
	return ready;
#else
	return false;
#endif
}

static void pn_failnth_arm(unsigned int n)
{
#ifdef CONFIG_FAULT_INJECTION
	current->fail_nth = n;
#endif
}

/* Disarm; true if the n-th fault point was reached (and failed). */
static bool pn_failnth_disarm(void)
{
#ifdef CONFIG_FAULT_INJECTION
	bool hit = !current->fail_nth;

	current->fail_nth = 0;
	return hit;
#else
	return false;
#endif
}

/*
 * A free never allocates: with fail-nth armed at 1, the first fault point
 * would fail.  Objects allocated on one CPU are freed on another whose
 * magazines are empty, more of them than the depot's empty magazines hold,
 * so that frees go back to the chunks (the old code allocated a magazine
 * there); the fault counter must be untouched.
 */
#define PN_FREE_N	512

static void pn_test_free_does_not_allocate(struct kunit *test)
{
	struct pn_cache_stats st0, st;
	struct pn_depot_arg *x;
	unsigned int a, b, i;

	if (!pn_failnth_ready(test))
		kunit_skip(test, "needs CONFIG_FAILSLAB and failslab/ignore-gfp-wait=N");
	if (pn_alloc_debug_forced())
		kunit_skip(test, "alloc_debug=1: no magazines to test");
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two online CPUs");
	x = kunit_kzalloc(test, sizeof(*x), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, x);
	x->c = pn_kunit_cache(test, "kunit-freealloc", 8, 0, NULL, NULL, NULL);
	a = pn_two_cpus(&b);
	pn_pin_to(a);
	for (i = 0; i < PN_FREE_N; i++) {
		x->p[i] = pn_cache_alloc(x->c, GFP_KERNEL);
		KUNIT_ASSERT_NE(test, pn_kaddr(x->p[i]), 0UL);
	}
	/* Every CPU drained, surplus empty magazines freed. */
	pn_cache_shrink(x->c);
	pn_cache_flush_work(x->c);
	pn_pin_to(b);
	pn_cache_get_stats(x->c, &st0);
	KUNIT_ASSERT_LT(test, st0.empty_mags * st0.mag_cap, (u64)PN_FREE_N);
	pn_failnth_arm(1);
	for (i = 0; i < PN_FREE_N; i++)
		pn_cache_free(x->c, x->p[i]);
	KUNIT_EXPECT_FALSE(test, pn_failnth_disarm());
	pn_unpin_self();
	pn_cache_get_stats(x->c, &st);
	/* Some frees found no empty magazine and went to the chunks. */
	KUNIT_EXPECT_GT(test, st.chunk_free_objs, st0.chunk_free_objs);
	PN_EXPECT_IN_USE(test, &st, 0);
	pn_cache_shrink(x->c);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(x->c), 0UL);
}

/*
 * A chunk release whose tree erase fails for want of memory keeps the
 * chunk, intact: the tree never points at a released chunk.  Every fault
 * point of pn_cache_shrink() is failed in turn (fail-nth); the erase itself
 * retries with GFP_KERNEL after a failed GFP_NOWAIT preallocation, which
 * one injected failure cannot defeat, so the release site has a fault_attr
 * of its own (alloc/fail_release) that fail-nth reaches.
 */
static void pn_test_release_erase_fails(struct kunit *test)
{
	struct pn_ctor_state s = { .fail_at = -1 };
	unsigned int n, nth, points = 0, kept = 0;
	u64 undone;
	struct pn_cache_stats st;
	struct pn_cache *c;
	void __percpu *p;
	bool hit;

	if (!pn_failnth_ready(test))
		kunit_skip(test, "needs CONFIG_FAILSLAB and failslab/ignore-gfp-wait=N");
	c = pn_kunit_cache(test, "kunit-erase", 512, 0, pn_ctor, pn_dtor, &s);
	n = pn_cache_objs_per_chunk(c);
	for (nth = 1; nth < 1000; nth++) {
		p = pn_cache_alloc(c, GFP_KERNEL);
		KUNIT_ASSERT_NE(test, pn_kaddr(p), 0UL);
		pn_cache_free(c, p);
		pn_failnth_arm(nth);
		pn_cache_shrink(c);
		hit = pn_failnth_disarm();
		/* After a grace period a released chunk's struct is gone. */
		rcu_barrier();
		pn_cache_get_stats(c, &st);
		if (st.chunks) {
			/* Kept: still found, every object still constructed. */
			kept++;
			KUNIT_EXPECT_PTR_EQ(test, pn_cache_of(p), c);
			KUNIT_EXPECT_TRUE(test, pn_constructed(p));
			KUNIT_EXPECT_GT(test, st.release_fails, 0ULL);
		} else {
			KUNIT_EXPECT_NULL(test, pn_cache_of(p));
		}
		KUNIT_EXPECT_EQ(test, (u64)atomic_read(&s.dtor), st.chunk_releases * n);
		if (!hit)
			break;
		points++;
	}
	kunit_info(test, "pn_cache_shrink: %u fault points, %u releases undone\n",
		   points, kept);

	/*
	 * Which point is the release varies from run to run (the kernel's own
	 * allocations in this task come and go), so fail-nth may step over
	 * it; fail it directly once more (task-filtered fault_attr).
	 */
	p = pn_cache_alloc(c, GFP_KERNEL);
	KUNIT_ASSERT_NE(test, pn_kaddr(p), 0UL);
	pn_cache_free(c, p);
	pn_cache_get_stats(c, &st);
	undone = st.release_fails;
	pn_alloc_fail_releases(1, 0);
	pn_cache_shrink(c);
	pn_alloc_fail_releases(0, 0);
	rcu_barrier();
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_EQ(test, st.release_fails, undone + 1);
	KUNIT_EXPECT_EQ(test, st.chunks, 1ULL);
	KUNIT_EXPECT_PTR_EQ(test, pn_cache_of(p), c);
	KUNIT_EXPECT_TRUE(test, pn_constructed(p));
	pn_cache_shrink(c);
	rcu_barrier();
	KUNIT_EXPECT_NULL(test, pn_cache_of(p));
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.dtor), atomic_read(&s.ctor));
}

/*
 * Review F1: a release that fails after one that succeeded must link its
 * chunk back without writing into the released chunk, whose struct an RCU
 * callback frees.  So every chunk leaves the batch list before its
 * release, and the list is empty when pn_chunks_release() returns.
 */
static void pn_test_release_fails_after_success(struct kunit *test)
{
	unsigned long saved = pn_cpu_cache_bytes, failed = 0;
	struct pn_cache_stats st;
	void __percpu *p[2];
	struct pn_cache *c;
	LIST_HEAD(list);
	unsigned int i;

	if (!IS_ENABLED(CONFIG_FAULT_INJECTION))
		kunit_skip(test, "needs CONFIG_FAULT_INJECTION");
	/* No magazines, one object a chunk: two frees, two free chunks. */
	WRITE_ONCE(pn_cpu_cache_bytes, 0);
	c = pn_cache_create("kunit-relfail", PN_ALLOC_MAX_SIZE, 0, 0, NULL, NULL, NULL);
	WRITE_ONCE(pn_cpu_cache_bytes, saved);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, c);
	KUNIT_ASSERT_EQ(test, pn_cache_objs_per_chunk(c), 1U);
	for (i = 0; i < ARRAY_SIZE(p); i++) {
		p[i] = pn_cache_alloc(c, GFP_KERNEL);
		KUNIT_ASSERT_NE(test, pn_kaddr(p[i]), 0UL);
	}
	for (i = 0; i < ARRAY_SIZE(p); i++)
		pn_cache_free(c, p[i]);
	KUNIT_ASSERT_EQ(test, pn_cache_unlink_free_chunks(c, &list), 2UL);

	pn_alloc_fail_releases(1, 1);	/* the first succeeds, the second fails */
	pn_chunks_release(c, &list, &failed);
	pn_alloc_fail_releases(0, 0);
	KUNIT_EXPECT_TRUE(test, list_empty(&list));
	KUNIT_EXPECT_EQ(test, failed, 1UL);
	rcu_barrier();
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_EQ(test, st.chunks, 1ULL);
	KUNIT_EXPECT_EQ(test, st.chunk_releases, 1ULL);
	KUNIT_EXPECT_EQ(test, st.release_fails, 1ULL);
	INIT_LIST_HEAD(&list);	/* before the fix it still names the freed chunk */
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
}

#ifdef CONFIG_TRACEPOINTS
/* What pn_test_mag_gfp() records of the kmalloc() calls it makes. */
static struct {
	struct task_struct *task;
	size_t bytes;
	atomic_t seen;
	atomic_t nofail;
} pn_magtrace;

static void pn_probe_kmalloc(void *data, unsigned long call_site,
			     const void *ptr, size_t bytes_req,
			     size_t bytes_alloc, gfp_t gfp, int node)
{
	if (current != READ_ONCE(pn_magtrace.task) ||
	    bytes_req != READ_ONCE(pn_magtrace.bytes))
		return;
	atomic_inc(&pn_magtrace.seen);
	if (gfp & __GFP_NOFAIL)
		atomic_inc(&pn_magtrace.nofail);
}
#endif

/*
 * Review F11: a magazine is optional, so its allocation must not inherit
 * a request's __GFP_NOFAIL (fault injection skips __GFP_NOFAIL requests,
 * so the kmalloc tracepoint watches the flags instead).
 */
static void pn_test_mag_gfp(struct kunit *test)
{
#ifdef CONFIG_TRACEPOINTS
	void __percpu *p[8];
	struct pn_cache *c;
	unsigned int i;

	c = pn_kunit_cache(test, "kunit-nofail", 64, 0, NULL, NULL, NULL);
	if (pn_alloc_debug_forced())
		kunit_skip(test, "alloc_debug=1: no magazines");
	pn_magtrace.bytes = pn_cache_mag_bytes(c);
	atomic_set(&pn_magtrace.seen, 0);
	atomic_set(&pn_magtrace.nofail, 0);
	WRITE_ONCE(pn_magtrace.task, current);
	KUNIT_ASSERT_EQ(test, register_trace_kmalloc(pn_probe_kmalloc, NULL), 0);
	for (i = 0; i < ARRAY_SIZE(p); i++)
		p[i] = pn_cache_alloc(c, GFP_KERNEL | __GFP_NOFAIL);
	unregister_trace_kmalloc(pn_probe_kmalloc, NULL);
	tracepoint_synchronize_unregister();
	WRITE_ONCE(pn_magtrace.task, NULL);
	for (i = 0; i < ARRAY_SIZE(p); i++) {
		KUNIT_EXPECT_NE(test, pn_kaddr(p[i]), 0UL);
		pn_cache_free(c, p[i]);
	}
	/* The first request grew the cache and gave the depot a magazine. */
	KUNIT_EXPECT_GT(test, atomic_read(&pn_magtrace.seen), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&pn_magtrace.nofail), 0);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
#else
	kunit_skip(test, "CONFIG_TRACEPOINTS is off");
#endif
}

/* ---- debug mode --------------------------------------------------------- */

static void pn_test_debug_mode(struct kunit *test)
{
	void __percpu *a, *b;
	struct pn_cache_stats st;
	struct pn_cache *c;
	unsigned int cpu;

	c = pn_kunit_cache(test, "kunit-debug", 16, PN_CACHE_DEBUG, NULL, NULL, NULL);
	a = pn_cache_alloc(c, GFP_KERNEL);
	KUNIT_ASSERT_NE(test, pn_kaddr(a), 0UL);
	pn_cache_free(c, a);
	pn_cache_free(c, a);		/* double free: detected, ignored */
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_EQ(test, st.double_frees, 1ULL);
	PN_EXPECT_IN_USE(test, &st, 0);

	/* A freed object is poisoned on every possible CPU. */
	KUNIT_EXPECT_TRUE(test, pn_all_bytes(a, 16, 0x6b));

	/* The lowest free object comes back: its poison is intact. */
	b = pn_cache_alloc(c, GFP_KERNEL);
	KUNIT_ASSERT_EQ(test, pn_kaddr(b), pn_kaddr(a));
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_EQ(test, st.poison_errors, 0ULL);

	/* Write after free: caught at the next allocation. */
	pn_cache_free(c, b);
	cpu = cpumask_last(cpu_possible_mask);
	*(u8 *)per_cpu_ptr(b, cpu) = 0;
	a = pn_cache_alloc(c, GFP_KERNEL);
	KUNIT_ASSERT_EQ(test, pn_kaddr(a), pn_kaddr(b));
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_EQ(test, st.poison_errors, 1ULL);

	/* A pointer into the middle of an object is not an object. */
	pn_cache_free(c, (void __percpu *)((char __percpu *)a + 1));
	pn_cache_get_stats(c, &st);
	KUNIT_EXPECT_EQ(test, st.bad_frees, 1ULL);
	PN_EXPECT_IN_USE(test, &st, 1);

	pn_cache_free(c, a);
	KUNIT_EXPECT_EQ(test, pn_cache_destroy(c), 0UL);
}

/* ---- tracepoints and the sized API's free check ------------------------- */

static void pn_count_create(void *data, const char *cache, unsigned int bytes,
			    unsigned int objs, int ret)
{
	if (!strcmp(cache, "kunit-trace"))
		atomic_inc(ret ? &((atomic_t *)data)[1] : &((atomic_t *)data)[0]);
}

static void pn_count_release(void *data, const char *cache, unsigned int bytes,
			     unsigned int objs)
{
	if (!strcmp(cache, "kunit-trace"))
		atomic_inc(&((atomic_t *)data)[2]);
}

static void pn_test_tracepoints(struct kunit *test)
{
	atomic_t *n;
	struct pn_cache *c;
	void __percpu *p;

	if (!IS_ENABLED(CONFIG_TRACEPOINTS))
		kunit_skip(test, "CONFIG_TRACEPOINTS is off");
	if (!IS_ENABLED(CONFIG_FAULT_INJECTION))
		kunit_skip(test, "needs CONFIG_FAULT_INJECTION");
	n = kunit_kcalloc(test, 3, sizeof(*n), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, n);
	KUNIT_ASSERT_EQ(test, register_trace_pn_chunk_create(pn_count_create, n), 0);
	KUNIT_ASSERT_EQ(test, register_trace_pn_chunk_release(pn_count_release, n), 0);

	c = pn_kunit_cache(test, "kunit-trace", 64, 0, NULL, NULL, NULL);
	pn_alloc_fail_chunks(1);
	KUNIT_EXPECT_EQ(test, pn_kaddr(pn_cache_alloc(c, GFP_KERNEL)), 0UL);
	pn_alloc_fail_chunks(0);
	p = pn_cache_alloc(c, GFP_KERNEL);
	KUNIT_EXPECT_NE(test, pn_kaddr(p), 0UL);
	/* Not a size-class object: the sized free refuses it. */
	pn_free_percpu(p);
	KUNIT_EXPECT_PTR_EQ(test, pn_cache_of(p), c);
	pn_cache_free(c, p);
	pn_cache_shrink(c);
	pn_cache_destroy(c);

	unregister_trace_pn_chunk_release(pn_count_release, n);
	unregister_trace_pn_chunk_create(pn_count_create, n);
	tracepoint_synchronize_unregister();
	KUNIT_EXPECT_EQ(test, atomic_read(&n[0]), 1);	/* created */
	KUNIT_EXPECT_EQ(test, atomic_read(&n[1]), 1);	/* injected failure */
	KUNIT_EXPECT_EQ(test, atomic_read(&n[2]), 1);	/* released */
}

/*
 * pcpu_next_cpus_seen(), the mask that in-kernel users (rss_stat=cache)
 * sum over: the library's own mask of CPUs ever brought up, which holds
 * every online CPU; not the possible mask (the lanes with fewer online
 * than possible CPUs tell them apart).
 */
static void pn_test_cpus_seen(struct kunit *test)
{
	const struct cpumask *seen = pcpu_next_cpus_seen();

	KUNIT_EXPECT_PTR_EQ(test, seen, pn_cpus_seen);
	KUNIT_EXPECT_TRUE(test, cpumask_subset(cpu_online_mask, seen));
	KUNIT_EXPECT_TRUE(test, cpumask_subset(seen, cpu_possible_mask));
}

static struct kunit_case pn_alloc_cases[] = {
	KUNIT_CASE(pn_test_cpus_seen),
	KUNIT_CASE(pn_test_percpu_semantics),
	KUNIT_CASE(pn_test_alignment),
	KUNIT_CASE(pn_test_zeroing),
	KUNIT_CASE(pn_test_ctor_dtor),
	KUNIT_CASE(pn_test_ctor_failure),
	KUNIT_CASE(pn_test_cross_cpu_free),
	KUNIT_CASE(pn_test_shrinker_reclaim),
	KUNIT_CASE(pn_test_destroy_leaked),
	KUNIT_CASE_SLOW(pn_test_hotplug_drain),
	KUNIT_CASE(pn_test_injected_failures),
	KUNIT_CASE(pn_test_fault_window),
	KUNIT_CASE(pn_test_nonblocking),
	KUNIT_CASE(pn_test_atomic_reserve),
	KUNIT_CASE(pn_test_accounted),
	KUNIT_CASE(pn_test_accounted_dtor_context),
	KUNIT_CASE(pn_test_direct_double_free),
	KUNIT_CASE(pn_test_direct_free_after_destroy),
	KUNIT_CASE(pn_test_sized_align_zero),
	KUNIT_CASE(pn_test_ctor_gfp),
	KUNIT_CASE(pn_test_dtor_uses_api),
	KUNIT_CASE(pn_test_cache_bytes_bound),
	KUNIT_CASE(pn_test_shrink_budget),
	KUNIT_CASE(pn_test_count_held),
	KUNIT_CASE(pn_test_grow_vs_shrinker),
	KUNIT_CASE(pn_test_free_does_not_allocate),
	KUNIT_CASE(pn_test_release_erase_fails),
	KUNIT_CASE(pn_test_release_fails_after_success),
	KUNIT_CASE(pn_test_mag_gfp),
	KUNIT_CASE(pn_test_debug_mode),
	KUNIT_CASE(pn_test_tracepoints),
	{}
};

static struct kunit_suite pn_alloc_suite = {
	.name = "pcpu_next_alloc",
	.test_cases = pn_alloc_cases,
};

kunit_test_suite(pn_alloc_suite);
