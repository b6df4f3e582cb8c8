// SPDX-License-Identifier: GPL-2.0
/*
 * bench_mem: kernel memory per mm, as /proc/meminfo sees it.
 *
 * One round: read /proc/meminfo, fork --children K children that each
 * start (--threads-per-child - 1) extra threads and then pause(), wait
 * until every child is ready (a byte on a pipe), let the system settle
 * for --seconds, read /proc/meminfo again, SIGKILL and reap the children.
 * --rounds R rounds (default 3); every figure is the median over rounds.
 * The result is the growth per child of the kernel memory /proc/meminfo
 * accounts exactly: Percpu (the per-CPU allocator's populated pages: the
 * rss_stat counters and mm_cid of mainline, the chunks of the library),
 * Slab (mm_struct, task_struct, the library's slab objects), KernelStack
 * and PageTables.  MemFree is printed on a "#" line only: it moves with
 * the page allocator's per-CPU lists by megabytes either way and told
 * nothing.  Percpu moves in populated pages, so K must be large enough
 * for the counters of K mms to fill pages (the guest uses K = 512), and
 * the bench runs first after boot, before the fork benchmarks leave
 * populated-but-free per-CPU pages and cached objects behind.
 *
 * Result: rss-bench mem_per_mm|mem_per_mm_Nt BYTES_PER_CHILD bytes
 * (Nt: N threads per child, for N > 1; lower is better)
 *
 * Usage: bench_mem [--children K] [--threads-per-child N] [--rounds R]
 *                  [--seconds S]
 *   --seconds S   settle time before the second reading (default 0.2)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <sys/wait.h>
#include "rss_bench.h"

#define MAX_CHILDREN	4096
#define MAX_ROUNDS	15

static const char *const fields[] = {
	"MemFree", "Percpu", "Slab", "SUnreclaim", "KernelStack", "PageTables",
};

enum { MEMFREE, PERCPU, SLAB, SUNRECLAIM, KSTACK, PGTABLES };

#define NFIELDS ((int)(sizeof(fields) / sizeof(fields[0])))

/* kB of each field, -1 if missing. */
static int read_meminfo(long *kb)
{
	static char buf[16384];
	ssize_t n, total = 0;
	unsigned int i;
	int fd;

	fd = open("/proc/meminfo", O_RDONLY);
	if (fd < 0)
		return -1;
	while ((n = read(fd, buf + total, sizeof(buf) - 1 - total)) > 0)
		total += n;
	close(fd);
	buf[total] = '\0';
	for (i = 0; i < NFIELDS; i++) {
		size_t len = strlen(fields[i]);
		char *p = buf;

		kb[i] = -1;
		while ((p = strstr(p, fields[i]))) {
			if ((p == buf || p[-1] == '\n') && p[len] == ':') {
				kb[i] = strtol(p + len + 1, NULL, 10);
				break;
			}
			p += len;
		}
	}
	return kb[0] < 0 ? -1 : 0;
}

static void *idle_thread(void *arg)
{
	for (;;)
		pause();
	return arg;
}

static void child(int ready_fd, int nthreads)
{
	pthread_t tid;
	int i;

	for (i = 1; i < nthreads; i++)
		if (pthread_create(&tid, NULL, idle_thread, NULL))
			_exit(1);
	if (write(ready_fd, "r", 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One round; @delta: growth of each field in bytes per child. */
static int round_once(int nchildren, int nthreads, double secs, double *delta)
{
	static pid_t pids[MAX_CHILDREN];
	long before[NFIELDS], after[NFIELDS];
	int i, c, p[2], ready = 0, err = 0;
	unsigned int f;
	char b;

	if (pipe(p)) {
		perror("pipe");
		return -1;
	}
	fflush(stdout);
	if (read_meminfo(before)) {
		fprintf(stderr, "cannot read MemFree from /proc/meminfo\n");
		return -1;
	}
	for (i = 0; i < nchildren; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("fork");
			err = 1;
			break;
		}
		if (!pids[i]) {
			close(p[0]);
			child(p[1], nthreads);
		}
	}
	close(p[1]);
	while (ready < i && read(p[0], &b, 1) == 1)
		ready++;
	close(p[0]);
	if (ready < i) {
		fprintf(stderr, "only %d of %d children started\n", ready, i);
		err = 1;
	}
	sleep_sec(secs);
	if (read_meminfo(after))
		err = 1;
	for (c = 0; c < i; c++)
		kill(pids[c], SIGKILL);
	for (c = 0; c < i; c++)
		waitpid(pids[c], NULL, 0);
	for (f = 0; f < NFIELDS; f++)
		delta[f] = (before[f] < 0 || after[f] < 0) ? 0 :
			   (after[f] - before[f]) * 1024.0 / nchildren;
	delta[0] = -delta[0];	/* MemFree: the drop */
	return err ? -1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "children", required_argument, NULL, 'c' },
		{ "threads-per-child", required_argument, NULL, 't' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "seconds", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 }
	};
	double delta[MAX_ROUNDS][NFIELDS], v[MAX_ROUNDS], result = 0;
	int nchildren = 64, nthreads = 1, rounds = 3, c, r;
	double secs = 0.2;
	long probe[NFIELDS];
	char name[32];
	unsigned int f;

	while ((c = getopt_long(argc, argv, "c:t:r:s:", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			nchildren = parse_long(optarg, "--children", 1, MAX_CHILDREN);
			break;
		case 't':
			nthreads = parse_long(optarg, "--threads-per-child", 1, 64);
			break;
		case 'r':
			rounds = parse_long(optarg, "--rounds", 1, MAX_ROUNDS);
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
	if (nthreads > 1)
		snprintf(name, sizeof(name), "mem_per_mm_%dt", nthreads);
	else
		snprintf(name, sizeof(name), "mem_per_mm");

	for (r = 0; r < rounds; r++)
		if (round_once(nchildren, nthreads, secs, delta[r]))
			return 1;

	read_meminfo(probe);
	printf("# %s: %d children, %d thread%s each, %d rounds, settled %.3f s\n",
	       name, nchildren, nthreads, nthreads > 1 ? "s" : "", rounds, secs);
	printf("# %s: MemFree drop per child, each round:", name);
	for (r = 0; r < rounds; r++)
		printf(" %.0f", delta[r][0]);
	printf("\n");
	for (r = 0; r < rounds; r++)
		v[r] = delta[r][PERCPU] + delta[r][SLAB] + delta[r][KSTACK] + delta[r][PGTABLES];
	result = median(v, rounds);
	for (f = 1; f < NFIELDS; f++) {
		for (r = 0; r < rounds; r++)
			v[r] = delta[r][f];
		if (probe[f] >= 0)
			printf("# %s: %s delta per child %.3f bytes (median)\n",
			       name, fields[f], median(v, rounds));
	}
	print_result(name, result, "bytes");
	return 0;
usage:
	fprintf(stderr,
		"usage: %s [--children K] [--threads-per-child N] [--rounds R] [--seconds S]\n",
		argv[0]);
	return 2;
}
