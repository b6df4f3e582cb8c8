// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite pcpu_next_mmcid: mm_cid-indexed per-mm storage.
 *
 * Where the mm comes from: a KUnit case runs in a kernel thread without
 * an mm.  In 6.12 kunit_attach_mm() is static; kunit_vm_mmap() attaches a
 * fresh mm to the test thread only as a side effect and keeps it until the
 * thread exits, so a case could never watch that mm being torn down.  We
 * therefore create the mm ourselves with mm_alloc() (exported for KUnit
 * builds, the same call kunit_attach_mm() makes) and drop it with
 * mmput(), which runs exit_mmap() and so the storage's mmu_notifier
 * ->release exactly as a process exit does.  kthread_use_mm() attaches it
 * to the test thread where a case needs current->mm to match.
 *
 * A kernel thread never owns an mm_cid, even with an mm attached, so the
 * real cid source is exercised by the selftest from user threads; here
 * the cid paths are driven with explicit cids (MMCID_SRC_FIXED, through
 * the module-internal __mmcid_pcpu_get() and __mmcid_counter_add() of
 * internal/mmcid_pcpu.h), which go through the same block, first-use and
 * publication code.
 *
 * The suite needs the library only, not the harness (it runs in the
 * kunit.py lane, where the module is built without it); the parser of
 * the harness's debugfs file is tested by the harness's suite
 * (kunit/control_kunit.c).  No case reads a fast-path
 * statistic (mmcid_pcpu keeps none), so CONFIG_PCPU_NEXT_STATS changes
 * nothing here.
 *
 * Several cases are about the context the code runs in rather than about
 * results: on the PREEMPT_RT kernel and on the lockdep kernels
 * (PROVE_RAW_LOCK_NESTING, DEBUG_ATOMIC_SLEEP) an allocation or a
 * spinlock_t taken where it must not be is a splat in the console log,
 * which fails the lane even when every expectation holds.  Fault
 * injection uses current->fail_nth (CONFIG_FAILSLAB; the case is skipped
 * without it): our block allocations never reclaim directly with
 * GFP_NOWAIT, so failslab's ignore-gfp-wait does not matter, and they
 * carry __GFP_NOWARN, so no stack is dumped.
 */
#include <kunit/test.h>
#include <asm/local64.h>
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>

#include <pcpu_next/compat.h>
#include <pcpu_next/mmcid_pcpu.h>
#include "internal/core.h"
#include "internal/mmcid_pcpu.h"

PN_IMPORT_NS_KUNIT();	/* mm_alloc() */

#define MAGIC	0x6d6d636964ULL

struct kt_slot {
	u64 magic;
	u64 val;
};

static void kt_init(void *slot, void *arg)
{
	struct kt_slot *s = slot;

	atomic_inc(arg);
	s->magic = MAGIC;
	s->val = 0;
}

static const struct mmcid_pcpu_ops kt_ops = { .init = kt_init };

static struct mm_struct *kt_mm(struct kunit *test)
{
	struct mm_struct *mm = mm_alloc();

	KUNIT_ASSERT_NOT_NULL(test, mm);
	return mm;
}

static struct kt_slot *kt_get(struct mmcid_pcpu *s, struct mmcid_pcpu_ref *ref,
			      int cid)
{
	return __mmcid_pcpu_get(s, ref, GFP_KERNEL, MMCID_SRC_FIXED, cid);
}

/* Each slot's init runs once, on first use, and data persists after. */
static void mmcid_init_once(struct kunit *test)
{
	struct mm_struct *mm = kt_mm(test);
	struct mmcid_pcpu_ref ref;
	atomic_t calls = ATOMIC_INIT(0);
	struct mmcid_pcpu *s;
	struct kt_slot *slot;
	int i;

	s = mmcid_pcpu_create(mm, sizeof(struct kt_slot), &kt_ops, &calls);
	KUNIT_ASSERT_FALSE(test, IS_ERR(s));
	KUNIT_EXPECT_EQ(test, atomic_read(&calls), 1);	/* the remote slot */

	for (i = 0; i < 3; i++) {
		slot = kt_get(s, &ref, 0);
		KUNIT_EXPECT_EQ(test, ref.cid, 0);
		KUNIT_EXPECT_EQ(test, slot->magic, MAGIC);
		KUNIT_EXPECT_EQ(test, slot->val, (u64)i);
		slot->val++;
		mmcid_pcpu_put(s, &ref);
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&calls), 2);

	if (nr_cpu_ids > 1) {
		slot = kt_get(s, &ref, 1);
		KUNIT_EXPECT_EQ(test, slot->val, 0ULL);
		mmcid_pcpu_put(s, &ref);
		slot = kt_get(s, &ref, 1);
		mmcid_pcpu_put(s, &ref);
		KUNIT_EXPECT_EQ(test, atomic_read(&calls), 3);
	}
	mmcid_pcpu_destroy(s);
	mmput(mm);
}

/* Without an init callback a slot is zeroed on first use, not before. */
static void mmcid_zero_on_first_use(struct kunit *test)
{
	struct mm_struct *mm = kt_mm(test);
	struct mmcid_pcpu_ref ref;
	struct mmcid_pcpu *s;
	u64 *slot;

	s = mmcid_pcpu_create(mm, 3 * sizeof(u64), NULL, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(s));
	slot = __mmcid_pcpu_get(s, &ref, GFP_KERNEL, MMCID_SRC_FIXED, 0);
	KUNIT_EXPECT_EQ(test, slot[0] | slot[1] | slot[2], 0ULL);
	slot[1] = 7;
	mmcid_pcpu_put(s, &ref);
	slot = __mmcid_pcpu_get(s, &ref, GFP_KERNEL, MMCID_SRC_FIXED, 0);
	KUNIT_EXPECT_EQ(test, slot[1], 7ULL);
	mmcid_pcpu_put(s, &ref);
	mmcid_pcpu_destroy(s);
	mmput(mm);
}

/* Memory follows the highest cid used, in doubling blocks. */
static void mmcid_growth(struct kunit *test)
{
	unsigned int b0 = min(MMCID_B0, nr_cpu_ids);
	struct mm_struct *mm = kt_mm(test);
	struct mmcid_pcpu_ref ref;
	struct mmcid_pcpu *s;
	size_t mem0, mem1;
	int top;

	s = mmcid_pcpu_create(mm, sizeof(u64), NULL, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(s));
	mem0 = mmcid_pcpu_memory(s);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(s), 0U);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_max_cid(s), -1);

	kt_get(s, &ref, 0);
	mmcid_pcpu_put(s, &ref);
	mem1 = mmcid_pcpu_memory(s);
	KUNIT_EXPECT_GT(test, mem1, mem0);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(s), b0);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_max_cid(s), 0);

	/* Same block: no new memory. */
	top = b0 - 1;
	kt_get(s, &ref, top);
	mmcid_pcpu_put(s, &ref);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_memory(s), mem1);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_max_cid(s), top);

	/* A cid beyond nr_cpu_ids cannot exist: remote slot, no growth. */
	kt_get(s, &ref, nr_cpu_ids);
	KUNIT_EXPECT_EQ(test, ref.cid, MMCID_PCPU_REMOTE);
	mmcid_pcpu_put(s, &ref);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_memory(s), mem1);

	if (nr_cpu_ids > b0) {
		/* The next block doubles capacity, no more. */
		kt_get(s, &ref, b0);
		mmcid_pcpu_put(s, &ref);
		KUNIT_EXPECT_GT(test, mmcid_pcpu_memory(s), mem1);
		KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(s), min(2 * b0, nr_cpu_ids));
		KUNIT_EXPECT_EQ(test, mmcid_pcpu_max_cid(s), (int)b0);
	}
	/* Largest possible cid: capacity stays within twice the cids used. */
	top = nr_cpu_ids - 1;
	kt_get(s, &ref, top);
	mmcid_pcpu_put(s, &ref);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_max_cid(s), top);
	KUNIT_EXPECT_LE(test, mmcid_pcpu_slots(s), max(b0, 2U * (top + 1)));
	KUNIT_EXPECT_GE(test, mmcid_pcpu_slots(s), (unsigned int)top + 1);

	mmcid_pcpu_destroy(s);
	mmput(mm);
}

/* Kernel threads, with or without the mm attached, use the remote slot. */
static void mmcid_remote_kthread(struct kunit *test)
{
	struct mm_struct *mm = kt_mm(test);
	struct mmcid_counter *c;
	int cid;

	c = mmcid_counter_create(mm);
	KUNIT_ASSERT_FALSE(test, IS_ERR(c));
	KUNIT_EXPECT_NULL(test, current->mm);
	cid = mmcid_counter_add(c, 5, GFP_KERNEL, NULL);
	KUNIT_EXPECT_EQ(test, cid, MMCID_PCPU_REMOTE);

	kthread_use_mm(mm);
	KUNIT_EXPECT_PTR_EQ(test, current->mm, mm);
	cid = mmcid_counter_add(c, 7, GFP_KERNEL, NULL);
	kthread_unuse_mm(mm);
	KUNIT_EXPECT_EQ(test, cid, MMCID_PCPU_REMOTE);

	/* Atomic callers too; and the remote slot allocates no blocks. */
	preempt_disable();
	cid = mmcid_counter_add(c, -2, GFP_ATOMIC, NULL);
	preempt_enable();
	KUNIT_EXPECT_EQ(test, cid, MMCID_PCPU_REMOTE);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(mmcid_counter_storage(c)), 0U);

	/* A cid slot and the remote slot both count in the sum. */
	cid = __mmcid_counter_add(c, 100, GFP_KERNEL, MMCID_SRC_FIXED, 0, NULL);
	KUNIT_EXPECT_EQ(test, cid, 0);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum(c), 110LL);
	mmcid_counter_destroy(c);
	mmput(mm);
}

struct kt_seen {
	int cids[8];
	int n;
};

static void kt_visit(const void *slot, int cid, void *data)
{
	struct kt_seen *seen = data;

	if (seen->n < ARRAY_SIZE(seen->cids))
		seen->cids[seen->n] = cid;
	seen->n++;
}

/* for_each visits the initialised slots and then the remote slot. */
static void mmcid_for_each(struct kunit *test)
{
	struct mm_struct *mm = kt_mm(test);
	struct kt_seen seen = {};
	struct mmcid_pcpu_ref ref;
	struct mmcid_pcpu *s;
	int last = min(2U, nr_cpu_ids - 1);

	s = mmcid_pcpu_create(mm, sizeof(u64), NULL, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(s));
	kt_get(s, &ref, last);
	mmcid_pcpu_put(s, &ref);
	if (last) {
		kt_get(s, &ref, 0);
		mmcid_pcpu_put(s, &ref);
	}
	mmcid_pcpu_for_each(s, kt_visit, &seen);
	KUNIT_ASSERT_EQ(test, seen.n, last ? 3 : 2);
	KUNIT_EXPECT_EQ(test, seen.cids[0], 0);
	if (last)
		KUNIT_EXPECT_EQ(test, seen.cids[1], last);
	KUNIT_EXPECT_EQ(test, seen.cids[seen.n - 1], MMCID_PCPU_REMOTE);
	mmcid_pcpu_destroy(s);
	mmput(mm);
}

/*
 * mm teardown: the counter's cid slots are folded into the remote slot
 * and freed, the sum survives, later adds go remote; objects destroyed
 * before the teardown are simply gone (kmemleak checks the rest).
 */
