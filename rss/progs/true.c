// SPDX-License-Identifier: GPL-2.0
/*
 * true: the smallest static /bin/true, the exec target of bench_fork
 * --mode exec, so that the benchmark measures fork, exec and exit of a
 * tiny process, not a shell or busybox's applet dispatch.
 */
int main(void)
{
	return 0;
}
