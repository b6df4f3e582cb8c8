// SPDX-License-Identifier: GPL-2.0
/*
 * Differential fuzzing of every pcpu_next debugfs file that takes input.
 *
 * concurrent_differential: thousands of random and mutated control lines
 * go to the stress and bench files from several writer processes at once,
 * while a reader process keeps reading every file.  A reference parser
 * written here from the grammar the README documents predicts each
 * verdict: a malformed line must get exactly the predicted errno (parsing
 * happens before the busy check, so concurrency cannot change it); a
 * well-formed one either starts a run or gets EBUSY.  Well-formed lines
 * are only sent when their run is short; some of them inject faults (on
 * a kernel without fault injection, no /proc/self/fail-nth, the reference
 * predicts EOPNOTSUPP for every faults= line instead).
 *
 * component_files: the same for the harness's mmcid file.  Each writer
 * process has its own mm, hence its own mmcid counter: after every
 * accepted "add <n>" it reads the counter back, and the sum must be
 * exactly what it added (no lost or doubled update).
 */
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "pn_util.h"

#define LINE_MAX_LEN	256
#define NR_WRITERS	3
#define LINES_PER_WRITER 1000
#define MAX_RUNS_PER_WRITER 6

struct ref_test {
	char name[32];
	int stress, bench, faults;
};

static struct ref_test ref_tests[32];
static int nr_ref_tests;
static int ref_fault_injection;	/* pn_fault_injection(): faults= usable */

static const char *const keys[] = {
	"test", "threads", "seconds", "ms", "size", "batch", "objects", "seed", "pin",
	"faults",
};

static const char *const pins[] = { "each", "none", "even", "one", "random" };

struct ref_result {
	int err;		/* 0 or a positive errno */
	unsigned long long ms, threads;
	int has_ms, has_threads;
};

/* kstrtoull(s, 10) semantics: optional '+', digits only, overflow ERANGE. */
static int ref_ull(const char *s, unsigned long long *out)
{
	unsigned long long v = 0;

	if (*s == '+')
		s++;
	if (!*s)
		return EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return EINVAL;
		if (v > (ULLONG_MAX - (*s - '0')) / 10)
			return ERANGE;
		v = v * 10 + (*s - '0');
	}
	*out = v;
	return 0;
}

static int ref_uint(const char *s, unsigned long long lo, unsigned long long hi,
		    unsigned long long *out)
{
	int err = ref_ull(s, out);

	if (err)
		return err;
	if (*out > UINT_MAX || *out < lo || *out > hi)
		return ERANGE;
	return 0;
}

static void ref_parse(const char *line, size_t len, int nr_cpu_ids, int bench,
		      struct ref_result *r)
{
	char buf[LINE_MAX_LEN + 1], *cur, *word;
	unsigned int seen = 0;
	char test[64] = "";
	size_t i;
	int k;

	memset(r, 0, sizeof(*r));
	r->err = EINVAL;
	if (len >= LINE_MAX_LEN) {
		r->err = E2BIG;
		return;
	}
	if (len && line[len - 1] == '\n')
		len--;
	if (!len)
		return;
	for (i = 0; i < len; i++)
		if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] > 0x7e)
			return;
	if (line[0] == ' ' || line[len - 1] == ' ')
		return;
	memcpy(buf, line, len);
	buf[len] = '\0';

	cur = buf;
	while ((word = strsep(&cur, " ")) != NULL) {
		char *eq = strchr(word, '='), *val;
		unsigned long long v;
		int err = 0;

		if (!eq || eq == word)
			return;
		*eq = '\0';
		val = eq + 1;
		for (k = 0; k < (int)ARRAY_SIZE(keys); k++)
			if (!strcmp(word, keys[k]))
				break;
		if (k == (int)ARRAY_SIZE(keys) || !*val || (seen & (1u << k)))
			return;
		seen |= 1u << k;
		switch (k) {
		case 0:
			if (strlen(val) >= 24)
				return;
			for (i = 0; val[i]; i++)
				if (!((val[i] >= 'a' && val[i] <= 'z') ||
				      (val[i] >= '0' && val[i] <= '9') || val[i] == '_'))
					return;
			snprintf(test, sizeof(test), "%s", val);
			break;
		case 1:
			err = ref_uint(val, 1, 4ULL * nr_cpu_ids, &v);
			r->threads = v;
			r->has_threads = 1;
			break;
		case 2:
			err = ref_uint(val, 1, 300, &v);
			r->ms = v * 1000;
			r->has_ms = 1;
			break;
		case 3:
			err = ref_uint(val, 1, 300000, &v);
			r->ms = v;
			r->has_ms = 1;
			break;
		case 4:
			err = ref_uint(val, 1, 32768, &v);
			break;
		case 5:
		case 6:
			err = ref_uint(val, 1, 1 << 20, &v);
			break;
		case 7:
			err = ref_ull(val, &v);
			break;
		case 8:
			err = EINVAL;
			for (i = 0; i < ARRAY_SIZE(pins); i++)
				if (!strcmp(val, pins[i]))
					err = 0;
			break;
		case 9:
			err = ref_uint(val, 0, 1000, &v);
			break;
		}
		if (err) {
			r->err = err;
			return;
		}
	}
	if (!(seen & 1) || ((seen & 4) && (seen & 8)))
		return;
	for (k = 0; k < nr_ref_tests; k++)
		if (!strcmp(ref_tests[k].name, test))
			break;
	if (k == nr_ref_tests || !(bench ? ref_tests[k].bench : ref_tests[k].stress))
		return;
	if ((seen & (1u << 9)) &&
	    (bench || !ref_tests[k].faults || !ref_fault_injection)) {
		r->err = EOPNOTSUPP;
		return;
	}
	r->err = 0;
}