static void mmcid_teardown(struct kunit *test)
{
	/* the last one above block 0 where nr_cpu_ids allows */
	static const unsigned int cids[] = { 0, 3, MMCID_B0 + 2 };
	struct mm_struct *mm = kt_mm(test);
	struct mmcid_counter *c, *early;
	unsigned int tries, first, len0;
	unsigned long retry;
	struct mmcid_pcpu *raw;
	size_t fresh;
	int cid, i;
	s64 sum;

	c = mmcid_counter_create(mm);
	early = mmcid_counter_create(mm);
	raw = mmcid_pcpu_create(mm, 16, NULL, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(c) || IS_ERR(early) || IS_ERR(raw));
	fresh = mmcid_pcpu_memory(mmcid_counter_storage(c));

	for (i = 0; i < ARRAY_SIZE(cids); i++) {
		cid = min(cids[i], nr_cpu_ids - 1);
		__mmcid_counter_add(c, 10 + i, GFP_KERNEL, MMCID_SRC_FIXED,
				    cid, NULL);
		__mmcid_counter_add(early, 1, GFP_KERNEL, MMCID_SRC_FIXED, cid,
				    NULL);
	}
	mmcid_counter_add(c, 1000, GFP_KERNEL, NULL);
	sum = mmcid_counter_sum(c);
	KUNIT_EXPECT_EQ(test, sum, 1033LL);
	mmcid_counter_destroy(early);

	KUNIT_EXPECT_FALSE(test, mmcid_pcpu_mm_gone(mmcid_counter_storage(c)));
	mmput(mm);	/* last user: exit_mmap() -> ->release */

	KUNIT_EXPECT_TRUE(test, mmcid_pcpu_mm_gone(mmcid_counter_storage(c)));
	KUNIT_EXPECT_TRUE(test, mmcid_pcpu_mm_gone(raw));
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum(c), sum);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(mmcid_counter_storage(c)), 0U);
	/* the header, and its ready words if a cid above block 0 was used */
	mmcid_pcpu_geo_block(SMP_CACHE_BYTES, nr_cpu_ids, 0, &first, &len0);
	if (min(cids[2], nr_cpu_ids - 1) >= len0)
		fresh += kmalloc_size_roundup(mmcid_pcpu_geo_blk(SMP_CACHE_BYTES,
								 nr_cpu_ids - 1) *
					      sizeof(long));
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_memory(mmcid_counter_storage(c)), fresh);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_max_cid(mmcid_counter_storage(c)), -1);

	/* A dead object allocates nothing, however often it is asked. */
	tries = mmcid_pcpu_grow_attempts(mmcid_counter_storage(c), &retry);
	for (i = 0; i < 8; i++) {
		cid = __mmcid_counter_add(c, 1, i & 1 ? GFP_KERNEL : GFP_NOWAIT,
					  MMCID_SRC_FIXED, 0, NULL);
		KUNIT_EXPECT_EQ(test, cid, MMCID_PCPU_REMOTE);
	}
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_grow_attempts(mmcid_counter_storage(c),
						       &retry), tries);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum(c), sum + 8);
	mmcid_counter_destroy(c);
	mmcid_pcpu_destroy(raw);
}

/*
 * The inline add's view of an object (struct mmcid_pcpu_fast, its first
 * line): the mm, block 0's size, and for every cid of block 0 the slot
 * that get hands out is fast.slot0 + cid * fast.stride with the cid's
 * ready bit set, for two objects sharing the unit set (their slot0s a
 * few bytes apart in the same unit); a kernel thread's inline add goes
 * to the remote slot even with the mm attached and every slot of block 0
 * ready (its mm_cid reads negative, -1 on 6.12 and INT_MIN on 7.x:
 * kthread_use_mm() gives it none); the
 * mm's teardown clears the ready word, so no inline add can reach the
 * folded slots any more.
 */
static void mmcid_fast_block0(struct kunit *test)
{
	struct mm_struct *mm = kt_mm(test);
	const struct mmcid_pcpu_fast *f, *g;
	struct mmcid_counter *c, *d;
	struct mmcid_pcpu_ref ref;
	unsigned int cid;
	void *slot;

	c = mmcid_counter_create(mm);
	d = mmcid_counter_create(mm);
	KUNIT_ASSERT_FALSE(test, IS_ERR(c) || IS_ERR(d));
	f = (const void *)mmcid_counter_storage(c);
	g = (const void *)mmcid_counter_storage(d);
	KUNIT_EXPECT_PTR_EQ(test, f->mm, mm);
	KUNIT_EXPECT_EQ(test, f->nr0, min(MMCID_B0, nr_cpu_ids));
	KUNIT_EXPECT_EQ(test, f->stride, (u32)SMP_CACHE_BYTES);
	KUNIT_EXPECT_EQ(test, f->ready0, 0UL);

	for (cid = 0; cid < f->nr0; cid++) {
		slot = __mmcid_pcpu_get(mmcid_counter_storage(c), &ref,
					GFP_KERNEL, MMCID_SRC_FIXED, cid);
		mmcid_pcpu_put(mmcid_counter_storage(c), &ref);
		KUNIT_EXPECT_EQ(test, ref.cid, (int)cid);
		KUNIT_EXPECT_PTR_EQ(test, slot, f->slot0 + cid * f->stride);
		KUNIT_EXPECT_TRUE(test, f->ready0 & BIT(cid));
		__mmcid_counter_add(d, 1, GFP_KERNEL, MMCID_SRC_FIXED, cid, NULL);
		KUNIT_EXPECT_TRUE(test, g->ready0 & BIT(cid));
	}
	/* one unit set: d's slots sit next to c's in every unit */
	KUNIT_EXPECT_PTR_NE(test, f->slot0, g->slot0);
	KUNIT_EXPECT_LT(test, (unsigned long)abs(g->slot0 - f->slot0),
			(unsigned long)f->stride);

	/* every slot of block 0 ready: only the cid keeps us out */
	kthread_use_mm(mm);
	if (IS_ENABLED(CONFIG_SCHED_MM_CID))
		KUNIT_EXPECT_LT(test, pn_task_mm_cid(current), 0);
	KUNIT_EXPECT_EQ(test, mmcid_counter_add(c, 5, GFP_KERNEL, NULL),
			MMCID_PCPU_REMOTE);
	kthread_unuse_mm(mm);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum(c), 5LL);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum(d), (s64)f->nr0);

	mmput(mm);	/* last user: exit_mmap() -> ->release */
	KUNIT_EXPECT_EQ(test, f->ready0, 0UL);
	KUNIT_EXPECT_EQ(test, g->ready0, 0UL);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum(d), (s64)f->nr0);
	mmcid_counter_destroy(c);
	mmcid_counter_destroy(d);
}

/*
 * No cid, on either allocator.  A kernel thread reads a negative cid,
 * with the mm attached or not: -1 on 6.12, MM_CID_UNSET (INT_MIN) on
 * 7.x.  As unsigned, which the inline add compares, it is beyond block 0.
 * An index of such a value, or of a cid with a 7.x flag bit still set,
 * gets the remote slot: nothing grows, and the sum stays exact.  An
 * index that passed for a cid would grow a block, or write out of bounds.
 */
static void mmcid_no_cid(struct kunit *test)
{
	static const int cids[] = { -1, INT_MIN, INT_MIN | 1, (int)BIT(30),
				    (int)BIT(29), (int)(BIT(30) | BIT(29) | 1) };
	struct mm_struct *mm = kt_mm(test);
	struct mmcid_pcpu_ref ref;
	struct mmcid_counter *c;
	struct mmcid_pcpu *s;
	unsigned long retry;
	unsigned int i;
	s64 want = 0;
	int cid;

	if (IS_ENABLED(CONFIG_SCHED_MM_CID)) {
		cid = pn_task_mm_cid(current);
		KUNIT_EXPECT_LT(test, cid, 0);
		KUNIT_EXPECT_GE(test, (unsigned int)cid, nr_cpu_ids);
		kthread_use_mm(mm);
		cid = pn_task_mm_cid(current);
		kthread_unuse_mm(mm);
		KUNIT_EXPECT_LT(test, cid, 0);
	}

	c = mmcid_counter_create(mm);
	KUNIT_ASSERT_FALSE(test, IS_ERR(c));
	s = mmcid_counter_storage(c);
	for (i = 0; i < ARRAY_SIZE(cids); i++) {
		cid = __mmcid_counter_add(c, i + 1, GFP_KERNEL, MMCID_SRC_FIXED,
					  cids[i], NULL);
		KUNIT_EXPECT_EQ_MSG(test, cid, MMCID_PCPU_REMOTE, "cid %#x",
				    cids[i]);
		want += i + 1;
		__mmcid_pcpu_get(s, &ref, GFP_KERNEL, MMCID_SRC_FIXED, cids[i]);
		mmcid_pcpu_put(s, &ref);
		KUNIT_EXPECT_EQ_MSG(test, ref.cid, MMCID_PCPU_REMOTE, "cid %#x",
				    cids[i]);
	}
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(s), 0U);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_grow_attempts(s, &retry), 0U);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_max_cid(s), -1);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum(c), want);
	mmcid_counter_destroy(c);
	mmput(mm);
}

/*
 * A caller that may not block but runs preemptible (GFP_NOWAIT or
 * GFP_ATOMIC from process context) still gets its cid slot: the block is
 * allocated after get left its preempt-disabled section.  Allocating, or
 * taking a spinlock_t, inside that section instead is "BUG: sleeping
 * function called from invalid context" on PREEMPT_RT.
 */
static void mmcid_nonblocking_grow(struct kunit *test)
{
	static const gfp_t gfps[] = { GFP_NOWAIT, GFP_ATOMIC };
	int cids[] = { 0, nr_cpu_ids - 1 };
	struct mm_struct *mm = kt_mm(test);
	unsigned int i, j, used, skipped = 0;
	unsigned long retry, cretry;
	struct mmcid_pcpu_ref ref;

	for (i = 0; i < ARRAY_SIZE(gfps); i++) {
		atomic_t calls = ATOMIC_INIT(0);
		int got_get[2], got_add[2];
		struct mmcid_counter *c;
		struct mmcid_pcpu *s;
		struct kt_slot *slot;
		u64 magic[2];

		s = mmcid_pcpu_create(mm, sizeof(struct kt_slot), &kt_ops, &calls);
		c = mmcid_counter_create(mm);
		KUNIT_ASSERT_FALSE(test, IS_ERR(s) || IS_ERR(c));
		used = cids[1] ? 2 : 1;
		for (j = 0; j < used; j++) {
			slot = __mmcid_pcpu_get(s, &ref, gfps[i], MMCID_SRC_FIXED,
						cids[j]);
			got_get[j] = ref.cid;
			magic[j] = slot->magic;
			mmcid_pcpu_put(s, &ref);
			got_add[j] = __mmcid_counter_add(c, 1, gfps[i],
							 MMCID_SRC_FIXED, cids[j],
							 NULL);
		}
		/* Every add counts, whichever slot it went to. */
		KUNIT_EXPECT_EQ(test, mmcid_counter_sum(c), (s64)used);
		mmcid_pcpu_grow_attempts(s, &retry);
		mmcid_pcpu_grow_attempts(mmcid_counter_storage(c), &cretry);
		if (retry || cretry) {
			/* A GFP_NOWAIT/GFP_ATOMIC failure is allowed. */
			kunit_info(test, "gfp %u: a block allocation failed (backoff), iteration skipped\n",
				   i);
			skipped++;
			mmcid_counter_destroy(c);
			mmcid_pcpu_destroy(s);
			continue;
		}
		for (j = 0; j < used; j++) {
			KUNIT_EXPECT_EQ_MSG(test, got_get[j], cids[j], "gfp %u", i);
			KUNIT_EXPECT_EQ(test, magic[j], MAGIC);
			KUNIT_EXPECT_EQ_MSG(test, got_add[j], cids[j], "gfp %u", i);
		}
		KUNIT_EXPECT_EQ(test, atomic_read(&calls), 1 + (int)used);
		KUNIT_EXPECT_GE(test, mmcid_pcpu_grow_attempts(s, &retry), 1U);
		KUNIT_EXPECT_LE(test, mmcid_pcpu_grow_attempts(s, &retry), used);
		mmcid_counter_destroy(c);
		mmcid_pcpu_destroy(s);
	}
	mmput(mm);
	if (skipped == ARRAY_SIZE(gfps))
		kunit_mark_skipped(test, "every non-blocking block allocation failed");
}

enum kt_atomic { KT_RAW_LOCK, KT_IRQS_OFF, KT_PREEMPT_OFF, KT_NR_ATOMIC };

static const char *const kt_atomic_name[] = { "raw spinlock", "irqs off",
					      "preempt off" };

