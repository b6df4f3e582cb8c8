// SPDX-License-Identifier: GPL-2.0
/*
 * pcpu_next control plane, seen from user space: every malformed or
 * out-of-bounds control line is refused with its documented errno, a
 * second run while one is active gets EBUSY, good lines run and report,
 * the files are root-only and print no kernel pointers.
 */
#include <ctype.h>
#include <regex.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "pn_util.h"

static int module_missing(void)
{
	return access(PN_DIR "/stress", F_OK) != 0;
}

struct bad_line {
	const char *what;
	const char *line;
	int err;
};

static const struct bad_line bad_lines[] = {
	{ "empty", "\n", EINVAL },
	{ "garbage", "garbage\n", EINVAL },
	{ "no key", "=percpu\n", EINVAL },
	{ "unknown key", "test=percpu colour=blue\n", EINVAL },
	{ "unknown test", "test=nosuchtest\n", EINVAL },
	{ "missing value", "test=percpu threads=\n", EINVAL },
	{ "missing test", "threads=2\n", EINVAL },
	{ "non-numeric", "test=percpu threads=two\n", EINVAL },
	{ "negative", "test=percpu threads=-1\n", EINVAL },
	{ "overflow", "test=percpu threads=4294967296\n", ERANGE },
	{ "huge overflow", "test=percpu ms=99999999999999999999999\n", ERANGE },
	{ "zero threads", "test=percpu threads=0\n", ERANGE },
	{ "too long a run", "test=percpu seconds=301\n", ERANGE },
	{ "too long in ms", "test=percpu ms=300001\n", ERANGE },
	{ "too big a size", "test=percpu size=1048576\n", ERANGE },
	{ "seconds and ms", "test=percpu seconds=1 ms=10\n", EINVAL },
	{ "duplicate key", "test=percpu threads=1 threads=2\n", EINVAL },
	{ "double blank", "test=percpu  threads=1\n", EINVAL },
	{ "leading blank", " test=percpu\n", EINVAL },
	{ "tab", "test=percpu\tthreads=1\n", EINVAL },
	{ "two lines", "test=percpu\ntest=percpu\n", EINVAL },
	{ "bad pin", "test=percpu pin=left\n", EINVAL },
	{ "upper case", "TEST=percpu\n", EINVAL },
};

TEST(rejects_bad_lines)
{
	unsigned int i;

	if (module_missing())
		SKIP(return, "pcpu_next not loaded");
	for (i = 0; i < ARRAY_SIZE(bad_lines); i++) {
		const struct bad_line *b = &bad_lines[i];

		EXPECT_EQ(-b->err, pn_write_str("stress", b->line))
			TH_LOG("stress: %s", b->what);
		EXPECT_EQ(-b->err, pn_write_str("bench", b->line))
			TH_LOG("bench: %s", b->what);
	}
}

/*
 * faults= is a stress option of the tests whose list line says "faults",
 * on a kernel with fault injection (pn_fault_injection()); anywhere else
 * it is refused with EOPNOTSUPP, and out of range with ERANGE, before any
 * run starts (a malformed line is refused first, whatever the kernel).
 */
TEST(faults_only_where_supported)
{
	if (module_missing())
		SKIP(return, "pcpu_next not loaded");
	EXPECT_EQ(-EOPNOTSUPP, pn_write_str("stress", "test=percpu faults=10\n"));
	EXPECT_EQ(-EOPNOTSUPP, pn_write_str("stress", "test=tree faults=0\n"));
	EXPECT_EQ(-EOPNOTSUPP, pn_write_str("bench", "test=alloc faults=10\n"));
	EXPECT_EQ(-ERANGE, pn_write_str("stress", "test=alloc faults=1001\n"));
	EXPECT_EQ(-EINVAL, pn_write_str("stress", "test=alloc faults=ten\n"));
	if (pn_fault_injection())
		return;		/* a good line would start a run */
	EXPECT_EQ(-EOPNOTSUPP, pn_write_str("stress", "test=alloc ms=1 faults=10\n"));
	EXPECT_EQ(-EOPNOTSUPP, pn_write_str("stress", "test=lazy ms=1 faults=0\n"));
}

TEST(rejects_too_many_threads)
{
	char line[64];
	int nr = pn_nr_cpu_ids();

	if (module_missing())
		SKIP(return, "pcpu_next not loaded");
	ASSERT_GT(nr, 0);
	snprintf(line, sizeof(line), "test=percpu threads=%d\n", 4 * nr + 1);
	EXPECT_EQ(-ERANGE, pn_write_str("stress", line));
}