/*
 * mmcid: "add <n>", n decimal digits with an optional leading '-', in the
 * s32 range; one optional newline; 64 bytes or more E2BIG.  Or "bench <n>"
 * (more than the 6 bytes "bench "), n decimal digits only, 1 .. 2^20:
 * the counter grows by n.
 */
static int ref_mmcid(const char *line, size_t len, long long *v)
{
	unsigned long long u;
	char buf[80];
	size_t i;
	int err;

	if (len >= 64)
		return E2BIG;
	if (len > 6 && !memcmp(line, "bench ", 6)) {
		if (line[len - 1] == '\n')
			len--;
		if (len < 7)
			return EINVAL;
		memcpy(buf, line + 6, len - 6);
		buf[len - 6] = '\0';
		for (i = 0; i < len - 6; i++)
			if (buf[i] < '0' || buf[i] > '9')
				return EINVAL;
		err = ref_ull(buf, &u);
		if (err)
			return err;
		if (!u || u > (1ULL << 20))
			return ERANGE;
		*v = (long long)u;
		return 0;
	}
	if (len && line[len - 1] == '\n')
		len--;
	if (len < 5 || memcmp(line, "add ", 4))
		return EINVAL;
	memcpy(buf, line + 4, len - 4);
	buf[len - 4] = '\0';
	for (i = 0; i < len - 4; i++)
		if (!(buf[i] >= '0' && buf[i] <= '9') && !(i == 0 && buf[i] == '-'))
			return EINVAL;
	if (!strcmp(buf, "-"))
		return EINVAL;
	err = ref_ull(buf[0] == '-' ? buf + 1 : buf, &u);
	if (err)
		return err;
	if (buf[0] == '-' ? u > 2147483648ULL : u > 2147483647ULL)
		return ERANGE;
	*v = buf[0] == '-' ? -(long long)u : (long long)u;
	return 0;
}

static uint64_t rng;

/*
 * Every run fuzzes new lines: the base seed comes from the clock unless
 * PN_FUZZ_SEED is set, and is printed so that a failing run can be
 * replayed (the interleaving of writers is not replayed).
 */
static uint64_t fuzz_seed(void)
{
	static uint64_t seed;
	const char *env = getenv("PN_FUZZ_SEED");

	if (!seed) {
		seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL) * 2654435761ULL;
		seed = seed ? seed : 1;
		printf("# fuzz seed %llu (PN_FUZZ_SEED=%llu replays it)\n",
		       (unsigned long long)seed, (unsigned long long)seed);
		fflush(stdout);
	}
	return seed;
}

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static const char *const dict[] = {
	" ", "=", "\n", "\t", "+", "-", "0", "1", "7", "300", "301", "1000",
	"4294967296", "99999999999999999999999", "test=", "threads=", "ms=",
	"seconds=", "size=", "batch=", "objects=", "seed=", "pin=", "random",
	"percpu", "PERCPU", "=percpu", " test=percpu", "  ", "\xff", "%s%n",
	" faults=10", "faults=", "1001", "alloc", "lazy",
};

static const char *const cdict[] = {
	"add ", "add", " ", "-", "+", "\n", "\0", "0", "9", "2147483647",
	"2147483648", "-2147483648", "-2147483649", "1048576", "1048577",
	"4294967296", "18446744073709551616", "0x10", "\xff", "000000000000000000000000000001",
	"bench ",
};

