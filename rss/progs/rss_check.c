// SPDX-License-Identifier: GPL-2.0
/*
 * rss_check: TAP test of the per-mm RSS counters (mm->rss_stat) as
 * /proc/PID/status shows them (RssAnon, RssShmem, VmRSS).
 *
 * Design.  Every check is a delta: read the counters, do something whose
 * effect on the counters is known exactly in pages, read again, and
 * compare (after - before) with the truth.  A /proc read of a counter may
 * be off by up to --bound pages, so a delta of two reads may be off by
 * 2 * bound.  A process that never had a second thread must read its own
 * counters exactly with --exact-single (bound 0 for those checks); once a
 * process has had a second thread the counters may be per-CPU and the
 * bound always applies.
 *
 * Each case runs in a freshly forked "case process", so that it starts
 * with a fresh mm that never had a second user whatever ran before.  The
 * case process sends one fixed-size record per check through a pipe; the
 * main process prints the TAP lines, so the plan (1..N) is known up front
 * and a case process that dies or hangs (SIGALRM) turns its missing
 * checks into "not ok" instead of a short plan.
 *
 * Noise.  Anything that faults pages between two reads spoils a delta, so
 * every process that reads counters first populates its mappings:
 * MADV_POPULATE_READ of every readable mapping (text pages are file or,
 * in an initramfs, shmem pages and are not copied at fork) and
 * MADV_POPULATE_WRITE of every private writable one (a first write to a
 * .data page would turn a file page into an anon page).  /proc is read
 * with raw open/read into a static buffer, never through stdio or malloc.
 *
 * Cases (each loop of --loops):
 *  a. single thread: touch N anon pages, munmap.
 *  b. T = 1, 2, 4, 8 threads touch (then munmap) their own N/T pages
 *     concurrently, started on a barrier; main checks.
 *  c. shmem: a memfd and a MAP_SHARED|MAP_ANONYMOUS region of N pages.
 *  d. remote: a single-threaded child's pages faulted by this process,
 *     with process_vm_writev() and with ptrace(PTRACE_POKEDATA).
 *  e. fork: the child's counters as fork built them, its COW breaks and
 *     munmap; the parent's counters untouched by the child.
 *  f. high-water mark: one thread per allowed CPU faults one page a
 *     round for 32 rounds and stays; each round an munmap() of an
 *     untouched page updates VmHWM from the fast read, which must not
 *     exceed the exact VmRSS of the round.
 *  g. remote from several CPUs: one writer process per CPU faults a
 *     slice of a child's region with process_vm_writev(), all at once.
 *  h. (--offline only) the fast read after all CPUs but one go offline.
 *  i. (--memcg only) the memcg charge of the per-CPU memory of an mm.
 *  j. (--cid-grow only) rss_stat=mmcid: a cid above the prepared blocks.
 *  k. residue: a victim with two threads on one CPU gets pages faulted
 *     by writers on every other CPU, then exits; a probe forked from its
 *     CPU faults pages on every CPU.  Both exact deltas must hold.
 *
 * /proc/PID/status sums the counters exactly (get_mm_counter_sum() since
 * 6.16, and in 6.12.y stable), so on mainline --bound 0 passes even with
 * threads.  With --stat every VmRSS-like check is paired with one on the
 * rss field of /proc/PID/stat, which is get_mm_rss(): the fast,
 * approximate get_mm_counter() read that the OOM killer also uses.
 * --bound and --exact-single apply to it the same way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/rseq.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include "rss_proc.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ	22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif

#define CASE_TIMEOUT	300	/* seconds; a hung case becomes "not ok" */

/* Counter values in pages; -1 if the field is missing. */
struct rss {
	long anon;
	long file;
	long shmem;
	long total;		/* VmRSS */
	long stat;		/* /proc/PID/stat rss, if --stat */
};

/* One check, sent from a case process to the main process. */
struct result {
	int ok;
	int skip;
	long got;
	long want;
	long bound;
	char desc[160];
};

static long page_size;
static long npages = 4096;
static long bound;
static int exact_single;
static int loops = 1;
static int use_stat;
static int offline;		/* --offline: case h only */
static long h_pages = 31;	/* --offline's pages per CPU */
static const char *memcg_dir;	/* --memcg: case i only */
static long min_bytes;		/* --min-bytes, for --memcg */
static int cid_grow;		/* --cid-grow: case j only */
static int loop_no;

static int result_fd = -1;	/* set in case processes */
static int test_no;
static int failed;

static char status_buf[16384];
static char stat_buf[4096];
static char maps_buf[262144];

/* ---- reading the counters ---- */

