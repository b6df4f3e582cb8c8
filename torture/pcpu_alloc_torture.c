// SPDX-License-Identifier: GPL-2.0
/*
 * test=alloc: the stress and the bench of pcpu_alloc.c, run by the debugfs
 * control plane (control.c).  Harness code: it uses the library through
 * its API (<pcpu_next/pcpu_alloc.h>) plus three accessors of
 * internal/pcpu_alloc.h (pn_alloc_reclaim(), pn_alloc_size_class(),
 * pn_alloc_sized_direct()), and reads only statistics the library keeps
 * whatever CONFIG_PCPU_NEXT_STATS says (objects in use, which is derived
 * from the chunk accounting, chunk and reserve failures, chunks, memory),
 * so it checks the same with the fast-path statistics compiled out (the
 * stock-kernel lanes) as with them.
 *
 * Stress: workers share an array of slots.  A worker picks a random slot;
 * if it holds an object, the worker takes it, verifies the owner stamp on
 * every possible CPU and frees it (often on another CPU than the one that
 * allocated it); if it is empty, the worker allocates a random size (and
 * alignment, sometimes GFP_NOWAIT), checks it is zeroed everywhere, stamps
 * it and parks it.  A quarter of the objects come from a constructor
 * cache: they must arrive constructed and are restored before the free.
 * Worker 0 also runs reclaim (a shrinker scan) and pn_cache_shrink() now
 * and then, so per-CPU drains and chunk releases race with the fast paths.
 * Two live objects sharing memory, or any corruption, shows as a stamp
 * mismatch.  At the end every parked object is freed, and the objects in
 * use in the size classes (direct objects included) and in the constructor
 * cache must be what they were before the run: no leak; the harness's own
 * count of allocations must equal its count of frees, and every
 * constructed object must have been destructed exactly once, in
 * constructed state.
 *
 * With faults=N, chunk creations and the constructor fail at random
 * (pn_fault_hit(): should_fail() on the sites PN_FAULT_CHUNK and
 * PN_FAULT_CTOR, at DIV_ROUND_UP(N, 10) percent).  A failed chunk
 * creation must reach exactly one GFP_KERNEL caller as NULL
 * (__pn_cache_alloc() returns at the first failed pn_grow()), so the
 * stress checks that its NULL count equals the caches' chunk-failure
 * count and that no injected fault went missing; a constructor failure
 * must destruct the objects already built in that chunk, so every
 * constructed object is destructed exactly once by the end.  Both checks
 * assume nobody else allocates from the module during the run (true in
 * the test VMs).  Without faults, any NULL from GFP_KERNEL is a failure.
 *
 * Bench: each operation is one allocation plus one free, done in batches
 * (batch= allocations, then as many frees; default 1000).  It compares
 * the sized API (pn_alloc_percpu_gfp()/pn_free_percpu(), zeroing on every
 * possible CPU like the kernel) with the kernel's own
 * __alloc_percpu_gfp()/free_percpu() of the same size and batch, measured
 * in the same run, first with one worker, then with threads= workers (and
 * prints the scaling efficiency of both); then both against the floor,
 * the zeroing of the object on every possible CPU that the sized contract
 * requires and nothing else (objects allocated up front, same batches):
 * how far each allocator is above the work it cannot avoid; then a
 * constructor cache
 * (objects kept constructed, no zeroing) against the same kernel
 * baseline.  The memory held per object by a cache, against the kernel
 * allocator's, is printed as a comment line.  A bench on a kernel built
 * with CONFIG_PCPU_NEXT_STATS measures the counting too.
 */

#include <linux/atomic.h>
#include <linux/err.h>
#include <linux/gfp.h>
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/time64.h>

#include <pcpu_next/pcpu_alloc.h>

#include "internal/core.h"
#include "internal/pcpu_alloc.h"
#include "torture.h"

/* ---- stress ------------------------------------------------------------- */

#define PN_ST_CTOR_SIZE		64
#define PN_ST_CTOR_MAGIC	0xc0c0c0c0c0c0c0c0ULL