static const char *const *cur_dict = dict;
static size_t cur_dict_len = ARRAY_SIZE(dict);

static size_t mutate(char *buf, size_t len, size_t cap)
{
	int n = 1 + rnd() % 4;

	while (n--) {
		size_t pos = len ? rnd() % (len + 1) : 0;
		const char *d;
		size_t dl;

		switch (rnd() % 6) {
		case 0:		/* replace a byte */
			if (len)
				buf[rnd() % len] = (char)(rnd() % 256);
			break;
		case 1:		/* insert a dictionary token */
		case 2:
			d = cur_dict[rnd() % cur_dict_len];
			dl = strlen(d) ? strlen(d) : 1;	/* "\0" is one NUL */
			if (len + dl < cap) {
				memmove(buf + pos + dl, buf + pos, len - pos);
				memcpy(buf + pos, d, dl);
				len += dl;
			}
			break;
		case 3:		/* delete a range */
			if (len) {
				size_t dl2 = 1 + rnd() % 8;

				if (pos + dl2 > len)
					dl2 = len - pos;
				memmove(buf + pos, buf + pos + dl2, len - pos - dl2);
				len -= dl2;
			}
			break;
		case 4:		/* truncate */
			len = pos;
			break;
		case 5:		/* grow towards the length limit */
			while (len < cap - 1 && rnd() % 64)
				buf[len++] = "abc=123 "[rnd() % 8];
			break;
		}
	}
	return len;
}

static const char *const corpus[] = {
	"test=percpu ms=50 threads=1\n",
	"test=percpu threads=2 ms=80 pin=even seed=5",
	"test=percpu ms=20 size=64 batch=16 objects=10 pin=random\n",
	"test=percpu seconds=1",
	"test=alloc ms=60 threads=2 faults=100\n",
	"test=lazy ms=80 threads=3 faults=300",
};

static const char *const ccorpus_mmcid[] = {
	"add 1\n", "add -5", "add 2147483647\n", "add 0", "bench 3\n", "bench 1000",
};

static int load_tests(void)
{
	char buf[4096], *line, *save = NULL;

	ref_fault_injection = pn_fault_injection();
	if (pn_read("list", buf, sizeof(buf)) <= 0)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line && nr_ref_tests < 32;
	     line = strtok_r(NULL, "\n", &save)) {
		struct ref_test *t = &ref_tests[nr_ref_tests];
		char modes[64] = "";

		if (sscanf(line, "%31s %63s", t->name, modes) != 2)
			continue;	/* not a "<name> <modes> ..." line */
		nr_ref_tests++;
		t->stress = strstr(modes, "stress") != NULL;
		t->bench = strstr(modes, "bench") != NULL;
		t->faults = strstr(modes, "faults") != NULL;
	}
	return nr_ref_tests;
}

struct fuzz_stats {
	int sent, runs, busy, bad;
};

/* One writer: returns the number of verdicts that differed. */
static int writer(int id, int nr_cpu_ids, struct fuzz_stats *st)
{
	char buf[2 * LINE_MAX_LEN];
	int i, bad = 0, runs = 0;

	rng = (fuzz_seed() ^ 0x9e3779b97f4a7c15ULL) * (id + 1) | 1;
	for (i = 0; i < LINES_PER_WRITER; i++) {
		const char *file = rnd() % 3 ? "stress" : "bench";
		struct ref_result r;
		size_t len;
		int got;

		if (rnd() % 8 == 0) {	/* pure noise */
			len = rnd() % (sizeof(buf) - 1);
			for (size_t j = 0; j < len; j++)
				buf[j] = (char)(rnd() % 256);
		} else {
			const char *c = corpus[rnd() % ARRAY_SIZE(corpus)];

			len = strlen(c);
			memcpy(buf, c, len);
			len = mutate(buf, len, sizeof(buf));
		}
		if (!len)
			len = 1, buf[0] = '\n';
		ref_parse(buf, len, nr_cpu_ids, !strcmp(file, "bench"), &r);
		if (!r.err) {
			unsigned long long ms = r.has_ms ? r.ms : 1000;
			unsigned long long th = r.has_threads ? r.threads : 4;

			/* Keep well-formed runs short and few. */
			if (ms > 200 || th > 8 || runs >= MAX_RUNS_PER_WRITER)
				continue;
		}
		got = -pn_write(file, buf, len);
		st->sent++;
		if (got == EBUSY)
			st->busy++;
		if (!r.err) {
			if (got == 0) {
				runs++;
				st->runs++;
				pn_wait_idle(file, 60);
			} else if (got != EBUSY) {
				bad++;
				fprintf(stderr, "# writer %d: good line got %d: %.*s\n",
					id, got, (int)len, buf);
			}
		} else if (got != r.err) {
			bad++;
			if (bad <= 10)
				fprintf(stderr, "# writer %d: expected %d got %d for \"%.*s\"\n",
					id, r.err, got, (int)(len > 80 ? 80 : len), buf);
		}
	}
	st->bad = bad;
	return bad;
}

