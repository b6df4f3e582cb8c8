// SPDX-License-Identifier: GPL-2.0
/*
 * bench_oom: cost of the OOM killer's badness scan, one oom_badness()
 * per task, as /proc/PID/oom_score runs it.
 *
 * In 7.2 proc_oom_score() (fs/proc/base.c) calls oom_badness(), the
 * per-task work of the OOM killer's scan, which reads the task's RSS with
 * the precise sums (get_mm_rss_sum() + get_mm_counter_sum(MM_SWAPENTS)):
 * one full counter sum per task scanned.
 *
 * --children N children (default 1000) each touch --pages P anonymous
 * pages (default 16; so their RSS is not zero), report ready (a byte on
 * a pipe) and block in read() on a second pipe whose write end only this
 * process holds: they exit on EOF when it is closed, or when this process
 * dies.  Their oom_score_adj is 0 (inherited; this process sets its own
 * to 0 first if it is not): at -1000 oom_badness() returns early.  Then
 * every child's oom_score is read once per scan, scans repeated until
 * --seconds have passed.
 *
 * oom_score is a single_open() seq_file (ONE() entry, proc_single_show()
 * looks the task up again on every show), and seq_read_iter() restarts
 * the record at offset 0 (m->index = 0, traverse(m, 0) returns at once),
 * so each child's file is opened once and every read is a pread() at 0,
 * which runs proc_oom_score() again.  This needs N descriptors:
 * RLIMIT_NOFILE is raised if needed; if that fails every read is
 * open/read/close instead, and the "#" line says so.
 *
 * Every read must parse as an integer >= 0 ("%lu\n") and at least one
 * score must be > 0 (0 is what oom_badness()'s early return shows; a
 * child with a few pages in a guest of any size scores 666).  A child
 * that dies makes its read fail (ESRCH) and the run with it.
 *
 * Result: rss-bench oom_scan_N SCANS_PER_SECOND ops/s
 * and a "#" line with scans, reads, seconds and reads per second.
 *
 * Usage: bench_oom [--children N] [--pages P] [--seconds S]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include "rss_bench.h"

#define MAX_CHILDREN	10000
#define MAX_PAGES	65536

static pid_t pids[MAX_CHILDREN];
static int fds[MAX_CHILDREN];
static char paths[MAX_CHILDREN][32];

/* A child: touch @pages anon pages, say ready, wait for EOF on @go_fd. */
static void child(int ready_fd, int go_fd, long pages)
{
	long ps = sysconf(_SC_PAGESIZE), i;
	char c = 'r';
	char *p;

	p = mmap(NULL, pages * ps, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		c = 'e';
	else
		for (i = 0; i < pages; i++)
			__atomic_store_n(p + i * ps, 1, __ATOMIC_RELAXED);
	if (write(ready_fd, &c, 1) != 1)
		_exit(3);
	close(ready_fd);
	while (read(go_fd, &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

/* SIGKILL and reap the first @n children. */
static void reap_children(int n)
{
	int i, st;

	for (i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	for (i = 0; i < n; i++)
		while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
			;
}

/* oom_score_adj of this process to 0, if it is not; 0 or -1. */
static int zero_oom_score_adj(void)
{
	char buf[16];
	ssize_t n;
	int fd;

	fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0) {
		close(fd);
		return -1;
	}
	buf[n] = '\0';
	if (strtol(buf, NULL, 10) != 0 && pwrite(fd, "0", 1, 0) != 1) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* Room for @need descriptors; 0 or -1. */
static int raise_nofile(rlim_t need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -1;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		rl.rlim_cur = need;
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
			rl.rlim_max = need;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			return -1;
	}
	return 0;
}

/* "%lu\n" of @n bytes, or -1. */
static long parse_score(const char *b, ssize_t n)
{
	long v = 0;
	ssize_t i;

	if (n < 2 || b[n - 1] != '\n')
		return -1;
	for (i = 0; i < n - 1; i++) {
		if (b[i] < '0' || b[i] > '9')
			return -1;
		v = v * 10 + (b[i] - '0');
	}
	return v;
}

/* Child @i's oom_score, or -1 (errno set if a syscall failed). */
static long read_score(int i)
{
	char buf[32];
	ssize_t n;
	int fd;

	errno = 0;
	if (fds[i] >= 0)
		return parse_score(buf, pread(fds[i], buf, sizeof(buf), 0));
	fd = open(paths[i], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	return parse_score(buf, n);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "children", required_argument, NULL, 'c' },
		{ "pages", required_argument, NULL, 'p' },
		{ "seconds", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int nchildren = 1000, c, i, forked = 0, ready = 0, failed = 0;
	int go[2], rdy[2], reopen = 0;
	long pages = 16, scans = 0, s, smin = -1, smax = 0, zeros = 0;
	double secs = 2, t0, t1, end;
	char name[32], buf[256];
	ssize_t n;

	while ((c = getopt_long(argc, argv, "c:p:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			nchildren = parse_long(optarg, "--children", 1, MAX_CHILDREN);
			break;
		case 'p':
			pages = parse_long(optarg, "--pages", 1, MAX_PAGES);
			break;
		case 's':
			secs = parse_seconds(optarg, argv[0]);
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc)
		goto usage;

	if (zero_oom_score_adj())
		printf("# %s: could not set oom_score_adj to 0: %s\n", argv[0],
		       strerror(errno));
	if (pipe2(go, O_CLOEXEC) || pipe2(rdy, O_CLOEXEC)) {
		perror("pipe");
		return 1;
	}
	fflush(stdout);
	for (i = 0; i < nchildren; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			fprintf(stderr, "%s: fork of child %d of %d: %s\n", argv[0],
				i + 1, nchildren, strerror(errno));
			close(go[1]);
			reap_children(i);
			return 1;
		}
		if (!pids[i]) {
			close(go[1]);
			close(rdy[0]);
			child(rdy[1], go[0], pages);
		}
		forked++;
	}
	close(go[0]);
	close(rdy[1]);
	/* one byte a child; EOF once every child has sent it or died */
	while (ready + failed < nchildren) {
		n = read(rdy[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (i = 0; i < n; i++) {
			if (buf[i] == 'r')
				ready++;
			else
				failed++;
		}
	}
	close(rdy[0]);
	if (ready != nchildren) {
		fprintf(stderr, "%s: %d of %d children ready (%d failed to map %ld pages)\n",
			argv[0], ready, nchildren, failed, pages);
		goto fail;
	}

	if (raise_nofile(nchildren + 64))
		reopen = 1;
	for (i = 0; i < nchildren; i++) {
		snprintf(paths[i], sizeof(paths[i]), "/proc/%d/oom_score", (int)pids[i]);
		fds[i] = -1;
		if (!reopen) {
			fds[i] = open(paths[i], O_RDONLY | O_CLOEXEC);
			if (fds[i] < 0 && (errno == EMFILE || errno == ENFILE)) {
				reopen = 1;
			} else if (fds[i] < 0) {
				perror(paths[i]);
				goto fail;
			}
		}
	}
	if (reopen)
		for (i = 0; i < nchildren; i++)
			if (fds[i] >= 0) {
				close(fds[i]);
				fds[i] = -1;
			}

	/* untimed first scan: validates, and allocates the seq_file buffers */
	for (i = 0; i < nchildren; i++) {
		s = read_score(i);
		if (s < 0)
			goto bad_read;
		if (smin < 0 || s < smin)
			smin = s;
		if (s > smax)
			smax = s;
		zeros += !s;
	}
	printf("# oom_scan: %d children of %ld pages, scores %ld..%ld (%ld zero), %s\n",
	       nchildren, pages, smin, smax, zeros,
	       reopen ? "open/read/close per read (no room for the descriptors)" :
			"one descriptor each, pread at 0");
	fflush(stdout);
	if (!smax) {
		fprintf(stderr, "%s: every oom_score is 0 (oom_score_adj -1000 or no mm?)\n",
			argv[0]);
		goto fail;
	}

	smax = 0;
	t0 = window_begin();
	end = t0 + secs;
	do {
		for (i = 0; i < nchildren; i++) {
			s = read_score(i);
			if (s < 0)
				goto bad_read;
			if (s > smax)
				smax = s;
		}
		scans++;
	} while (now_sec() < end);
	t1 = window_end();
	if (!smax) {
		fprintf(stderr, "%s: every oom_score read 0 in the timed scans\n", argv[0]);
		goto fail;
	}

	for (i = 0; i < nchildren; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	close(go[1]);
	reap_children(forked);

	snprintf(name, sizeof(name), "oom_scan_%d", nchildren);
	printf("# %s: %ld scans, %ld reads in %.3f s, %.3f reads/s\n", name, scans,
	       scans * nchildren, t1 - t0, scans * nchildren / (t1 - t0));
	print_rate(name, scans, t1 - t0);
	return 0;

bad_read:
	if (errno)
		fprintf(stderr, "%s: %s: %s\n", argv[0], paths[i], strerror(errno));
	else
		fprintf(stderr, "%s: %s: not an integer >= 0\n", argv[0], paths[i]);
fail:
	close(go[1]);
	reap_children(forked);
	return 1;
usage:
	fprintf(stderr, "usage: %s [--children N] [--pages P] [--seconds S]\n"
		"  --children N  children to scan (default 1000, max %d)\n"
		"  --pages P     anon pages each child touches (default 16)\n"
		"  --seconds S   time of the scans (default 2)\n",
		argv[0], MAX_CHILDREN);
	return 2;
}