static DEFINE_RAW_SPINLOCK(kt_raw_lock);

struct kt_atomic_res {
	int cid_add;		/* __mmcid_counter_add() with a fixed cid */
	int cid_remote;		/* mmcid_counter_add() from this kthread */
	int cid_get;		/* __mmcid_pcpu_get() with a fixed cid */
	s64 sum;
};

/* Use both objects with non-blocking masks; the caller is atomic. */
static void kt_atomic_body(struct mmcid_counter *c, struct mmcid_pcpu *raw,
			   struct kt_atomic_res *r)
{
	struct mmcid_pcpu_ref ref;

	r->cid_add = __mmcid_counter_add(c, 3, GFP_ATOMIC, MMCID_SRC_FIXED, 0,
					 NULL);
	r->cid_remote = mmcid_counter_add(c, 4, GFP_NOWAIT, NULL);
	__mmcid_pcpu_get(raw, &ref, GFP_ATOMIC, MMCID_SRC_FIXED, 0);
	r->cid_get = ref.cid;
	mmcid_pcpu_put(raw, &ref);
	r->sum = mmcid_counter_sum(c);
}

static void kt_atomic_use(enum kt_atomic how, struct mmcid_counter *c,
			  struct mmcid_pcpu *raw, struct kt_atomic_res *r)
{
	unsigned long flags;

	switch (how) {
	case KT_RAW_LOCK:
		raw_spin_lock_irqsave(&kt_raw_lock, flags);
		kt_atomic_body(c, raw, r);
		raw_spin_unlock_irqrestore(&kt_raw_lock, flags);
		break;
	case KT_IRQS_OFF:
		local_irq_save(flags);
		kt_atomic_body(c, raw, r);
		local_irq_restore(flags);
		break;
	default:
		preempt_disable();
		kt_atomic_body(c, raw, r);
		preempt_enable();
		break;
	}
}

/*
 * From a section that is atomic on every kernel (under a raw spinlock,
 * with interrupts or preemption disabled) a missing block is not
 * allocated, not even with GFP_ATOMIC, and the remote slot's lock may be
 * taken: the caller gets the remote slot.  The old code allocated and
 * took a spinlock_t there: "Invalid wait context" under the raw lock with
 * PROVE_RAW_LOCK_NESTING, "sleeping function called from invalid context"
 * on PREEMPT_RT.  The refusal must not start a backoff: the next
 * preemptible caller grows the block.  Without CONFIG_PREEMPT_COUNT the
 * context cannot be told and GFP_ATOMIC allocates as it always did.
 */
static void mmcid_atomic_caller(struct kunit *test)
{
	int want = IS_ENABLED(CONFIG_PREEMPT_COUNT) ? MMCID_PCPU_REMOTE : 0;
	struct mm_struct *mm = kt_mm(test);
	struct kt_atomic_res r;
	unsigned long retry;
	enum kt_atomic how;

	for (how = 0; how < KT_NR_ATOMIC; how++) {
		const char *name = kt_atomic_name[how];
		struct mmcid_counter *c;
		struct mmcid_pcpu *raw, *cs;

		c = mmcid_counter_create(mm);
		raw = mmcid_pcpu_create(mm, 32, NULL, NULL);
		KUNIT_ASSERT_FALSE(test, IS_ERR(c) || IS_ERR(raw));
		cs = mmcid_counter_storage(c);

		kt_atomic_use(how, c, raw, &r);
		KUNIT_EXPECT_EQ_MSG(test, r.cid_add, want, "%s", name);
		KUNIT_EXPECT_EQ_MSG(test, r.cid_get, want, "%s", name);
		KUNIT_EXPECT_EQ_MSG(test, r.cid_remote, MMCID_PCPU_REMOTE, "%s", name);
		KUNIT_EXPECT_EQ_MSG(test, r.sum, 7LL, "%s", name);
		if (IS_ENABLED(CONFIG_PREEMPT_COUNT)) {
			KUNIT_EXPECT_EQ_MSG(test, mmcid_pcpu_grow_attempts(cs, &retry),
					    0U, "%s", name);
			KUNIT_EXPECT_EQ_MSG(test, mmcid_pcpu_grow_attempts(raw, &retry),
					    0U, "%s", name);
			KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(cs), 0U);
			KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(raw), 0U);
		}

		KUNIT_EXPECT_EQ_MSG(test, __mmcid_counter_add(c, 1, GFP_NOWAIT,
							      MMCID_SRC_FIXED, 0,
							      NULL),
				    0, "%s", name);
		KUNIT_EXPECT_EQ(test, mmcid_counter_sum(c), 8LL);
		KUNIT_EXPECT_GT(test, mmcid_pcpu_slots(cs), 0U);
		mmcid_pcpu_destroy(raw);
		mmcid_counter_destroy(c);
	}
	mmput(mm);
}

static u8 kt_pattern(int cid)
{
	return 0x5a ^ (u8)(cid * 37);
}

/*
 * Every block is one allocation of at most a page, whatever the slot
 * size, and every cid up to the largest works: the slot is fully usable
 * (KASAN checks the bytes) and keeps its data.  The old blocks doubled
 * without bound: four page-sized slots in block 0 already.
 */
static void mmcid_block_bound(struct kunit *test)
{
	static const size_t sizes[] = { 1, sizeof(u64), SMP_CACHE_BYTES + 1,
					1000, PAGE_SIZE / 4 + 1, PAGE_SIZE / 2,
					PAGE_SIZE / 2 + 1, PAGE_SIZE };
	struct mm_struct *mm = kt_mm(test);
	unsigned int i, n, now, first, len0;
	size_t mem, m, stride, words;
	struct mmcid_pcpu_ref ref;
	struct mmcid_pcpu *s;
	void *p;
	int cid;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t size = sizes[i];

		s = mmcid_pcpu_create(mm, size, NULL, NULL);
		KUNIT_ASSERT_FALSE(test, IS_ERR(s));
		stride = ALIGN(size, SMP_CACHE_BYTES);
		mmcid_pcpu_geo_block(stride, nr_cpu_ids, 0, &first, &len0);
		/* the words of blocks 1 .. nblk - 1 */
		words = kmalloc_size_roundup(mmcid_pcpu_geo_blk(stride,
								nr_cpu_ids - 1) *
					     sizeof(long));
		mem = mmcid_pcpu_memory(s);
		n = 0;
		for (cid = 0; cid < nr_cpu_ids; cid++) {
			p = __mmcid_pcpu_get(s, &ref, GFP_KERNEL, MMCID_SRC_FIXED,
					     cid);
			if (ref.cid == cid)
				memset(p, kt_pattern(cid), size);
			mmcid_pcpu_put(s, &ref);
			KUNIT_EXPECT_EQ_MSG(test, ref.cid, cid, "size %zu", size);

			/* At most one new block, of at most a page. */
			now = mmcid_pcpu_slots(s);
			KUNIT_EXPECT_LE_MSG(test, (now - n) * stride, PAGE_SIZE,
					    "size %zu cid %d", size, cid);
			/* and the ready words, with the first above block 0 */
			m = mmcid_pcpu_memory(s);
			KUNIT_EXPECT_LE_MSG(test, m - mem,
					    PAGE_SIZE + (cid == len0 ? words : 0),
					    "size %zu cid %d", size, cid);
			n = now;
			mem = m;
		}
		KUNIT_EXPECT_EQ(test, n, nr_cpu_ids);
		KUNIT_EXPECT_EQ(test, mmcid_pcpu_max_cid(s), (int)nr_cpu_ids - 1);
		for (cid = 0; cid < nr_cpu_ids; cid++) {
			p = __mmcid_pcpu_get(s, &ref, GFP_KERNEL, MMCID_SRC_FIXED,
					     cid);
			KUNIT_EXPECT_NULL_MSG(test, memchr_inv(p, kt_pattern(cid), size),
					      "size %zu cid %d", size, cid);
			mmcid_pcpu_put(s, &ref);
		}
		mmcid_pcpu_destroy(s);
	}
	mmput(mm);
}

#if IS_ENABLED(CONFIG_FAILSLAB)
/* The n-th fault-injectable allocation of this task fails (0: none). */
static void kt_fail_nth(unsigned int n)
{
	WRITE_ONCE(current->fail_nth, n);
}

static unsigned int kt_fail_left(void)
{
	return READ_ONCE(current->fail_nth);
}
#else
static void kt_fail_nth(unsigned int n)
{
}

static unsigned int kt_fail_left(void)
{
	return 0;
}
#endif

/*
 * After a failed block allocation the storage backs off: until the
 * deadline it hands out the remote slot without trying again, whether the
 * caller may block or not; after it, the next caller grows the block.
 * The old code retried on every call (the second call here got cid 0).
 */
static void mmcid_grow_backoff(struct kunit *test)
{
	unsigned long start, retry, now_retry;
	unsigned int i, in_window = 0;
	struct mmcid_counter *c;
	struct mm_struct *mm;
	struct mmcid_pcpu *s;
	s64 added = 0;
	int cid;

	if (!IS_ENABLED(CONFIG_FAILSLAB))
		kunit_skip(test, "needs CONFIG_FAILSLAB (current->fail_nth)");
	mm = kt_mm(test);
	c = mmcid_counter_create(mm);
	KUNIT_ASSERT_FALSE(test, IS_ERR(c));
	s = mmcid_counter_storage(c);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_grow_attempts(s, &retry), 0U);
	KUNIT_EXPECT_EQ(test, retry, 0UL);

	start = jiffies;
	kt_fail_nth(1);
	cid = __mmcid_counter_add(c, 1, GFP_NOWAIT, MMCID_SRC_FIXED, 0, NULL);
	added++;
	i = kt_fail_left();
	kt_fail_nth(0);
	KUNIT_ASSERT_EQ(test, mmcid_pcpu_grow_attempts(s, &retry), 1U);
	if (i) {
		mmcid_counter_destroy(c);
		mmput(mm);
		kunit_skip(test, "failslab did not fail the block allocation");
	}
	KUNIT_EXPECT_EQ(test, cid, MMCID_PCPU_REMOTE);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(s), 0U);
	KUNIT_ASSERT_NE(test, retry, 0UL);
	KUNIT_EXPECT_TRUE(test, time_after(retry, start));
	KUNIT_EXPECT_LE(test, retry - start, 2UL * HZ);	/* bounded */

	for (i = 0; i < 200; i++) {
		cid = __mmcid_counter_add(c, 1, i & 1 ? GFP_KERNEL : GFP_NOWAIT,
					  MMCID_SRC_FIXED, 0, NULL);
		added++;
		if (!time_before(jiffies, retry))
			break;	/* the window closed (a slow host): stop */
		in_window++;
		KUNIT_EXPECT_EQ(test, cid, MMCID_PCPU_REMOTE);
		KUNIT_EXPECT_EQ(test, mmcid_pcpu_grow_attempts(s, &now_retry), 1U);
		KUNIT_EXPECT_EQ(test, now_retry, retry);
	}
	/*
	 * in_window == 0 means the window (about a second) had closed
	 * already at the first check: the vCPU stalled that long.  Not a
	 * failure of the code; the rest of the case still holds.
	 */

	while (time_before(jiffies, retry))
		msleep(20);
	cid = __mmcid_counter_add(c, 1, GFP_KERNEL, MMCID_SRC_FIXED, 0, NULL);
	added++;
	KUNIT_EXPECT_EQ(test, cid, 0);
	KUNIT_EXPECT_GE(test, mmcid_pcpu_grow_attempts(s, &retry), 2U);
	KUNIT_EXPECT_EQ(test, retry, 0UL);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum(c), added);
	mmcid_counter_destroy(c);
	mmput(mm);
	if (!in_window)
		kunit_mark_skipped(test, "stalled past the backoff window before the first check");
}

/* One call site: every counter made here shares one lockdep class. */
static struct mmcid_counter *kt_counter_one_site(struct mm_struct *mm)
{
	return mmcid_counter_create(mm);
}

