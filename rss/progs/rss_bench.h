/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the rss_stat benchmarks (header only, every program
 * stays one static binary built from one .c file).
 *
 * Every benchmark prints exactly one result line
 *	rss-bench NAME VALUE UNIT
 * (VALUE with 3 decimals; UNIT "ops/s", higher is better, or "bytes",
 * lower is better) and any number of "# " comment lines.  Time is
 * CLOCK_MONOTONIC.  The fault loop (mmap 1 MiB anon, write every page,
 * munmap) is shared by bench_fault and bench_status.
 */
#ifndef RSS_BENCH_H
#define RSS_BENCH_H

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#define FAULT_CHUNK	(1UL << 20)
#define MAX_THREADS	256

static inline double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline void sleep_sec(double s)
{
	struct timespec ts;

	if (s <= 0)
		return;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static inline double parse_seconds(const char *s, const char *prog)
{
	char *end;
	double v = strtod(s, &end);

	if (*end || !(v > 0) || v > 3600) {
		fprintf(stderr, "%s: bad --seconds '%s'\n", prog, s);
		exit(2);
	}
	return v;
}

static inline long parse_long(const char *s, const char *opt, long min, long max)
{
	char *end;
	long v = strtol(s, &end, 0);

	if (*end || v < min || v > max) {
		fprintf(stderr, "bad %s '%s' (want %ld..%ld)\n", opt, s, min, max);
		exit(2);
	}
	return v;
}

static inline void print_result(const char *name, double value, const char *unit)
{
	printf("rss-bench %s %.3f %s\n", name, value, unit);
	fflush(stdout);
}

/*
 * The timed window, for make rss's cost model (scripts/cost/pn_cost.c,
 * a QEMU plugin): a NOP the plugin recognises, nopl 0x4b4d4e50(%rax),
 * with RAX = (id << 1) | end.  Anywhere else it is a NOP.  The id is
 * the window's first begin in CLOCK_MONOTONIC nanoseconds: benchmarks
 * run one at a time, so no two windows of a boot share one.  Windows
 * with the same id add up (bench_reclaim times a part of each round).
 */
static unsigned long long window_id;

static inline void window_mark(unsigned long long v)
{
#ifdef __x86_64__
	asm volatile(".byte 0x0f, 0x1f, 0x80, 0x50, 0x4e, 0x4d, 0x4b"
		     : : "a"(v) : "memory");
#else
	(void)v;
#endif
}

static inline double window_begin(void)
{
	struct timespec ts;

	if (!window_id) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		window_id = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	}
	window_mark(window_id << 1);
	return now_sec();
}

static inline double window_end(void)
{
	double t = now_sec();

	window_mark(window_id << 1 | 1);
	return t;
}

/*
 * An ops/s result of a marked window: "# window ID ops N" first, so the
 * host can put the plugin's counts of window ID per op.
 */
static inline void print_rate(const char *name, double ops, double secs)
{
	printf("# window %llu ops %.0f\n", window_id, ops);
	print_result(name, ops / secs, "ops/s");
}

/* ---- the fault loop of bench_fault and bench_status ---- */

struct fault_worker {
	pthread_t tid;
	pthread_barrier_t *start;
	int *stop;
	unsigned long pages;		/* touched and unmapped */
	int err;
	char pad[64];			/* keep workers' counts apart */
};

static inline void *fault_loop(void *arg)
{
	struct fault_worker *w = arg;
	long ps = sysconf(_SC_PAGESIZE);
	unsigned long n = 0;
	size_t off;
	char *p;

	pthread_barrier_wait(w->start);
	while (!__atomic_load_n(w->stop, __ATOMIC_RELAXED)) {
		p = mmap(NULL, FAULT_CHUNK, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			w->err = errno;
			break;
		}
		for (off = 0; off < FAULT_CHUNK; off += ps)
			((volatile char *)p)[off] = 1;
		munmap(p, FAULT_CHUNK);
		n += FAULT_CHUNK / ps;
	}
	w->pages = n;
	return NULL;
}

/* Start @n fault workers waiting on @start (which counts @n + 1). */
static inline void fault_start(struct fault_worker *w, int n,
			       pthread_barrier_t *start, int *stop)
{
	int i, err;

	for (i = 0; i < n; i++) {
		w[i].start = start;
		w[i].stop = stop;
		w[i].pages = 0;
		w[i].err = 0;
		err = pthread_create(&w[i].tid, NULL, fault_loop, &w[i]);
		if (err) {
			fprintf(stderr, "pthread_create: %s\n", strerror(err));
			exit(1);
		}
	}
}

/* Stop and join the workers; returns the pages they faulted, or -1. */
static inline long fault_stop(struct fault_worker *w, int n, int *stop)
{
	unsigned long total = 0;
	int i, err = 0;

	__atomic_store_n(stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++) {
		pthread_join(w[i].tid, NULL);
		total += w[i].pages;
		if (w[i].err)
			err = w[i].err;
	}
	if (err) {
		fprintf(stderr, "fault worker: mmap: %s\n", strerror(err));
		return -1;
	}
	return total;
}

#endif /* RSS_BENCH_H */
