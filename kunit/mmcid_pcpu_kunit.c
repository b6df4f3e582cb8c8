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
 * the cid paths are driven with explicit cids (MMCID_SRC_FIXED), which go
 * through the same block, first-use and publication code.
 */
#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/kthread.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include <pcpu_next/mmcid_pcpu.h>

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
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(s), min(4U, nr_cpu_ids));
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_max_cid(s), 0);

	/* Same block: no new memory. */
	top = min(3U, nr_cpu_ids - 1);
	kt_get(s, &ref, top);
	mmcid_pcpu_put(s, &ref);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_memory(s), mem1);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_max_cid(s), top);

	/* A cid beyond nr_cpu_ids cannot exist: remote slot, no growth. */
	kt_get(s, &ref, nr_cpu_ids);
	KUNIT_EXPECT_EQ(test, ref.cid, MMCID_PCPU_REMOTE);
	mmcid_pcpu_put(s, &ref);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_memory(s), mem1);

	if (nr_cpu_ids > 4) {
		/* The next block doubles capacity, no more. */
		kt_get(s, &ref, 4);
		mmcid_pcpu_put(s, &ref);
		KUNIT_EXPECT_GT(test, mmcid_pcpu_memory(s), mem1);
		KUNIT_EXPECT_EQ(test, mmcid_pcpu_slots(s), min(8U, nr_cpu_ids));
		KUNIT_EXPECT_EQ(test, mmcid_pcpu_max_cid(s), 4);
	}
	/* Largest possible cid: capacity stays within twice the cids used. */
	top = nr_cpu_ids - 1;
	kt_get(s, &ref, top);
	mmcid_pcpu_put(s, &ref);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_max_cid(s), top);
	KUNIT_EXPECT_LE(test, mmcid_pcpu_slots(s), max(4U, 2U * (top + 1)));
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
	struct mm_struct *mm = kt_mm(test);
	struct mmcid_counter *c, *early;
	struct mmcid_pcpu *raw;
	size_t fresh;
	int cid, i;
	s64 sum;

	c = mmcid_counter_create(mm);
	early = mmcid_counter_create(mm);
	raw = mmcid_pcpu_create(mm, 16, NULL, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(c) || IS_ERR(early) || IS_ERR(raw));
	fresh = mmcid_pcpu_memory(mmcid_counter_storage(c));

	for (i = 0; i < 3; i++) {
		cid = min_t(unsigned int, i * 3, nr_cpu_ids - 1);
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
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_memory(mmcid_counter_storage(c)), fresh);
	KUNIT_EXPECT_EQ(test, mmcid_pcpu_max_cid(mmcid_counter_storage(c)), -1);

	cid = __mmcid_counter_add(c, 1, GFP_KERNEL, MMCID_SRC_FIXED, 0, NULL);
	KUNIT_EXPECT_EQ(test, cid, MMCID_PCPU_REMOTE);
	KUNIT_EXPECT_EQ(test, mmcid_counter_sum(c), sum + 1);
	mmcid_counter_destroy(c);
	mmcid_pcpu_destroy(raw);
}

struct kt_parse_case {
	const char *in;
	int ret;
	s64 delta;
};

static const struct kt_parse_case kt_parse_cases[] = {
	{ "add 1\n", 0, 1 },
	{ "add 0", 0, 0 },
	{ "add -5\n", 0, -5 },
	{ "add 2147483647", 0, 2147483647LL },
	{ "add -2147483648", 0, -2147483648LL },
	{ "add 2147483648", -ERANGE, 0 },
	{ "add 99999999999999999999", -ERANGE, 0 },
	{ "add +5", -EINVAL, 0 },
	{ "add -", -EINVAL, 0 },
	{ "add ", -EINVAL, 0 },
	{ "add  5", -EINVAL, 0 },
	{ "add 5 ", -EINVAL, 0 },
	{ "add 5\n\n", -EINVAL, 0 },
	{ "sub 5", -EINVAL, 0 },
	{ "ADD 5", -EINVAL, 0 },
	{ "add 0x10", -EINVAL, 0 },
	{ "", -EINVAL, 0 },
	{ "\n", -EINVAL, 0 },
	{ "add 1111111111111111111111111111111111111111111111111111111111111", -E2BIG, 0 },
};

/* The debugfs line format is strict. */
static void mmcid_parse(struct kunit *test)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(kt_parse_cases); i++) {
		const struct kt_parse_case *p = &kt_parse_cases[i];
		s64 delta = 12345;
		int ret;

		ret = pn_mmcid_parse(p->in, strlen(p->in), &delta);
		KUNIT_EXPECT_EQ_MSG(test, ret, p->ret, "input \"%s\"", p->in);
		if (!p->ret)
			KUNIT_EXPECT_EQ_MSG(test, delta, p->delta, "input \"%s\"", p->in);
	}
}

static struct kunit_case mmcid_cases[] = {
	KUNIT_CASE(mmcid_init_once),
	KUNIT_CASE(mmcid_zero_on_first_use),
	KUNIT_CASE(mmcid_growth),
	KUNIT_CASE(mmcid_remote_kthread),
	KUNIT_CASE(mmcid_for_each),
	KUNIT_CASE(mmcid_teardown),
	KUNIT_CASE(mmcid_parse),
	{}
};

static struct kunit_suite mmcid_suite = {
	.name = "pcpu_next_mmcid",
	.test_cases = mmcid_cases,
};

kunit_test_suite(mmcid_suite);