/*
 * Lockdep classes are per creation site, not per object: two counters of
 * one site share a key (a per-object key would differ, and cost a
 * synchronize_rcu() and one MAX_LOCKDEP_KEYS entry each), an object of
 * another site has its own (with lockdep; without it the empty keys may
 * share an address).  Nesting: objects of different sites nest directly;
 * two of the same class only through the _nested variant, whose
 * SINGLE_DEPTH_NESTING subclass keeps lockdep from reporting "possible
 * recursive locking" (a splat that fails the lockdep lanes if the
 * subclass is lost).
 */
static void mmcid_nested_objects(struct kunit *test)
{
	struct mm_struct *mm = kt_mm(test);
	struct mmcid_pcpu_ref ref, aref, bref;
	struct mmcid_counter *a, *b;
	struct mmcid_pcpu *raw;
	int ca, cb, craw, cra, crb;
	local64_t *v;
	s64 sa, sb;
	size_t mb;

	a = kt_counter_one_site(mm);
	b = kt_counter_one_site(mm);
	raw = mmcid_pcpu_create(mm, 16, NULL, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(a) || IS_ERR(b) || IS_ERR(raw));
	KUNIT_ASSERT_NULL(test, current->mm);	/* a kthread: remote slots */

	KUNIT_EXPECT_PTR_EQ(test, mmcid_pcpu_lock_key(mmcid_counter_storage(a)),
			    mmcid_pcpu_lock_key(mmcid_counter_storage(b)));
	if (IS_ENABLED(CONFIG_LOCKDEP))
		KUNIT_EXPECT_PTR_NE(test, mmcid_pcpu_lock_key(raw),
				    mmcid_pcpu_lock_key(mmcid_counter_storage(a)));

	mmcid_pcpu_get(raw, &ref, GFP_KERNEL);
	craw = ref.cid;
	/* Another class inside raw's access: plain calls. */
	ca = mmcid_counter_add(a, 2, GFP_ATOMIC, NULL);
	sa = mmcid_counter_sum(a);
	/*
	 * a's remote slot held, then b of the same class: _nested.  A
	 * counter's remote slot takes lockless atomic adds, so it is
	 * written atomically here too, and the nested add takes no lock:
	 * b's lock is taken nested through its storage.
	 */
	v = mmcid_pcpu_get(mmcid_counter_storage(a), &aref, GFP_ATOMIC);
	atomic64_add(5, (atomic64_t *)v);
	cra = aref.cid;
	cb = mmcid_counter_add_nested(b, 3, GFP_ATOMIC, NULL);
	mmcid_pcpu_get_nested(mmcid_counter_storage(b), &bref, GFP_ATOMIC);
	crb = bref.cid;
	mmcid_pcpu_put(mmcid_counter_storage(b), &bref);
	mb = mmcid_pcpu_memory(mmcid_counter_storage(b));	/* lockless */
	mmcid_pcpu_put(mmcid_counter_storage(a), &aref);
	sb = mmcid_counter_sum(b);
	mmcid_pcpu_put(raw, &ref);

	KUNIT_EXPECT_EQ(test, craw, MMCID_PCPU_REMOTE);
	KUNIT_EXPECT_EQ(test, ca, MMCID_PCPU_REMOTE);
	KUNIT_EXPECT_EQ(test, cra, MMCID_PCPU_REMOTE);
	KUNIT_EXPECT_EQ(test, cb, MMCID_PCPU_REMOTE);
	KUNIT_EXPECT_EQ(test, crb, MMCID_PCPU_REMOTE);
	KUNIT_EXPECT_EQ(test, sa, 2LL);
	KUNIT_EXPECT_EQ(test, sb, 3LL);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum(a), 7LL);
	KUNIT_EXPECT_GT(test, mb, (size_t)0);
	mmcid_pcpu_destroy(raw);
	mmcid_counter_destroy(b);
	mmcid_counter_destroy(a);
	mmput(mm);
}

/* Counts the callbacks; fini poisons, so fold or fini after it is seen. */
struct kt_life {
	atomic_t init;
	atomic_t fold;
	atomic_t fini;
	atomic_t bad;
};

static void kt_life_init(void *slot, void *arg)
{
	struct kt_life *l = arg;
	struct kt_slot *s = slot;

	s->magic = MAGIC;
	s->val = 0;
	atomic_inc(&l->init);
}

static void kt_life_fold(void *remote, const void *slot, void *arg)
{
	const struct kt_slot *s = slot;
	struct kt_slot *r = remote;
	struct kt_life *l = arg;

	if (s->magic != MAGIC || r->magic != MAGIC)
		atomic_inc(&l->bad);
	r->val += s->val;
	atomic_inc(&l->fold);
}

static void kt_life_fini(void *slot, void *arg)
{
	struct kt_life *l = arg;
	struct kt_slot *s = slot;

	if (s->magic != MAGIC)
		atomic_inc(&l->bad);
	s->magic = 0;
	atomic_inc(&l->fini);
}

static const struct mmcid_pcpu_ops kt_life_ops = {
	.init = kt_life_init,
	.fold = kt_life_fold,
	.fini = kt_life_fini,
};

/* Use cids 0..n-1 (cid i adds i + 1, cid 0 twice) and the remote slot. */
static u64 kt_life_use(struct mmcid_pcpu *s, int n)
{
	struct mmcid_pcpu_ref ref;
	struct kt_slot *slot;
	u64 sum = 0;
	int cid;

	for (cid = 0; cid < n; cid++) {
		slot = kt_get(s, &ref, cid);
		slot->val += cid + 1;
		sum += cid + 1;
		mmcid_pcpu_put(s, &ref);
	}
	slot = kt_get(s, &ref, 0);
	slot->val++;
	sum++;
	mmcid_pcpu_put(s, &ref);
	slot = mmcid_pcpu_get(s, &ref, GFP_KERNEL);	/* a kthread: remote */
	slot->val += 100;
	mmcid_pcpu_put(s, &ref);
	return sum;
}

/*
 * Every slot init set up is finalised exactly once: at destroy while the
 * mm lives (cid slots unfolded); at mm teardown for the cid slots, after
 * they were folded, and at destroy for the remote slot.
 */
static void mmcid_fini_balance(struct kunit *test)
{
	struct mm_struct *mm = kt_mm(test);
	int n = min_t(int, nr_cpu_ids, 2 * MMCID_B0);	/* past block 0 */
	struct kt_life life = {}, life2 = {};
	struct mmcid_pcpu_ref ref;
	struct mmcid_pcpu *s;
	struct kt_slot *slot;
	u64 sum;

	s = mmcid_pcpu_create(mm, sizeof(struct kt_slot), &kt_life_ops, &life);
	KUNIT_ASSERT_FALSE(test, IS_ERR(s));
	KUNIT_EXPECT_EQ(test, atomic_read(&life.init), 1);
	kt_life_use(s, n);
	KUNIT_EXPECT_EQ(test, atomic_read(&life.init), n + 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&life.fini), 0);
	mmcid_pcpu_destroy(s);
	KUNIT_EXPECT_EQ(test, atomic_read(&life.fini), n + 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&life.fold), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&life.bad), 0);

	s = mmcid_pcpu_create(mm, sizeof(struct kt_slot), &kt_life_ops, &life2);
	KUNIT_ASSERT_FALSE(test, IS_ERR(s));
	sum = kt_life_use(s, n);
	mmput(mm);	/* teardown: fold, then fini of the cid slots */
	KUNIT_EXPECT_TRUE(test, mmcid_pcpu_mm_gone(s));
	KUNIT_EXPECT_EQ(test, atomic_read(&life2.fold), n);
	KUNIT_EXPECT_EQ(test, atomic_read(&life2.fini), n);
	KUNIT_EXPECT_EQ(test, atomic_read(&life2.bad), 0);
	slot = mmcid_pcpu_get(s, &ref, GFP_KERNEL);
	KUNIT_EXPECT_EQ(test, slot->magic, MAGIC);	/* remote not finalised */
	KUNIT_EXPECT_EQ(test, slot->val, sum + 100);
	mmcid_pcpu_put(s, &ref);
	mmcid_pcpu_destroy(s);
	KUNIT_EXPECT_EQ(test, atomic_read(&life2.init), n + 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&life2.fini), n + 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&life2.bad), 0);
}

/*
 * mmu_notifier_get() fails with -EINTR when a signal is pending while it
 * takes all locks of an mm that has VMAs (mm_take_all_locks()).  create
 * passes -EINTR on and has set nothing up that would need a fini; the same
 * call succeeds once the signal is gone.  TIF_NOTIFY_SIGNAL stands in for
 * the signal: signal_pending() sees it, nothing is delivered.
 */
static void mmcid_create_eintr(struct kunit *test)
{
	struct kt_life life = {};
	struct mmcid_pcpu *s;
	unsigned long addr;

	addr = kunit_vm_mmap(test, NULL, 0, PAGE_SIZE, PROT_READ,
			     MAP_PRIVATE | MAP_ANONYMOUS, 0);
	KUNIT_ASSERT_TRUE_MSG(test, addr && !IS_ERR_VALUE(addr), "no VMA");
	KUNIT_ASSERT_NOT_NULL(test, current->mm);

	set_thread_flag(TIF_NOTIFY_SIGNAL);
	s = mmcid_pcpu_create(current->mm, sizeof(struct kt_slot),
			      &kt_life_ops, &life);
	clear_notify_signal();
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(s), -EINTR);
	if (!IS_ERR(s))
		mmcid_pcpu_destroy(s);
	KUNIT_EXPECT_EQ(test, atomic_read(&life.init), atomic_read(&life.fini));

	s = mmcid_pcpu_create(current->mm, sizeof(struct kt_slot),
			      &kt_life_ops, &life);
	KUNIT_ASSERT_FALSE(test, IS_ERR(s));
	mmcid_pcpu_destroy(s);
	KUNIT_EXPECT_GT(test, atomic_read(&life.init), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&life.init), atomic_read(&life.fini));
	KUNIT_EXPECT_EQ(test, atomic_read(&life.bad), 0);
}

struct kt_reader {
	struct mmcid_counter *c;
	struct mmcid_pcpu *raw;
	s64 want_c;
	u64 want_raw;
	unsigned int full;	/* cid slots of raw before the teardown */
	atomic_t reads;
	atomic_t bad;
	atomic_t partial;	/* reads within the teardown (dead, blocks left) */
};

static void kt_val_add(const void *slot, int cid, void *data)
{
	*(u64 *)data += ((const struct kt_slot *)slot)->val;
}

static u64 kt_raw_total(struct mmcid_pcpu *raw)
{
	u64 t = 0;

	mmcid_pcpu_for_each(raw, kt_val_add, &t);
	return t;
}

static int kt_reader_fn(void *data)
{
	struct kt_reader *r = data;

	while (!kthread_should_stop()) {
		bool dead = mmcid_pcpu_mm_gone(r->raw);
		s64 v = mmcid_counter_sum(r->c);
		u64 t = kt_raw_total(r->raw);

		if (v != r->want_c || t != r->want_raw)
			atomic_inc(&r->bad);
		if (dead && mmcid_pcpu_slots(r->raw))
			atomic_inc(&r->partial);
		atomic_inc(&r->reads);
		cond_resched();
	}
	return 0;
}

/* Wait up to about a second for the reader to pass @n reads. */
/* Wait until the reader did more than @n reads, 10 s at most (TCG). */
static void kt_reader_wait(struct kt_reader *r, int n)
{
	unsigned long end = jiffies + 10 * HZ;

	while (atomic_read(&r->reads) <= n && time_before(jiffies, end))
		usleep_range(500, 1000);
}

/*
 * mm teardown folds and finalises block by block, dropping the lock
 * between blocks, and frees the unit blocks once every member of the
 * unit set is folded, while a reader sums concurrently: every sum,
 * before, during and after the teardown, is exact (each block's fold and
 * ready-word clear are one lock hold, and a walk is one lock hold).  Page-sized slots make one
 * block per cid, so there are nr_cpu_ids lock holds to interleave with; a
 * walk that stopped at s->dead, or a fold split from its unpublication,
 * would lose or double-count slots here.
 */