struct pn_st_slot {
	spinlock_t lock;	/* protects the three fields below */
	void __percpu *ptr;
	unsigned int words;	/* u64 words stamped */
	bool ctor;		/* from the constructor cache */
	u64 tag;
};

struct pn_st {
	struct pn_st_slot *slots;
	unsigned int nr_slots;
	unsigned int max_size;
	struct pn_cache *ctor_cache;
	u64 seed;
	atomic_long_t allocs, frees, nomem, nowait_fail, corrupt, unzeroed,
		      unconstructed, reclaims, constructed, destructed,
		      bad_dtor;
};

static u64 pn_st_word(u64 tag, unsigned int cpu, unsigned int w)
{
	return tag ^ ((u64)cpu << 40) ^ ((u64)w << 20);
}

/* Constructor for the bench: zeroed, like a fresh counter; @priv: size. */
static int pn_st_ctor_any(void __percpu *obj, void *priv, gfp_t gfp)
{
	size_t size = *(size_t *)priv;
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(obj, cpu), 0, size);
	return 0;
}

static bool pn_st_check(void __percpu *obj, unsigned int from, unsigned int words,
			u64 tag, bool constructed)
{
	unsigned int cpu, w;
	u64 *p;

	for_each_possible_cpu(cpu) {
		p = per_cpu_ptr(obj, cpu);
		for (w = from; w < words; w++) {
			u64 want = constructed ? PN_ST_CTOR_MAGIC ^ w :
				   pn_st_word(tag, cpu, w);

			if (p[w] != want)
				return false;
		}
	}
	return true;
}

static void pn_st_stamp(void __percpu *obj, unsigned int from, unsigned int words,
			u64 tag, bool constructed)
{
	unsigned int cpu, w;
	u64 *p;

	for_each_possible_cpu(cpu) {
		p = per_cpu_ptr(obj, cpu);
		for (w = from; w < words; w++)
			p[w] = constructed ? PN_ST_CTOR_MAGIC ^ w :
			       pn_st_word(tag, cpu, w);
	}
}

/*
 * The stress constructor checks the fault site PN_FAULT_CTOR (the module
 * core's fault_attr pn_fail_ctor, debugfs pcpu_next/fault/fail_ctor/):
 * nothing else checks it, so it fails nothing outside the alloc stress.
 */
static int pn_st_ctor(void __percpu *obj, void *priv, gfp_t gfp)
{
	struct pn_st *st = priv;
	unsigned int cpu, w;

	if (pn_fault_hit(PN_FAULT_CTOR))
		return -ENOMEM;
	for_each_possible_cpu(cpu)
		for (w = 0; w < PN_ST_CTOR_SIZE / 8; w++)
			((u64 *)per_cpu_ptr(obj, cpu))[w] = PN_ST_CTOR_MAGIC ^ w;
	atomic_long_inc(&st->constructed);
	return 0;
}

/* Objects come back constructed; each is destructed once. */
static void pn_st_dtor(void __percpu *obj, void *priv)
{
	struct pn_st *st = priv;

	if (!pn_st_check(obj, 0, PN_ST_CTOR_SIZE / 8, 0, true))
		atomic_long_inc(&st->bad_dtor);
	atomic_long_inc(&st->destructed);
}

/* Verify a parked object and free it. */
static void pn_st_release(struct pn_st *st, void __percpu *ptr, unsigned int words,
			  bool ctor, u64 tag)
{
	if (ctor) {
		/* word 0 stays constructed, the owner stamp is in 1.. */
		if (!pn_st_check(ptr, 0, 1, 0, true) ||
		    !pn_st_check(ptr, 1, words, tag, false))
			atomic_long_inc(&st->corrupt);
		pn_st_stamp(ptr, 1, words, 0, true);
		pn_cache_free(st->ctor_cache, ptr);
	} else {
		if (!pn_st_check(ptr, 0, words, tag, false))
			atomic_long_inc(&st->corrupt);
		pn_free_percpu(ptr);
	}
	atomic_long_inc(&st->frees);
}

