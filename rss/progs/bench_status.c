// SPDX-License-Identifier: GPL-2.0
/*
 * bench_status: cost of reading /proc/self/status while the counters are
 * being updated.
 *
 * --faulters threads (default 4) run the fault loop of bench_fault
 * (mmap 1 MiB, write every page, munmap) while the main thread loops
 * open/read/close of /proc/self/status and parses VmRSS, for --seconds.
 * The status read sums every counter exactly (get_mm_counter_sum()), so
 * its cost is the counter's sum path under concurrent updates.
 *
 * Result: rss-bench status_read_4f READS_PER_SECOND ops/s
 * (4f: the number of faulting threads), and a "#" line with the fault
 * rate of the faulters in the same run.
 *
 * Usage: bench_status [--faulters F] [--seconds S]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include "rss_bench.h"

static char buf[16384];

/* VmRSS in kB, or -1. */
static long read_vmrss(void)
{
	ssize_t n, total = 0;
	char *p;
	int fd;

	fd = open("/proc/self/status", O_RDONLY);
	if (fd < 0)
		return -1;
	while ((n = read(fd, buf + total, sizeof(buf) - 1 - total)) > 0)
		total += n;
	close(fd);
	buf[total] = '\0';
	p = strstr(buf, "\nVmRSS:");
	return p ? strtol(p + 7, NULL, 10) : -1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "faulters", required_argument, NULL, 'f' },
		{ "seconds", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 }
	};
	static struct fault_worker w[MAX_THREADS];
	static int stop;
	pthread_barrier_t start;
	double secs = 2, t0, t1, end;
	int nfault = 4, c;
	long reads = 0, pages, rss = 0;
	char name[32];

	while ((c = getopt_long(argc, argv, "f:s:", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			nfault = parse_long(optarg, "--faulters", 0, MAX_THREADS);
			break;
		case 's':
			secs = parse_seconds(optarg, argv[0]);
			break;
		default:
			fprintf(stderr, "usage: %s [--faulters F] [--seconds S]\n", argv[0]);
			return 2;
		}
	}

	pthread_barrier_init(&start, NULL, nfault + 1);
	fault_start(w, nfault, &start, &stop);
	pthread_barrier_wait(&start);
	t0 = window_begin();
	end = t0 + secs;
	do {
		rss = read_vmrss();
		if (rss < 0) {
			fprintf(stderr, "%s: no VmRSS in /proc/self/status\n", argv[0]);
			fault_stop(w, nfault, &stop);
			return 1;
		}
		reads++;
	} while (now_sec() < end);
	t1 = window_end();
	pages = fault_stop(w, nfault, &stop);
	if (pages < 0)
		return 1;

	snprintf(name, sizeof(name), "status_read_%df", nfault);
	printf("# %s: %ld reads in %.3f s, last VmRSS %ld kB\n", name, reads, t1 - t0, rss);
	printf("# %s: fault rate of the %d faulters %.3f pages/s\n", name, nfault,
	       pages / (now_sec() - t0));
	print_rate(name, reads, t1 - t0);
	return 0;
}
