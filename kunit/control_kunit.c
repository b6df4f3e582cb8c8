// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for the pcpu_next control plane: the control-line parser
 * (accepts what is documented, rejects everything else with the
 * documented errno) and the worker-thread harness (every worker runs,
 * placement is honoured, the phase stops).
 */

#include <kunit/test.h>
#include <linux/cpumask.h>
#include <linux/fault-inject.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/string.h>

#include "internal/core.h"
#include "torture/torture.h"

struct pn_parse_case {
	const char *line;
	int err;
};

static const struct pn_parse_case pn_bad_lines[] = {
	{ "", -EINVAL },
	{ "\n", -EINVAL },
	{ "garbage", -EINVAL },
	{ "=percpu", -EINVAL },
	{ "test", -EINVAL },
	{ "test=", -EINVAL },
	{ "test=percpu threads=", -EINVAL },
	{ "test=percpu bogus=1", -EINVAL },
	{ "test=Percpu", -EINVAL },
	{ "test=percpu threads=abc", -EINVAL },
	{ "test=percpu threads=-1", -EINVAL },
	{ "test=percpu threads=0", -ERANGE },
	{ "test=percpu threads=99999999999999999999", -ERANGE },
	{ "test=percpu seconds=301", -ERANGE },
	{ "test=percpu seconds=0", -ERANGE },
	{ "test=percpu ms=300001", -ERANGE },
	{ "test=percpu size=32769", -ERANGE },
	{ "test=percpu seconds=1 ms=5", -EINVAL },
	{ "test=percpu test=percpu", -EINVAL },
	{ "test=percpu  threads=1", -EINVAL },
	{ " test=percpu", -EINVAL },
	{ "test=percpu ", -EINVAL },
	{ "test=percpu\tthreads=1", -EINVAL },
	{ "test=percpu pin=sideways", -EINVAL },
	{ "threads=1", -EINVAL },
	{ "test=percpu\n\n", -EINVAL },
	{ "test=percpu seed=18446744073709551616", -ERANGE },
	{ "test=alloc faults=1001", -ERANGE },
	{ "test=alloc faults=-1", -EINVAL },
	{ "test=alloc faults=", -EINVAL },
	{ "test=alloc faults=5 faults=5", -EINVAL },
};

static void pn_parse_rejects_bad_lines(struct kunit *test)
{
	struct pn_params p;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(pn_bad_lines); i++) {
		const char *l = pn_bad_lines[i].line;

		KUNIT_EXPECT_EQ_MSG(test, pn_parse_line(l, strlen(l), &p),
				    pn_bad_lines[i].err, "line \"%s\"", l);
	}
}

