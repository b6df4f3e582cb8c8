// SPDX-License-Identifier: GPL-2.0
/*
 * bench_fault: page-fault throughput of T threads of one process.
 *
 * Each thread loops: mmap 1 MiB anonymous, write one byte per page (one
 * fault and one MM_ANONPAGES increment each), munmap (one batched
 * decrement per page table).  All threads start on a barrier; the main
 * thread stops them through a shared flag after --seconds.  With T > 1
 * the mm has several users, so this is the counter's shared (per-CPU or
 * per-cid) update path.
 *
 * Result: rss-bench fault_T PAGES_PER_SECOND ops/s
 *
 * Usage: bench_fault [--threads T] [--seconds S]
 */
#define _GNU_SOURCE
#include <getopt.h>
#include "rss_bench.h"

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "seconds", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 }
	};
	static struct fault_worker w[MAX_THREADS];
	static int stop;
	pthread_barrier_t start;
	double secs = 2, t0, t1;
	int nthreads = 1, c;
	char name[32];
	long pages;

	while ((c = getopt_long(argc, argv, "t:s:", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			nthreads = parse_long(optarg, "--threads", 1, MAX_THREADS);
			break;
		case 's':
			secs = parse_seconds(optarg, argv[0]);
			break;
		default:
			fprintf(stderr, "usage: %s [--threads T] [--seconds S]\n", argv[0]);
			return 2;
		}
	}

	pthread_barrier_init(&start, NULL, nthreads + 1);
	fault_start(w, nthreads, &start, &stop);
	pthread_barrier_wait(&start);
	t0 = window_begin();
	sleep_sec(secs);
	pages = fault_stop(w, nthreads, &stop);
	t1 = window_end();
	if (pages < 0)
		return 1;

	snprintf(name, sizeof(name), "fault_%d", nthreads);
	printf("# %s: %ld pages in %.3f s, %d threads\n", name, pages, t1 - t0, nthreads);
	print_rate(name, pages, t1 - t0);
	return 0;
}