static void mmcid_teardown_reader(struct kunit *test)
{
	struct mm_struct *mm = kt_mm(test);
	struct kt_reader r = {};
	struct task_struct *task;
	struct kt_life life = {};
	int n = nr_cpu_ids, cid, seen;

	r.c = mmcid_counter_create(mm);
	r.raw = mmcid_pcpu_create(mm, PAGE_SIZE, &kt_life_ops, &life);
	KUNIT_ASSERT_FALSE(test, IS_ERR(r.c) || IS_ERR(r.raw));
	for (cid = 0; cid < n; cid++)
		KUNIT_EXPECT_EQ(test, __mmcid_counter_add(r.c, cid + 1, GFP_KERNEL,
							  MMCID_SRC_FIXED, cid,
							  NULL), cid);
	mmcid_counter_add(r.c, 1000, GFP_KERNEL, NULL);	/* remote */
	r.want_c = 1000 + (s64)n * (n + 1) / 2;
	r.want_raw = kt_life_use(r.raw, n) + 100;
	r.full = mmcid_pcpu_slots(r.raw);
	KUNIT_EXPECT_EQ(test, r.full, (unsigned int)n);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum(r.c), r.want_c);
	KUNIT_EXPECT_EQ(test, kt_raw_total(r.raw), r.want_raw);

	task = kthread_run(kt_reader_fn, &r, "mmcid_reader");
	KUNIT_ASSERT_FALSE(test, IS_ERR(task));
	kt_reader_wait(&r, 0);
	/* the reader runs before the teardown starts, whatever the scheduler */
	KUNIT_EXPECT_GT(test, atomic_read(&r.reads), 0);
	mmput(mm);	/* teardown, concurrent with the reader */
	seen = atomic_read(&r.reads);
	kt_reader_wait(&r, seen + 2);
	kthread_stop(task);

	KUNIT_EXPECT_GT(test, atomic_read(&r.reads), seen);
	KUNIT_EXPECT_EQ(test, atomic_read(&r.bad), 0);
	KUNIT_EXPECT_TRUE(test, mmcid_pcpu_mm_gone(r.raw));
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(r.raw), 0U);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_max_cid(r.raw), -1);
	KUNIT_EXPECT_EQ(test, atomic_read(&life.fold), n);
	KUNIT_EXPECT_EQ(test, atomic_read(&life.fini), n);
	KUNIT_EXPECT_EQ(test, atomic_read(&life.bad), 0);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum(r.c), r.want_c);
	KUNIT_EXPECT_EQ(test, kt_raw_total(r.raw), r.want_raw);
	kunit_info(test, "%d reads, %d during the teardown\n",
		   atomic_read(&r.reads), atomic_read(&r.partial));
	mmcid_counter_destroy(r.c);
	mmcid_pcpu_destroy(r.raw);
	KUNIT_EXPECT_EQ(test, atomic_read(&life.fini), n + 1);
}

/*
 * Objects of one mm share its units: the cid slots of every object of a
 * unit set live in the same blocks, each object at its own offset of
 * every cid's unit.  A second object's first use allocates nothing, its
 * data is apart from the first's, a big object gets a unit set of its
 * own, and a range given back and taken again starts from zero (ready
 * bits are the object's, not the unit's).  mmcid_pcpu_model_bytes()
 * predicts the measured bytes exactly.
 */
static void mmcid_shared_units(struct kunit *test)
{
	struct mm_struct *mm = kt_mm(test);
	struct mmcid_pcpu *a, *b, *big, *c, *four[4];
	size_t ub0, ub1, ub2, all, model, mub;
	unsigned int i, t = min(4U, nr_cpu_ids);
	struct mmcid_pcpu_ref ref;
	u64 *pa, *pb, *pc;
	int cid;

	a = mmcid_pcpu_create(mm, sizeof(u64), NULL, NULL);
	b = mmcid_pcpu_create(mm, sizeof(u64), NULL, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(a) || IS_ERR(b));
	mmcid_pcpu_mm_memory(a, &ub0);
	KUNIT_EXPECT_EQ(test, ub0, (size_t)0);

	pa = __mmcid_pcpu_get(a, &ref, GFP_KERNEL, MMCID_SRC_FIXED, 0);
	*pa = 0x1111;
	mmcid_pcpu_put(a, &ref);
	mmcid_pcpu_mm_memory(a, &ub1);
	KUNIT_EXPECT_GT(test, ub1, (size_t)0);
	/* b shares a's blocks before it used them. */
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(b), mmcid_pcpu_slots(a));

	pb = __mmcid_pcpu_get(b, &ref, GFP_KERNEL, MMCID_SRC_FIXED, 0);
	KUNIT_EXPECT_EQ(test, *pb, 0ULL);
	KUNIT_EXPECT_NE(test, (unsigned long)pb, (unsigned long)pa);
	*pb = 0x2222;
	mmcid_pcpu_put(b, &ref);
	mmcid_pcpu_mm_memory(a, &ub2);
	KUNIT_EXPECT_EQ(test, ub2, ub1);		/* no new block */
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_grow_attempts(b, &mub), 0U);
	pa = __mmcid_pcpu_get(a, &ref, GFP_KERNEL, MMCID_SRC_FIXED, 0);
	KUNIT_EXPECT_EQ(test, *pa, 0x1111ULL);
	mmcid_pcpu_put(a, &ref);

	/* More than a cache line: a unit set of its own. */
	big = mmcid_pcpu_create(mm, SMP_CACHE_BYTES + 8, NULL, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(big));
	kt_get(big, &ref, 0);
	mmcid_pcpu_put(big, &ref);
	mmcid_pcpu_mm_memory(a, &ub2);
	KUNIT_EXPECT_GT(test, ub2, ub1);
	mmcid_pcpu_destroy(big);
	mmcid_pcpu_mm_memory(a, &ub2);
	KUNIT_EXPECT_EQ(test, ub2, ub1);		/* its set went with it */

	/* a's range, given back and taken again, starts from zero. */
	mmcid_pcpu_destroy(a);
	c = mmcid_pcpu_create(mm, sizeof(u64), NULL, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(c));
	pc = __mmcid_pcpu_get(c, &ref, GFP_KERNEL, MMCID_SRC_FIXED, 0);
	KUNIT_EXPECT_EQ(test, (unsigned long)pc, (unsigned long)pa);
	KUNIT_EXPECT_EQ(test, *pc, 0ULL);
	mmcid_pcpu_put(c, &ref);
	pb = __mmcid_pcpu_get(b, &ref, GFP_KERNEL, MMCID_SRC_FIXED, 0);
	KUNIT_EXPECT_EQ(test, *pb, 0x2222ULL);
	mmcid_pcpu_put(b, &ref);
	mmcid_pcpu_destroy(c);
	mmcid_pcpu_destroy(b);

	/* Four 8-byte objects on t cids: the model's bytes, measured. */
	for (i = 0; i < ARRAY_SIZE(four); i++) {
		four[i] = mmcid_pcpu_create(mm, sizeof(u64), NULL, NULL);
		KUNIT_ASSERT_FALSE(test, IS_ERR(four[i]));
		for (cid = 0; cid < t; cid++) {
			kt_get(four[i], &ref, cid);
			mmcid_pcpu_put(four[i], &ref);
		}
	}
	all = mmcid_pcpu_mm_memory(four[0], &ub0);
	model = mmcid_pcpu_model_bytes(nr_cpu_ids, ARRAY_SIZE(four),
				       sizeof(u64), t, &mub);
	KUNIT_EXPECT_EQ(test, all, model);
	KUNIT_EXPECT_EQ(test, ub0, mub);
	/* One unit set, one block: block 0's units. */
	KUNIT_EXPECT_EQ(test, ub0, kmalloc_size_roundup(min(MMCID_B0, nr_cpu_ids) *
							SMP_CACHE_BYTES));
	for (i = 0; i < ARRAY_SIZE(four); i++)
		mmcid_pcpu_destroy(four[i]);
	mmput(mm);
}

struct kt_dead_get {
	struct mmcid_pcpu *folded;	/* torn down before the fini runs */
	int cid;			/* what its get returned from the fini */
	int calls;
};

static void kt_dead_get_fini(void *slot, void *arg)
{
	struct kt_dead_get *d = arg;
	struct mmcid_pcpu_ref ref;

	if (d->calls++)
		return;
	__mmcid_pcpu_get(d->folded, &ref, GFP_KERNEL, MMCID_SRC_FIXED,
			 min(1U, nr_cpu_ids - 1));
	d->cid = ref.cid;
	mmcid_pcpu_put(d->folded, &ref);
}

static const struct mmcid_pcpu_ops kt_dead_get_ops = {
	.fini = kt_dead_get_fini,
};

/*
 * Shared units, review mends.  (1) An object already folded by the
 * teardown gets the remote slot, never a cid slot, even while another
 * member keeps the blocks alive: live is asked from a fini callback of
 * the member folded second (release folds the newest object first), and
 * a cid slot handed out there would sit in a block freed right after.
 * (2) A small object never joins a set of bigger units: after the big
 * object left, four cids of an 8-byte object cost block 0 of cache
 * lines, not of pages.  (3) A 16-byte object after an 8-byte one is
 * 16-byte aligned.
 */
static void mmcid_shared_mends(struct kunit *test)
{
	struct mm_struct *mm = kt_mm(test);
	struct kt_dead_get d = { .cid = -2 };
	struct mmcid_pcpu *live, *small, *big, *a8, *a16;
	unsigned int t = min(4U, nr_cpu_ids);
	struct mmcid_pcpu_ref ref;
	size_t ub;
	void *p;
	int cid;

	live = mmcid_pcpu_create(mm, sizeof(u64), &kt_dead_get_ops, &d);
	d.folded = mmcid_pcpu_create(mm, sizeof(u64), NULL, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(live) || IS_ERR(d.folded));
	kt_get(live, &ref, 0);
	mmcid_pcpu_put(live, &ref);
	kt_get(d.folded, &ref, 0);
	mmcid_pcpu_put(d.folded, &ref);

	big = mmcid_pcpu_create(mm, PAGE_SIZE - SMP_CACHE_BYTES, NULL, NULL);
	small = mmcid_pcpu_create(mm, sizeof(u64), NULL, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(big) || IS_ERR(small));
	mmcid_pcpu_destroy(big);
	for (cid = 0; cid < t; cid++) {
		kt_get(small, &ref, cid);
		mmcid_pcpu_put(small, &ref);
	}
	mmcid_pcpu_mm_memory(small, &ub);
	KUNIT_EXPECT_EQ(test, ub, kmalloc_size_roundup(min(MMCID_B0, nr_cpu_ids) *
						       SMP_CACHE_BYTES));

	a8 = mmcid_pcpu_create(mm, 8, NULL, NULL);
	a16 = mmcid_pcpu_create(mm, 16, NULL, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(a8) || IS_ERR(a16));
	p = __mmcid_pcpu_get(a16, &ref, GFP_KERNEL, MMCID_SRC_FIXED, 0);
	KUNIT_EXPECT_TRUE(test, IS_ALIGNED((unsigned long)p, 16));
	mmcid_pcpu_put(a16, &ref);
	mmcid_pcpu_destroy(a16);
	mmcid_pcpu_destroy(a8);
	mmcid_pcpu_destroy(small);

	mmput(mm);	/* folds d.folded first, then live (its fini asks) */
	KUNIT_EXPECT_EQ(test, d.calls, 1);
	KUNIT_EXPECT_EQ(test, d.cid, MMCID_PCPU_REMOTE);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_max_cid(d.folded), -1);
	mmcid_pcpu_destroy(d.folded);
	mmcid_pcpu_destroy(live);
}

struct kt_race {
	struct mmcid_pcpu *victim;
	struct completion go;
	struct completion done;
};

static int kt_race_destroy(void *data)
{
	struct kt_race *r = data;

	wait_for_completion(&r->go);
	mmcid_pcpu_destroy(r->victim);
	complete(&r->done);
	return 0;
}

