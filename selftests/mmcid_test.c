// SPDX-License-Identifier: GPL-2.0
/*
 * pcpu_next mmcid: per-mm storage indexed by mm_cid, driven from real
 * user threads through /sys/kernel/debug/pcpu_next/mmcid.
 *
 * N threads (the main thread is one of them, so the process has exactly N
 * threads) each do K adds.  After every add the thread compares the cid
 * the kernel used with the mm_cid the kernel publishes in the thread's
 * rseq area (glibc registers it; mm_cid is the u32 at offset 24 of struct
 * rseq).  The two are compared only when nothing moved: cpu_id and mm_cid
 * read before and after the write are equal, and the kernel ran the add
 * on that CPU.  Then: the final sum is exact, cids stay within the
 * scheduler's bounds, and the slots the kernel allocated follow the
 * largest cid (at most max(8, 2 * (largest + 1))).
 *
 * The bounds depend on who owns a cid, which a probe finds out first.
 * Two threads take turns on one CPU.  If the second one shows the
 * first one's cid, the CPU owns cids: 6.12, or 7.x in per-CPU mode.  If
 * it shows its own, tasks own them from fork to exit: 7.x.
 *
 * CPU-owned, 6.12: a cid is below the allowed CPUs, always.  Settled, it
 * is below min(N, allowed).  Right after threads move, a CPU keeps the
 * cid of a thread that left it until the 100 ms scan frees it.  So a
 * third cid can show up in a 2-thread process for a while.
 *
 * Task-owned, 7.x: a cid is below the possible CPUs, always.  Settled, it
 * is below max_cids = min(opt + opt / 4, possible), opt = min(N, P).  P,
 * the mm's allowed CPUs, is at most the possible CPUs, so that is used.
 * At 4 of 64 possible CPUs, 8 threads may hold cids up to 9.  With N at
 * most the allowed CPUs, the mm stays in per-task mode, and the N
 * settled cids must all differ.
 *
 * To settle, after the K adds the threads alternate a few ms of spinning
 * and sleeping.  Ticks run 6.12's scan; switch-ins let 7.x move a cid
 * below max_cids.  They add 0 until every thread's latest cid is below
 * the bound, for up to about 3 s.  The test demands that this happens.
 *
 * Every TEST runs in its own forked process, hence its own mm and its own
 * counter in the module.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/utsname.h>
#include <sys/rseq.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "pn_util.h"

#define MMCID_FILE	PN_DIR "/mmcid"
#define ADDS		300
#define SETTLE_ROUNDS	400	/* of about 8 ms each */
/*
 * cids in block 0: MMCID_B0 of the module, 8 since Linux 6.19, 4 before
 * (include/pcpu_next/compat.h).  By the kernel's version, not by the
 * probed owner: on 7.x an mm allowed one CPU is CPU-owned too.
 */
static int block0(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return 8;
	return major > 6 || (major == 6 && minor >= 19) ? 8 : 4;
}

/* Shared by the threads of one run (one run per forked test process). */
static pthread_barrier_t mc_barrier;
static int mc_last[8];		/* each thread's latest cid in the settle loop */
static int mc_bound;		/* settled cids are below it */
static int mc_n;
static int mc_settled;

struct mc_result {
	int cid;
	unsigned int cpu;
	long long sum;
	int maxcid;
	unsigned int slots;
	unsigned long mem;
};

static int mc_missing(void)
{
	return access(MMCID_FILE, F_OK) != 0;
}

/* A u32 of this thread's rseq area, read once (the kernel updates it). */
static uint32_t mc_rseq_read(unsigned int off)
{
	char *tp;

	__asm__ ("mov %%fs:0, %0" : "=r" (tp));
	return __atomic_load_n((uint32_t *)(tp + __rseq_offset + off),
			       __ATOMIC_RELAXED);
}

#define RSEQ_CPU_ID	4
#define RSEQ_MM_CID	24

/*
 * Is rseq registered?  glibc 2.36 (Debian 12) sets __rseq_size to 20, the
 * size of the fields it uses, but registers the original 32-byte area with
 * the kernel, whose node_id and mm_cid (offsets 20, 24) kernels >= 6.3 fill
 * in.  So only __rseq_size == 0 (not registered) is a reason to skip; a
 * stale mm_cid would show up as mismatches below.
 */
static int mc_rseq_ok(void)
{
	return __rseq_size > 0 && (int32_t)mc_rseq_read(RSEQ_CPU_ID) >= 0;
}

/* The number of possible CPUs, from a list such as "0-63" or "0-3,8-11". */
static int mc_possible(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	int n = 0, a, b, len;
	char buf[256], *p;

	if (!f)
		return -1;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	while (p && *p && *p != '\n') {
		if (sscanf(p, "%d%n", &a, &len) != 1)
			return -1;
		p += len;
		b = a;
		if (*p == '-' && sscanf(p + 1, "%d%n", &b, &len) == 1)
			p += 1 + len;
		if (b < a)
			return -1;
		n += b - a + 1;
		if (*p == ',')
			p++;
	}
	return n;
}

