// SPDX-License-Identifier: GPL-2.0
/*
 * pcpu_next under the kernel's fail-nth fault injection, from user space,
 * the way syzkaller drives it: write N to /proc/thread-self/fail-nth, make
 * one system call, read the file back (0: the N-th fault point of the call
 * was failed; N > 0 left: the call has fewer than N fault points).  N runs
 * from 1 until a call sees no injected failure; every call must succeed or
 * fail with its documented error, and the state afterwards is checked.
 *
 * Needs CONFIG_FAULT_INJECTION (the file exists) and failslab /
 * fail_page_alloc with ignore-gfp-wait=N (the test VMs set that; else most
 * allocations are not fault points and the first N finds none), else
 * SKIP.
 *
 * mmcid_first_add: every N in a fresh process (a new mm): the first add of
 * a process creates its counter (mmu_notifier, storage, registry entry)
 * and the storage of its cid; it may fail with ENOMEM, then a second add
 * without faults must work, and the sum must be exactly what was accepted.
 *
 * control_start: a control line that starts a short alloc stress; it may
 * fail with ENOMEM (then no run started), else the run must end in PASS.
 */
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "pn_util.h"

#define MAX_NTH		400U

/*
 * The fail-nth file of this thread, opened before arming: an open (or any
 * other system call) made while armed would consume the fault points.
 * Reading and writing it allocate nothing.
 */
static int nth_open(void)
{
	return open("/proc/thread-self/fail-nth", O_RDWR);
}

static bool nth_arm(int fd, unsigned int n)
{
	char buf[16];
	int len;

	len = snprintf(buf, sizeof(buf), "%u", n);
	return pwrite(fd, buf, len, 0) == len;
}

/* Disarm; 1 if the failure was injected, 0 if not, -1 on error. */
static int nth_disarm(int fd)
{
	char buf[16] = "";
	int left;
	ssize_t n;

	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0 || sscanf(buf, "%d", &left) != 1)
		left = -1;
	if (pwrite(fd, "0", 1, 0) != 1)
		left = -1;
	return left < 0 ? -1 : left == 0;
}

static bool have_module(void)
{
	return access(PN_DIR "/mmcid", W_OK) == 0;
}

/*
 * Child of mmcid_first_add: exit status 0 = fault injected, sum right;
 * 1 = no fault point reached at this N (done); 2.. = a failed check.
 */
static int mmcid_child(unsigned int nth)
{
	long long want = 0, sum = -1;
	char buf[256], *p;
	int fd, nfd, injected;
	ssize_t r;

	fd = open(PN_DIR "/mmcid", O_RDWR);
	nfd = nth_open();
	if (fd < 0 || nfd < 0)
		return 2;
	if (!nth_arm(nfd, nth))
		return 3;
	r = write(fd, "add 5", 5);
	injected = nth_disarm(nfd);
	if (injected < 0)
		return 4;
	if (r == 5)
		want += 5;
	else if (errno != ENOMEM)
		return 5;
	if (pwrite(fd, "add 7", 5, 0) != 5)
		return 6;
	want += 7;
	r = pread(fd, buf, sizeof(buf) - 1, 0);
	if (r <= 0)
		return 7;
	buf[r] = '\0';
	p = strstr(buf, "sum=");
	if (!p || sscanf(p, "sum=%lld", &sum) != 1 || sum != want)
		return 8;
	close(fd);
	close(nfd);
	return injected ? 0 : 1;
}

TEST(mmcid_first_add)
{
	unsigned int nth, points = 0;
	int status;
	pid_t pid;

	if (!have_module())
		SKIP(return, "pcpu_next not loaded");
	if (access("/proc/thread-self/fail-nth", W_OK))
		SKIP(return, "no fail-nth (CONFIG_FAULT_INJECTION off)");
	for (nth = 1; nth <= MAX_NTH; nth++) {
		pid = fork();
		ASSERT_GE(pid, 0);
		if (!pid)
			_exit(mmcid_child(nth));
		ASSERT_EQ(waitpid(pid, &status, 0), pid);
		ASSERT_TRUE(WIFEXITED(status));
		if (WEXITSTATUS(status) == 1)
			break;
		ASSERT_EQ(WEXITSTATUS(status), 0)
			TH_LOG("nth=%u: check %d failed", nth, WEXITSTATUS(status));
		points++;
	}
	ASSERT_LE(nth, MAX_NTH);
	if (points == 0)
		SKIP(return, "no fault point: failslab/ignore-gfp-wait is on");
	printf("# mmcid first add: %u fault points, every run consistent\n",
	       points);
}

/* The last stress summary line (without the newline) into line. */
static int last_summary(char *line, size_t size)
{
	static char buf[65536];
	char *p, *last = NULL;

	if (pn_read("stress", buf, sizeof(buf)) < 0)
		return -1;
	for (p = strstr(buf, "stress test="); p; p = strstr(p + 1, "stress test="))
		last = p;
	if (!last)
		return -1;
	snprintf(line, size, "%.*s", (int)strcspn(last, "\n"), last);
	return 0;
}

TEST(control_start)
{
	static const char cmd[] = "test=alloc ms=20 threads=2\n";
	unsigned int nth, points = 0, started = 0;
	int injected, err, nfd;
	char line[512];

	if (!have_module())
		SKIP(return, "pcpu_next not loaded");
	if (access("/proc/thread-self/fail-nth", W_OK))
		SKIP(return, "no fail-nth (CONFIG_FAULT_INJECTION off)");
	nfd = nth_open();
	ASSERT_GE(nfd, 0);
	for (nth = 1; nth <= MAX_NTH; nth++) {
		int fd;

		ASSERT_EQ(pn_wait_idle("stress", 60), 0);
		fd = open(PN_DIR "/stress", O_WRONLY);
		ASSERT_GE(fd, 0);
		ASSERT_TRUE(nth_arm(nfd, nth));
		err = write(fd, cmd, sizeof(cmd) - 1) == sizeof(cmd) - 1 ? 0 : -errno;
		injected = nth_disarm(nfd);
		close(fd);
		ASSERT_GE(injected, 0);
		if (err) {
			ASSERT_EQ(err, -ENOMEM) TH_LOG("nth=%u: errno %d", nth, -err);
		} else {
			started++;
			ASSERT_EQ(pn_wait_idle("stress", 60), 0);
			ASSERT_EQ(last_summary(line, sizeof(line)), 0);
			ASSERT_NE(strstr(line, " PASS"), NULL) TH_LOG("nth=%u: %s", nth, line);
		}
		if (!injected)
			break;
		points++;
	}
	close(nfd);
	ASSERT_LE(nth, MAX_NTH);
	/* The control plane still works after every injected failure. */
	ASSERT_EQ(pn_write("stress", cmd, sizeof(cmd) - 1), 0);
	ASSERT_EQ(pn_wait_idle("stress", 60), 0);
	printf("# control line start: %u fault points, %u runs started\n",
	       points, started);
}

TEST_HARNESS_MAIN