static long field_pages(const char *buf, const char *name)
{
	size_t len = strlen(name);
	const char *p = buf;

	while (p && *p) {
		if (!strncmp(p, name, len) && p[len] == ':')
			return strtol(p + len + 1, NULL, 10) * 1024 / page_size;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

/* Field 24 of /proc/PID/stat (rss, in pages); -1 on error. */
static long stat_rss(const char *path)
{
	if (read_file(path, stat_buf, sizeof(stat_buf)) <= 0)
		return -1;
	return stat_field_rss(stat_buf);
}

static void die(const char *what);

/*
 * pid 0: this process.  A failed read ends the process (exit 2), so that
 * its remaining checks are reported missing, never compared as -1 - -1.
 */
static void read_rss(pid_t pid, struct rss *r)
{
	char path[64];
	int n;

	if (pid)
		n = snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		n = snprintf(path, sizeof(path), "/proc/self/status");
	r->anon = r->file = r->shmem = r->total = r->stat = -1;
	if (read_file(path, status_buf, sizeof(status_buf)) <= 0)
		die(path);
	r->anon = field_pages(status_buf, "RssAnon");
	r->file = field_pages(status_buf, "RssFile");
	r->shmem = field_pages(status_buf, "RssShmem");
	r->total = field_pages(status_buf, "VmRSS");
	if (use_stat) {
		path[n - 2] = '\0';		/* "status" -> "stat" */
		r->stat = stat_rss(path);
		if (r->stat < 0)
			die(path);
	}
	if (r->anon < 0 || r->shmem < 0 || r->total < 0) {
		errno = ENOENT;
		die("RssAnon, RssShmem or VmRSS");
	}
}

/* ---- populating, so that only the test's own pages move the counters ---- */

static void __attribute__((noinline)) prefault_stack(size_t bytes)
{
	char buf[bytes];

	memset(buf, 0, bytes);
	__asm__ volatile("" : : "r"(buf) : "memory");
}

/*
 * Populate every readable mapping, and write-populate every private
 * writable one if @write.  Errors are ignored: a mapping that cannot be
 * populated ([vvar], guard pages) is not counted in RSS anyway.
 */
static void prefault(int write)
{
	char *line, *next;

	prefault_stack(64 * 1024);
	if (read_file("/proc/self/maps", maps_buf, sizeof(maps_buf)) <= 0)
		return;
	for (line = maps_buf; *line; line = next) {
		unsigned long start, end;
		char perms[8] = "";
		char *name;

		next = strchr(line, '\n');
		if (!next)
			break;
		*next++ = '\0';
		if (sscanf(line, "%lx-%lx %7s", &start, &end, perms) != 3)
			continue;
		name = strchr(line, '[');
		if (name && !strncmp(name, "[v", 2))
			continue;	/* [vvar], [vdso], [vsyscall] */
		if (perms[0] != 'r')
			continue;
		if (write && perms[1] == 'w' && perms[3] == 'p')
			madvise((void *)start, end - start, MADV_POPULATE_WRITE);
		else
			madvise((void *)start, end - start, MADV_POPULATE_READ);
	}
}

/* ---- reporting ---- */

static void emit(const struct result *r)
{
	test_no++;
	if (r->skip) {
		printf("ok %d - %s # SKIP\n", test_no, r->desc);
	} else if (r->ok) {
		printf("ok %d - %s\n", test_no, r->desc);
	} else {
		printf("not ok %d - %s # got %ld want %ld +-%ld\n", test_no,
		       r->desc, r->got, r->want, r->bound);
		failed = 1;
	}
	fflush(stdout);
}

static void send_result(struct result *r)
{
	if (result_fd >= 0) {
		if (write(result_fd, r, sizeof(*r)) != sizeof(*r))
			_exit(3);
	} else {
		emit(r);
	}
}

static int __attribute__((format(printf, 4, 5)))
check(long got, long want, long b, const char *fmt, ...)
{
	struct result r;
	va_list ap;
	int n;

	memset(&r, 0, sizeof(r));
	n = snprintf(r.desc, sizeof(r.desc), "loop %d: ", loop_no);
	va_start(ap, fmt);
	vsnprintf(r.desc + n, sizeof(r.desc) - n, fmt, ap);
	va_end(ap);
	r.got = got;
	r.want = want;
	r.bound = b;
	r.ok = got - want <= b && want - got <= b;
	send_result(&r);
	return r.ok;
}

/* The same check on /proc/PID/stat's rss, only with --stat. */
#define check_stat(got, want, b, fmt, ...)				\
	(use_stat ? check(got, want, b, fmt " (/proc stat rss)", ##__VA_ARGS__) : 1)

static void __attribute__((format(printf, 1, 2))) skip(const char *fmt, ...)
{
	struct result r;
	va_list ap;
	int n;

	memset(&r, 0, sizeof(r));
	n = snprintf(r.desc, sizeof(r.desc), "loop %d: ", loop_no);
	va_start(ap, fmt);
	vsnprintf(r.desc + n, sizeof(r.desc) - n, fmt, ap);
	va_end(ap);
	r.ok = 1;
	r.skip = 1;
	send_result(&r);
}

/* Allowed error of a delta of two reads. */
static long delta_bound(int single)
{
	return (single && exact_single) ? 0 : 2 * bound;
}

static int status_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 255;
}

static void die(const char *what)
{
	fprintf(stderr, "# %s: %s\n", what, strerror(errno));
	_exit(2);
}

static char *map_anon(long pages, int flags)
{
	void *p = mmap(NULL, pages * page_size, PROT_READ | PROT_WRITE,
		       flags | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

static void touch(char *p, long pages)
{
	long i;

	for (i = 0; i < pages; i++)
		((volatile char *)p)[i * page_size] = 1;
}

/*
 * Run @fn in a fresh case process; it sends exactly @nchecks results.
 * Missing ones (the case process died) are reported as failures.
 */
static void run_case(const char *name, void (*fn)(void), int nchecks)
{
	struct result r;
	int p[2], got = 0, st;
	pid_t pid;
	ssize_t n;

	if (pipe(p))
		die("pipe");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		close(p[0]);
		result_fd = p[1];
		alarm(CASE_TIMEOUT);
		prefault(1);
		fn();
		_exit(0);
	}
	close(p[1]);
	for (;;) {
		size_t off = 0;

		while (off < sizeof(r)) {
			n = read(p[0], (char *)&r + off, sizeof(r) - off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			off += n;
		}
		if (off < sizeof(r))
			break;
		if (got++ < nchecks) {
			r.desc[sizeof(r.desc) - 1] = '\0';
			emit(&r);
		} else {
			printf("# BUG: case %s sent more than %d checks: %s\n",
			       name, nchecks, r.desc);
			failed = 1;
		}
	}
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	for (; got < nchecks; got++) {
		memset(&r, 0, sizeof(r));
		snprintf(r.desc, sizeof(r.desc),
			 "loop %d: %s: check %d missing: case process exit status",
			 loop_no, name, got + 1);
		r.got = status_code(st);
		r.want = 0;
		emit(&r);
	}
}

/* ---- a. single thread ---- */

#define A_CHECKS (4 + 2 * use_stat)
static void case_single(void)
{
	struct rss b0, b1, b2;
	long b = delta_bound(1);
	char *p;

	p = map_anon(npages, MAP_PRIVATE);
	read_rss(0, &b0);
	touch(p, npages);
	read_rss(0, &b1);
	check(b1.anon - b0.anon, npages, b,
	      "single: RssAnon delta after touching %ld pages", npages);
	check(b1.total - b0.total, npages, b,
	      "single: VmRSS delta after touching %ld pages", npages);
	check_stat(b1.stat - b0.stat, npages, b,
		   "single: rss delta after touching %ld pages", npages);
	munmap(p, npages * page_size);
	read_rss(0, &b2);
	check(b2.anon - b0.anon, 0, b, "single: RssAnon back after munmap");
	check(b2.total - b0.total, 0, b, "single: VmRSS back after munmap");
	check_stat(b2.stat - b0.stat, 0, b, "single: rss back after munmap");
}

/* ---- b. T threads ---- */

#define B_THREADS_MAX	8
#define B_CHECKS	((4 + 2 * use_stat) * 4)	/* T = 1, 2, 4, 8 */

struct b_ctx {
	pthread_barrier_t *bar;
	char *base;
	long pages;
};

static void *b_thread(void *arg)
{
	struct b_ctx *c = arg;

	prefault_stack(16 * 1024);
	pthread_barrier_wait(c->bar);		/* 1: all alive */
	pthread_barrier_wait(c->bar);		/* 2: touch */
	touch(c->base, c->pages);
	pthread_barrier_wait(c->bar);		/* 3: touched */
	pthread_barrier_wait(c->bar);		/* 4: unmap */
	if (c->pages)
		munmap(c->base, c->pages * page_size);
	pthread_barrier_wait(c->bar);		/* 5: unmapped */
	return NULL;
}

static void b_run(int nthreads)
{
	pthread_t tid[B_THREADS_MAX];
	struct b_ctx ctx[B_THREADS_MAX];
	pthread_barrier_t bar;
	struct rss b0, b1, b2;
	long b = delta_bound(0), per = npages / nthreads, off = 0;
	char *p;
	int i;

	p = map_anon(npages, MAP_PRIVATE);
	pthread_barrier_init(&bar, NULL, nthreads + 1);
	for (i = 0; i < nthreads; i++) {
		ctx[i].bar = &bar;
		ctx[i].base = p + off * page_size;
		ctx[i].pages = i == nthreads - 1 ? npages - off : per;
		off += ctx[i].pages;
		errno = pthread_create(&tid[i], NULL, b_thread, &ctx[i]);
		if (errno)
			die("pthread_create");
	}
	pthread_barrier_wait(&bar);		/* 1 */
	read_rss(0, &b0);
	pthread_barrier_wait(&bar);		/* 2 */
	pthread_barrier_wait(&bar);		/* 3 */
	read_rss(0, &b1);
	check(b1.anon - b0.anon, npages, b,
	      "threads %d: RssAnon delta after touching %ld pages", nthreads, npages);
	check(b1.total - b0.total, npages, b,
	      "threads %d: VmRSS delta after touching %ld pages", nthreads, npages);
	check_stat(b1.stat - b0.stat, npages, b,
		   "threads %d: rss delta after touching %ld pages", nthreads, npages);
	pthread_barrier_wait(&bar);		/* 4 */
	pthread_barrier_wait(&bar);		/* 5 */
	read_rss(0, &b2);
	check(b2.anon - b0.anon, 0, b,
	      "threads %d: RssAnon back after concurrent munmap", nthreads);
	check(b2.total - b0.total, 0, b,
	      "threads %d: VmRSS back after concurrent munmap", nthreads);
	check_stat(b2.stat - b0.stat, 0, b,
		   "threads %d: rss back after concurrent munmap", nthreads);
	for (i = 0; i < nthreads; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&bar);
}

static void case_threads(void)
{
	int t;

	for (t = 1; t <= B_THREADS_MAX; t *= 2)
		b_run(t);
}

/* ---- c. shmem ---- */

#define C_CHECKS (8 + 4 * use_stat)

static void c_run(const char *what, char *p)
{
	struct rss b0, b1, b2;
	long b = delta_bound(1);

	read_rss(0, &b0);
	touch(p, npages);
	read_rss(0, &b1);
	check(b1.shmem - b0.shmem, npages, b,
	      "shmem %s: RssShmem delta after touching %ld pages", what, npages);
	check(b1.anon - b0.anon, 0, b,
	      "shmem %s: RssAnon unchanged by shmem faults", what);
	check(b1.total - b0.total, npages, b,
	      "shmem %s: VmRSS delta after touching %ld pages", what, npages);
	check_stat(b1.stat - b0.stat, npages, b,
		   "shmem %s: rss delta after touching %ld pages", what, npages);
	munmap(p, npages * page_size);
	read_rss(0, &b2);
	check(b2.shmem - b0.shmem, 0, b,
	      "shmem %s: RssShmem back after munmap", what);
	check_stat(b2.stat - b0.stat, 0, b,
		   "shmem %s: rss back after munmap", what);
}

static void case_shmem(void)
{
	char *p;
	int fd;

	fd = memfd_create("rss_check", MFD_CLOEXEC);
	if (fd < 0)
		die("memfd_create");
	if (ftruncate(fd, npages * page_size))
		die("ftruncate");
	p = mmap(NULL, npages * page_size, PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap memfd");
	c_run("memfd", p);
	close(fd);
	c_run("MAP_SHARED|MAP_ANONYMOUS", map_anon(npages, MAP_SHARED));
}

/* ---- d. remote faults: process_vm_writev and ptrace ---- */

#define D_CHECKS (5 + 3 * use_stat)
#define IOV_BATCH 512

static void d_child(int addr_fd, int cmd_fd)
{
	struct rss b0, b1;
	char *r[2];
	char c;
	int ok;

	prefault(0);	/* text is not copied at fork */
	r[0] = map_anon(npages, MAP_PRIVATE);
	r[1] = map_anon(npages, MAP_PRIVATE);
	read_rss(0, &b0);
	if (write(addr_fd, r, sizeof(r)) != sizeof(r))
		_exit(2);
	if (read(cmd_fd, &c, 1) != 1)
		_exit(2);
	munmap(r[0], npages * page_size);
	munmap(r[1], npages * page_size);
	read_rss(0, &b1);
	ok = check(b1.anon - b0.anon, 0, delta_bound(1),
		   "remote: child's own RssAnon back after munmap of both regions");
	ok &= check_stat(b1.stat - b0.stat, 0, delta_bound(1),
			 "remote: child's own rss back after munmap of both regions");
	_exit(ok ? 0 : 1);
}

/* Write a word into each of @pages pages of @pid at @remote. */
static long d_writev_n(pid_t pid, char *remote, long pages)
{
	static struct iovec liov[IOV_BATCH], riov[IOV_BATCH];
	static long word = 0x5a5a5a5a;
	long i, n, done = 0;
	ssize_t ret;

	for (i = 0; i < pages; i += n) {
		long j;

		n = pages - i < IOV_BATCH ? pages - i : IOV_BATCH;
		for (j = 0; j < n; j++) {
			liov[j].iov_base = &word;
			liov[j].iov_len = sizeof(word);
			riov[j].iov_base = remote + (i + j) * page_size;
			riov[j].iov_len = sizeof(word);
		}
		ret = process_vm_writev(pid, liov, n, riov, n, 0);
		if (ret < 0)
			return -errno;
		done += ret / sizeof(word);
		if (ret != (ssize_t)(n * sizeof(word)))
			break;
	}
	return done;
}

static long d_writev(pid_t pid, char *remote)
{
	return d_writev_n(pid, remote, npages);
}

/*
 * Fork d_child(); returns its pid, with the write end of its command
 * pipe in *@cmd_fd and its two regions' addresses in @r.
 */
static pid_t d_start(int *cmd_fd, char *r[2])
{
	int addr_pipe[2], cmd_pipe[2];
	pid_t pid;

	if (pipe(addr_pipe) || pipe(cmd_pipe))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		close(addr_pipe[0]);
		close(cmd_pipe[1]);
		d_child(addr_pipe[1], cmd_pipe[0]);
	}
	close(addr_pipe[1]);
	close(cmd_pipe[0]);
	if (read(addr_pipe[0], r, 2 * sizeof(*r)) != 2 * sizeof(*r))
		die("read child addresses");
	close(addr_pipe[0]);
	*cmd_fd = cmd_pipe[1];
	return pid;
}

/* Tell d_child() to unmap and exit; check its exit status. */
static void d_finish(pid_t pid, int cmd_fd, const char *name)
{
	int st;

	if (write(cmd_fd, "x", 1) != 1)
		die("write child command");
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	check(status_code(st), 0, 0, "%s: child exit status", name);
	close(cmd_fd);
}

static void case_remote(void)
{
	int cmd_fd, st, err = 0;
	struct rss b0, b1, b2;
	long b = delta_bound(1), i, n;
	char *r[2];
	pid_t pid;

	pid = d_start(&cmd_fd, r);

	read_rss(pid, &b0);
	n = d_writev(pid, r[0]);
	read_rss(pid, &b1);
	if (n != npages)
		fprintf(stderr, "# process_vm_writev: %ld of %ld pages (%s)\n",
			n, npages, n < 0 ? strerror(-n) : "short");
	check(b1.anon - b0.anon, npages, b,
	      "remote: child RssAnon delta after process_vm_writev to %ld pages", npages);
	check(b1.total - b0.total, npages, b,
	      "remote: child VmRSS delta after process_vm_writev to %ld pages", npages);
	check_stat(b1.stat - b0.stat, npages, b,
		   "remote: child rss delta after process_vm_writev to %ld pages", npages);

	if (ptrace(PTRACE_SEIZE, pid, NULL, NULL)) {
		err = errno;
		skip("remote: ptrace POKEDATA (PTRACE_SEIZE: %s)", strerror(err));
		if (use_stat)
			skip("remote: ptrace POKEDATA, /proc stat rss");
	} else {
		if (ptrace(PTRACE_INTERRUPT, pid, NULL, NULL))
			die("PTRACE_INTERRUPT");
		if (waitpid(pid, &st, __WALL) != pid || !WIFSTOPPED(st))
			die("waitpid ptrace stop");
		for (i = 0; i < npages; i++)
			if (ptrace(PTRACE_POKEDATA, pid, r[1] + i * page_size,
				   (void *)0x5a5a5a5aL))
				break;
		read_rss(pid, &b2);
		if (i != npages)
			fprintf(stderr, "# PTRACE_POKEDATA: %ld of %ld pages: %s\n",
				i, npages, strerror(errno));
		check(b2.anon - b1.anon, npages, b,
		      "remote: child RssAnon delta after PTRACE_POKEDATA to %ld pages", npages);
		check_stat(b2.stat - b1.stat, npages, b,
			   "remote: child rss delta after PTRACE_POKEDATA to %ld pages", npages);
		if (ptrace(PTRACE_DETACH, pid, NULL, NULL))
			die("PTRACE_DETACH");
	}
	d_finish(pid, cmd_fd, "remote");
}

/* ---- e. fork with touched anon memory ---- */

#define E_CHECKS (5 + 3 * use_stat)

static void case_fork(void)
{
	struct rss pb0, pb1, c0, c1, c2;
	long b = delta_bound(1);
	pid_t pid;
	char *p;
	int st;

	p = map_anon(npages, MAP_PRIVATE);
	touch(p, npages);
	read_rss(0, &pb0);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		int ok;

		prefault(0);	/* text is not copied at fork */
		read_rss(0, &c0);
		ok = check(c0.anon - pb0.anon, 0, b,
			   "fork: child RssAnon right after fork equals parent's");
		touch(p, npages);
		read_rss(0, &c1);
		ok &= check(c1.anon - c0.anon, 0, b,
			    "fork: child RssAnon unchanged by %ld COW breaks", npages);
		ok &= check_stat(c1.stat - c0.stat, 0, b,
				 "fork: child rss unchanged by %ld COW breaks", npages);
		munmap(p, npages * page_size);
		read_rss(0, &c2);
		ok &= check(c2.anon - c1.anon, -npages, b,
			    "fork: child RssAnon delta after munmap of %ld pages", npages);
		ok &= check_stat(c2.stat - c1.stat, -npages, b,
				 "fork: child rss delta after munmap of %ld pages", npages);
		_exit(ok ? 0 : 1);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	read_rss(0, &pb1);
	check(pb1.anon - pb0.anon, 0, b,
	      "fork: parent RssAnon unchanged by the child's life");
	check_stat(pb1.stat - pb0.stat, 0, b,
		   "fork: parent rss unchanged by the child's life");
	check(status_code(st), 0, 0, "fork: child exit status");
	munmap(p, npages * page_size);
}

/* ---- f. high-water mark ---- */

#define F_ROUNDS	32	/* one page per thread and round: every phase of a batch of 32 */
#define F_CHECKS	F_ROUNDS
#define F_THREADS_MAX	256

struct f_ctx {
	pthread_barrier_t *bar;
	char *base;
	int cpu;
};

static void *f_thread(void *arg)
{
	struct f_ctx *c = arg;
	cpu_set_t set;
	int r;

	CPU_ZERO(&set);
	CPU_SET(c->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);	/* best effort */
	prefault_stack(16 * 1024);
	pthread_barrier_wait(c->bar);			/* on its CPU */
	for (r = 0; r < F_ROUNDS; r++) {
		touch(c->base + (long)r * page_size, 1);
		pthread_barrier_wait(c->bar);		/* touched */
		pthread_barrier_wait(c->bar);		/* checked */
	}
	return NULL;
}

/*
 * The RSS only grows here (the threads stay alive, and each round's
 * munmap() is of a page never touched, which update_hiwater_rss() sees
 * but the counters do not), so the true peak is the exact VmRSS of the
 * round.  A fast read that runs ahead of a growing counter puts a higher,
 * false peak into VmHWM: a counter tree's level 0 starts mid-window, so
 * each CPU's part runs ahead by up to half a batch at some phase; 32
 * rounds of one page per CPU pass every phase, and the tree's sum over
 * the CPUs runs ahead in some round, whatever the CPUs' starting points.
 */
static void case_hiwater(void)
{
	static pthread_t tid[F_THREADS_MAX];
	static struct f_ctx ctx[F_THREADS_MAX];
	long rss, hwm, spare;
	pthread_barrier_t bar;
	int i, r, n = 0, cpu;
	cpu_set_t set;
	char *p;

	if (sched_getaffinity(0, sizeof(set), &set))
		die("sched_getaffinity");
	for (cpu = 0; cpu < CPU_SETSIZE && n < F_THREADS_MAX; cpu++)
		if (CPU_ISSET(cpu, &set))
			ctx[n++].cpu = cpu;
	spare = (long)n * F_ROUNDS;
	p = map_anon(spare + F_ROUNDS, MAP_PRIVATE);
	pthread_barrier_init(&bar, NULL, n + 1);
	for (i = 0; i < n; i++) {
		ctx[i].bar = &bar;
		ctx[i].base = p + (long)i * F_ROUNDS * page_size;
		errno = pthread_create(&tid[i], NULL, f_thread, &ctx[i]);
		if (errno)
			die("pthread_create");
	}
	pthread_barrier_wait(&bar);
	for (r = 0; r < F_ROUNDS; r++) {
		pthread_barrier_wait(&bar);		/* touched */
		if (read_file("/proc/self/status", status_buf, sizeof(status_buf)) <= 0)
			die("read /proc/self/status");
		rss = field_pages(status_buf, "VmRSS");
		/* an untouched page: update_hiwater_rss(), no RSS change */
		munmap(p + (spare + r) * page_size, page_size);
		if (read_file("/proc/self/status", status_buf, sizeof(status_buf)) <= 0)
			die("read /proc/self/status");
		hwm = field_pages(status_buf, "VmHWM");
		check(hwm > rss ? hwm - rss : 0, 0, 0,
		      "hiwater round %d: VmHWM %ld <= peak VmRSS %ld (%d threads, one page each a round)",
		      r, hwm, rss, n);
		pthread_barrier_wait(&bar);		/* checked */
	}
	for (i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&bar);
}

/*
 * ---- g. remote faults from several CPUs at once ----
 *
 * The updates of reclaim, khugepaged and the OOM reaper come from tasks
 * outside the mm, often several at once.  The guest has no swap to
 * reclaim into, so get_user_pages_remote() stands in: one writer process
 * per online CPU (at most G_WRITERS_MAX), each pinned, faults its slice
 * of a single-threaded child's region, all started together.
 */
#define G_WRITERS_MAX	8
#define G_CHECKS	(4 + 2 * use_stat)

static void case_remote_parallel(void)
{
	int cmd_fd, go_pipe[2], st, i, n = 0, cpu, bad = 0;
	pid_t pid, w[G_WRITERS_MAX];
	long b = delta_bound(1), per, off = 0;
	struct rss b0, b1;
	cpu_set_t set;
	char *r[2];

	if (sched_getaffinity(0, sizeof(set), &set))
		die("sched_getaffinity");
	pid = d_start(&cmd_fd, r);
	for (cpu = 0; cpu < CPU_SETSIZE && n < G_WRITERS_MAX; cpu++)
		if (CPU_ISSET(cpu, &set))
			w[n++] = cpu;
	per = npages / n;
	/* after the child's fork: only the writers hold the read end */
	if (pipe(go_pipe))
		die("pipe");
	read_rss(pid, &b0);
	for (i = 0; i < n; i++, off += per) {
		long pages = i == n - 1 ? npages - off : per;
		cpu_set_t one;
		pid_t c = fork();
		char go;

		if (c < 0)
			die("fork writer");
		if (!c) {
			close(go_pipe[1]);
			/* best effort: under random hotplug the CPU may be gone */
			CPU_ZERO(&one);
			CPU_SET(w[i], &one);
			sched_setaffinity(0, sizeof(one), &one);
			if (read(go_pipe[0], &go, 1) != 0)
				_exit(3);	/* EOF: all writers start */
			_exit(d_writev_n(pid, r[0] + off * page_size, pages) == pages ? 0 : 4);
		}
		w[i] = c;
	}
	close(go_pipe[0]);
	close(go_pipe[1]);		/* go */
	for (i = 0; i < n; i++) {
		while (waitpid(w[i], &st, 0) < 0 && errno == EINTR)
			;
		bad += status_code(st) != 0;
	}
	read_rss(pid, &b1);
	check(bad, 0, 0, "remote-parallel: %d writer processes on %d CPUs wrote every page", n, n);
	check(b1.anon - b0.anon, npages, b,
	      "remote-parallel: child RssAnon delta, %d writers at once, %ld pages",
	      n, npages);
	check_stat(b1.stat - b0.stat, npages, b,
		   "remote-parallel: child rss delta, %d writers at once, %ld pages",
		   n, npages);
	d_finish(pid, cmd_fd, "remote-parallel");
}

/*
 * ---- k. residue: one mm's per-CPU memory handed to the next ----
 *
 * A victim with a second thread (so its counters are per-CPU) lives on
 * the first allowed CPU.  Writer processes pinned to every other CPU
 * fault its pages: updates on CPUs where the victim never ran.  Its
 * exact RssAnon must count them.  The victim unmaps and exits.  A probe
 * forked from the victim's CPU (rss_stat=cache and flat hand it the
 * victim's per-CPU memory from their caches) starts a thread per CPU
 * there, reads its counters, then each thread moves to its CPU and
 * faults K_PAGES pages; the exact RssAnon must grow by exactly that.  A
 * mode that resets fewer CPUs than wrote to an mm leaves deltas that the
 * probe's second read picks up, and check_mm() reports them.
 */
#define K_ROUNDS	4
#define K_PAGES		31	/* below percpu_counter's batch: no fold */
#define K_CHECKS	(4 * K_ROUNDS)

static void *k_nop(void *arg)
{
	return arg;
}

static void k_pin(int cpu)
{
	cpu_set_t one;

	/* best effort: under random hotplug the CPU may be gone */
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	sched_setaffinity(0, sizeof(one), &one);
}

static void k_victim(int cpu0, int addr_fd, int cmd_fd)
{
	struct rss b0, b1;
	pthread_t t;
	char *r, c;

	k_pin(cpu0);
	/* a second user: from here on the counters may be per-CPU */
	if (pthread_create(&t, NULL, k_nop, NULL) || pthread_join(t, NULL))
		_exit(2);
	prefault(0);
	r = map_anon(npages, MAP_PRIVATE);
	read_rss(0, &b0);
	if (write(addr_fd, &r, sizeof(r)) != sizeof(r) || read(cmd_fd, &c, 1) != 1)
		_exit(2);
	munmap(r, npages * page_size);
	read_rss(0, &b1);
	_exit(b1.anon == b0.anon ? 0 : 1);
}

struct k_ctx {
	pthread_barrier_t *bar;
	char *base;
	int cpu;
};

static void *k_probe_thread(void *arg)
{
	struct k_ctx *k = arg;

	/* still on the probe's first CPU: its stack is counted before b0 */
	pthread_barrier_wait(k->bar);
	pthread_barrier_wait(k->bar);	/* main has read b0 */
	k_pin(k->cpu);
	touch(k->base, K_PAGES);
	/* alive until b1: glibc frees a thread's stack pages at its exit */
	pthread_barrier_wait(k->bar);
	pthread_barrier_wait(k->bar);
	return NULL;
}

static void k_probe(const int *cpus, int n, int round)
{
	struct k_ctx ctx[G_WRITERS_MAX];
	pthread_t tid[G_WRITERS_MAX];
	pthread_barrier_t bar;
	struct rss b0, b1;
	char *r;
	int i;

	prefault(0);
	r = map_anon(K_PAGES * n, MAP_PRIVATE);
	if (pthread_barrier_init(&bar, NULL, n + 1))
		_exit(2);
	for (i = 0; i < n; i++) {
		ctx[i].bar = &bar;
		ctx[i].base = r + (long)i * K_PAGES * page_size;
		ctx[i].cpu = cpus[i];
		if (pthread_create(&tid[i], NULL, k_probe_thread, &ctx[i]))
			_exit(2);
	}
	pthread_barrier_wait(&bar);
	read_rss(0, &b0);
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	read_rss(0, &b1);
	pthread_barrier_wait(&bar);
	for (i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	check(b1.anon - b0.anon, K_PAGES * n, 0,
	      "residue %d: probe's RssAnon delta, %d pages on each of %d CPUs",
	      round, K_PAGES, n);
	_exit(0);
}

static void k_round(const int *cpus, int n, int round)
{
	int addr_pipe[2], cmd_pipe[2], st, i;
	pid_t victim, probe, w;
	struct rss b0, b1;
	char *r;

	if (pipe(addr_pipe) || pipe(cmd_pipe))
		die("pipe");
	victim = fork();
	if (victim < 0)
		die("fork");
	if (!victim) {
		close(addr_pipe[0]);
		close(cmd_pipe[1]);
		k_victim(cpus[0], addr_pipe[1], cmd_pipe[0]);
	}
	close(addr_pipe[1]);
	close(cmd_pipe[0]);
	if (read(addr_pipe[0], &r, sizeof(r)) != sizeof(r))
		die("read victim address");
	close(addr_pipe[0]);
	read_rss(victim, &b0);
	for (i = 1; i < n; i++) {
		w = fork();
		if (w < 0)
			die("fork writer");
		if (!w) {
			k_pin(cpus[i]);
			_exit(d_writev_n(victim, r + (long)i * K_PAGES * page_size,
					 K_PAGES) == K_PAGES ? 0 : 4);
		}
		while (waitpid(w, &st, 0) < 0 && errno == EINTR)
			;
	}
	read_rss(victim, &b1);
	check(b1.anon - b0.anon, K_PAGES * (n - 1), 0,
	      "residue %d: victim's RssAnon delta, %d pages from each of %d other CPUs",
	      round, K_PAGES, n - 1);
	if (write(cmd_pipe[1], "x", 1) != 1)
		die("write victim command");
	close(cmd_pipe[1]);
	while (waitpid(victim, &st, 0) < 0 && errno == EINTR)
		;
	check(status_code(st), 0, 0, "residue %d: victim's RssAnon back after munmap", round);

	/* the probe's mm is set up on the CPU the victim's was freed on */
	k_pin(cpus[0]);
	probe = fork();
	if (probe < 0)
		die("fork probe");
	if (!probe)
		k_probe(cpus, n, round);
	while (waitpid(probe, &st, 0) < 0 && errno == EINTR)
		;
	check(status_code(st), 0, 0, "residue %d: probe exit status", round);
}

static void case_residue(void)
{
	int cpus[G_WRITERS_MAX], n = 0, cpu, round;
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		die("sched_getaffinity");
	for (cpu = 0; cpu < CPU_SETSIZE && n < G_WRITERS_MAX; cpu++)
		if (CPU_ISSET(cpu, &set))
			cpus[n++] = cpu;
	if (npages < K_PAGES * n)
		die("--pages too small for case k");
	for (round = 1; round <= K_ROUNDS; round++) {
		k_round(cpus, n, round);
		/* every CPU again, for the next victim's writers */
		sched_setaffinity(0, sizeof(set), &set);
	}
}

/*
 * ---- h. the fast read after CPUs go offline (--offline only) ----
 *
 * A thread pinned to each online CPU faults H_PAGES pages there, below
 * percpu_counter's batch, so each CPU keeps its part unfolded.  Then
 * every CPU but the first goes offline.  The exact read (VmRSS) must
 * still count every page; the fast read (/proc/PID/stat) must be within
 * --bound of it.  percpu_counter folds a dead CPU's part into its count;
 * the modes on no hotplug list (lazy's flat counters, cache) do not, so
 * their bound is per CPU that ever ran, not per online CPU.  Every CPU
 * is brought back online before the checks are sent.
 */
#define H_CPUS_MAX	64
#define H_CHECKS	3

struct h_ctx {
	pthread_barrier_t *bar;
	char *base;
	int cpu;
};

static struct h_ctx *h_ctx_cpus;

static void *h_thread(void *arg)
{
	struct h_ctx *c = arg;
	cpu_set_t one;

	/* stack pages first, still on the first CPU: only the touch is here */
	prefault_stack(16 * 1024);
	CPU_ZERO(&one);
	CPU_SET(c->cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		die("sched_setaffinity");
	pthread_barrier_wait(c->bar);		/* 1: all pinned */
	pthread_barrier_wait(c->bar);		/* 2: touch */
	touch(c->base, h_pages);
	pthread_barrier_wait(c->bar);		/* 3: touched */
	pthread_barrier_wait(c->bar);		/* 4: done */
	return NULL;
}

static int set_online(int cpu, int on)
{
	char path[64];
	int fd, ok;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ok = write(fd, on ? "1" : "0", 1) == 1;
	close(fd);
	return ok ? 0 : -1;
}

static void h_run(int n);

/*
 * The case process pins itself to the first CPU, then forks the process
 * that counts: its mm starts with every part on that CPU, none left on
 * the others by what ran before.
 */
static void case_offline(void)
{
	static struct h_ctx ctx[H_CPUS_MAX];
	int n = 0, cpu, st;
	cpu_set_t set;
	pid_t pid;

	if (sched_getaffinity(0, sizeof(set), &set))
		die("sched_getaffinity");
	for (cpu = 0; cpu < CPU_SETSIZE && n < H_CPUS_MAX; cpu++)
		if (CPU_ISSET(cpu, &set))
			ctx[n++].cpu = cpu;
	CPU_ZERO(&set);
	CPU_SET(ctx[0].cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		prefault(1);
		h_ctx_cpus = ctx;
		h_run(n);
		_exit(0);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (status_code(st))
		exit(status_code(st));
}

static void h_run(int n)
{
	static pthread_t tid[H_CPUS_MAX];
	struct h_ctx *ctx = h_ctx_cpus;
	int i, off_fail = 0, on_fail = 0;
	pthread_barrier_t bar;
	struct rss b0, b1, b2;
	char *p;

	p = map_anon((long)n * h_pages, MAP_PRIVATE);
	pthread_barrier_init(&bar, NULL, n + 1);
	for (i = 0; i < n; i++) {
		ctx[i].bar = &bar;
		ctx[i].base = p + (long)i * h_pages * page_size;
		errno = pthread_create(&tid[i], NULL, h_thread, &ctx[i]);
		if (errno)
			die("pthread_create");
	}
	pthread_barrier_wait(&bar);		/* 1 */
	read_rss(0, &b0);
	pthread_barrier_wait(&bar);		/* 2 */
	pthread_barrier_wait(&bar);		/* 3 */
	read_rss(0, &b2);
	for (i = 1; i < n; i++)
		off_fail += set_online(ctx[i].cpu, 0) != 0;
	read_rss(0, &b1);
	for (i = 1; i < n; i++)
		on_fail += set_online(ctx[i].cpu, 1) != 0;
	pthread_barrier_wait(&bar);		/* 4 */
	for (i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&bar);
	/* what the fold must take back: a weak check if not above --bound */
	printf("# offline: fast read off by %ld pages with every CPU online, %ld after\n",
	       labs(b2.stat - b2.total), labs(b1.stat - b1.total));
	fflush(stdout);
	check(off_fail + on_fail, 0, 0,
	      "offline: %d of %d CPUs went offline and came back", n - 1, n);
	check(b1.total - b0.total, (long)n * h_pages, 0,
	      "offline: exact VmRSS delta after %ld pages on each of %d CPUs, %d offlined",
	      h_pages, n, n - 1);
	check(b1.stat, b1.total, bound,
	      "offline: /proc stat rss (fast) within %ld pages of VmRSS (exact) with %d of %d CPUs offline",
	      bound, n - 1, n);
}

/*
 * ---- i. memcg charge of an mm's per-CPU memory (--memcg only) ----
 *
 * mm_init() asks for rss_stat's per-CPU counters to be charged to the
 * forking task's memcg (GFP_KERNEL_ACCOUNT), and the library's modes
 * must charge theirs.  In the memcg
 * given (a cgroup v2 directory, which this process joins), I_CHILDREN
 * children each start a thread (the first CLONE_VM switches a lazy mm to
 * per-CPU counters) and wait.  memory.stat's percpu must grow by at
 * least --min-bytes per child, and fall back once they are reaped; both
 * are polled, for up to I_WAIT_MS (see memcg_stat_nudge()).
 */
#define I_CHILDREN	64
#define I_CHECKS	3
#define I_WAIT_MS	6000

/*
 * A read of memory.stat flushes the memcg's statistics only once enough
 * updates are pending (MEMCG_CHARGE_BATCH per online CPU), else a
 * deferrable work does every 2 s, which an idle guest may put off.  A
 * page's charge is one update: fault and unmap enough pages first.
 */
static void memcg_stat_nudge(void)
{
	long n = 2048;
	char *p = map_anon(n, MAP_PRIVATE);

	touch(p, n);
	munmap(p, n * page_size);
}

static long memcg_percpu(void)
{
	char path[512];
	const char *p;

	memcg_stat_nudge();
	snprintf(path, sizeof(path), "%s/memory.stat", memcg_dir);
	if (read_file(path, status_buf, sizeof(status_buf)) <= 0)
		die(path);
	for (p = status_buf; p; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (!strncmp(p, "percpu ", 7))
			return strtol(p + 7, NULL, 10);
	}
	errno = ENOENT;
	die("percpu in memory.stat");
	return -1;
}

static void *i_thread(void *arg)
{
	pause();
	return arg;
}

static void case_memcg(void)
{
	int go[2], ready[2], i, bad = 0, st;
	pid_t kids[I_CHILDREN];
	long p0, p1 = 0, p2 = 0;
	char c;

	if (pipe(go) || pipe(ready))
		die("pipe");
	p0 = memcg_percpu();
	for (i = 0; i < I_CHILDREN; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			die("fork");
		if (!kids[i]) {
			pthread_t t;

			close(go[1]);
			close(ready[0]);
			errno = pthread_create(&t, NULL, i_thread, NULL);
			if (errno || write(ready[1], "r", 1) != 1)
				_exit(3);
			/* EOF: the parent has read memory.stat */
			_exit(read(go[0], &c, 1) == 0 ? 0 : 4);
		}
	}
	close(go[0]);
	close(ready[1]);
	for (i = 0; i < I_CHILDREN; i++)
		if (read(ready[0], &c, 1) != 1)
			bad++;
	for (i = 0; i < I_WAIT_MS / 100; i++) {
		p1 = memcg_percpu();
		if (p1 - p0 >= min_bytes * I_CHILDREN)
			break;
		usleep(100000);
	}
	close(go[1]);
	for (i = 0; i < I_CHILDREN; i++) {
		while (waitpid(kids[i], &st, 0) < 0 && errno == EINTR)
			;
		bad += status_code(st) != 0;
	}
	/*
	 * Uncharged when an mm is dropped: cache mode's after a grace
	 * period, and an idle CPU may keep the last mm it ran as its lazy
	 * TLB mm, one of 64 per CPU.  So three quarters must come back.
	 */
	for (i = 0; i < I_WAIT_MS / 100; i++) {
		p2 = memcg_percpu();
		if (4 * (p2 - p0) < p1 - p0)
			break;
		usleep(100000);
	}
	check(bad, 0, 0, "memcg: %d children with a thread each ran", I_CHILDREN);
	/* at least min_bytes each: got is clamped so that any excess passes */
	check((p1 - p0) / I_CHILDREN < min_bytes ? (p1 - p0) / I_CHILDREN : min_bytes,
	      min_bytes, 0, "memcg: percpu grew by >= %ld bytes a child (%ld in all)",
	      min_bytes, p1 - p0);
	check(4 * (p2 - p0) < p1 - p0 ? 0 : p2 - p0, 0, 0,
	      "memcg: percpu gave back three quarters of the children's %ld bytes after they exited (%ld left)",
	      p1 - p0, p2 - p0);
}

/*
 * ---- j. rss_stat=mmcid: a cid above the prepared blocks (--cid-grow) ----
 *
 * Each CLONE_VM prepares the blocks of the cids the new thread may take.
 * If that fails, a thread whose cid is above block 0 (8 cids) adds
 * through the remote slot until a work item has grown the block.  rss.sh
 * arms the library's mmcid fault site for tasks with make-it-fail set;
 * this process sets it while it creates J_THREADS threads, so that every
 * clone's preparation fails.  Ten users: with 8 or more CPUs allowed,
 * 7.2 gives them cids 0..9; each thread reads its own from rseq
 * (registered by glibc).  Round 0 (J_PAGES faults each) must send the
 * adds of the threads above block 0 to the remote slot and queue the
 * grow; once the block is there, rounds 1..J_ROUNDS - 1 must add no more
 * remotely.  debugfs rss_stat/ counts both, for every mm: nothing else
 * runs meanwhile.
 */
#define J_THREADS	9
#define J_ROUNDS	16
#define J_PAGES		32
#define J_CHECKS	4
#define J_DEBUGFS	"/sys/kernel/debug/rss_stat/"

static long read_long(const char *path)
{
	char buf[64];

	if (read_file(path, buf, sizeof(buf)) <= 0)
		die(path);
	return strtol(buf, NULL, 10);
}

static void make_it_fail(int on)
{
	int fd = open("/proc/thread-self/make-it-fail", O_WRONLY | O_CLOEXEC);

	if (fd < 0 || write(fd, on ? "1" : "0", 1) != 1)
		die("/proc/thread-self/make-it-fail");
	close(fd);
}

/*
 * This thread's mm_cid from its rseq area (glibc's), or -1 if glibc did
 * not register one.  The kernel takes at least 32 bytes, so mm_cid (at
 * 24) is there whatever __rseq_size says, and 7.2 writes it.
 */
static int rseq_mm_cid(void)
{
	if (!__rseq_size)
		return -1;
	/* the kernel writes it on return to user space: a plain load */
	return __atomic_load_n((int *)((char *)__builtin_thread_pointer() +
				       __rseq_offset + 24), __ATOMIC_RELAXED);
}

struct j_ctx {
	pthread_barrier_t *bar;
	char *base;
	int max_cid;
};

static void *j_thread(void *arg)
{
	struct j_ctx *c = arg;
	int r, cid;

	make_it_fail(0);
	prefault_stack(16 * 1024);
	c->max_cid = -1;
	pthread_barrier_wait(c->bar);		/* 1: all created */
	for (r = 0; r < J_ROUNDS; r++) {
		touch(c->base + (long)r * J_PAGES * page_size, J_PAGES);
		cid = rseq_mm_cid();
		if (cid > c->max_cid)
			c->max_cid = cid;
		if (!r) {
			pthread_barrier_wait(c->bar);	/* 2: round 0 done */
			pthread_barrier_wait(c->bar);	/* 3: grown */
		}
		sched_yield();
	}
	return NULL;
}

static void case_cid_grow(void)
{
	static struct j_ctx ctx[J_THREADS];
	static pthread_t tid[J_THREADS];
	long f0, f1, f2, g0, g1;
	pthread_barrier_t bar;
	int i, max_cid = -1;
	char *p;

	p = map_anon((long)J_THREADS * J_ROUNDS * J_PAGES, MAP_PRIVATE);
	pthread_barrier_init(&bar, NULL, J_THREADS + 1);
	f0 = read_long(J_DEBUGFS "mmcid_cid_fallbacks");
	g0 = read_long(J_DEBUGFS "mmcid_grows");
	make_it_fail(1);
	for (i = 0; i < J_THREADS; i++) {
		ctx[i].bar = &bar;
		ctx[i].base = p + (long)i * J_ROUNDS * J_PAGES * page_size;
		errno = pthread_create(&tid[i], NULL, j_thread, &ctx[i]);
		if (errno)
			die("pthread_create");
	}
	make_it_fail(0);
	pthread_barrier_wait(&bar);		/* 1 */
	pthread_barrier_wait(&bar);		/* 2 */
	f1 = read_long(J_DEBUGFS "mmcid_cid_fallbacks");
	/*
	 * A remote add queued a grow: wait for it, with no deadline of our
	 * own (the case's CASE_TIMEOUT ends a run where it never comes).
	 */
	g1 = read_long(J_DEBUGFS "mmcid_grows");
	while (f1 > f0 && g1 == g0) {
		usleep(10000);
		g1 = read_long(J_DEBUGFS "mmcid_grows");
	}
	pthread_barrier_wait(&bar);		/* 3 */
	for (i = 0; i < J_THREADS; i++) {
		pthread_join(tid[i], NULL);
		if (ctx[i].max_cid > max_cid)
			max_cid = ctx[i].max_cid;
	}
	pthread_barrier_destroy(&bar);
	f2 = read_long(J_DEBUGFS "mmcid_cid_fallbacks");
	printf("# cid-grow: highest mm_cid %d; remote adds: %ld in round 0, %ld after; grown %ld\n",
	       max_cid, f1 - f0, f2 - f1, g1 - g0);
	fflush(stdout);
	if (max_cid < 8) {
		skip("cid-grow: no cid above block 0 (highest %d; needs 8 CPUs)",
		     max_cid);
		skip("cid-grow: remote adds in round 0");
		skip("cid-grow: block grown");
		skip("cid-grow: no remote add after the grow");
		return;
	}
	check(max_cid >= 8, 1, 0, "cid-grow: a thread had cid %d, above block 0", max_cid);
	check(f1 > f0, 1, 0, "cid-grow: round 0 added remotely for cids above block 0 (%ld)",
	      f1 - f0);
	check(g1 > g0, 1, 0, "cid-grow: a work item grew the missing block (%ld)", g1 - g0);
	check(f2 - f1, 0, 0, "cid-grow: rounds 1..%d added nothing remotely after the grow",
	      J_ROUNDS - 1);
}

/* ---- main ---- */

#define CHECKS_PER_LOOP (A_CHECKS + B_CHECKS + C_CHECKS + D_CHECKS + E_CHECKS + \
			 F_CHECKS + G_CHECKS + K_CHECKS)

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [--bound PAGES] [--exact-single] [--pages N] [--loops L] [--stat]\n"
		"       %s --offline [--pages-per-cpu N] --bound PAGES\n"
		"       %s --memcg DIR --min-bytes B\n"
		"       %s --cid-grow\n"
		"  --bound PAGES   allowed error of one /proc read of a counter (default 0)\n"
		"  --exact-single  single-threaded processes must read exact counters\n"
		"  --pages N       pages per region (default 4096)\n"
		"  --loops L       repeat all cases L times (default 1)\n"
		"  --stat          also check the rss field of /proc/PID/stat (fast read)\n"
		"  --offline       only case h: the fast read with all CPUs but one offline\n"
		"                  (root); --bound is the fast read's error allowed then\n"
		"  --pages-per-cpu N  pages case h faults on each CPU (default 31)\n"
		"  --memcg DIR     only case i: join cgroup v2 DIR, fork children, check\n"
		"                  that memory.stat percpu grew by --min-bytes B per child\n"
		"  --cid-grow      only case j (rss_stat=mmcid, mmcid fault site armed)\n",
		prog, prog, prog, prog);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bound", required_argument, NULL, 'b' },
		{ "exact-single", no_argument, NULL, 'x' },
		{ "pages", required_argument, NULL, 'p' },
		{ "loops", required_argument, NULL, 'l' },
		{ "stat", no_argument, NULL, 's' },
		{ "offline", no_argument, NULL, 'o' },
		{ "pages-per-cpu", required_argument, NULL, 'P' },
		{ "memcg", required_argument, NULL, 'm' },
		{ "min-bytes", required_argument, NULL, 'M' },
		{ "cid-grow", no_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "b:xp:l:soP:m:M:gh", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			bound = strtol(optarg, &end, 0);
			if (*end || bound < 0)
				usage(argv[0]);
			break;
		case 'x':
			exact_single = 1;
			break;
		case 's':
			use_stat = 1;
			break;
		case 'o':
			offline = 1;
			break;
		case 'm':
			memcg_dir = optarg;
			break;
		case 'g':
			cid_grow = 1;
			break;
		case 'M':
			min_bytes = strtol(optarg, &end, 0);
			if (*end || min_bytes < 0)
				usage(argv[0]);
			break;
		case 'P':
			h_pages = strtol(optarg, &end, 0);
			if (*end || h_pages < 1)
				usage(argv[0]);
			break;
		case 'p':
			npages = strtol(optarg, &end, 0);
			if (*end || npages < B_THREADS_MAX)
				usage(argv[0]);
			break;
		case 'l':
			loops = strtol(optarg, &end, 0);
			if (*end || loops < 1)
				usage(argv[0]);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind != argc)
		usage(argv[0]);
	page_size = sysconf(_SC_PAGESIZE);

	if (cid_grow) {
		printf("TAP version 13\n1..%d\n", J_CHECKS);
		fflush(stdout);
		run_case("cid-grow", case_cid_grow, J_CHECKS);
		printf("# %s\n", failed ? "FAIL" : "PASS");
		return failed;
	}
	if (memcg_dir) {
		char path[512];
		int fd;

		snprintf(path, sizeof(path), "%s/cgroup.procs", memcg_dir);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "0", 1) != 1)
			die(path);
		close(fd);
		printf("TAP version 13\n1..%d\n", I_CHECKS);
		printf("# rss_check --memcg %s: %d children, at least %ld bytes each\n",
		       memcg_dir, I_CHILDREN, min_bytes);
		fflush(stdout);
		run_case("memcg", case_memcg, I_CHECKS);
		printf("# %s\n", failed ? "FAIL" : "PASS");
		return failed;
	}
	if (offline) {
		use_stat = 1;
		printf("TAP version 13\n1..%d\n", H_CHECKS);
		printf("# rss_check --offline: %ld pages per CPU, bound %ld, online cpus %ld\n",
		       h_pages, bound, sysconf(_SC_NPROCESSORS_ONLN));
		fflush(stdout);
		run_case("offline", case_offline, H_CHECKS);
		printf("# %s\n", failed ? "FAIL" : "PASS");
		return failed;
	}

	printf("TAP version 13\n");
	printf("1..%d\n", CHECKS_PER_LOOP * loops);
	printf("# rss_check: pages %ld, page size %ld, bound %ld, exact-single %d, stat %d, loops %d, online cpus %ld\n",
	       npages, page_size, bound, exact_single, use_stat, loops,
	       sysconf(_SC_NPROCESSORS_ONLN));
	fflush(stdout);

	for (loop_no = 1; loop_no <= loops; loop_no++) {
		run_case("single", case_single, A_CHECKS);
		run_case("threads", case_threads, B_CHECKS);
		run_case("shmem", case_shmem, C_CHECKS);
		run_case("remote", case_remote, D_CHECKS);
		run_case("fork", case_fork, E_CHECKS);
		run_case("hiwater", case_hiwater, F_CHECKS);
		run_case("remote-parallel", case_remote_parallel, G_CHECKS);
		run_case("residue", case_residue, K_CHECKS);
	}
	printf("# %s\n", failed ? "FAIL" : "PASS");
	return failed;
}
