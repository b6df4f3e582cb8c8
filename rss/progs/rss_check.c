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
#include <sys/uio.h>
#include <sys/wait.h>

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

static ssize_t read_file(const char *path, char *buf, size_t size)
{
	ssize_t n, total = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((size_t)total < size - 1) {
		n = read(fd, buf + total, size - 1 - total);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		total += n;
	}
	close(fd);
	buf[total] = '\0';
	return total;
}

/* Field 24 of /proc/PID/stat (rss, in pages); -1 on error. */
static long stat_rss(const char *path)
{
	char *p;
	int field;

	if (read_file(path, stat_buf, sizeof(stat_buf)) <= 0)
		return -1;
	p = strrchr(stat_buf, ')');	/* comm may hold spaces */
	if (!p)
		return -1;
	/* p + 1 starts field 3 (state) */
	for (field = 2; field < 24; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -1;
	}
	return strtol(p + 1, NULL, 10);
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

static long d_writev(pid_t pid, char *remote)
{
	static struct iovec liov[IOV_BATCH], riov[IOV_BATCH];
	static long word = 0x5a5a5a5a;
	long i, n, done = 0;
	ssize_t ret;

	for (i = 0; i < npages; i += n) {
		long j;

		n = npages - i < IOV_BATCH ? npages - i : IOV_BATCH;
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

static void case_remote(void)
{
	int addr_pipe[2], cmd_pipe[2], st, err = 0;
	struct rss b0, b1, b2;
	long b = delta_bound(1), i, n;
	char *r[2];
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
	if (read(addr_pipe[0], r, sizeof(r)) != sizeof(r))
		die("read child addresses");

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
	if (write(cmd_pipe[1], "x", 1) != 1)
		die("write child command");
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	check(status_code(st), 0, 0, "remote: child exit status");
	close(addr_pipe[0]);
	close(cmd_pipe[1]);
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

/* ---- main ---- */

#define CHECKS_PER_LOOP (A_CHECKS + B_CHECKS + C_CHECKS + D_CHECKS + E_CHECKS + \
			 F_CHECKS)

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [--bound PAGES] [--exact-single] [--pages N] [--loops L] [--stat]\n"
		"  --bound PAGES   allowed error of one /proc read of a counter (default 0)\n"
		"  --exact-single  single-threaded processes must read exact counters\n"
		"  --pages N       pages per region (default 4096)\n"
		"  --loops L       repeat all cases L times (default 1)\n"
		"  --stat          also check the rss field of /proc/PID/stat (fast read)\n", prog);
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "b:xp:l:sh", opts, NULL)) != -1) {
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
	}
	printf("# %s\n", failed ? "FAIL" : "PASS");
	return failed;
}