enum mc_owner { MC_CPU_OWNED, MC_TASK_OWNED, MC_PROBE_FAILED };

static const char *const mc_owner_name[] = { "cpu", "task", "?" };

static void *mc_probe_thread(void *arg)
{
	*(int *)arg = (int32_t)mc_rseq_read(RSEQ_MM_CID);
	return NULL;
}

/*
 * The probe, in a child process pinned to @cpu.  Three times: read this
 * thread's cid, start a thread, and wait for it.  The new thread runs
 * only while this one is off the CPU.  A CPU-owned cid is handed on to
 * it; a task-owned one never is.  Exits with an enum mc_owner.
 */
static void mc_probe_child(int cpu)
{
	int i, mine, other, shared = 0;
	pthread_t tid;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		_exit(MC_PROBE_FAILED);
	for (i = 0; i < 3; i++) {
		usleep(1000);
		mine = (int32_t)mc_rseq_read(RSEQ_MM_CID);
		other = -1;
		if (pthread_create(&tid, NULL, mc_probe_thread, &other) ||
		    pthread_join(tid, NULL) || mine < 0 || other < 0)
			_exit(MC_PROBE_FAILED);
		shared |= other == mine;
	}
	_exit(shared ? MC_CPU_OWNED : MC_TASK_OWNED);
}

/* Who owns a cid on this kernel: see the top of the file. */
static enum mc_owner mc_probe(int cpu)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return MC_PROBE_FAILED;
	if (!pid)
		mc_probe_child(cpu);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) > MC_PROBE_FAILED)
		return MC_PROBE_FAILED;
	return WEXITSTATUS(status);
}

/* One add through fd; 0 and *r filled, or -errno. */
static int mc_add(int fd, long long delta, struct mc_result *r)
{
	char buf[160];
	ssize_t n;
	int len;

	len = snprintf(buf, sizeof(buf), "add %lld\n", delta);
	if (pwrite(fd, buf, len, 0) != len)
		return -errno;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	if (sscanf(buf, "cid=%d cpu=%u sum=%lld maxcid=%d slots=%u mem=%lu\n",
		   &r->cid, &r->cpu, &r->sum, &r->maxcid, &r->slots,
		   &r->mem) != 6)
		return -EPROTO;
	return 0;
}

struct mc_thread {
	pthread_t tid;
	int idx;
	int cpu;		/* pin here, or -1 */
	int err;
	unsigned int stable;	/* adds where nothing moved */
	unsigned int mismatch;	/* of those, kernel cid != rseq mm_cid */
	int max_cid;		/* largest cid the kernel used */
	int max_slotcid;	/* largest maxcid reported */
	unsigned int slots;	/* slots at the largest maxcid */
	unsigned long mem;
	int first_bad_k, first_bad_u;
	int rounds;		/* settle rounds until the bound held */
};

static void mc_spin_ms(int ms)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

/* Every thread takes part in every round, so the barriers always match. */
static void mc_settle(struct mc_thread *t, int fd)
{
	struct mc_result r;
	int round, i, ok;

	for (round = 0; round < SETTLE_ROUNDS; round++) {
		mc_spin_ms(4);
		usleep(4000);
		mc_last[t->idx] = -1;
		if (fd >= 0 && !t->err) {
			t->err = mc_add(fd, 0, &r);
			if (!t->err)
				mc_last[t->idx] = r.cid;
		}
		pthread_barrier_wait(&mc_barrier);
		if (t->idx == 0) {
			for (ok = 1, i = 0; i < mc_n; i++)
				ok &= mc_last[i] < mc_bound;
			__atomic_store_n(&mc_settled, ok, __ATOMIC_RELAXED);
		}
		pthread_barrier_wait(&mc_barrier);
		if (__atomic_load_n(&mc_settled, __ATOMIC_RELAXED))
			break;
	}
	t->rounds = round;
}