static void pn_parse_rejects_overlong_and_binary(struct kunit *test)
{
	struct pn_params p;
	char *buf;

	buf = kunit_kmalloc(test, PN_LINE_MAX + 1, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	memset(buf, 'a', PN_LINE_MAX);
	memcpy(buf, "test=", 5);
	KUNIT_EXPECT_EQ(test, pn_parse_line(buf, PN_LINE_MAX, &p), -E2BIG);
	/* One byte shorter is a (bad) name, not an overlong line. */
	KUNIT_EXPECT_EQ(test, pn_parse_line(buf, PN_LINE_MAX - 1, &p), -EINVAL);

	/* An embedded NUL must not truncate the line into a valid one. */
	memcpy(buf, "test=percpu\0threads=1", 21);
	KUNIT_EXPECT_EQ(test, pn_parse_line(buf, 21, &p), -EINVAL);
	buf[0] = (char)0xc3;
	KUNIT_EXPECT_EQ(test, pn_parse_line(buf, 11, &p), -EINVAL);
}

static const char pn_good_line[] =
	"test=percpu threads=3 seconds=2 size=64 batch=16 objects=10 seed=42 pin=even\n";

static void pn_parse_accepts_good_lines(struct kunit *test)
{
	const char *l = pn_good_line;
	struct pn_params p;

	KUNIT_ASSERT_EQ(test, pn_parse_line(l, strlen(l), &p), 0);
	KUNIT_EXPECT_STREQ(test, p.test, "percpu");
	KUNIT_EXPECT_EQ(test, p.threads, 3U);
	KUNIT_EXPECT_EQ(test, p.duration_ms, 2000U);
	KUNIT_EXPECT_EQ(test, p.size, 64U);
	KUNIT_EXPECT_EQ(test, p.batch, 16U);
	KUNIT_EXPECT_EQ(test, p.objects, 10U);
	KUNIT_EXPECT_EQ(test, p.seed, 42ULL);
	KUNIT_EXPECT_EQ(test, p.pin, PN_PIN_EVEN);

	l = "test=percpu ms=250";
	KUNIT_ASSERT_EQ(test, pn_parse_line(l, strlen(l), &p), 0);
	KUNIT_EXPECT_EQ(test, p.duration_ms, 250U);
	KUNIT_EXPECT_EQ(test, p.threads, 0U);	/* default chosen later */
	KUNIT_EXPECT_EQ(test, p.pin, PN_PIN_EACH);
	KUNIT_EXPECT_EQ(test, p.faults, 0U);

	l = "test=alloc faults=1000";
	KUNIT_ASSERT_EQ(test, pn_parse_line(l, strlen(l), &p), 0);
	KUNIT_EXPECT_EQ(test, p.faults, 1000U);
}

/*
 * The fault window on the kernel's fault_attrs: nothing fails outside it,
 * everything fails at 1000 per mille (probability 100), each hit is
 * counted at its own site, arming resets the counts, per mille maps to
 * percent rounded up, and disarming restores probability 0.
 */
static void pn_fault_window(struct kunit *test)
{
#ifdef CONFIG_FAULT_INJECTION
	struct pn_run *run = kunit_kzalloc(test, sizeof(*run), GFP_KERNEL);
	unsigned int i, hits = 0;

	KUNIT_ASSERT_NOT_NULL(test, run);
	KUNIT_ASSERT_EQ(test, current->fail_nth, 0U);
	pn_fault_arm(run);		/* faults=0: stays disarmed */
	for (i = 0; i < 100; i++)
		KUNIT_EXPECT_FALSE(test, pn_fault_hit(PN_FAULT_CTOR));
	KUNIT_EXPECT_EQ(test, pn_fail_ctor.probability, 0UL);

	run->p.faults = PN_MAX_FAULTS;
	pn_fault_arm(run);
	KUNIT_EXPECT_EQ(test, pn_fail_ctor.probability, 100UL);
	KUNIT_EXPECT_EQ(test, atomic_read(&pn_fail_ctor.times), -1);
	KUNIT_EXPECT_FALSE(test, pn_fail_ctor.task_filter);
	KUNIT_EXPECT_EQ(test, pn_fail_ctor.verbose, 0UL);
	KUNIT_EXPECT_EQ(test, pn_fault_injected(PN_FAULT_CTOR), 0UL);
	for (i = 0; i < 10; i++)
		KUNIT_EXPECT_TRUE(test, pn_fault_hit(PN_FAULT_CTOR));
	KUNIT_EXPECT_TRUE(test, pn_fault_hit(PN_FAULT_MMCID));
	KUNIT_EXPECT_EQ(test, pn_fault_injected(PN_FAULT_CTOR), 10UL);
	KUNIT_EXPECT_EQ(test, pn_fault_injected(PN_FAULT_MMCID), 1UL);
	KUNIT_EXPECT_EQ(test, pn_fault_injected(PN_FAULT_UPGRADE), 0UL);

	/* per mille to percent, rounded up: 1 -> 1, 15 -> 2, 990 -> 99 */
	run->p.faults = 1;
	pn_fault_arm(run);
	KUNIT_EXPECT_EQ(test, lazy_fail_upgrade.probability, 1UL);
	run->p.faults = 15;
	pn_fault_arm(run);
	KUNIT_EXPECT_EQ(test, pn_fail_chunk.probability, 2UL);
	run->p.faults = 990;
	pn_fault_arm(run);
	KUNIT_EXPECT_EQ(test, mmcid_fail_grow.probability, 99UL);

	run->p.faults = 500;
	pn_fault_arm(run);
	KUNIT_EXPECT_EQ(test, pn_fault_injected(PN_FAULT_CTOR), 0UL);
	KUNIT_EXPECT_EQ(test, pn_fault_injected(PN_FAULT_MMCID), 0UL);
	for (i = 0; i < 1000; i++)
		hits += pn_fault_hit(PN_FAULT_UPGRADE);
	/* 1000 draws at p = 1/2: outside [350, 650] has odds below 1e-20 */
	KUNIT_EXPECT_GE(test, hits, 350U);
	KUNIT_EXPECT_LE(test, hits, 650U);
	KUNIT_EXPECT_EQ(test, pn_fault_injected(PN_FAULT_UPGRADE), (unsigned long)hits);

	pn_fault_disarm(run);
	KUNIT_EXPECT_EQ(test, lazy_fail_upgrade.probability, 0UL);
	KUNIT_EXPECT_EQ(test, atomic_read(&lazy_fail_upgrade.times), 1);
	for (i = 0; i < 100; i++)
		KUNIT_EXPECT_FALSE(test, pn_fault_hit(PN_FAULT_UPGRADE));
	KUNIT_EXPECT_EQ(test, pn_fault_injected(PN_FAULT_UPGRADE), (unsigned long)hits);
#else
	kunit_skip(test, "CONFIG_FAULT_INJECTION is off");
#endif
}

static void pn_parse_bounds_follow_nr_cpu_ids(struct kunit *test)
{
	char line[64];
	struct pn_params p;
	int n;

	n = scnprintf(line, sizeof(line), "test=percpu threads=%u", 4 * nr_cpu_ids);
	KUNIT_EXPECT_EQ(test, pn_parse_line(line, n, &p), 0);
	KUNIT_EXPECT_EQ(test, p.threads, 4 * nr_cpu_ids);
	n = scnprintf(line, sizeof(line), "test=percpu threads=%u", 4 * nr_cpu_ids + 1);
	KUNIT_EXPECT_EQ(test, pn_parse_line(line, n, &p), -ERANGE);
}

static void pn_find_test_knows_percpu(struct kunit *test)
{
	KUNIT_EXPECT_NOT_NULL(test, pn_find_test("percpu"));
	KUNIT_EXPECT_NULL(test, pn_find_test("nosuchtest"));
	KUNIT_EXPECT_NULL(test, pn_find_test(""));
}

/* ---- the worker harness ---- */

#define PN_HARNESS_MS		50	/* each worker loops at least this long */
#define PN_HARNESS_MAX_MS	10000	/* the phase's bound */

/**
 * struct pn_harness_arg - shared state of the harness cases
 * @entered: workers that entered their body
 * @looping: workers that looped at least once
 * @nr: if not 0, workers return by themselves once @nr of them looped
 *	and PN_HARNESS_MS passed; if 0, they loop until the phase stops
 * @cpu_of: per worker, the CPU it entered its body on
 * @loops: per worker, how often it looped
 */
struct pn_harness_arg {
	atomic_t entered;
	atomic_t looping;
	unsigned int nr;
	unsigned int cpu_of[64];
	unsigned long loops[64];
};

static int pn_harness_worker(struct pn_run *run, unsigned int idx, void *data)
{
	struct pn_harness_arg *a = data;
	unsigned long end = jiffies + msecs_to_jiffies(PN_HARNESS_MS);

	atomic_inc(&a->entered);
	a->cpu_of[idx] = raw_smp_processor_id();
	while (!pn_should_stop(run)) {
		if (!a->loops[idx]++)
			atomic_inc(&a->looping);
		if (a->nr && atomic_read(&a->looping) == (int)a->nr &&
		    time_after(jiffies, end))
			break;
		cond_resched();
	}
	return idx == 5 ? -EIO : 0;
}

static struct pn_run *pn_test_run(struct kunit *test)
{
	struct pn_run *run = kunit_kzalloc(test, sizeof(*run), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, run);
	init_waitqueue_head(&run->wq);
	run->rnd = 1;
	return run;
}

/*
 * The workers do not stop at a fixed time, which a worker that the
 * scheduler runs late could miss: each loops until every one of them
 * looped, and for PN_HARNESS_MS at least.  Then the phase ends early, as
 * all returned.  A worker that never loops inside the phase keeps it
 * going to PN_HARNESS_MAX_MS and fails the case.
 */
static void pn_harness_runs_pinned_workers(struct kunit *test)
{
	struct pn_run *run = pn_test_run(test);
	struct pn_harness_arg *a;
	unsigned int i, nr = min(num_online_cpus(), 4U);

	a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, a);
	a->nr = nr;
	KUNIT_ASSERT_EQ(test, pn_run_threads(run, nr, PN_PIN_EACH, PN_HARNESS_MAX_MS,
					     pn_harness_worker, a), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&a->entered), (int)nr);
	KUNIT_EXPECT_GT(test, run->phase_ns, 40ULL * NSEC_PER_MSEC);
	KUNIT_EXPECT_LT(test, run->phase_ns, (u64)PN_HARNESS_MAX_MS * NSEC_PER_MSEC);
	for (i = 0; i < nr; i++) {
		KUNIT_EXPECT_EQ(test, a->cpu_of[i], pn_pick_cpu(run, PN_PIN_EACH, i));
		KUNIT_EXPECT_GT(test, a->loops[i], 0UL);
	}
}