TEST(rejects_overlong_and_binary)
{
	char line[1024];

	if (module_missing())
		SKIP(return, "pcpu_next not loaded");
	memset(line, 'x', sizeof(line));
	memcpy(line, "test=percpu seed=", 17);
	EXPECT_EQ(-E2BIG, pn_write("stress", line, 256));
	EXPECT_EQ(-E2BIG, pn_write("stress", line, sizeof(line)));
	EXPECT_EQ(-EINVAL, pn_write("stress", "test=percpu\0ms=5", 16));
	EXPECT_EQ(-EINVAL, pn_write("stress", "test=per\xffpu\n", 12));
}

TEST(rejects_offset_write)
{
	int fd;

	if (module_missing())
		SKIP(return, "pcpu_next not loaded");
	fd = open(PN_DIR "/stress", O_WRONLY);
	ASSERT_GE(fd, 0);
	/* A line must come whole in one write at offset 0. */
	EXPECT_EQ(-1, pwrite(fd, "test=percpu\n", 12, 4));
	EXPECT_TRUE(errno == EINVAL || errno == ESPIPE) TH_LOG("errno %d", errno);
	close(fd);
}

TEST(good_line_runs_and_second_writer_is_busy)
{
	char buf[8192], *last;

	if (module_missing())
		SKIP(return, "pcpu_next not loaded");
	ASSERT_EQ(0, pn_wait_idle("stress", 60));
	ASSERT_EQ(0, pn_write_str("stress", "test=percpu threads=2 ms=1500 seed=7\n"));
	/* One run at a time, across both files. */
	EXPECT_EQ(-EBUSY, pn_write_str("stress", "test=percpu ms=100\n"));
	EXPECT_EQ(-EBUSY, pn_write_str("bench", "test=percpu ms=100\n"));
	ASSERT_GT(pn_read("stress", buf, sizeof(buf)), 0);
	EXPECT_NE(NULL, strstr(buf, "RUNNING test=percpu"));
	ASSERT_EQ(0, pn_wait_idle("stress", 60));

	ASSERT_GT(pn_read("stress", buf, sizeof(buf)), 0);
	buf[strlen(buf) - 1] = '\0';
	last = strrchr(buf, '\n');
	last = last ? last + 1 : buf;
	EXPECT_NE(NULL, strstr(last, "stress test=percpu threads=2 ms=1500"));
	EXPECT_NE(NULL, strstr(last, "seed=7 "));
	EXPECT_EQ(0, strcmp(last + strlen(last) - 5, " PASS")) TH_LOG("%s", last);
}

TEST(bench_prints_table_with_ratio)
{
	char buf[8192];

	if (module_missing())
		SKIP(return, "pcpu_next not loaded");
	ASSERT_EQ(0, pn_wait_idle("bench", 60));
	ASSERT_EQ(0, pn_write_str("bench", "test=percpu threads=1 ms=200\n"));
	ASSERT_EQ(0, pn_wait_idle("bench", 60));
	ASSERT_GT(pn_read("bench", buf, sizeof(buf)), 0);
	EXPECT_NE(NULL, strstr(buf, "ratio"));
	EXPECT_NE(NULL, strstr(buf, "this_cpu_inc"));
	EXPECT_NE(NULL, strstr(buf, "ratios only are meaningful"));
	EXPECT_NE(NULL, strstr(buf, "# PASS"));
}

TEST(list_names_every_test)
{
	char buf[4096];

	if (module_missing())
		SKIP(return, "pcpu_next not loaded");
	ASSERT_GT(pn_read("list", buf, sizeof(buf)), 0);
	EXPECT_EQ(0, strncmp(buf, "percpu ", 7)) TH_LOG("%s", buf);
}

TEST(files_are_root_only)
{
	static const char *const files[] = { "list", "stress", "bench" };
	struct stat st;
	unsigned int i;

	if (module_missing())
		SKIP(return, "pcpu_next not loaded");
	for (i = 0; i < 3; i++) {
		char path[128];

		snprintf(path, sizeof(path), PN_DIR "/%s", files[i]);
		ASSERT_EQ(0, stat(path, &st));
		EXPECT_EQ(0U, st.st_mode & 0077) TH_LOG("%s mode %o", files[i], st.st_mode);
		EXPECT_EQ(0U, st.st_uid);
	}
}

TEST(no_kernel_pointers_in_output)
{
	static const char *const files[] = { "list", "stress", "bench" };
	char buf[16384];
	regex_t re;
	unsigned int i;

	if (module_missing())
		SKIP(return, "pcpu_next not loaded");
	ASSERT_EQ(0, regcomp(&re, "ffff[0-9a-f]{12}", REG_EXTENDED | REG_ICASE));
	for (i = 0; i < 3; i++) {
		ASSERT_GE(pn_read(files[i], buf, sizeof(buf)), 0);
		EXPECT_NE(0, regexec(&re, buf, 0, NULL, 0)) TH_LOG("%s", files[i]);
	}
	regfree(&re);
}

TEST_HARNESS_MAIN