static void *mc_worker(void *arg)
{
	struct mc_thread *t = arg;
	struct mc_result r;
	int fd, k;

	t->max_cid = -1;
	t->max_slotcid = -1;
	if (t->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(t->cpu, &set);
		if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
			t->err = -EINVAL;
	}
	fd = open(MMCID_FILE, O_RDWR);
	if (fd < 0 && !t->err)
		t->err = -errno;
	for (k = 0; k < ADDS && !t->err; k++) {
		uint32_t cpu0, cid0, cpu1, cid1;

		cpu0 = mc_rseq_read(RSEQ_CPU_ID);
		cid0 = mc_rseq_read(RSEQ_MM_CID);
		t->err = mc_add(fd, t->idx + 1, &r);
		cpu1 = mc_rseq_read(RSEQ_CPU_ID);
		cid1 = mc_rseq_read(RSEQ_MM_CID);
		if (t->err)
			break;
		if (r.cid > t->max_cid)
			t->max_cid = r.cid;
		if (r.maxcid >= t->max_slotcid) {
			t->max_slotcid = r.maxcid;
			t->slots = r.slots;
			t->mem = r.mem;
		}
		if (cpu0 == cpu1 && cid0 == cid1 && r.cpu == cpu0) {
			t->stable++;
			if (r.cid != (int)cid0 && !t->mismatch++) {
				t->first_bad_k = r.cid;
				t->first_bad_u = cid0;
			}
		}
	}
	mc_settle(t, fd);
	if (fd >= 0)
		close(fd);
	return NULL;
}

/*
 * One run with n threads; pinned: thread i on the i-th allowed CPU.  (A
 * plain function rather than a TEST_F fixture: the harness's fixture
 * wrapper trips -Wclobbered under this directory's -Werror.)
 */
static void mc_run(struct __test_metadata *_metadata, int n, bool pinned)
{
	int allowed, possible, bound, always, opt, i, j, cpus[CPU_SETSIZE], ncpu = 0;
	struct mc_thread th[8] = {};
	int owner;		/* enum mc_owner */
	int settled, same = 0;
	long long expect = 0;
	struct mc_result r;
	int max_cid = -1, max_slotcid = -1, fd;
	unsigned int stable = 0, slots = 0;
	unsigned long mem = 0;
	cpu_set_t set;

	if (mc_missing())
		SKIP(return, "pcpu_next not loaded");
	if (!mc_rseq_ok())
		SKIP(return, "rseq not registered (glibc.pthread.rseq=0?)");
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(set), &set));
	for (i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set))
			cpus[ncpu++] = i;
	allowed = ncpu;
	possible = mc_possible();
	ASSERT_LE(allowed, possible) TH_LOG("possible CPUs: %d", possible);
	owner = mc_probe(cpus[0]);
	ASSERT_NE(MC_PROBE_FAILED, owner) TH_LOG("the cid owner probe failed");
	if (owner == MC_TASK_OWNED) {
		/* 7.x: max_cids for P = possible, the largest P can be */
		opt = n < possible ? n : possible;
		bound = opt + opt / 4 < possible ? opt + opt / 4 : possible;
		always = possible;
	} else {
		/* 6.12: a CPU holds at most one cid of the mm */
		bound = n < allowed ? n : allowed;
		always = allowed;
	}
	mc_bound = bound;
	mc_n = n;
	ASSERT_EQ(0, pthread_barrier_init(&mc_barrier, NULL, n));

	for (i = 0; i < n; i++) {
		th[i].idx = i;
		th[i].cpu = pinned ? cpus[i % ncpu] : -1;
		expect += (long long)ADDS * (i + 1);
	}
	/*
	 * th[0] is the main thread itself: the process has exactly n threads.
	 * Pinned threads start on their CPU (the main thread moves first,
	 * while it is alone), which keeps migrations out of the measurement.
	 */
	if (pinned) {
		CPU_ZERO(&set);
		CPU_SET(th[0].cpu, &set);
		ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));
	}
	for (i = 1; i < n; i++) {
		pthread_attr_t attr;

		ASSERT_EQ(0, pthread_attr_init(&attr));
		if (pinned) {
			CPU_ZERO(&set);
			CPU_SET(th[i].cpu, &set);
			ASSERT_EQ(0, pthread_attr_setaffinity_np(&attr, sizeof(set), &set));
		}
		ASSERT_EQ(0, pthread_create(&th[i].tid, &attr, mc_worker, &th[i]));
		pthread_attr_destroy(&attr);
	}
	mc_worker(&th[0]);
	for (i = 1; i < n; i++)
		ASSERT_EQ(0, pthread_join(th[i].tid, NULL));

	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, th[i].err) TH_LOG("thread %d: %s", i, strerror(-th[i].err));
		EXPECT_EQ(0U, th[i].mismatch)
			TH_LOG("thread %d: %u of %u stable adds used another cid (first: kernel %d, rseq %d)",
			       i, th[i].mismatch, th[i].stable,
			       th[i].first_bad_k, th[i].first_bad_u);
		stable += th[i].stable;
		if (th[i].max_cid > max_cid)
			max_cid = th[i].max_cid;
		if (th[i].max_slotcid >= max_slotcid) {
			max_slotcid = th[i].max_slotcid;
			slots = th[i].slots;
			mem = th[i].mem;
		}
	}

	fd = open(MMCID_FILE, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, mc_add(fd, 0, &r));
	close(fd);
	EXPECT_EQ(expect, r.sum);

	settled = __atomic_load_n(&mc_settled, __ATOMIC_RELAXED);
	/* Per-task mode for sure: the settled cids are n different ones. */
	if (owner == MC_TASK_OWNED && n <= allowed && settled)
		for (i = 0; i < n; i++)
			for (j = i + 1; j < n; j++)
				same += mc_last[i] >= 0 && mc_last[i] == mc_last[j];

	TH_LOG("threads=%d pinned=%d allowed=%d possible=%d owner=%s stable=%u/%d largest_cid=%d (bound %d, always below %d) settled_after=%d rounds slots=%u mem=%lu",
	       n, pinned, allowed, possible, mc_owner_name[owner], stable,
	       n * ADDS, max_cid, bound, always, th[0].rounds, slots, mem);
	/* Most adds see no migration; demand a good share, not all. */
	EXPECT_LE(n * ADDS / 4, (int)stable);
	EXPECT_LE(0, max_cid);
	/* Always: below the allowed CPUs (6.12), the possible ones (7.x). */
	EXPECT_GT(always, max_cid);
	EXPECT_GT(always, r.maxcid);
	/* Steady state: every thread's cid below the bound. */
	EXPECT_EQ(1, settled)
		TH_LOG("cids did not come below %d within %d rounds", bound,
		       SETTLE_ROUNDS);
	EXPECT_EQ(0, same) TH_LOG("%d pairs of threads shared a task-owned cid", same);
	pthread_barrier_destroy(&mc_barrier);
	/* Memory follows the largest cid, in doubling blocks from block 0. */
	EXPECT_LE(r.maxcid + 1, (int)r.slots);
	EXPECT_GE(2 * (r.maxcid + 1) > block0() ? 2 * (r.maxcid + 1) : block0(),
		  (int)r.slots);
	EXPECT_LT(0UL, r.mem);
}