static bool pn_zeroed(void __percpu *obj, size_t bytes)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		if (memchr_inv(per_cpu_ptr(obj, cpu), 0, bytes))
			return false;
	return true;
}

static int pn_st_worker(struct pn_run *run, unsigned int idx, void *arg)
{
	struct pn_st *st = arg;
	u64 rnd = st->seed ^ (0x9e3779b97f4a7c15ULL * (idx + 1));
	u64 serial = 0, n = 0;
	struct pn_st_slot *s;
	void __percpu *ptr;
	unsigned int words;
	bool ctor;
	u64 tag;

	while (!pn_should_stop(run)) {
		u32 r = pn_rand_state(&rnd);

		s = &st->slots[r % st->nr_slots];
		spin_lock(&s->lock);
		ptr = s->ptr;
		words = s->words;
		ctor = s->ctor;
		tag = s->tag;
		s->ptr = NULL;
		spin_unlock(&s->lock);

		if (ptr) {
			pn_st_release(st, ptr, words, ctor, tag);
		} else {
			gfp_t gfp = (r >> 8) % 16 ? GFP_KERNEL : GFP_NOWAIT;
			size_t size;

			ctor = !((r >> 12) % 4);
			tag = ((u64)(idx + 1) << 48) | ++serial;
			if (ctor) {
				words = PN_ST_CTOR_SIZE / 8;
				ptr = pn_cache_alloc(st->ctor_cache, gfp);
			} else {
				size = 8 * (1 + pn_rand_state(&rnd) % (st->max_size / 8));
				if (!((r >> 16) % 64))
					size = PN_ALLOC_MAX_SIZE;
				words = size / 8;
				ptr = pn_alloc_percpu_gfp(size, 8U << ((r >> 24) % 4), gfp);
			}
			if (!ptr) {
				atomic_long_inc(gfp == GFP_KERNEL ? &st->nomem :
						&st->nowait_fail);
				goto next;
			}
			atomic_long_inc(&st->allocs);
			if (ctor) {
				if (!pn_st_check(ptr, 0, words, 0, true))
					atomic_long_inc(&st->unconstructed);
			} else if (!pn_zeroed(ptr, words * 8)) {
				atomic_long_inc(&st->unzeroed);
			}
			pn_st_stamp(ptr, ctor ? 1 : 0, words, tag, false);

			spin_lock(&s->lock);
			if (!s->ptr) {
				s->ptr = ptr;
				s->words = words;
				s->ctor = ctor;
				s->tag = tag;
				ptr = NULL;
			}
			spin_unlock(&s->lock);
			if (ptr)
				pn_st_release(st, ptr, words, ctor, tag);
		}
next:
		if (!idx && !(n & 4095)) {
			pn_alloc_reclaim(ULONG_MAX);
			pn_cache_shrink(st->ctor_cache);
			atomic_long_inc(&st->reclaims);
		}
		if (!(++n & 31))
			cond_resched();
	}
	return 0;
}

/*
 * Objects in use in the size classes (direct objects included); chunk
 * creations that failed for a caller and for maint_work.
 */
static u64 pn_sized_in_use(u64 *chunk_fails, u64 *reserve_fails)
{
	u64 n = pn_alloc_sized_direct();
	struct pn_cache_stats s;
	struct pn_cache *c;
	unsigned int i;

	*chunk_fails = 0;
	*reserve_fails = 0;
	for (i = 0; (c = pn_alloc_size_class(i)); i++) {
		pn_cache_get_stats(c, &s);
		n += s.in_use;
		*chunk_fails += s.chunk_fails - s.reserve_fails;
		*reserve_fails += s.reserve_fails;
	}
	return n;
}

