// SPDX-License-Identifier: GPL-2.0
/*
 * bench_fork: process creation throughput, the path that allocates and
 * frees an mm (and its rss_stat counters) per child.
 *
 * F forker processes each loop: fork(); the child either execve()s a
 * tiny static true (--mode exec: a second mm is built by exec, the
 * forked one torn down) or _exit(0)s at once (--mode exit); the forker
 * waitpid()s it.  --mode spawn: posix_spawn() of true instead of fork()
 * (glibc: clone(CLONE_VM | CLONE_VFORK), the child borrows the parent's
 * mm until its exec builds the only new one).  The forkers start
 * together on a flag in a shared page and stop on another after
 * --seconds; the rate is all children reaped
 * over the time from the start flag until every forker is gone.  A child
 * that does not exit 0 (exec failed) makes the run fail.
 *
 * --threads T (--mode exit only): the child runs T threads before it
 * exits.  T - 1 new threads, each pinned to one of the online CPUs after
 * the child's in bench_fork's affinity mask, write one page each and are
 * joined; the child writes one page too.  So the child's mm is used on T
 * CPUs and its rss_stat is written on each: exit pays for a
 * multi-threaded process.
 *
 * Result: rss-bench fork_exec_F|fork_exit_F|spawn_exec_F CHILDREN_PER_SECOND ops/s
 * (fork_exit_F_Tt with --threads T > 1)
 *
 * Usage: bench_fork [--mode exec|exit|spawn] [--forkers F] [--threads T]
 *                   [--true PATH] [--seconds S]
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include "rss_bench.h"

#define MAX_FORKERS 256

enum { MODE_EXIT, MODE_EXEC, MODE_SPAWN };
static const char *const mode_names[] = { "fork_exit", "fork_exec", "spawn_exec" };

struct shared {
	int go;
	int stop;
	int ready;
	long children[MAX_FORKERS];
	long bad[MAX_FORKERS];
};

struct child_thread {
	pthread_t tid;
	char *page;
};

static void *child_thread_fn(void *arg)
{
	struct child_thread *t = arg;

	__atomic_store_n(t->page, 1, __ATOMIC_RELAXED);
	return NULL;
}

/*
 * The CPUs bench_fork may run on, in order: its affinity mask (which a
 * task inherits as every possible CPU) and the online ones.
 */
static int cpus[CPU_SETSIZE];

/* cpus[] from sched_getaffinity() and /sys/.../online.  Return: their number. */
static int usable_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	cpu_set_t set, online;
	int a, b, n = 0, i, sep;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	CPU_ZERO(&online);
	if (!f)
		return 0;
	/* "0-3,8,10-11\n" */
	while (fscanf(f, "%d", &a) == 1) {
		b = a;
		sep = fgetc(f);
		if (sep == '-') {
			if (fscanf(f, "%d", &b) != 1)
				break;
			sep = fgetc(f);
		}
		for (i = a; i <= b && i < CPU_SETSIZE; i++)
			CPU_SET(i, &online);
		if (sep != ',')
			break;
	}
	fclose(f);
	for (i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set) && CPU_ISSET(i, &online))
			cpus[n++] = i;
	return n;
}

/*
 * The child of --threads T: T - 1 threads pinned to the CPUs after the
 * child's own in cpus[], one page written by each thread and by the
 * child.  Return: 0, or 1 if a thread could not be set up.
 */