static void reader(void)
{
	static const char *const files[] = { "list", "stress", "bench" };
	char buf[16384];

	for (;;)
		for (unsigned int i = 0; i < ARRAY_SIZE(files); i++)
			pn_read(files[i], buf, sizeof(buf));
}

static int nr_ids;	/* nr_cpu_ids, for the reference parser */

static int control_writer(int id, void *st)
{
	return writer(id, nr_ids, st) ? 1 : 0;
}

/*
 * Fork a reader and NR_WRITERS writers (writer i gets st + i * st_size,
 * shared memory), wait for the writers, then stop the reader.  Returns
 * how many writers failed, plus one if the reader exited by itself (it
 * loops until killed unless it saw something wrong); -1 if a fork failed.
 */
static int storm(void (*rd_fn)(void), int (*wr_fn)(int id, void *st),
		 void *st, size_t st_size)
{
	pid_t pids[NR_WRITERS], rd;
	int i, status, failed = 0;

	rd = fork();
	if (rd < 0)
		return -1;
	if (!rd) {
		rd_fn();
		_exit(0);
	}
	for (i = 0; i < NR_WRITERS; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			kill(rd, SIGKILL);
			return -1;
		}
		if (!pids[i])
			_exit(wr_fn(i, (char *)st + i * st_size));
	}
	for (i = 0; i < NR_WRITERS; i++)
		if (waitpid(pids[i], &status, 0) != pids[i] ||
		    !WIFEXITED(status) || WEXITSTATUS(status))
			failed++;
	if (waitpid(rd, &status, WNOHANG) != 0)
		failed++;
	kill(rd, SIGKILL);
	waitpid(rd, &status, 0);
	return failed;
}

struct comp_stats {
	int sent_mmcid, bad, sums_checked, sum_errors;
};

/* Per-writer statistics of both tests, in memory shared with the writers. */
union fuzz_shared {
	struct fuzz_stats f[NR_WRITERS];
	struct comp_stats c[NR_WRITERS];
};

FIXTURE(fuzz) {
	union fuzz_shared *sh;
};

FIXTURE_SETUP(fuzz)
{
	self->sh = mmap(NULL, sizeof(*self->sh), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->sh);
	memset(self->sh, 0, sizeof(*self->sh));
}

FIXTURE_TEARDOWN(fuzz)
{
	munmap(self->sh, sizeof(*self->sh));
}

TEST_F_TIMEOUT(fuzz, concurrent_differential, 600)
{
	int i, bad, sent = 0, runs = 0, busy = 0, mismatches = 0;
	struct fuzz_stats *st = self->sh->f;
	char buf[16384];

	if (access(PN_DIR "/stress", F_OK))
		SKIP(return, "pcpu_next not loaded");
	fuzz_seed();
	ASSERT_GT(load_tests(), 0);
	ASSERT_EQ(0, pn_wait_idle("stress", 60));
	ASSERT_EQ(0, pn_wait_idle("bench", 60));

	nr_ids = pn_nr_cpu_ids();
	bad = storm(reader, control_writer, st, sizeof(*st));
	for (i = 0; i < NR_WRITERS; i++) {
		sent += st[i].sent;
		runs += st[i].runs;
		busy += st[i].busy;
		mismatches += st[i].bad;
	}
	/* A stable line for the README's reliability figures. */
	printf("# fuzz: %d lines from %d writers, %d runs started, %d EBUSY, %d wrong verdicts\n",
	       sent, NR_WRITERS, runs, busy, mismatches);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, mismatches);
	EXPECT_GT(sent, NR_WRITERS * LINES_PER_WRITER / 2);

	/* Every run that was started finished with a verdict. */
	ASSERT_EQ(0, pn_wait_idle("stress", 60));
	ASSERT_GE(pn_read("stress", buf, sizeof(buf)), 0);
	for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n")) {
		size_t n = strlen(l);

		EXPECT_TRUE(n > 5 && (!strcmp(l + n - 5, " PASS"))) TH_LOG("%s", l);
	}
}

