// SPDX-License-Identifier: GPL-2.0
/*
 * Differential fuzzing of the pcpu_next control plane.
 *
 * Thousands of random and mutated control lines go to the stress and bench
 * files from several writer processes at once, while a reader process keeps
 * reading every control file.  A reference parser written here from the
 * grammar the README documents predicts each verdict: a malformed line must
 * get exactly the predicted errno (parsing happens before the busy check,
 * so concurrency cannot change it); a well-formed one either starts a run
 * or gets EBUSY.  Well-formed lines are only sent when their run is short.
 */
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "pn_util.h"

#define LINE_MAX_LEN	256
#define NR_WRITERS	3
#define LINES_PER_WRITER 1000
#define MAX_RUNS_PER_WRITER 6

struct ref_test {
	char name[32];
	int stress, bench;
};

static struct ref_test ref_tests[32];
static int nr_ref_tests;

static const char *const keys[] = {
	"test", "threads", "seconds", "ms", "size", "batch", "objects", "seed", "pin",
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
	r->err = 0;
}

static uint64_t rng;

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
};

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
			d = dict[rnd() % ARRAY_SIZE(dict)];
			dl = strlen(d);
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
};

static int load_tests(void)
{
	char buf[4096], *line, *save = NULL;

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

	rng = 0x9e3779b97f4a7c15ULL * (id + 1);
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

FIXTURE(fuzz) {
	struct fuzz_stats *st;
};

FIXTURE_SETUP(fuzz)
{
	self->st = mmap(NULL, NR_WRITERS * sizeof(*self->st), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->st);
	memset(self->st, 0, NR_WRITERS * sizeof(*self->st));
}

FIXTURE_TEARDOWN(fuzz)
{
	munmap(self->st, NR_WRITERS * sizeof(*self->st));
}

TEST_F_TIMEOUT(fuzz, concurrent_differential, 600)
{
	pid_t pids[NR_WRITERS], rd;
	int i, status, nr = pn_nr_cpu_ids(), bad = 0;
	int sent = 0, runs = 0, busy = 0, mismatches = 0;
	char buf[16384];

	if (access(PN_DIR "/stress", F_OK))
		SKIP(return, "pcpu_next not loaded");
	ASSERT_GT(load_tests(), 0);
	ASSERT_EQ(0, pn_wait_idle("stress", 60));
	ASSERT_EQ(0, pn_wait_idle("bench", 60));

	rd = fork();
	ASSERT_GE(rd, 0);
	if (!rd) {
		reader();
		_exit(0);
	}
	for (i = 0; i < NR_WRITERS; i++) {
		pids[i] = fork();
		ASSERT_GE(pids[i], 0);
		if (!pids[i])
			_exit(writer(i, nr, &self->st[i]) ? 1 : 0);
	}
	for (i = 0; i < NR_WRITERS; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			bad++;
	}
	kill(rd, SIGKILL);
	waitpid(rd, &status, 0);
	for (i = 0; i < NR_WRITERS; i++) {
		sent += self->st[i].sent;
		runs += self->st[i].runs;
		busy += self->st[i].busy;
		mismatches += self->st[i].bad;
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

TEST_HARNESS_MAIN
