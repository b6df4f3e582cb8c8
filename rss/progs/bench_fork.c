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
 * Result: rss-bench fork_exec_F|fork_exit_F|spawn_exec_F CHILDREN_PER_SECOND ops/s
 *
 * Usage: bench_fork [--mode exec|exit|spawn] [--forkers F] [--true PATH]
 *                   [--seconds S]
 */
#define _GNU_SOURCE
#include <getopt.h>
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

static void forker(struct shared *sh, int id, int mode, const char *true_path)
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
		{ "true", required_argument, NULL, 't' },
		{ "seconds", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 }
	};
	const char *true_path = "/bin/true";
	int nforkers = 1, mode = MODE_EXEC, c, i, st, failed = 0;
	long total = 0, bad = 0;
	double secs = 2, t0, t1;
	struct shared *sh;
	pid_t pids[MAX_FORKERS];
	char name[32];

	while ((c = getopt_long(argc, argv, "m:f:t:s:", opts, NULL)) != -1) {
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
	if (optind != argc)
		goto usage;
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
			forker(sh, i, mode, true_path);
	}
	while (__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) < nforkers)
		sleep_sec(0.001);
	t0 = now_sec();
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	sleep_sec(secs);
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < nforkers; i++) {
		while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			failed = 1;
	}
	t1 = now_sec();
	for (i = 0; i < nforkers; i++) {
		total += sh->children[i];
		bad += sh->bad[i];
	}

	snprintf(name, sizeof(name), "%s_%d", mode_names[mode], nforkers);
	printf("# %s: %ld children in %.3f s, %d forkers%s%s\n", name, total,
	       t1 - t0, nforkers, mode != MODE_EXIT ? ", exec " : "",
	       mode != MODE_EXIT ? true_path : "");
	if (bad || failed) {
		fprintf(stderr, "%s: %ld children failed (exec of %s?)\n",
			argv[0], bad, true_path);
		return 1;
	}
	print_result(name, total / (t1 - t0), "ops/s");
	return 0;
usage:
	fprintf(stderr, "usage: %s [--mode exec|exit|spawn] [--forkers F]", argv[0]);
	fprintf(stderr, " [--true PATH] [--seconds S]\n");
	return 2;
}
