// SPDX-License-Identifier: GPL-2.0
/*
 * bench_tick: what the kernel spends per timer interrupt on the CPU of a
 * busy thread of a multi-threaded process.
 *
 * A process of --threads T (default 4) threads: T - 1 sleep, the main
 * thread spins in user mode for --loops L iterations of a
 * two-instruction loop (dec; jnz).  Each timer tick on its CPU accounts
 * the running task; with TASK_XACCT that reads the mm's RSS
 * (account_process_tick() -> acct_account_cputime() ->
 * __acct_update_integrals() -> get_mm_rss()), the fast read of every
 * rss_stat mode, for an mm of T users.
 *
 * With --icount (QEMU -icount shift=0) the guest's TSC counts
 * instructions, one a tick, over every vCPU; a halted vCPU counts none.
 * One thread spins, pinned, so the TSC ticks of the loop minus its
 * 2 * L instructions are what the kernel ran meanwhile: the ticks and
 * their softirqs, and whatever the other CPUs ran.  Divided by the local
 * timer interrupts of the spinner's CPU (its LOC column of
 * /proc/interrupts), it is the kernel's path length per tick.  Without
 * --icount, on real hardware, the subtraction means nothing: only the
 * "#" lines are printed.
 *
 * Result: rss-bench tick_Tt INSTRUCTIONS insns, and "#" lines with the
 * elapsed time and the interrupts counted.
 *
 * Usage: bench_tick [--threads T] [--loops L] [--icount]
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <sched.h>
#include <x86intrin.h>
#include "rss_bench.h"

static pthread_barrier_t done;

static void *sleeper(void *arg)
{
	pthread_barrier_wait(&done);
	return arg;
}

/*
 * Local timer interrupts of @cpu so far (its column of the LOC row of
 * /proc/interrupts; the header names the columns), or -1.
 */
static long local_timer_irqs(int cpu)
{
	static char line[65536];
	int col = -1, i, c;
	FILE *f = fopen("/proc/interrupts", "r");
	long v = -1;
	char *p, *end;

	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f)) {
		for (i = 0, p = strtok(line, " \t\n"); p; p = strtok(NULL, " \t\n"), i++)
			if (sscanf(p, "CPU%d", &c) == 1 && c == cpu)
				col = i;
	}
	while (col >= 0 && fgets(line, sizeof(line), f)) {
		p = line + strspn(line, " ");
		if (strncmp(p, "LOC:", 4))
			continue;
		p += 4;
		for (i = 0; i <= col; i++) {
			v = strtol(p, &end, 10);
			if (end == p) {
				v = -1;
				break;
			}
			p = end;
		}
		break;
	}
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "loops", required_argument, NULL, 'l' },
		{ "icount", no_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 }
	};
	static pthread_t tid[MAX_THREADS];
	unsigned long loops = 100000000, l;
	unsigned long long t0, t1;
	int n = 4, i, c, cpu, icount = 0;
	long irq0, irq1;
	char name[32];
	double kernel;
	cpu_set_t set;

	while ((c = getopt_long(argc, argv, "t:l:i", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			icount = 1;
			break;
		case 't':
			n = parse_long(optarg, "--threads", 1, MAX_THREADS);
			break;
		case 'l':
			loops = parse_long(optarg, "--loops", 1000, 100000000000L);
			break;
		default:
			fprintf(stderr, "usage: %s [--threads T] [--loops L] [--icount]\n",
				argv[0]);
			return 2;
		}
	}

	/* T users of the mm; the sleepers wait on @done until the end */
	pthread_barrier_init(&done, NULL, n);
	for (i = 1; i < n; i++) {
		if (pthread_create(&tid[i], NULL, sleeper, NULL)) {
			fprintf(stderr, "%s: pthread_create failed\n", argv[0]);
			return 1;
		}
	}
	/* the spinner stays where it is, so one CPU's LOC counts its ticks */
	cpu = sched_getcpu();
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (cpu < 0 || sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "%s: cannot pin to a CPU\n", argv[0]);
		return 1;
	}
	sleep_sec(0.01);
	irq0 = local_timer_irqs(cpu);
	t0 = __rdtsc();
	l = loops;
	asm volatile("1: dec %0\n\tjnz 1b" : "+r"(l));
	t1 = __rdtsc();
	irq1 = local_timer_irqs(cpu);
	if (n > 1)
		pthread_barrier_wait(&done);
	for (i = 1; i < n; i++)
		pthread_join(tid[i], NULL);
	if (irq0 < 0 || irq1 <= irq0) {
		fprintf(stderr, "%s: no local timer interrupts counted\n", argv[0]);
		return 1;
	}

	snprintf(name, sizeof(name), "tick_%dt", n);
	kernel = (double)(t1 - t0) - 2.0 * loops;
	printf("# %s: %lu loops on CPU %d beside %d sleeping threads: %llu TSC ticks, %ld local timer interrupts there\n",
	       name, loops, cpu, n - 1, t1 - t0, irq1 - irq0);
	if (!icount || kernel <= 0) {
		printf("# %s: no path length without --icount\n", name);
		return 0;
	}
	print_result(name, kernel / (irq1 - irq0), "insns");
	return 0;
}