/*
 * Destroy of one member of a unit set races with the mm teardown that
 * folds the others: the blocks must stay until the last live member is
 * folded or gone, and go exactly once (KASAN reports a use after free,
 * kmemleak a leak).  Also: a folded member destroyed after the teardown,
 * with another member still alive, finds nothing to finalise.
 */
static void mmcid_shared_teardown_race(struct kunit *test)
{
	unsigned int round, t = min(4U, nr_cpu_ids);
	atomic_t calls = ATOMIC_INIT(0);

	for (round = 0; round < 32; round++) {
		struct mm_struct *mm = kt_mm(test);
		struct mmcid_counter *keep;
		struct task_struct *task;
		struct kt_race r;
		struct mmcid_pcpu_ref ref;
		struct kt_slot *slot;
		int cid;

		keep = mmcid_counter_create(mm);
		r.victim = mmcid_pcpu_create(mm, sizeof(struct kt_slot), &kt_ops,
					     &calls);
		KUNIT_ASSERT_FALSE(test, IS_ERR(keep) || IS_ERR(r.victim));
		for (cid = 0; cid < t; cid++) {
			__mmcid_counter_add(keep, cid + 1, GFP_KERNEL,
					    MMCID_SRC_FIXED, cid, NULL);
			slot = kt_get(r.victim, &ref, cid);
			slot->val = cid;
			mmcid_pcpu_put(r.victim, &ref);
		}
		init_completion(&r.go);
		init_completion(&r.done);
		task = kthread_run(kt_race_destroy, &r, "mmcid_race");
		KUNIT_ASSERT_FALSE(test, IS_ERR(task));
		if (round & 1) {
			complete(&r.go);
			mmput(mm);
		} else {
			mmput(mm);
			complete(&r.go);
		}
		wait_for_completion(&r.done);
		KUNIT_EXPECT_EQ(test, mmcid_counter_sum(keep),
				(s64)t * (t + 1) / 2);
		KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(mmcid_counter_storage(keep)),
				0U);
		mmcid_counter_destroy(keep);
	}
}

/*
 * Pure geometry, for slot strides from one cache line to a page and for
 * cid counts up to 8192 (the VM lanes have nr_cpu_ids = 4, which never
 * reaches the switch from doubling blocks to blocks of L): blocks tile
 * [0, ncids) without gap or overlap, mmcid_blk_of() agrees with
 * first/len for every cid, block 0 holds min(MMCID_B0, L), blocks
 * double below L and hold L from cid L on, no block exceeds L slots or
 * PAGE_SIZE bytes, and capacity up to any cid c stays within
 * max(b0, 2 * (c + 1)).
 */
static void mmcid_geometry(struct kunit *test)
{
	static const unsigned int strides[] = {
		SMP_CACHE_BYTES, 2 * SMP_CACHE_BYTES, 3 * SMP_CACHE_BYTES,
		1024, PAGE_SIZE / 2 + SMP_CACHE_BYTES, PAGE_SIZE / 2,
		PAGE_SIZE };
	static const unsigned int ncids[] = { 1, 3, 4, 5, 8, 9, 63, 64, 65,
					      100, 1000, 4096, 8191, 8192 };
	unsigned int i, j, k, cid, first, len, next, nblk, l, b0, bad;

	for (i = 0; i < ARRAY_SIZE(strides); i++) {
		unsigned int stride = ALIGN(strides[i], SMP_CACHE_BYTES);

		l = rounddown_pow_of_two(min_t(unsigned int, PAGE_SIZE / stride,
					       BITS_PER_LONG));
		b0 = min(MMCID_B0, l);
		for (j = 0; j < ARRAY_SIZE(ncids); j++) {
			unsigned int n = ncids[j];

			nblk = mmcid_pcpu_geo_blk(stride, n - 1) + 1;
			next = 0;
			bad = 0;
			for (k = 0; k < nblk; k++) {
				mmcid_pcpu_geo_block(stride, n, k, &first, &len);
				bad += first != next;
				bad += !len || len > l || len * stride > PAGE_SIZE;
				if (k == 0)
					bad += len != min(b0, n);
				else if (first >= l)
					bad += first % l || len != min(l, n - first);
				else
					bad += len != min(first, n - first);
				bad += first + len > max(b0, 2 * (first + 1));
				for (cid = first; cid < first + len; cid++)
					bad += mmcid_pcpu_geo_blk(stride, cid) != k;
				next = first + len;
			}
			KUNIT_EXPECT_EQ_MSG(test, bad, 0U, "stride %u ncids %u",
					    stride, n);
			KUNIT_EXPECT_EQ_MSG(test, next, n, "stride %u ncids %u",
					    stride, n);
		}
		/* The switch to blocks of L: cid L starts block k_base + 1. */
		if (l > b0) {
			k = mmcid_pcpu_geo_blk(stride, l);
			mmcid_pcpu_geo_block(stride, 8192, k, &first, &len);
			KUNIT_EXPECT_EQ_MSG(test, first, l, "stride %u", stride);
			KUNIT_EXPECT_EQ_MSG(test, k, ilog2(l) - ilog2(b0) + 1,
					    "stride %u", stride);
			KUNIT_EXPECT_EQ_MSG(test, mmcid_pcpu_geo_blk(stride, l - 1),
					    k - 1, "stride %u", stride);
		}
	}
}

/*
 * An owned context (no mmu_notifier, the mm lifecycle's own hooks):
 * objects created in it share one unit set; prepare allocates block 0
 * once, for every member, so an atomic caller with any cid of it finds its
 * slot; mmcid_mm_release() folds every member exactly like ->release
 * (sums unchanged, no cid slot left, later adds go to the remote slot);
 * creating after release, with a NULL context or a bad size fails with
 * the documented errno; the mm's own teardown (mmput()) does not touch
 * an owned context.
 */
static void mmcid_owned_ctx(struct kunit *test)
{
	struct mm_struct *mm = kt_mm(test);
	struct mmcid_counter *c[4];
	struct mmcid_mm *ctx;
	unsigned long flags;
	s64 sums[4];
	int i, cid;

	ctx = mmcid_mm_create(GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx);
	for (i = 0; i < 4; i++) {
		c[i] = mmcid_counter_create_in(ctx, mm);
		KUNIT_ASSERT_FALSE(test, IS_ERR(c[i]));
	}
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(mmcid_counter_storage(c[0])), 0U);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_prepare(mmcid_counter_storage(c[0]),
						 0, GFP_KERNEL), 0);
	/* prepared once, for the whole set: atomic adds find cid slots */
	local_irq_save(flags);
	for (i = 0; i < 4; i++) {
		cid = __mmcid_counter_add(c[i], i + 1, GFP_NOWAIT,
					  MMCID_SRC_FIXED,
					  min(MMCID_B0, nr_cpu_ids) - 1, NULL);
		KUNIT_EXPECT_EQ(test, cid, (int)min(MMCID_B0, nr_cpu_ids) - 1);
	}
	local_irq_restore(flags);
	for (i = 0; i < 4; i++) {
		__mmcid_counter_add(c[i], 100, GFP_KERNEL, MMCID_SRC_FIXED, 0,
				    NULL);
		sums[i] = mmcid_counter_sum(c[i]);
		KUNIT_EXPECT_EQ(test, sums[i], (s64)(i + 101));
	}

	/*
	 * Prepared up to the last cid: the blocks are the set's (c[1]'s
	 * prepare allocates them for all four), the ready words above block
	 * 0 each object's own; then every cid's atomic add finds its slot.
	 */
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_prepare(mmcid_counter_storage(c[1]),
						 UINT_MAX, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(mmcid_counter_storage(c[0])),
			nr_cpu_ids);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_prepare(mmcid_counter_storage(c[0]),
						 UINT_MAX, GFP_KERNEL), 0);
	local_irq_save(flags);
	for (cid = 0; cid < nr_cpu_ids; cid++)
		KUNIT_EXPECT_EQ(test, __mmcid_counter_add(c[0], 1, GFP_NOWAIT,
							  MMCID_SRC_FIXED, cid,
							  NULL), cid);
	local_irq_restore(flags);
	sums[0] += nr_cpu_ids;
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum(c[0]), sums[0]);

	mmput(mm);	/* the mm's end does not reach an owned context */
	KUNIT_EXPECT_FALSE(test, mmcid_pcpu_mm_gone(mmcid_counter_storage(c[0])));

	mmcid_mm_release(ctx);
	mmcid_mm_release(ctx);	/* idempotent */
	for (i = 0; i < 4; i++) {
		KUNIT_EXPECT_TRUE(test, mmcid_pcpu_mm_gone(mmcid_counter_storage(c[i])));
		KUNIT_EXPECT_EQ(test, mmcid_counter_sum(c[i]), sums[i]);
		KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(mmcid_counter_storage(c[i])), 0U);
		cid = __mmcid_counter_add(c[i], 1, GFP_KERNEL, MMCID_SRC_FIXED,
					  0, NULL);
		KUNIT_EXPECT_EQ(test, cid, MMCID_PCPU_REMOTE);
		KUNIT_EXPECT_EQ(test, mmcid_counter_sum(c[i]), sums[i] + 1);
	}
	KUNIT_EXPECT_EQ(test, PTR_ERR(mmcid_counter_create_in(ctx, mm)),
			-ESRCH);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_prepare(mmcid_counter_storage(c[0]),
						 nr_cpu_ids - 1, GFP_KERNEL), -ENOENT);
	KUNIT_EXPECT_EQ(test, PTR_ERR(mmcid_counter_create_in(NULL, mm)),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(mmcid_pcpu_create_in(ctx, mm, 0, NULL,
							   NULL)), -EINVAL);
	for (i = 0; i < 4; i++)
		mmcid_counter_destroy(c[i]);
	mmcid_mm_destroy(ctx);
}

/*
 * Review H1: the counter's fast read is one load of the remote slot.
 * Cid slots fold into it at MMCID_COUNTER_BATCH, so it is within
 * (batch - 1) per cid used of the exact sum, either way; a remote add
 * reaches it at once; after the mm's teardown it is exact.
 */
static void mmcid_counter_fast_read(struct kunit *test)
{
	unsigned int cid, ncid = min_t(unsigned int, MMCID_B0, nr_cpu_ids);
	const s64 slack = (MMCID_COUNTER_BATCH - 1) * (s64)ncid;
	struct mm_struct *mm = kt_mm(test);
	struct mmcid_counter *c;
	s64 read;
	int i;

	c = mmcid_counter_create_many(mm, 2);
	KUNIT_ASSERT_FALSE(test, IS_ERR(c));
	for (i = 0; i < 100; i++) {
		for (cid = 0; cid < ncid; cid++) {
			__mmcid_counter_add_at(c, 0, -1, GFP_KERNEL,
					       MMCID_SRC_FIXED, cid, NULL);
			__mmcid_counter_add_at(c, 1, 1, GFP_KERNEL,
					       MMCID_SRC_FIXED, cid, NULL);
		}
	}
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum_at(c, 0), -100 * (s64)ncid);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum_at(c, 1), 100 * (s64)ncid);
	read = mmcid_counter_read_at(c, 1);
	/* folded: 96 of every cid's 100 */
	KUNIT_EXPECT_EQ(test, read, 96 * (s64)ncid);
	KUNIT_EXPECT_LE(test, 100 * (s64)ncid - read, slack);
	KUNIT_EXPECT_LE(test, mmcid_counter_read_at(c, 0) + 100 * (s64)ncid, slack);

	/* No cid (a kernel thread): the remote slot, at once. */
	KUNIT_EXPECT_EQ(test, __mmcid_counter_add_at(c, 1, 1000, GFP_KERNEL,
						     MMCID_SRC_TASK, 0, NULL),
			MMCID_PCPU_REMOTE);
	KUNIT_EXPECT_EQ(test, mmcid_counter_read_at(c, 1), read + 1000);
	KUNIT_EXPECT_EQ(test, mmcid_counter_read_at(c, 2), 0);

	mmput(mm);	/* teardown folds every cid slot */
	KUNIT_EXPECT_EQ(test, mmcid_counter_read_at(c, 0), -100 * (s64)ncid);
	KUNIT_EXPECT_EQ(test, mmcid_counter_read_at(c, 1), 100 * (s64)ncid + 1000);
	mmcid_counter_destroy(c);
}