static int pn_alloc_stress(struct pn_run *run)
{
	u64 in_use0, in_use1, fails0, fails1, rfails0, rfails1;
	unsigned long leaked, injected;
	struct pn_cache_stats cs;
	struct pn_st *st;
	unsigned int i;
	int ret = -ENOMEM;

	st = kzalloc_obj(*st, GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	st->nr_slots = (run->p.objects ? : 256) * run->p.threads;
	st->max_size = ALIGN(run->p.size ? : 512, 8);
	st->seed = run->p.seed;
	st->slots = kvcalloc(st->nr_slots, sizeof(*st->slots), GFP_KERNEL);
	if (!st->slots)
		goto free_st;
	for (i = 0; i < st->nr_slots; i++)
		spin_lock_init(&st->slots[i].lock);
	st->ctor_cache = pn_cache_create("stress-ctor", PN_ST_CTOR_SIZE, 0, 0,
					 pn_st_ctor, pn_st_dtor, st);
	if (IS_ERR(st->ctor_cache)) {
		ret = PTR_ERR(st->ctor_cache);
		goto free_slots;
	}

	in_use0 = pn_sized_in_use(&fails0, &rfails0);
	pn_fault_arm(run);
	ret = pn_run_threads(run, run->p.threads, run->p.pin, run->p.duration_ms,
			     pn_st_worker, st);
	pn_fault_disarm(run);
	/*
	 * A reserve refill (maint_work) that hit an injected fault counts
	 * it in reserve_fails when it finishes: wait for every cache's work
	 * before comparing.
	 */
	pn_cache_flush_work(st->ctor_cache);
	for (i = 0; pn_alloc_size_class(i); i++)
		pn_cache_flush_work(pn_alloc_size_class(i));
	injected = pn_fault_injected(PN_FAULT_CHUNK) +
		   pn_fault_injected(PN_FAULT_CTOR);
	for (i = 0; i < st->nr_slots; i++)
		if (st->slots[i].ptr)
			pn_st_release(st, st->slots[i].ptr, st->slots[i].words,
				      st->slots[i].ctor, st->slots[i].tag);
	in_use1 = pn_sized_in_use(&fails1, &rfails1);
	pn_cache_get_stats(st->ctor_cache, &cs);
	fails1 += cs.chunk_fails - cs.reserve_fails;
	rfails1 += cs.reserve_fails;
	leaked = pn_cache_destroy(st->ctor_cache);	/* runs the destructors */

	pn_printf(run,
		  "allocs=%ld frees=%ld nomem=%ld nowait_fail=%ld reclaims=%ld corrupt=%ld unzeroed=%ld unconstructed=%ld leaked=%llu ",
		  atomic_long_read(&st->allocs), atomic_long_read(&st->frees),
		  atomic_long_read(&st->nomem), atomic_long_read(&st->nowait_fail),
		  atomic_long_read(&st->reclaims), atomic_long_read(&st->corrupt),
		  atomic_long_read(&st->unzeroed),
		  atomic_long_read(&st->unconstructed),
		  (u64)leaked + (in_use1 - in_use0));
	if (atomic_long_read(&st->corrupt))
		pn_fail(run, "stamp_mismatch");
	if (atomic_long_read(&st->unzeroed))
		pn_fail(run, "not_zeroed");
	if (atomic_long_read(&st->unconstructed))
		pn_fail(run, "not_constructed");
	if (run->p.faults) {
		pn_printf(run, "chunk_fails=%llu constructed=%ld destructed=%ld ",
			  fails1 - fails0, atomic_long_read(&st->constructed),
			  atomic_long_read(&st->destructed));
		/* every failed chunk creation reached one caller as NULL */
		if (atomic_long_read(&st->nomem) != fails1 - fails0)
			pn_fail(run, "enomem_not_propagated");
		/*
		 * every injected fault failed a chunk creation, for a caller
		 * or for the reserve's refill (maint_work)
		 */
		if (fails1 - fails0 + rfails1 - rfails0 < injected)
			pn_fail(run, "injected_fault_lost");
	} else if (atomic_long_read(&st->nomem)) {
		pn_fail(run, "enomem");
	}
	if (atomic_long_read(&st->constructed) !=
	    atomic_long_read(&st->destructed))
		pn_fail(run, "ctor_dtor_mismatch");
	if (atomic_long_read(&st->bad_dtor))
		pn_fail(run, "dtor_on_unconstructed");
	if (leaked || in_use1 != in_use0)
		pn_fail(run, "leak");
	if (atomic_long_read(&st->allocs) != atomic_long_read(&st->frees))
		pn_fail(run, "alloc_free_mismatch");
free_slots:
	kvfree(st->slots);
free_st:
	kfree(st);
	return ret;
}

/* ---- bench -------------------------------------------------------------- */

/*
 * PN_B_FLOOR is the work the sized API's contract requires and nothing
 * else: zeroing an object of the size on every possible CPU, on objects
 * allocated once up front.  Both allocators' sized rows are also printed
 * as a ratio to it: 1.00 would be an allocator that costs nothing but the
 * zeroing.
 */
enum pn_bench_kind { PN_B_SIZED, PN_B_CACHE, PN_B_KERNEL, PN_B_FLOOR };

struct pn_bench {
	enum pn_bench_kind kind;
	struct pn_cache *cache;
	size_t size;
	unsigned int batch;
	void __percpu ***objs;		/* [worker][batch] */
	void __percpu ***floor;		/* [worker][batch], PN_B_FLOOR's */
	u64 *ops;			/* per worker */
	atomic_t nomem;
};

static int pn_bench_worker(struct pn_run *run, unsigned int idx, void *arg)
{
	struct pn_bench *b = arg;
	void __percpu **o = b->objs[idx];
	unsigned int i, got;
	u64 ops = 0;

	while (!pn_should_stop(run) && b->kind == PN_B_FLOOR) {
		void __percpu **f = b->floor[idx];
		unsigned int cpu;

		for (i = 0; i < b->batch; i++)
			for_each_possible_cpu(cpu)
				memset(per_cpu_ptr(f[i], cpu), 0, b->size);
		ops += b->batch;
		cond_resched();
	}
	while (!pn_should_stop(run) && b->kind != PN_B_FLOOR) {
		for (got = 0; got < b->batch; got++) {
			switch (b->kind) {
			case PN_B_SIZED:
				o[got] = pn_alloc_percpu_gfp(b->size, 8, GFP_KERNEL);
				break;
			case PN_B_CACHE:
				o[got] = pn_cache_alloc(b->cache, GFP_KERNEL);
				break;
			default:
				o[got] = __alloc_percpu_gfp(b->size, 8, GFP_KERNEL);
				break;
			}
			if (!o[got]) {
				atomic_inc(&b->nomem);
				break;
			}
		}
		for (i = 0; i < got; i++) {
			switch (b->kind) {
			case PN_B_SIZED:
				pn_free_percpu(o[i]);
				break;
			case PN_B_CACHE:
				pn_cache_free(b->cache, o[i]);
				break;
			default:
				free_percpu(o[i]);
				break;
			}
		}
		ops += got;
		cond_resched();
	}
	b->ops[idx] = ops;
	return 0;
}

static int pn_bench_phase(struct pn_run *run, struct pn_bench *b,
			  enum pn_bench_kind kind, unsigned int threads,
			  u64 *ops, struct pn_span *s)
{
	unsigned int i;
	int ret;

	b->kind = kind;
	memset(b->ops, 0, sizeof(*b->ops) * run->p.threads);
	*s = (struct pn_span){};
	pn_span_next(run, s);
	ret = pn_run_threads(run, threads, run->p.pin, run->p.duration_ms,
			     pn_bench_worker, b);
	*ops = 0;
	for (i = 0; i < threads; i++)
		*ops += b->ops[i];
	if (!ret && atomic_read(&b->nomem))
		ret = -ENOMEM;
	return ret;
}

static u64 pn_per_sec(u64 ops, u64 ns)
{
	return ns ? mul_u64_u64_div_u64(ops, NSEC_PER_SEC, ns) : 0;
}

/* Print aggregate/(threads * single) in hundredths. */
static void pn_bench_scaling(struct pn_run *run, const char *what, u64 o1,
			     u64 n1, u64 on, u64 nn, unsigned int threads)
{
	u64 r1 = pn_per_sec(o1, n1), rn = pn_per_sec(on, nn);
	u64 eff = r1 ? div64_u64(rn * 100, r1 * threads) : 0;

	pn_printf(run, "# scaling %s: 1 thread %llu/s, %u threads %llu/s, efficiency %llu.%02llu\n",
		  what, r1, threads, rn, eff / 100, eff % 100);
}

static void pn_bench_memory(struct pn_run *run, size_t size, unsigned int nr)
{
	struct pn_cache_stats st;
	void __percpu **o;
	struct pn_cache *c;
	unsigned int i, got = 0;
	u64 kernel;

	o = kvcalloc(nr, sizeof(*o), GFP_KERNEL);
	c = pn_cache_create("bench-mem", size, 8, PN_CACHE_ZERO, NULL, NULL, NULL);
	if (!o || IS_ERR(c))
		goto out;
	for (got = 0; got < nr; got++) {
		o[got] = pn_cache_alloc(c, GFP_KERNEL);
		if (!o[got])
			break;
	}
	pn_cache_get_stats(c, &st);
	/* The kernel: 4-byte granules on every possible CPU, +1 bitmap bit/granule. */
	kernel = (u64)ALIGN(size, 4) * num_possible_cpus() +
		 DIV_ROUND_UP(ALIGN(size, 4) / 4, 8);
	if (got)
		pn_printf(run,
			  "# memory size=%zu objects=%u possible_cpus=%u: ours %llu bytes/object (%llu chunks), kernel ~%llu bytes/object, ratio %llu%%\n",
			  size, got, num_possible_cpus(), div_u64(st.mem_bytes, got),
			  st.chunks, kernel,
			  div64_u64(div_u64(st.mem_bytes, got) * 100, kernel));
	for (i = 0; i < got; i++)
		pn_cache_free(c, o[i]);
out:
	if (!IS_ERR_OR_NULL(c))
		pn_cache_destroy(c);
	kvfree(o);
}

static void pn_bench_floor_free(struct pn_bench *b, unsigned int threads)
{
	unsigned int i, j;

	for (i = 0; b->floor && i < threads; i++) {
		for (j = 0; b->floor[i] && j < b->batch; j++)
			free_percpu(b->floor[i][j]);
		kvfree(b->floor[i]);
	}
	kfree(b->floor);
	b->floor = NULL;
}

static int pn_bench_floor_objs(struct pn_bench *b, unsigned int threads)
{
	unsigned int i, j;

	b->floor = kcalloc(threads, sizeof(*b->floor), GFP_KERNEL);
	if (!b->floor)
		return -ENOMEM;
	for (i = 0; i < threads; i++) {
		b->floor[i] = kvcalloc(b->batch, sizeof(**b->floor), GFP_KERNEL);
		if (!b->floor[i])
			return -ENOMEM;
		for (j = 0; j < b->batch; j++) {
			b->floor[i][j] = __alloc_percpu(b->size, 8);
			if (!b->floor[i][j])
				return -ENOMEM;
		}
	}
	return 0;
}

static int pn_alloc_bench(struct pn_run *run)
{
	unsigned int threads = run->p.threads, i;
	struct pn_span k1s, kns, o1t, ont, o1st, f1s, fns;
	u64 k1, kn, o1, on, o1s, f1, fn;
	struct pn_bench *b;
	char name[48];
	int ret = -ENOMEM;

	b = kzalloc_obj(*b, GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	b->size = run->p.size ? : 16;
	b->batch = run->p.batch ? : 1000;
	b->ops = kcalloc(threads, sizeof(*b->ops), GFP_KERNEL);
	b->objs = kcalloc(threads, sizeof(*b->objs), GFP_KERNEL);
	if (!b->ops || !b->objs)
		goto out;
	for (i = 0; i < threads; i++) {
		b->objs[i] = kvcalloc(b->batch, sizeof(**b->objs), GFP_KERNEL);
		if (!b->objs[i])
			goto out;
	}
	b->cache = pn_cache_create("bench-ctor", b->size, 8, 0, pn_st_ctor_any,
				   NULL, &b->size);
	if (IS_ERR(b->cache)) {
		ret = PTR_ERR(b->cache);
		b->cache = NULL;
		goto out;
	}
	pn_printf(run,
		  "# size=%zu batch=%u (batch allocations, then batch frees; one op = alloc + free)\n",
		  b->size, b->batch);

	ret = pn_bench_phase(run, b, PN_B_SIZED, 1, &o1, &o1t);
	if (!ret)
		ret = pn_bench_phase(run, b, PN_B_KERNEL, 1, &k1, &k1s);
	if (ret)
		goto out;
	pn_bench_row(run, "pn_alloc_percpu 1 thread", o1, &o1t,
		     "__alloc_percpu 1 thread", k1, &k1s);
	o1s = o1;
	o1st = o1t;

	ret = pn_bench_phase(run, b, PN_B_SIZED, threads, &on, &ont);
	if (!ret)
		ret = pn_bench_phase(run, b, PN_B_KERNEL, threads, &kn, &kns);
	if (ret)
		goto out;
	snprintf(name, sizeof(name), "pn_alloc_percpu %u threads", threads);
	pn_bench_row(run, name, on, &ont, "__alloc_percpu same threads", kn, &kns);
	pn_bench_scaling(run, "pn_alloc_percpu", o1, o1t.ns, on, ont.ns, threads);
	pn_bench_scaling(run, "__alloc_percpu", k1, k1s.ns, kn, kns.ns, threads);

	/* The floor: the zeroing the sized contract needs, nothing else. */
	ret = pn_bench_floor_objs(b, threads);
	if (!ret)
		ret = pn_bench_phase(run, b, PN_B_FLOOR, 1, &f1, &f1s);
	if (!ret)
		ret = pn_bench_phase(run, b, PN_B_FLOOR, threads, &fn, &fns);
	if (ret)
		goto out;
	pn_printf(run,
		  "# floor: zeroing %zu bytes on each of %u possible CPUs per op; ratio = allocator / floor (1.00: only the zeroing)\n",
		  b->size, num_possible_cpus());
	pn_bench_row(run, "pn_alloc_percpu 1 thread", o1s, &o1st,
		     "zeroing floor 1 thread", f1, &f1s);
	pn_bench_row(run, "__alloc_percpu 1 thread", k1, &k1s,
		     "zeroing floor 1 thread", f1, &f1s);
	snprintf(name, sizeof(name), "pn_alloc_percpu %u threads", threads);
	pn_bench_row(run, name, on, &ont, "zeroing floor same threads", fn, &fns);
	snprintf(name, sizeof(name), "__alloc_percpu %u threads", threads);
	pn_bench_row(run, name, kn, &kns, "zeroing floor same threads", fn, &fns);

	ret = pn_bench_phase(run, b, PN_B_CACHE, 1, &o1, &o1t);
	if (ret)
		goto out;
	pn_bench_row(run, "ctor cache 1 thread", o1, &o1t,
		     "__alloc_percpu 1 thread", k1, &k1s);
	ret = pn_bench_phase(run, b, PN_B_CACHE, threads, &on, &ont);
	if (ret)
		goto out;
	snprintf(name, sizeof(name), "ctor cache %u threads", threads);
	pn_bench_row(run, name, on, &ont, "__alloc_percpu same threads", kn, &kns);
	pn_bench_scaling(run, "ctor cache", o1, o1t.ns, on, ont.ns, threads);

	pn_bench_memory(run, b->size, run->p.objects ? : 1000);
out:
	if (b->cache)
		pn_cache_destroy(b->cache);
	pn_bench_floor_free(b, threads);
	for (i = 0; b->objs && i < threads; i++)
		kvfree(b->objs[i]);
	kfree(b->objs);
	kfree(b->ops);
	kfree(b);
	return ret;
}

const struct pn_test pn_alloc_test = {
	.name = "alloc",
	.desc = "pcpu_alloc: random sizes stamped on every CPU, cross-CPU frees; "
		"bench vs __alloc_percpu",
	.def_duration_ms = 1000,
	.stress = pn_alloc_stress,
	.bench = pn_alloc_bench,
	.faults = true,
};
