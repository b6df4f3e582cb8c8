/* SPDX-License-Identifier: GPL-2.0 */
/* Small helpers shared by the pcpu_next selftests. */
#ifndef PN_UTIL_H
#define PN_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PN_DIR "/sys/kernel/debug/pcpu_next"

/* Write one control line in one write(); return 0 or -errno. */
static inline int pn_write(const char *file, const char *line, size_t len)
{
	char path[128];
	ssize_t n;
	int fd, err;

	snprintf(path, sizeof(path), PN_DIR "/%s", file);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = write(fd, line, len);
	err = n < 0 ? -errno : (n == (ssize_t)len ? 0 : -EIO);
	close(fd);
	return err;
}

static inline int pn_write_str(const char *file, const char *line)
{
	return pn_write(file, line, strlen(line));
}

/* Read a whole debugfs file into buf (NUL terminated); bytes or -errno. */
static inline ssize_t pn_read(const char *file, char *buf, size_t size)
{
	char path[128];
	size_t off = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), PN_DIR "/%s", file);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	while (off + 1 < size && (n = read(fd, buf + off, size - 1 - off)) > 0)
		off += n;
	close(fd);
	buf[off] = '\0';
	return off;
}

/* Wait (bounded) until no run is active on file. */
static inline int pn_wait_idle(const char *file, int max_seconds)
{
	char buf[8192];
	int i;

	for (i = 0; i < max_seconds * 10; i++) {
		if (pn_read(file, buf, sizeof(buf)) < 0)
			return -1;
		if (!strstr(buf, "RUNNING"))
			return 0;
		usleep(100000);
	}
	return -1;
}

/* Number of possible CPU ids (nr_cpu_ids) from sysfs. */
static inline int pn_nr_cpu_ids(void)
{
	char buf[64];
	int lo, hi = 0;
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	if (sscanf(buf, "%d-%d", &lo, &hi) < 2)
		hi = lo;
	return hi + 1;
}

/*
 * Does the kernel have CONFIG_FAULT_INJECTION?  /proc/self/fail-nth exists
 * exactly then (the module's faults= needs it; its debugfs fault/ directory
 * needs FAULT_INJECTION_DEBUG_FS as well, so is the weaker signal).
 */
static inline int pn_fault_injection(void)
{
	return access("/proc/self/fail-nth", F_OK) == 0;
}

#endif
