// SPDX-License-Identifier: GPL-2.0
/*
 * pcpu_next mmcid bench on the real cid path (a benchmark, not a test).
 *
 * The control plane's kernel threads have no mm_cid, so mmcid_counter_add()
 * on the path a multi-threaded process takes can only be measured from
 * user threads: T threads of this process (default: one per online CPU,
 * each pinned to its own CPU) write "bench <n>" to
 * /sys/kernel/debug/pcpu_next/mmcid, which runs <n> mmcid_counter_add()
 * of 1 to this mm's counter and <n> percpu_counter_add() of 1 to one
 * shared percpu_counter in the writing thread, in alternating slices, and
 * reports both times.  Printed in the control plane's bench format
 * between "=== PN-BENCH-BEGIN mmcid-user" and "=== PN-BENCH-END": the
 * aggregate adds per second of both and their ratio.  The only check is
 * that the counter's sum is exactly T * n (no add lost); "# PASS" or
 * "# FAIL" ends the table.  Under an emulator only the ratio means
 * anything.
 *
 * Usage: mmcid_bench [threads [n]]
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pn_util.h"

#define MMCID_FILE	PN_DIR "/mmcid"

struct worker {
	pthread_t tid;
	int cpu;
	unsigned int n;
	int err;
	uint64_t mmcid_ns, pcpu_ns;
};

static pthread_barrier_t start;

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	char line[64], buf[256], *b;
	cpu_set_t set;
	ssize_t len;
	int fd;

	if (w->cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(w->cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	fd = open(MMCID_FILE, O_RDWR);
	pthread_barrier_wait(&start);
	if (fd < 0) {
		w->err = errno;
		return NULL;
	}
	len = snprintf(line, sizeof(line), "bench %u\n", w->n);
	if (pwrite(fd, line, len, 0) != len) {
		w->err = errno ? errno : EIO;
		goto out;
	}
	len = pread(fd, buf, sizeof(buf) - 1, 0);
	if (len <= 0) {
		w->err = len < 0 ? errno : ENODATA;
		goto out;
	}
	buf[len] = '\0';
	b = strstr(buf, "bench ");
	if (!b || sscanf(b, "bench n=%u mmcid_ns=%" SCNu64 " pcpu_ns=%" SCNu64,
			 &w->n, &w->mmcid_ns, &w->pcpu_ns) != 3)
		w->err = EPROTO;
out:
	close(fd);
	return NULL;
}

/* The counter's sum, from an "add 0" through a fresh open file. */
static int read_sum(long long *sum)
{
	char buf[256];
	ssize_t len;
	int fd, ret = -1;

	fd = open(MMCID_FILE, O_RDWR);
	if (fd < 0)
		return -1;
	if (pwrite(fd, "add 0\n", 6, 0) == 6) {
		len = pread(fd, buf, sizeof(buf) - 1, 0);
		if (len > 0) {
			char *p;

			buf[len] = '\0';
			p = strstr(buf, "sum=");
			if (p && sscanf(p, "sum=%lld", sum) == 1)
				ret = 0;
		}
	}
	close(fd);
	return ret;
}

static void row(const char *name, uint64_t ops, uint64_t ns, const char *base,
		uint64_t bops, uint64_t bns)
{
	uint64_t rate = ns ? ops * 1000000000ull / ns : 0;
	uint64_t brate = bns ? bops * 1000000000ull / bns : 0;
	uint64_t r100 = brate ? (rate * 100 + brate / 2) / brate : 0;

	printf("%-30s %14" PRIu64 "  %-28s %14" PRIu64 " %6" PRIu64 ".%02" PRIu64 "\n",
	       name, rate, base, brate, r100 / 100, r100 % 100);
}

int main(int argc, char **argv)
{
	int online = (int)sysconf(_SC_NPROCESSORS_ONLN);
	int threads = argc > 1 ? atoi(argv[1]) : online;
	unsigned int n = argc > 2 ? (unsigned int)atoi(argv[2]) : 1u << 20;
	uint64_t mm_ops = 0, mm_ns = 0, pc_ops = 0, pc_ns = 0;
	cpu_set_t allowed;
	struct worker *w;
	long long sum = -1;
	int i, c, failed = 0;

	if (threads < 1 || threads > 1024 || !n) {
		fprintf(stderr, "usage: mmcid_bench [threads [n]]\n");
		return 2;
	}
	w = calloc(threads, sizeof(*w));
	if (!w)
		return 1;
	sched_getaffinity(0, sizeof(allowed), &allowed);
	pthread_barrier_init(&start, NULL, threads);
	for (i = 0, c = 0; i < threads; i++) {
		while (c < CPU_SETSIZE && !CPU_ISSET(c, &allowed))
			c++;
		w[i].cpu = c < CPU_SETSIZE ? c++ : -1;
		if (c >= CPU_SETSIZE)
			c = 0;
		w[i].n = n;
		if (pthread_create(&w[i].tid, NULL, worker_fn, &w[i]))
			return 1;
	}
	for (i = 0; i < threads; i++) {
		pthread_join(w[i].tid, NULL);
		if (w[i].err) {
			fprintf(stderr, "thread %d: %s\n", i, strerror(w[i].err));
			failed = 1;
			continue;
		}
		/* aggregate rate: the sum of each thread's rate */
		mm_ops += w[i].n;
		pc_ops += w[i].n;
		mm_ns = mm_ns > w[i].mmcid_ns ? mm_ns : w[i].mmcid_ns;
		pc_ns = pc_ns > w[i].pcpu_ns ? pc_ns : w[i].pcpu_ns;
	}
	printf("=== PN-BENCH-BEGIN mmcid-user\n");
	printf("# bench mmcid-user threads=%d n=%u online=%d (user threads, the real mm_cid; "
	       "ratios only are meaningful under an emulator)\n", threads, n, online);
	printf("# case                                  ops/s  kernel baseline                  base ops/s     ratio\n");
	if (!failed) {
		row("mmcid_counter_add (real cid)", mm_ops, mm_ns,
		    "percpu_counter_add (same)", pc_ops, pc_ns);
		printf("# time = the slowest thread's; each thread adds n through both paths, 4 alternating slices\n");
	}
	if (!failed && (read_sum(&sum) || sum != (long long)threads * n)) {
		printf("# sum=%lld expected=%lld\n", sum, (long long)threads * n);
		failed = 1;
	}
	printf("# %s\n", failed ? "FAIL" : "PASS");
	printf("=== PN-BENCH-END\n");
	return failed;
}
