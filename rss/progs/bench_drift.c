// SPDX-License-Identifier: GPL-2.0
/*
 * bench_drift: how far the fast, approximate RSS read drifts from the
 * exact one for a thread that hops CPUs while it maps and unmaps.
 *
 * The fast read is the rss field of /proc/self/stat (field 24,
 * get_mm_rss(): on mainline percpu_counter_read_positive() of each
 * counter, which leaves out what every CPU still holds below the batch);
 * the exact read is VmRSS of /proc/self/status (get_mm_counter_sum() in
 * 7.2).  Both count MM_FILEPAGES + MM_ANONPAGES + MM_SHMEMPAGES, in pages.
 *
 * --rounds R rounds (default 2000).  Round r pins this (single-threaded)
 * process to the next CPU of its initial affinity mask, round robin
 * (sched_setaffinity), mmaps --pages P anonymous pages (default 31: one
 * below percpu_counter's smallest batch, 32, so that what a CPU adds can
 * stay there unfolded) and
 * writes every page; on odd rounds it then munmaps them and the region
 * kept from the round before, on even rounds it keeps them until the next
 * round.  So RSS goes up and down by P and 2P pages, and the increments
 * and decrements of one region happen on different CPUs, leaving per-CPU
 * deltas behind.  After every step (the writes, the munmap) both reads
 * are taken, fast first, and the largest |fast - exact| is kept.  At the
 * end everything is unmapped, read once more and the mask restored.
 * The /proc buffers are written before the loop, so that no fault
 * happens between the two reads of a pair.  With one CPU in the mask the
 * run is the same, and the drift is what that one CPU holds back; the
 * "#" line says so.
 *
 * Result: rss-bench drift_max PAGES pages (lower is better)
 * and a "#" line with rounds, CPUs used, the final fast and exact values
 * and the maximum.  A failed read or mmap makes the run fail.
 *
 * Usage: bench_drift [--rounds R] [--pages P]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include "rss_bench.h"
#include "rss_proc.h"

#define MAX_ROUNDS	10000000
#define MAX_PAGES	262144

static long page_size;
static char status_buf[16384];
static char stat_buf[4096];

/* Field 24 of /proc/self/stat (rss, in pages); -1 on error. */
static long stat_rss(void)
{
	if (read_file("/proc/self/stat", stat_buf, sizeof(stat_buf)) <= 0)
		return -1;
	return stat_field_rss(stat_buf);
}

/* VmRSS of /proc/self/status in pages; -1 on error. */
static long status_rss(void)
{
	const char *p = status_buf;

	if (read_file("/proc/self/status", status_buf, sizeof(status_buf)) <= 0)
		return -1;
	while (p && *p) {
		if (!strncmp(p, "VmRSS:", 6))
			return strtol(p + 6, NULL, 10) * 1024 / page_size;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

struct drift {
	long fast;
	long exact;
	long max;
	long max_round;
};

/* Read both, fast first; track the largest difference.  0 or -1. */
static int sample(struct drift *d, long round)
{
	long diff;

	d->fast = stat_rss();
	if (d->fast < 0) {
		fprintf(stderr, "bench_drift: no rss field in /proc/self/stat\n");
		return -1;
	}
	d->exact = status_rss();
	if (d->exact < 0) {
		fprintf(stderr, "bench_drift: no VmRSS in /proc/self/status\n");
		return -1;
	}
	diff = labs(d->fast - d->exact);
	if (diff > d->max) {
		d->max = diff;
		d->max_round = round;
	}
	return 0;
}

static char *map_touch(long pages)
{
	char *p;
	long i;

	p = mmap(NULL, pages * page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("bench_drift: mmap");
		return NULL;
	}
	for (i = 0; i < pages; i++)
		__atomic_store_n(p + i * page_size, 1, __ATOMIC_RELAXED);
	return p;
}

/* Run on @cpu only; 1 if sched_getcpu() does not show it after all. */
static int pin(int cpu)
{
	cpu_set_t set;
	int tries;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "bench_drift: sched_setaffinity(cpu %d): %s\n",
			cpu, strerror(errno));
		return -1;
	}
	for (tries = 0; sched_getcpu() != cpu; tries++) {
		if (tries == 100)
			return 1;
		sched_yield();
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "pages", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	static int cpus[CPU_SETSIZE];
	struct drift d = { .max = 0, .max_round = -1 };
	long rounds = 2000, pages = 31, r, offcpu = 0;
	int ncpus = 0, used, c, cpu, ret;
	char *kept = NULL, *p;
	cpu_set_t mask;

	while ((c = getopt_long(argc, argv, "r:p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			rounds = parse_long(optarg, "--rounds", 1, MAX_ROUNDS);
			break;
		case 'p':
			pages = parse_long(optarg, "--pages", 1, MAX_PAGES);
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc)
		goto usage;
	page_size = sysconf(_SC_PAGESIZE);

	if (sched_getaffinity(0, sizeof(mask), &mask)) {
		perror("sched_getaffinity");
		return 1;
	}
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &mask))
			cpus[ncpus++] = cpu;
	if (!ncpus) {
		fprintf(stderr, "%s: empty affinity mask\n", argv[0]);
		return 1;
	}
	used = rounds < ncpus ? rounds : ncpus;

	/* fault the buffers and the stack in now, not between two reads */
	memset(status_buf, 0, sizeof(status_buf));
	memset(stat_buf, 0, sizeof(stat_buf));
	if (sample(&d, -1))
		return 1;
	d.max = 0;
	d.max_round = -1;

	for (r = 0; r < rounds; r++) {
		ret = pin(cpus[r % ncpus]);
		if (ret < 0)
			return 1;
		offcpu += ret;
		p = map_touch(pages);
		if (!p || sample(&d, r))
			return 1;
		if (r & 1) {
			munmap(kept, pages * page_size);
			munmap(p, pages * page_size);
			kept = NULL;
			if (sample(&d, r))
				return 1;
		} else {
			kept = p;
		}
	}
	if (kept)
		munmap(kept, pages * page_size);
	if (sample(&d, rounds))
		return 1;
	sched_setaffinity(0, sizeof(mask), &mask);

	printf("# drift_max: %ld rounds of %ld pages, %d CPUs used (%ld online)%s, ",
	       rounds, pages, used, sysconf(_SC_NPROCESSORS_ONLN),
	       ncpus == 1 ? ", one CPU only: the drift is the batch remainder of one CPU" : "");
	printf("final fast %ld exact %ld pages, max |fast - exact| %ld pages (round %ld)\n",
	       d.fast, d.exact, d.max, d.max_round);
	if (offcpu)
		printf("# drift_max: %ld rounds did not run on the CPU they were pinned to\n",
		       offcpu);
	print_result("drift_max", d.max, "pages");
	return 0;
usage:
	fprintf(stderr, "usage: %s [--rounds R] [--pages P]\n"
		"  --rounds R  rounds, each on the next CPU (default 2000)\n"
		"  --pages P   anon pages mapped and written a round (default 31)\n",
		argv[0]);
	return 2;
}