/*
 * Review H1 and M1: neither the fast read nor an add from a caller
 * without a cid slot waits for the storage's lock.  A kernel thread on
 * another CPU holds it (a raw spinlock, interrupts off) until both are
 * done (10 s at most, which only a failing run reaches); they must be
 * done while it is held.
 */
struct kt_holder {
	struct mmcid_pcpu *s;
	struct completion holding;
	atomic_t done;
	bool saw_done;
};

static int kt_holder_fn(void *arg)
{
	struct kt_holder *h = arg;
	struct mmcid_pcpu_ref ref;
	ktime_t end;

	mmcid_pcpu_get(h->s, &ref, GFP_ATOMIC);	/* no cid: the lock */
	complete(&h->holding);
	/*
	 * The cap only ends a failing run (an add that waits for this
	 * lock); the test thread is running on its own CPU, so a passing
	 * run finishes in microseconds.
	 */
	end = ktime_add_ms(ktime_get(), 10000);
	while (!atomic_read(&h->done) && ktime_before(ktime_get(), end))
		cpu_relax();
	h->saw_done = atomic_read(&h->done);
	mmcid_pcpu_put(h->s, &ref);
	return 0;
}

static void mmcid_counter_no_lock(struct kunit *test)
{
	struct mm_struct *mm = kt_mm(test);
	struct task_struct *task;
	struct mmcid_counter *c;
	unsigned int me, other;
	struct kt_holder *h;
	s64 read;

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two online CPUs");
	h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, h);
	c = mmcid_counter_create(mm);
	KUNIT_ASSERT_FALSE(test, IS_ERR(c));
	h->s = mmcid_counter_storage(c);
	init_completion(&h->holding);

	/* Two CPUs apart: the holder spins with interrupts off. */
	cpus_read_lock();
	me = raw_smp_processor_id();
	other = cpumask_any_but(cpu_online_mask, me);
	cpus_read_unlock();
	set_cpus_allowed_ptr(current, cpumask_of(me));
	task = kthread_create(kt_holder_fn, h, "mmcid_holder");
	KUNIT_ASSERT_FALSE(test, IS_ERR(task));
	kthread_bind(task, other);
	get_task_struct(task);
	wake_up_process(task);
	wait_for_completion(&h->holding);

	read = mmcid_counter_read_at(c, 0);
	KUNIT_EXPECT_EQ(test, __mmcid_counter_add_at(c, 0, 5, GFP_ATOMIC,
						     MMCID_SRC_TASK, 0, NULL),
			MMCID_PCPU_REMOTE);
	atomic_set(&h->done, 1);
	kthread_stop(task);
	put_task_struct(task);
	set_cpus_allowed_ptr(current, cpu_possible_mask);
	KUNIT_EXPECT_TRUE(test, h->saw_done);
	KUNIT_EXPECT_EQ(test, read, 0);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum(c), 5);
	mmcid_counter_destroy(c);
	mmput(mm);
}

/*
 * Review L3: the remote slot is aligned as a cid slot of its size is, up
 * to a cache line (a 16-byte slot may hold a u128), with lock debugging
 * making the header any size.
 */
static void mmcid_remote_slot_aligned(struct kunit *test)
{
	static const size_t sizes[] = { 8, 16, 24, 32, 64, 200 };
	struct mm_struct *mm = kt_mm(test);
	struct mmcid_pcpu_ref ref;
	struct mmcid_pcpu *s;
	unsigned int i;
	size_t align;
	void *slot;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		align = min_t(size_t, roundup_pow_of_two(sizes[i]), SMP_CACHE_BYTES);
		s = mmcid_pcpu_create(mm, sizes[i], NULL, NULL);
		KUNIT_ASSERT_FALSE(test, IS_ERR(s));
		slot = mmcid_pcpu_get(s, &ref, GFP_KERNEL);	/* no cid: remote */
		mmcid_pcpu_put(s, &ref);
		KUNIT_EXPECT_EQ(test, ref.cid, MMCID_PCPU_REMOTE);
		KUNIT_EXPECT_TRUE_MSG(test, IS_ALIGNED((unsigned long)slot, align),
				      "size %zu", sizes[i]);
		mmcid_pcpu_destroy(s);
	}
	mmput(mm);
}

/*
 * Review L1: prepare allocates what the caller asked for with its gfp;
 * a failure there is the caller's -ENOMEM and starts no backoff, so the
 * next access may still grow (the mm_init() path of rss_stat=mmcid used
 * to get __GFP_NORETRY and to arm the backoff).
 */
static void mmcid_prepare_no_backoff(struct kunit *test)
{
	struct mm_struct *mm;
	struct mmcid_counter *c;
	unsigned long retry;

	if (!IS_ENABLED(CONFIG_FAULT_INJECTION))
		kunit_skip(test, "needs CONFIG_FAULT_INJECTION");
	mm = kt_mm(test);
	c = mmcid_counter_create(mm);
	KUNIT_ASSERT_FALSE(test, IS_ERR(c));
	pn_fault_fail_nth(PN_FAULT_MMCID, 1);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_prepare(mmcid_counter_storage(c), 0,
						 GFP_KERNEL), -ENOMEM);
	pn_fault_fail_nth(PN_FAULT_MMCID, 0);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_grow_attempts(mmcid_counter_storage(c), &retry),
			1U);
	KUNIT_EXPECT_EQ(test, retry, 0UL);
	KUNIT_EXPECT_EQ(test, __mmcid_counter_add(c, 1, GFP_KERNEL,
						  MMCID_SRC_FIXED, 0, NULL), 0);
	mmcid_counter_destroy(c);
	mmput(mm);
}

/* Clears the misuse budget if the case ends early (an assertion). */
static void kt_misuse_budget_clear(void *unused)
{
	mmcid_pcpu_expect_misuse(0);
}

/*
 * Review L4: destroying an owned context that still has an object is a
 * misuse (one, announced); the context is kept, so the object's adds and
 * sums still work, and a destroy once the object is gone frees it.
 */
static void mmcid_destroy_ctx_with_object(struct kunit *test)
{
	struct mm_struct *mm = kt_mm(test);
	struct mmcid_counter *c;
	struct mmcid_mm *ctx;

	ctx = mmcid_mm_create(GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx);
	c = mmcid_counter_create_in(ctx, mm);
	KUNIT_ASSERT_FALSE(test, IS_ERR(c));
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_prepare(mmcid_counter_storage(c), 0,
						 GFP_KERNEL), 0);
	__mmcid_counter_add(c, 5, GFP_KERNEL, MMCID_SRC_FIXED, 0, NULL);
	kunit_add_action(test, kt_misuse_budget_clear, NULL);
	mmcid_pcpu_expect_misuse(1);
	mmcid_mm_destroy(ctx);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_expect_misuse(0), 0U);
	__mmcid_counter_add(c, 1, GFP_KERNEL, MMCID_SRC_FIXED, 0, NULL);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum(c), 6);
	mmcid_mm_release(ctx);
	mmcid_counter_destroy(c);
	mmcid_mm_destroy(ctx);
	mmput(mm);
}

/*
 * A teardown that waits, the first time, until the test lets it go on:
 * in ->fini, which runs with no lock held once the block's slots were
 * folded (->fold runs under the storage's raw spinlock).
 */
struct kt_slow_fold {
	struct completion folding;
	struct completion go;
	atomic_t calls;
};

static void kt_slow_fini_fn(void *slot, void *arg)
{
	struct kt_slow_fold *f = arg;

	if (atomic_inc_return(&f->calls) == 1) {
		complete(&f->folding);
		wait_for_completion(&f->go);
	}
}

static const struct mmcid_pcpu_ops kt_slow_fold_ops = { .fini = kt_slow_fini_fn };

static int kt_release_fn(void *arg)
{
	mmcid_mm_release(arg);
	return 0;
}

/*
 * Review L5: while a release is folding one object, the teardown has
 * begun for every object of the context (mmcid_pcpu_mm_gone() says so),
 * and prepare of the object being folded, whose blocks still exist,
 * returns -ENOENT as its kernel-doc promises.
 */
static void mmcid_gone_during_release(struct kunit *test)
{
	struct mm_struct *mm = kt_mm(test);
	struct kt_slow_fold *f;
	struct mmcid_pcpu_ref ref;
	struct task_struct *task;
	struct mmcid_counter *b;
	struct mmcid_pcpu *a;
	struct mmcid_mm *ctx;

	f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f);
	init_completion(&f->folding);
	init_completion(&f->go);
	ctx = mmcid_mm_create(GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx);
	b = mmcid_counter_create_in(ctx, mm);
	KUNIT_ASSERT_FALSE(test, IS_ERR(b));
	/* Created last, torn down first (the context's list is LIFO). */
	a = mmcid_pcpu_create_in(ctx, mm, sizeof(struct kt_slot),
				 &kt_slow_fold_ops, f);
	KUNIT_ASSERT_FALSE(test, IS_ERR(a));
	kt_get(a, &ref, 0);
	mmcid_pcpu_put(a, &ref);

	task = kthread_run(kt_release_fn, ctx, "mmcid_release");
	KUNIT_ASSERT_FALSE(test, IS_ERR(task));
	get_task_struct(task);
	wait_for_completion(&f->folding);
	KUNIT_EXPECT_TRUE(test, mmcid_pcpu_mm_gone(a));
	KUNIT_EXPECT_TRUE(test, mmcid_pcpu_mm_gone(mmcid_counter_storage(b)));
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_prepare(a, 0, GFP_KERNEL), -ENOENT);
	complete(&f->go);
	kthread_stop(task);
	put_task_struct(task);

	KUNIT_EXPECT_EQ(test, mmcid_pcpu_prepare(mmcid_counter_storage(b), 0,
						 GFP_KERNEL), -ENOENT);
	mmcid_counter_destroy(b);
	mmcid_pcpu_destroy(a);
	mmcid_mm_destroy(ctx);
	mmput(mm);
}

/*
 * Review L2: preemptible is not "may sleep".  Inside an RCU read side a
 * caller whose cid has no block gets the remote slot and no block is
 * allocated, whatever its gfp.  (Debug kernels report the blocking gfp
 * there before the library sees it, so the case runs where
 * CONFIG_DEBUG_ATOMIC_SLEEP is off: the kunit.py kernel.)
 */
static void mmcid_no_grow_in_rcu(struct kunit *test)
{
	struct mm_struct *mm = kt_mm(test);
	struct mmcid_counter *c;
	unsigned long retry;
	unsigned int tries;
	int cid;

	if (IS_ENABLED(CONFIG_DEBUG_ATOMIC_SLEEP))
		kunit_skip(test, "CONFIG_DEBUG_ATOMIC_SLEEP reports the caller first");
	if (!IS_ENABLED(CONFIG_PREEMPT_RCU))
		kunit_skip(test, "an RCU read side is not preemptible here");
	/* A new counter has no block yet, not even block 0. */
	c = mmcid_counter_create(mm);
	KUNIT_ASSERT_FALSE(test, IS_ERR(c));
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(mmcid_counter_storage(c)), 0U);
	tries = mmcid_pcpu_grow_attempts(mmcid_counter_storage(c), &retry);
	rcu_read_lock();
	cid = __mmcid_counter_add(c, 1, GFP_KERNEL, MMCID_SRC_FIXED, 0, NULL);
	rcu_read_unlock();
	KUNIT_EXPECT_EQ(test, cid, MMCID_PCPU_REMOTE);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_grow_attempts(mmcid_counter_storage(c), &retry),
			tries);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum(c), 1);
	mmcid_counter_destroy(c);
	mmput(mm);
}

/*
 * A counter array: nr counters in one object, counter i at word i of the
 * object's range of every cid's unit and of its remote slot.  Each
 * counter sums only its own adds (cid slots in block 0 and above, the
 * remote slot), a counter created next to the array in the same units
 * keeps its own value, the teardown folds every counter of the array
 * (not only the first), and indexes or ranges beyond the array are
 * refused with -EINVAL, nothing added.
 */
