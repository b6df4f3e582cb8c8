// SPDX-License-Identifier: GPL-2.0
/*
 * bench_thread: cost of an mm gaining its second user.
 *
 * Loop for --seconds: fork a child that creates ONE pthread, which writes
 * one byte of a page-aligned buffer the parent allocated (a COW fault,
 * counted while the mm has two users), joins it and _exit(0)s; the parent
 * waitpid()s.  Against bench_fork --mode exit this isolates what a
 * counter that starts single-threaded pays when it has to become a shared
 * (per-CPU, per-cid, tree...) counter.
 *
 * Result: rss-bench thread_once PROCESSES_PER_SECOND ops/s
 *
 * Usage: bench_thread [--seconds S]
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <sys/wait.h>
#include "rss_bench.h"

static char *page;

static void *thread_fn(void *arg)
{
	((volatile char *)page)[0] = 1;
	return arg;
}

static void child(void)
{
	pthread_t tid;

	if (pthread_create(&tid, NULL, thread_fn, NULL))
		_exit(1);
	if (pthread_join(tid, NULL))
		_exit(1);
	_exit(0);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 }
	};
	double secs = 2, t0, t1, end;
	long n = 0, ps = sysconf(_SC_PAGESIZE);
	pid_t pid;
	int c, st;

	while ((c = getopt_long(argc, argv, "s:", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			secs = parse_seconds(optarg, argv[0]);
			break;
		default:
			fprintf(stderr, "usage: %s [--seconds S]\n", argv[0]);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "usage: %s [--seconds S]\n", argv[0]);
		return 2;
	}
	if (posix_memalign((void **)&page, ps, ps)) {
		fprintf(stderr, "%s: out of memory\n", argv[0]);
		return 1;
	}
	memset(page, 0, ps);
	fflush(stdout);

	t0 = window_begin();
	end = t0 + secs;
	do {
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (!pid)
			child();
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "%s: child failed (status %#x)\n", argv[0], st);
			return 1;
		}
		n++;
	} while (now_sec() < end);
	t1 = window_end();

	printf("# thread_once: %ld processes in %.3f s\n", n, t1 - t0);
	print_rate("thread_once", n, t1 - t0);
	return 0;
}
