// SPDX-License-Identifier: GPL-2.0
/*
 * cost_probe: work whose cost-model counts are known, one marked window
 * each, so that a boot under the cost plugin (scripts/cost/pn_cost.c)
 * can check what it counted (scripts/cost-check.sh):
 *
 *	probe_lock   LOCK_OPS locked adds on one line: locked = LOCK_OPS
 *	probe_rep    one `rep stosb` of REP_BYTES into a warm buffer:
 *	             raw - insns = REP_BYTES - 1
 *	probe_llc    a read of every line of LLC_BYTES, written before the
 *	             window (more than any modeled LLC of up to 8 vCPUs):
 *	             llc = LLC_BYTES / 64
 *	probe_hit    the same read of the first HIT_BYTES, read just before
 *	             (in the LLC, not in L2): llc = 0
 *	probe_xfer   two threads on two CPUs take turns writing one line,
 *	             XFER_ROUNDS turns each: each reads it from the other
 *	             (xfer = 2 * XFER_ROUNDS), then writes the copy both
 *	             hold (upg = 2 * XFER_ROUNDS).  The spin PAUSEs: under
 *	             QEMU that yields to the next vCPU
 *	probe_split  two threads on CPUs 0 and 1 call one function
 *	             SPLIT_CALLS times each, on their own stacks: each
 *	             vCPU runs its half, and no line moves
 *
 * Each prints "# window ID ops 1" and "rss-bench NAME V ops/s"; the
 * counts are per window.  x86-64 only (the marker and the asm).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>

#include "rss_bench.h"

#define LOCK_OPS	10000
#define REP_BYTES	(1 << 20)
#define LLC_BYTES	(64 << 20)
#define XFER_ROUNDS	1000
#define HIT_BYTES	(4 << 20)
#define SPLIT_CALLS	200000

/* each on a line of its own; only touched by atomics */
static long turn __attribute__((aligned(64)));
static long started __attribute__((aligned(64)));
static long split_ready __attribute__((aligned(64)));
static long split_go __attribute__((aligned(64)));

static void result(const char *name, double t0)
{
	double t1 = window_end();

	print_rate(name, 1, t1 - t0);
	window_id = 0;			/* the next window is another */
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("sched_setaffinity");
		exit(1);
	}
}

static void *ponger(void *arg)
{
	long i;

	pin(1);
	__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
	for (i = 0; i < XFER_ROUNDS; i++) {
		while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != 2 * i + 1)
			__builtin_ia32_pause();
		__atomic_store_n(&turn, 2 * i + 2, __ATOMIC_RELEASE);
	}
	return arg;
}

/* Stack work only: one block of code that both CPUs run. */
__attribute__((noinline)) static long split_f(long x)
{
	volatile long a[4];

	a[0] = x;
	a[1] = x + 1;
	a[2] = a[0] + a[1];
	a[3] = a[2] * 3;
	return a[3];
}

static long split_run(void)
{
	long i, s = 0;

	for (i = 0; i < SPLIT_CALLS; i++)
		s += split_f(i);
	return s;
}

static void *splitter(void *arg __attribute__((unused)))
{
	pin(1);
	__atomic_store_n(&split_ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&split_go, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
	return (void *)split_run();
}

int main(void)
{
	static long counter __attribute__((aligned(64)));
	unsigned char *buf = malloc(LLC_BYTES);
	unsigned long sum = 0;
	pthread_t t;
	size_t n;
	double t0;
	void *p;
	long i;

	if (!buf || sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "cost_probe: needs 64 MiB and two online CPUs\n");
		return 1;
	}
	memset(buf, 1, LLC_BYTES);	/* faulted in, outside every window */
	pin(0);

	t0 = window_begin();
	for (i = 0; i < LOCK_OPS; i++)
		__atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
	result("probe_lock", t0);

	p = buf;
	n = REP_BYTES;
	t0 = window_begin();
	asm volatile("rep stosb" : "+D"(p), "+c"(n) : "a"(0) : "memory");
	result("probe_rep", t0);

	for (i = 0; i < LLC_BYTES; i += 64)	/* the last write wins the LLC */
		__atomic_store_n(&buf[i], 2, __ATOMIC_RELAXED);
	t0 = window_begin();
	for (i = 0; i < LLC_BYTES; i += 64)
		sum += __atomic_load_n(&buf[i], __ATOMIC_RELAXED);
	result("probe_llc", t0);

	for (i = 0; i < HIT_BYTES; i += 64)
		sum += __atomic_load_n(&buf[i], __ATOMIC_RELAXED);
	t0 = window_begin();
	for (i = 0; i < HIT_BYTES; i += 64)
		sum += __atomic_load_n(&buf[i], __ATOMIC_RELAXED);
	result("probe_hit", t0);

	if (pthread_create(&t, NULL, ponger, NULL)) {
		fprintf(stderr, "cost_probe: pthread_create failed\n");
		return 1;
	}
	/* both threads on their CPUs before the window */
	while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) != 1)
		__builtin_ia32_pause();
	t0 = window_begin();
	for (i = 0; i < XFER_ROUNDS; i++) {
		__atomic_store_n(&turn, 2 * i + 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != 2 * i + 2)
			__builtin_ia32_pause();
	}
	result("probe_xfer", t0);
	pthread_join(t, NULL);

	if (pthread_create(&t, NULL, splitter, NULL)) {
		fprintf(stderr, "cost_probe: pthread_create failed\n");
		return 1;
	}
	while (!__atomic_load_n(&split_ready, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
	t0 = window_begin();
	__atomic_store_n(&split_go, 1, __ATOMIC_RELEASE);
	sum += split_run();
	pthread_join(t, &p);
	result("probe_split", t0);
	sum += (unsigned long)p;
	printf("# cost_probe: sum %lu, counter %ld\n", sum, counter);
	return 0;
}