static void mmcid_counter_array(struct kunit *test)
{
	static const unsigned int at[] = { 0, 1, 2, 5, 9, 63 };
	unsigned int max = min_t(size_t, PAGE_SIZE, SZ_32K) / sizeof(u64);
	struct mm_struct *mm = kt_mm(test);
	s64 want[4] = {}, sums[4], one_want = 0;
	struct mmcid_counter *c, *one, *big;
	unsigned int i, idx;
	int cid;

	KUNIT_EXPECT_EQ(test, PTR_ERR(mmcid_counter_create_many(mm, 0)),
			(long)-EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(mmcid_counter_create_many(mm, max + 1)),
			(long)-EINVAL);
	big = mmcid_counter_create_many(mm, max);
	KUNIT_ASSERT_FALSE(test, IS_ERR(big));
	__mmcid_counter_add_at(big, max - 1, 3, GFP_KERNEL, MMCID_SRC_FIXED, 0,
			       NULL);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum_at(big, max - 1), 3LL);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum_at(big, 0), 0LL);
	mmcid_counter_destroy(big);

	c = mmcid_counter_create_many(mm, ARRAY_SIZE(want));
	one = mmcid_counter_create(mm);	/* next to it, in the same units */
	KUNIT_ASSERT_FALSE(test, IS_ERR(c) || IS_ERR(one));
	for (i = 0; i < ARRAY_SIZE(at); i++) {
		cid = min(at[i], nr_cpu_ids - 1);
		for (idx = 0; idx < ARRAY_SIZE(want); idx++) {
			KUNIT_EXPECT_EQ(test,
					__mmcid_counter_add_at(c, idx,
							       (idx + 1) * 10 + i,
							       GFP_KERNEL,
							       MMCID_SRC_FIXED,
							       cid, NULL),
					cid);
			want[idx] += (idx + 1) * 10 + i;
		}
		__mmcid_counter_add(one, 7, GFP_KERNEL, MMCID_SRC_FIXED, cid,
				    NULL);
		one_want += 7;
	}
	/* A kthread owns no cid: the remote slot, at the counter's word. */
	KUNIT_EXPECT_EQ(test, mmcid_counter_add_at(c, 3, 1000, GFP_KERNEL, NULL),
			MMCID_PCPU_REMOTE);
	want[3] += 1000;

	/* Beyond the array: refused, nothing added anywhere. */
	KUNIT_EXPECT_EQ(test, mmcid_counter_add_at(c, 4, 1, GFP_KERNEL, NULL),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, __mmcid_counter_add_at(c, 4, 1, GFP_KERNEL,
						     MMCID_SRC_FIXED, 0, NULL),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum_many(c, 2, 3, sums), -EINVAL);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum_many(c, 0, 0, sums), -EINVAL);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum_many(c, UINT_MAX, 2, sums),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum_at(c, 4), 0LL);

	KUNIT_ASSERT_EQ(test, mmcid_counter_sum_many(c, 0, 4, sums), 0);
	for (idx = 0; idx < ARRAY_SIZE(want); idx++) {
		KUNIT_EXPECT_EQ(test, mmcid_counter_sum_at(c, idx), want[idx]);
		KUNIT_EXPECT_EQ(test, sums[idx], want[idx]);
	}
	KUNIT_ASSERT_EQ(test, mmcid_counter_sum_many(c, 1, 2, sums), 0);
	KUNIT_EXPECT_EQ(test, sums[0], want[1]);
	KUNIT_EXPECT_EQ(test, sums[1], want[2]);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum(one), one_want);

	mmput(mm);	/* teardown: every counter folded into the remote slot */
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(mmcid_counter_storage(c)), 0U);
	for (idx = 0; idx < ARRAY_SIZE(want); idx++)
		KUNIT_EXPECT_EQ(test, mmcid_counter_sum_at(c, idx), want[idx]);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum(one), one_want);
	KUNIT_EXPECT_EQ(test, __mmcid_counter_add_at(c, 2, 5, GFP_KERNEL,
						     MMCID_SRC_FIXED, 0, NULL),
			MMCID_PCPU_REMOTE);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum_at(c, 2), want[2] + 5);
	mmcid_counter_destroy(one);
	mmcid_counter_destroy(c);
}

/* Fill @s's slots of cids 0 .. @n - 1 with @pat. */
static void kt_fill(struct mmcid_pcpu *s, size_t size, unsigned int n, u8 pat)
{
	struct mmcid_pcpu_ref ref;
	unsigned int cid;

	for (cid = 0; cid < n; cid++) {
		memset(__mmcid_pcpu_get(s, &ref, GFP_KERNEL, MMCID_SRC_FIXED,
					cid), pat, size);
		mmcid_pcpu_put(s, &ref);
	}
}

/* Are @s's slots of cids 0 .. @n - 1 all @pat, every byte? */
static bool kt_filled(struct mmcid_pcpu *s, size_t size, unsigned int n,
		      u8 pat)
{
	struct mmcid_pcpu_ref ref;
	unsigned int cid;
	bool ok = true;

	for (cid = 0; cid < n; cid++) {
		ok &= !memchr_inv(__mmcid_pcpu_get(s, &ref, GFP_KERNEL,
						   MMCID_SRC_FIXED, cid),
				  pat, size);
		mmcid_pcpu_put(s, &ref);
	}
	return ok;
}

/* Unit bytes of one set of @unit-byte units with cids 0 .. @n - 1 used. */
static size_t kt_unit_bytes(unsigned int unit, unsigned int n)
{
	unsigned int k, first, len;
	size_t bytes = 0;

	for (k = 0; ; k++) {
		mmcid_pcpu_geo_block(unit, nr_cpu_ids, k, &first, &len);
		if (first >= n)
			return bytes;
		bytes += kmalloc_size_roundup(len * unit);
	}
}

/*
 * The first unit set of an mm lives in its context.  When its last
 * member leaves, it is emptied in place (blocks and dir freed, pointers
 * cleared under the context's lock) and the next object of any size
 * takes it, with that object's unit; the other sets are unaffected.
 * An object that reused it with old block or dir pointers left behind
 * would write into freed memory (KASAN; with more than MMCID_B0 possible
 * CPUs, cids above block 0 and the dir are used) or see another object's
 * bytes.
 */
static void mmcid_set0_reuse(struct kunit *test)
{
	const unsigned int line = SMP_CACHE_BYTES;
	unsigned int n = min(MMCID_B0 + 2, nr_cpu_ids);
	struct mm_struct *mm = kt_mm(test);
	struct mmcid_pcpu *a, *b, *c, *d;
	size_t ub;

	a = mmcid_pcpu_create(mm, 8, NULL, NULL);	/* set0, one line */
	b = mmcid_pcpu_create(mm, line + 8, NULL, NULL);	/* two lines */
	KUNIT_ASSERT_FALSE(test, IS_ERR(a) || IS_ERR(b));
	kt_fill(a, 8, n, 0xa1);
	kt_fill(b, line + 8, n, 0xb2);
	mmcid_pcpu_destroy(a);			/* set0 empty */

	c = mmcid_pcpu_create(mm, 3 * line + 8, NULL, NULL); /* set0, 4 lines */
	d = mmcid_pcpu_create(mm, 8, NULL, NULL);	/* a set of one line */
	KUNIT_ASSERT_FALSE(test, IS_ERR(c) || IS_ERR(d));
	/* Only b's blocks so far: set0's went with a. */
	mmcid_pcpu_mm_memory(c, &ub);
	KUNIT_EXPECT_EQ(test, ub, kt_unit_bytes(2 * line, n));
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(c), 0U);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(d), 0U);

	kt_fill(c, 3 * line + 8, n, 0xc3);
	kt_fill(d, 8, n, 0xd4);
	KUNIT_EXPECT_TRUE(test, kt_filled(b, line + 8, n, 0xb2));
	KUNIT_EXPECT_TRUE(test, kt_filled(c, 3 * line + 8, n, 0xc3));
	KUNIT_EXPECT_TRUE(test, kt_filled(d, 8, n, 0xd4));
	mmcid_pcpu_mm_memory(c, &ub);
	KUNIT_EXPECT_EQ(test, ub, kt_unit_bytes(2 * line, n) +
				  kt_unit_bytes(4 * line, n) +
				  kt_unit_bytes(line, n));

	mmcid_pcpu_destroy(b);
	mmcid_pcpu_destroy(c);			/* set0 empty again */
	KUNIT_EXPECT_TRUE(test, kt_filled(d, 8, n, 0xd4));
	mmcid_pcpu_mm_memory(d, &ub);
	KUNIT_EXPECT_EQ(test, ub, kt_unit_bytes(line, n));
	mmcid_pcpu_destroy(d);
	mmput(mm);
}

/*
 * A unit set's map is one word: for every unit a cache line of any size
 * can produce (multiples of 16 bytes here, as on architectures with
 * 16-byte lines, up to 32 KiB), the grains of the unit fit in it and
 * cover the unit, grains are powers of two of at least MMCID_GRAIN (8),
 * and units of up to 64 grains keep the 8-byte grain that lets small
 * objects share a unit.  The first version took unit / BITS_PER_LONG,
 * rounded down: a 528-byte unit got 66 grains of 8 bytes, and the
 * object's bitmap_set() ran past the map.
 */
static void mmcid_map_grain(struct kunit *test)
{
	unsigned int unit, nbits, bad = 0;
	u32 grain;

	for (unit = 16; unit <= SZ_32K; unit += 16) {
		grain = mmcid_pcpu_map_grain(unit, &nbits);
		if (nbits > BITS_PER_LONG || nbits * grain < unit ||
		    grain < 8 || !is_power_of_2(grain) ||
		    (unit <= BITS_PER_LONG * 8 && grain != 8)) {
			if (!bad++)
				kunit_info(test, "unit %u: grain %u, %u bits\n",
					   unit, grain, nbits);
		}
	}
	KUNIT_EXPECT_EQ(test, bad, 0U);
}

static struct kunit_case mmcid_cases[] = {
	KUNIT_CASE(mmcid_init_once),
	KUNIT_CASE(mmcid_zero_on_first_use),
	KUNIT_CASE(mmcid_growth),
	KUNIT_CASE(mmcid_remote_kthread),
	KUNIT_CASE(mmcid_for_each),
	KUNIT_CASE(mmcid_teardown),
	KUNIT_CASE(mmcid_fast_block0),
	KUNIT_CASE(mmcid_no_cid),
	KUNIT_CASE(mmcid_nonblocking_grow),
	KUNIT_CASE(mmcid_atomic_caller),
	KUNIT_CASE(mmcid_block_bound),
	KUNIT_CASE(mmcid_grow_backoff),
	KUNIT_CASE(mmcid_nested_objects),
	KUNIT_CASE(mmcid_fini_balance),
	KUNIT_CASE(mmcid_create_eintr),
	KUNIT_CASE(mmcid_teardown_reader),
	KUNIT_CASE(mmcid_shared_units),
	KUNIT_CASE(mmcid_shared_teardown_race),
	KUNIT_CASE(mmcid_shared_mends),
	KUNIT_CASE(mmcid_geometry),
	KUNIT_CASE(mmcid_map_grain),
	KUNIT_CASE(mmcid_owned_ctx),
	KUNIT_CASE(mmcid_destroy_ctx_with_object),
	KUNIT_CASE(mmcid_prepare_no_backoff),
	KUNIT_CASE(mmcid_counter_fast_read),
	KUNIT_CASE(mmcid_counter_no_lock),
	KUNIT_CASE(mmcid_remote_slot_aligned),
	KUNIT_CASE(mmcid_gone_during_release),
	KUNIT_CASE(mmcid_no_grow_in_rcu),
	KUNIT_CASE(mmcid_counter_array),
	KUNIT_CASE(mmcid_set0_reuse),
	{}
};

static struct kunit_suite mmcid_suite = {
	.name = "pcpu_next_mmcid",
	.test_cases = mmcid_cases,
};

kunit_test_suite(mmcid_suite);