static void pn_harness_reports_worker_error(struct kunit *test)
{
	struct pn_run *run = pn_test_run(test);
	struct pn_harness_arg *a;

	a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_EXPECT_EQ(test, pn_run_threads(run, 8, PN_PIN_ONE, 20,
					     pn_harness_worker, a), -EIO);
	KUNIT_EXPECT_EQ(test, atomic_read(&a->entered), 8);
	KUNIT_EXPECT_EQ(test, a->cpu_of[7], cpumask_first(cpu_online_mask));
}

static void pn_harness_abort_stops_phase(struct kunit *test)
{
	struct pn_run *run = pn_test_run(test);
	struct pn_harness_arg *a;

	a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, a);
	WRITE_ONCE(run->aborted, true);
	/* A 300 s phase returns at once when the run is aborted. */
	KUNIT_EXPECT_EQ(test, pn_run_threads(run, 2, PN_PIN_NONE, 300000,
					     pn_harness_worker, a), -EINTR);
	KUNIT_EXPECT_LT(test, run->phase_ns, 10ULL * NSEC_PER_SEC);
}

static void pn_pick_cpu_even_only_even(struct kunit *test)
{
	struct pn_run *run = pn_test_run(test);
	unsigned int i;

	for (i = 0; i < 16; i++) {
		unsigned int cpu = pn_pick_cpu(run, PN_PIN_EVEN, i);

		KUNIT_EXPECT_TRUE(test, cpu_online(cpu));
		KUNIT_EXPECT_EQ(test, cpu & 1, 0U);
		KUNIT_EXPECT_LT(test, pn_pick_cpu(run, PN_PIN_RANDOM, i), nr_cpu_ids);
	}
	KUNIT_EXPECT_EQ(test, pn_pick_cpu(run, PN_PIN_NONE, 0), nr_cpu_ids);
}

