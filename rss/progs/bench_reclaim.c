// SPDX-License-Identifier: GPL-2.0
/*
 * bench_reclaim: reclaim of a multi-threaded process into swap, from
 * another process, and its threads faulting the pages back.
 *
 * A child with --threads T (default 4) threads maps T * --pages P pages
 * (default 256 each, at least 32) and fills them with one byte value,
 * so that zram stores each as a same-filled page without compressing
 * it.  Then, for --seconds, rounds of:
 *   pageout  the parent calls process_madvise(MADV_PAGEOUT) on the whole
 *            region: reclaim runs on the parent's CPU and moves the
 *            child's MM_ANONPAGES to MM_SWAPENTS from a CPU the child's
 *            mm may never have run on (what kswapd does);
 *   swapin   the child's threads, one after the other, write one byte
 *            of every page of their share: each write faults the page
 *            back (swap-in), on the thread's own CPU.  One at a time,
 *            so that under -icount the guest time is one CPU's path.
 * The region is MADV_NOHUGEPAGE: base pages both ways.  Each thread
 * then drains its CPU's LRU batch (MADV_COLD on a page of its own), so
 * that pageout finds every page on the LRU.  One untimed round first.
 * The child's VmSwap after each pageout (an exact read, outside the
 * timed part) says how many pages went out; both rates are per such
 * page.  Needs swap (the guest sets up zram); without it, or if fewer
 * than half of the pages go out, it fails.
 *
 * Result, per --mode: rss-bench reclaim_pageout_Tt or reclaim_swapin_Tt
 * PAGES_PER_SECOND ops/s.
 *
 * Usage: bench_reclaim --mode pageout|swapin [--threads T] [--pages P]
 *        [--seconds S]
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include "rss_bench.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

struct toucher {
	pthread_t tid;
	sem_t go, done;
	char *base;
	char *own;			/* a page of its own, to drain its CPU's LRU batch */
	unsigned long pages;
	char pad[64];
};

static long page_size;

static void *touch_loop(void *arg)
{
	struct toucher *t = arg;
	unsigned long i;

	for (;;) {
		while (sem_wait(&t->go))
			;
		for (i = 0; i < t->pages; i++)
			((volatile char *)t->base)[i * page_size] = 0x5a;
		madvise(t->own, page_size, MADV_COLD);
		sem_post(&t->done);
	}
	return NULL;
}

/*
 * The child: map and fill the region, send its address, then on every
 * byte from @cmd let each thread in turn write every page of its share
 * once, and answer.
 */
static void child(int cmd, int ack, int n, unsigned long pages)
{
	static struct toucher t[MAX_THREADS];
	size_t len = (size_t)n * pages * page_size;
	char *p, c;
	int i;

	p = mmap(NULL, len + n * page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("bench_reclaim: mmap");
		_exit(1);
	}
	madvise(p, len, MADV_NOHUGEPAGE);
	memset(p, 0x5a, len + n * page_size);
	for (i = 0; i < n; i++) {
		if (sem_init(&t[i].go, 0, 0) || sem_init(&t[i].done, 0, 0))
			_exit(1);
		t[i].own = p + len + (size_t)i * page_size;
		t[i].base = p + (size_t)i * pages * page_size;
		t[i].pages = pages;
		if (pthread_create(&t[i].tid, NULL, touch_loop, &t[i]))
			_exit(1);
	}
	if (write(ack, &p, sizeof(p)) != sizeof(p))
		_exit(1);
	while (read(cmd, &c, 1) == 1) {
		for (i = 0; i < n; i++) {
			sem_post(&t[i].go);
			while (sem_wait(&t[i].done))
				;
		}
		if (write(ack, &c, 1) != 1)
			_exit(1);
	}
	_exit(0);
}

/* VmSwap of @pid in pages, or -1. */
static long vmswap_pages(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmSwap:", 7))
			kb = strtol(line + 7, NULL, 10);
	fclose(f);
	return kb < 0 ? -1 : kb * 1024 / page_size;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "threads", required_argument, NULL, 't' },
		{ "pages", required_argument, NULL, 'p' },
		{ "seconds", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 }
	};
	int n = 4, c, pidfd, cmd[2], ack[2], st, pageout = -1, rc = 1;
	double secs = 2, t_out = 0, t_in = 0, t, end;
	unsigned long pages = 256;
	long out = 0, rounds = 0, swapped;
	struct iovec iov;
	char name[48];
	pid_t pid;

	page_size = sysconf(_SC_PAGESIZE);
	while ((c = getopt_long(argc, argv, "m:t:p:s:", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (!strcmp(optarg, "pageout"))
				pageout = 1;
			else if (!strcmp(optarg, "swapin"))
				pageout = 0;
			else
				pageout = -2;
			break;
		case 't':
			n = parse_long(optarg, "--threads", 1, MAX_THREADS);
			break;
		case 'p':
			pages = parse_long(optarg, "--pages", 32, 1L << 16);
			break;
		case 's':
			secs = parse_seconds(optarg, argv[0]);
			break;
		default:
			pageout = -2;
		}
	}
	if (pageout < 0) {
		fprintf(stderr,
			"usage: %s --mode pageout|swapin [--threads T] [--pages P] [--seconds S]\n",
			argv[0]);
		return 2;
	}

	signal(SIGPIPE, SIG_IGN);	/* a dead child: an error, not a kill */
	if (pipe(cmd) || pipe(ack))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		close(cmd[1]);
		close(ack[0]);
		child(cmd[0], ack[1], n, pages);
	}
	close(cmd[0]);
	close(ack[1]);
	if (read(ack[0], &iov.iov_base, sizeof(iov.iov_base)) != sizeof(iov.iov_base))
		goto out;
	iov.iov_len = (size_t)n * pages * page_size;
	pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		perror("pidfd_open");
		goto out;
	}

	end = -1;			/* round 0: untimed */
	do {
		if (rounds == 1) {
			t_out = 0;
			t_in = 0;
			out = 0;
			end = now_sec() + secs;
		}
		/* round 0 is untimed: no window */
		t = rounds && pageout ? window_begin() : now_sec();
		if (syscall(SYS_process_madvise, pidfd, &iov, 1, MADV_PAGEOUT, 0) < 0) {
			perror("process_madvise(MADV_PAGEOUT)");
			goto out;
		}
		t_out += (rounds && pageout ? window_end() : now_sec()) - t;
		swapped = vmswap_pages(pid);
		if (swapped < (long)(n * pages / 2)) {
			fprintf(stderr, "%s: %ld of %lu pages went out: is swap on?\n",
				argv[0], swapped, n * pages);
			goto out;
		}
		out += swapped;
		t = rounds && !pageout ? window_begin() : now_sec();
		if (write(cmd[1], "f", 1) != 1 || read(ack[0], name, 1) != 1)
			goto out;
		t_in += (rounds && !pageout ? window_end() : now_sec()) - t;
		rounds++;
	} while (rounds == 1 || now_sec() < end);
	rounds--;

	snprintf(name, sizeof(name), "reclaim_%s_%dt", pageout ? "pageout" : "swapin", n);
	printf("# %s: %ld timed rounds, %ld pages out of %lu a round, pageout %.3f s, swapin %.3f s\n",
	       name, rounds, out / rounds, n * pages, t_out, t_in);
	print_rate(name, out, pageout ? t_out : t_in);
	rc = 0;
out:
	close(cmd[1]);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return rc;
}
