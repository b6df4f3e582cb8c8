/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading /proc files, shared by rss_check and bench_drift
 * (header only: every program stays one static binary from one .c file).
 */
#ifndef RSS_PROC_H
#define RSS_PROC_H

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Read @path into @buf, NUL-terminated; the bytes read, or -1. */
static inline ssize_t read_file(const char *path, char *buf, size_t size)
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

/* Field 24 (rss, in pages) of the /proc/PID/stat line in @buf; -1 if none. */
static inline long stat_field_rss(char *buf)
{
	char *p = strrchr(buf, ')');	/* comm may hold spaces */
	int field;

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

#endif /* RSS_PROC_H */