/* ---- component files ------------------------------------------------------ */

#define COMP_LINES_PER_WRITER 800

/*
 * One line to mmcid through @fd; an accepted add is read back and the sum
 * must be what this process added.  Returns 0 or the errno of the write.
 */
static int comp_mmcid(int id, int fd, const char *buf, size_t len, long long v,
		      long long *expect, struct comp_stats *st)
{
	char rd[256], *p;
	ssize_t n;

	n = pwrite(fd, buf, len, 0);
	if (n < 0)
		return errno;
	if (n != (ssize_t)len)
		return EIO;
	*expect += v;
	st->sums_checked++;
	n = pread(fd, rd, sizeof(rd) - 1, 0);
	rd[n > 0 ? n : 0] = '\0';
	p = strstr(rd, " sum=");
	if (!p || strtoll(p + 5, NULL, 10) != *expect) {
		if (++st->sum_errors <= 5)
			fprintf(stderr, "# writer %d: expected sum %lld, read \"%s\"\n",
				id, *expect, rd);
	}
	return 0;
}

static int comp_writer(int id, void *arg)
{
	struct comp_stats *st = arg;
	long long expect = 0;
	char buf[128];
	int i, fd;

	rng = (fuzz_seed() ^ 0xda942042e4dd58b5ULL) * (id + 1) | 1;
	cur_dict = cdict;
	cur_dict_len = ARRAY_SIZE(cdict);
	fd = open(PN_DIR "/mmcid", O_RDWR);
	if (fd < 0)
		return 1;
	for (i = 0; i < COMP_LINES_PER_WRITER; i++) {
		long long v = 0;
		int want, got;
		const char *c;
		size_t len;

		if (rnd() % 8 == 0) {
			len = rnd() % (sizeof(buf) - 1);
			for (size_t j = 0; j < len; j++)
				buf[j] = (char)(rnd() % 256);
		} else {
			c = ccorpus_mmcid[rnd() % ARRAY_SIZE(ccorpus_mmcid)];
			len = strlen(c);
			memcpy(buf, c, len);
			if (rnd() % 4)
				len = mutate(buf, len, sizeof(buf));
		}
		want = ref_mmcid(buf, len, &v);
		got = want ? -pn_write("mmcid", buf, len) :
		      comp_mmcid(id, fd, buf, len, v, &expect, st);
		st->sent_mmcid++;
		if (got != want && ++st->bad <= 10)
			fprintf(stderr, "# writer %d: mmcid: expected %d got %d for \"%.*s\"\n",
				id, want, got, (int)(len > 60 ? 60 : len), buf);
	}
	close(fd);
	return st->bad || st->sum_errors;
}

static void comp_reader(void)
{
	static const char *const files[] = {
		"alloc/stats", "list", "stress",
	};
	char buf[16384];
	int fd = open(PN_DIR "/mmcid", O_RDONLY);

	for (;;) {
		for (unsigned int i = 0; i < ARRAY_SIZE(files); i++)
			pn_read(files[i], buf, sizeof(buf));
		if (fd >= 0 && pread(fd, buf, sizeof(buf), 0) >= 0)
			_exit(3);	/* no add through this file: ENODATA */
	}
}

TEST_F_TIMEOUT(fuzz, component_files, 600)
{
	int i, failed, sent_mmcid = 0, bad = 0;
	struct comp_stats *st = self->sh->c;
	int sums = 0, sum_errors = 0;

	if (access(PN_DIR "/mmcid", F_OK))
		SKIP(return, "pcpu_next not loaded");
	fuzz_seed();
	ASSERT_EQ(0, pn_wait_idle("stress", 60));
	ASSERT_EQ(0, pn_wait_idle("bench", 60));

	/* failed counts the reader too: it exits on a wrong mmcid read */
	failed = storm(comp_reader, comp_writer, st, sizeof(*st));
	for (i = 0; i < NR_WRITERS; i++) {
		sent_mmcid += st[i].sent_mmcid;
		bad += st[i].bad;
		sums += st[i].sums_checked;
		sum_errors += st[i].sum_errors;
	}
	printf("# fuzz-components: %d lines to mmcid from %d writers, ",
	       sent_mmcid, NR_WRITERS);
	printf("%d wrong verdicts, %d sums read back, %d wrong\n", bad, sums, sum_errors);
	EXPECT_EQ(0, failed);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, sum_errors);
	EXPECT_GT(sums, NR_WRITERS * 20);
}

TEST_HARNESS_MAIN