TEST(threads_1) { mc_run(_metadata, 1, false); }
TEST(threads_1_pinned) { mc_run(_metadata, 1, true); }
TEST(threads_2) { mc_run(_metadata, 2, false); }
TEST(threads_2_pinned) { mc_run(_metadata, 2, true); }
TEST(threads_4) { mc_run(_metadata, 4, false); }
TEST(threads_4_pinned) { mc_run(_metadata, 4, true); }
TEST(threads_8) { mc_run(_metadata, 8, false); }
TEST(threads_8_pinned) { mc_run(_metadata, 8, true); }

struct mc_bad {
	const char *what;
	const char *line;
	int err;
};

static const struct mc_bad mc_bad_lines[] = {
	{ "newline", "\n", EINVAL },
	{ "no number", "add\n", EINVAL },
	{ "garbage", "add x\n", EINVAL },
	{ "plus", "add +1\n", EINVAL },
	{ "hex", "add 0x1\n", EINVAL },
	{ "two blanks", "add  1\n", EINVAL },
	{ "trailing blank", "add 1 \n", EINVAL },
	{ "two lines", "add 1\nadd 1\n", EINVAL },
	{ "other verb", "sub 1\n", EINVAL },
	{ "too big", "add 2147483648\n", ERANGE },
	{ "too small", "add -2147483649\n", ERANGE },
	{ "too long", "add 000000000000000000000000000000000000000000000000000000000000001\n", E2BIG },
};

TEST(rejects_bad_input)
{
	struct mc_result r;
	struct stat st;
	char buf[64];
	unsigned int i;
	int fd;

	if (mc_missing())
		SKIP(return, "pcpu_next not loaded");
	ASSERT_EQ(0, stat(MMCID_FILE, &st));
	EXPECT_EQ(0600U, st.st_mode & 0777);

	fd = open(MMCID_FILE, O_RDWR);
	ASSERT_LE(0, fd);
	/* Nothing to read before the first add. */
	EXPECT_EQ(-1, pread(fd, buf, sizeof(buf), 0));
	EXPECT_EQ(ENODATA, errno);
	for (i = 0; i < ARRAY_SIZE(mc_bad_lines); i++) {
		const struct mc_bad *b = &mc_bad_lines[i];
		ssize_t n = pwrite(fd, b->line, strlen(b->line), 0);

		EXPECT_EQ(-1, n) TH_LOG("%s accepted", b->what);
		EXPECT_EQ(b->err, errno) TH_LOG("%s: errno %d", b->what, errno);
	}
	/* A write at an offset other than 0. */
	EXPECT_EQ(-1, pwrite(fd, "add 1\n", 6, 1));
	EXPECT_EQ(EINVAL, errno);
	/* Rejected lines added nothing. */
	ASSERT_EQ(0, mc_add(fd, 5, &r));
	EXPECT_EQ(5, r.sum);
	ASSERT_EQ(0, mc_add(fd, -7, &r));
	EXPECT_EQ(-2, r.sum);
	close(fd);
}

TEST_HARNESS_MAIN