static void pn_bench_row_ratio(struct kunit *test)
{
	struct pn_run *run = pn_test_run(test);
	char *buf = kunit_kzalloc(test, 512, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, buf);
	seq_buf_init(&run->out, buf, 512);
	/* 3000 ops in 1 s against 1000 ops in 2 s: 6.00 times faster. */
	pn_bench_row(run, "mine", 3000, &(struct pn_span){ .ns = NSEC_PER_SEC },
		     "theirs", 1000, &(struct pn_span){ .ns = 2 * NSEC_PER_SEC });
	KUNIT_EXPECT_NOT_NULL(test, strstr(buf, " 3000 "));
	KUNIT_EXPECT_NOT_NULL(test, strstr(buf, " 500 "));
	KUNIT_EXPECT_NOT_NULL(test, strstr(buf, "6.00\n"));
	/* No windows, no window line. */
	KUNIT_EXPECT_NULL(test, strstr(buf, "# window"));
}

/*
 * Phases timed into one span add up, in time and in one cost-model
 * window; another span gets another window; a phase without
 * pn_span_next() goes into none.  The row names both windows.
 */
static void pn_harness_spans(struct kunit *test)
{
	struct pn_run *run = pn_test_run(test);
	struct pn_span s = {}, t = {};
	struct pn_harness_arg *a;
	char *buf = kunit_kzalloc(test, 512, GFP_KERNEL), want[96];
	u64 first = 0, second = 0;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	seq_buf_init(&run->out, buf, 512);
	for (i = 0; i < 3; i++) {
		a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, a);
		a->nr = 1;
		if (i < 2)
			pn_span_next(run, i ? &t : &s);
		KUNIT_ASSERT_EQ(test, pn_run_threads(run, 1, PN_PIN_NONE,
						     PN_HARNESS_MAX_MS,
						     pn_harness_worker, a), 0);
		KUNIT_EXPECT_NULL(test, run->span);
		if (!i)
			first = run->phase_ns;
		if (i == 1)
			second = run->phase_ns;
	}
	KUNIT_EXPECT_EQ(test, s.ns, first);
	KUNIT_EXPECT_EQ(test, t.ns, second);
	KUNIT_EXPECT_NE(test, s.win, 0U);
	KUNIT_EXPECT_NE(test, t.win, 0U);
	KUNIT_EXPECT_NE(test, s.win, t.win);
	/* A second phase into s: the same window, the times summed. */
	a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, a);
	a->nr = 1;
	i = s.win;
	pn_span_next(run, &s);
	KUNIT_ASSERT_EQ(test, pn_run_threads(run, 1, PN_PIN_NONE, PN_HARNESS_MAX_MS,
					     pn_harness_worker, a), 0);
	KUNIT_EXPECT_EQ(test, s.win, (u32)i);
	KUNIT_EXPECT_EQ(test, s.ns, first + run->phase_ns);
	pn_bench_row(run, "mine", 10, &s, "theirs", 20, &t);
	snprintf(want, sizeof(want), "# window %u ops 10 window %u ops 20\n", s.win, t.win);
	KUNIT_EXPECT_NOT_NULL(test, strstr(buf, want));
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

/* The mmcid debugfs file (torture/mmcid_pcpu_torture.c): strict lines. */
static void pn_mmcid_parse_test(struct kunit *test)
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

static struct kunit_case pn_control_cases[] = {
	KUNIT_CASE(pn_parse_rejects_bad_lines),
	KUNIT_CASE(pn_parse_rejects_overlong_and_binary),
	KUNIT_CASE(pn_parse_accepts_good_lines),
	KUNIT_CASE(pn_fault_window),
	KUNIT_CASE(pn_mmcid_parse_test),
	KUNIT_CASE(pn_parse_bounds_follow_nr_cpu_ids),
	KUNIT_CASE(pn_find_test_knows_percpu),
	KUNIT_CASE(pn_harness_runs_pinned_workers),
	KUNIT_CASE(pn_harness_reports_worker_error),
	KUNIT_CASE(pn_harness_abort_stops_phase),
	KUNIT_CASE(pn_pick_cpu_even_only_even),
	KUNIT_CASE(pn_bench_row_ratio),
	KUNIT_CASE(pn_harness_spans),
	{}
};

static struct kunit_suite pn_control_suite = {
	.name = "pcpu_next_control",
	.test_cases = pn_control_cases,
};

kunit_test_suite(pn_control_suite);