static int child_threads(int nthreads, int ncpus)
{
	struct child_thread t[MAX_THREADS];
	long psz = sysconf(_SC_PAGESIZE);
	pthread_attr_t attr;
	cpu_set_t set;
	int i, me = 0, cpu = sched_getcpu(), bad = 0;
	char *buf;

	for (i = 0; i < ncpus; i++)
		if (cpus[i] == cpu)
			me = i;
	buf = mmap(NULL, nthreads * psz, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return 1;
	for (i = 1; i < nthreads; i++) {
		t[i].page = buf + i * psz;
		CPU_ZERO(&set);
		CPU_SET(cpus[(me + i) % ncpus], &set);
		if (pthread_attr_init(&attr) ||
		    pthread_attr_setaffinity_np(&attr, sizeof(set), &set) ||
		    pthread_create(&t[i].tid, &attr, child_thread_fn, &t[i]))
			return 1;
		pthread_attr_destroy(&attr);
	}
	*buf = 1;
	for (i = 1; i < nthreads; i++)
		bad |= pthread_join(t[i].tid, NULL) != 0;
	return bad;
}

static void forker(struct shared *sh, int id, int mode, const char *true_path,
		   int nthreads, int ncpus)
{
	char *const argv[] = { (char *)true_path, NULL };
	char *const envp[] = { NULL };
	long n = 0, bad = 0;
	pid_t pid;
	int st;

	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE))
		sched_yield();
	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		if (mode == MODE_SPAWN) {
			if (posix_spawn(&pid, true_path, NULL, NULL, argv, envp)) {
				bad++;
				break;
			}
		} else {
			pid = fork();
			if (pid < 0) {
				bad++;
				break;
			}
			if (!pid) {
				if (mode == MODE_EXEC)
					execve(true_path, argv, envp);
				if (nthreads > 1)
					_exit(child_threads(nthreads, ncpus));
				_exit(mode == MODE_EXEC ? 127 : 0);
			}
		}
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
		n++;
	}
	sh->children[id] = n;
	sh->bad[id] = bad;
	_exit(0);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "forkers", required_argument, NULL, 'f' },
		{ "threads", required_argument, NULL, 'T' },
		{ "true", required_argument, NULL, 't' },
		{ "seconds", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 }
	};
	const char *true_path = "/bin/true";
	int nforkers = 1, nthreads = 1, ncpus, mode = MODE_EXEC, c, i, st, failed = 0;
	long total = 0, bad = 0;
	double secs = 2, t0, t1;
	struct shared *sh;
	pid_t pids[MAX_FORKERS];
	char name[48];

	while ((c = getopt_long(argc, argv, "m:f:T:t:s:", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (!strcmp(optarg, "exec"))
				mode = MODE_EXEC;
			else if (!strcmp(optarg, "exit"))
				mode = MODE_EXIT;
			else if (!strcmp(optarg, "spawn"))
				mode = MODE_SPAWN;
			else
				goto usage;
			break;
		case 'f':
			nforkers = parse_long(optarg, "--forkers", 1, MAX_FORKERS);
			break;
		case 'T':
			nthreads = parse_long(optarg, "--threads", 1, MAX_THREADS);
			break;
		case 't':
			true_path = optarg;
			break;
		case 's':
			secs = parse_seconds(optarg, argv[0]);
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc || (nthreads > 1 && mode != MODE_EXIT))
		goto usage;
	ncpus = usable_cpus();
	if (nthreads > ncpus) {
		fprintf(stderr, "%s: --threads %d: only %d CPUs to run on\n",
			argv[0], nthreads, ncpus);
		return 2;
	}
	if (mode != MODE_EXIT && access(true_path, X_OK)) {
		fprintf(stderr, "%s: %s: %s\n", argv[0], true_path, strerror(errno));
		return 1;
	}

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	fflush(stdout);
	for (i = 0; i < nforkers; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("fork");
			return 1;
		}
		if (!pids[i])
			forker(sh, i, mode, true_path, nthreads, ncpus);
	}
	while (__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) < nforkers)
		sleep_sec(0.001);
	t0 = window_begin();
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	sleep_sec(secs);
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < nforkers; i++) {
		while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			failed = 1;
	}
	t1 = window_end();
	for (i = 0; i < nforkers; i++) {
		total += sh->children[i];
		bad += sh->bad[i];
	}

	if (nthreads > 1)
		snprintf(name, sizeof(name), "%s_%d_%dt", mode_names[mode], nforkers,
			 nthreads);
	else
		snprintf(name, sizeof(name), "%s_%d", mode_names[mode], nforkers);
	printf("# %s: %ld children in %.3f s, %d forkers%s%s\n", name, total,
	       t1 - t0, nforkers, mode != MODE_EXIT ? ", exec " : "",
	       mode != MODE_EXIT ? true_path : "");
	if (bad || failed) {
		if (nthreads > 1)
			fprintf(stderr, "%s: %ld children failed (their threads)\n",
				argv[0], bad);
		else
			fprintf(stderr, "%s: %ld children failed (exec of %s?)\n",
				argv[0], bad, true_path);
		return 1;
	}
	print_rate(name, total, t1 - t0);
	return 0;
usage:
	fprintf(stderr, "usage: %s [--mode exec|exit|spawn] [--forkers F]", argv[0]);
	fprintf(stderr, " [--threads T, exit only] [--true PATH] [--seconds S]\n");
	return 2;
}
