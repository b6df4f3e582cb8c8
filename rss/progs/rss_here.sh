#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# rss_here.sh [SECS]: the benchmarks of `make rss` on the running kernel,
# one boot's column.  POSIX sh: `make rss-here` runs it on a real
# machine (scripts/rss-here.sh), the rss lane inside its guest.  Its
# directory holds rss/progs' static programs and rss_bench.sh.  Root.
#
#   SECS          seconds per timed benchmark (default 1)
#   RSS_MEM_CHILDREN, RSS_OOM_CHILDREN
#                 sizes of two benchmarks (rss/progs/rss_bench.sh)
#   RSS_CPUS      the CPUs to pin the run to, a taskset list; default the
#                 first 4 this process may use (make rss's 4 online);
#                 "all": no pinning
#   RSS_PERF      "no": no perf; else the perf binary (default: perf,
#                 where `perf stat -e cycles true` counts)
#   RSS_RECLAIM   1: reclaim into a 64 MiB zram swap and back (default
#                 0: a real machine's swap is not this script's)
#   RSS_COLUMN    the table column (default: the rss_stat mode the
#                 kernel reports, "control" for a kernel without the
#                 series)
#
# Prints a header line "=== PN-RSS-HERE column=C shape=S ...", the
# benchmarks' "rss-bench NAME VALUE UNIT" lines and "#" comments, then
# "=== PN-RSS-HERE-END rc=N", N 1 if a benchmark program failed (also
# the exit status).  Times are the machine's clock
# (CLOCK_MONOTONIC).
set -u
dir=$(cd "$(dirname "$0")" && pwd)
secs=${1:-1}

# The run pins itself once, then re-executes: every benchmark and its
# children inherit the mask.
if [ -z "${RSS_HERE_PINNED:-}" ] && [ "${RSS_CPUS:-}" != all ]; then
	cpus=${RSS_CPUS:-}
	if [ -z "$cpus" ]; then
		cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status | tr ',' '\n' |
			awk -F- '{ b = NF > 1 ? $2 : $1; for (c = $1; c <= b && n < 4; c++) { printf "%s%d", n ? "," : "", c; n++ } }')
	fi
	if command -v taskset >/dev/null 2>&1; then
		RSS_HERE_PINNED=$cpus exec taskset -c "$cpus" sh "$0" "$@"
	fi
	echo "# no taskset: not pinned"
fi

# The column: the mode the kernel reported at boot, else the one its
# command line asks for, on a kernel with the series (its rss_stat=
# handler is in kallsyms); else "control".
col=${RSS_COLUMN:-}
if [ -z "$col" ]; then
	col=$(dmesg 2>/dev/null | sed -n 's/.*rss_stat: mode \([a-z-]*\).*/\1/p' | tail -n 1)
	if [ -z "$col" ] && grep -q ' mm_rss_setup$' /proc/kallsyms 2>/dev/null; then
		col=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^rss_stat=//p' | tail -n 1)
		col=${col:-mainline}
	fi
	col=${col:-control}
fi

# The shape: "4of256" when the pinned CPUs are all that is online, else
# "4in64of256" (64 online: every walk of online CPUs sees 64).
n_of()	# a CPU list: how many CPUs
{
	echo "$1" | tr ',' '\n' | awk -F- 'NF { n += (NF > 1 ? $2 - $1 + 1 : 1) } END { print n + 0 }'
}
allowed=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
online=$(n_of "$(cat /sys/devices/system/cpu/online)")
possible=$(n_of "$(cat /sys/devices/system/cpu/possible)")
pinned=$(n_of "$allowed")
shape=${pinned}of$possible
[ "$pinned" = "$online" ] || shape=${pinned}in${online}of$possible

# perf counts here if `perf stat -e cycles true` gives a number (not
# "<not supported>", as in many VMs).
perf=${RSS_PERF:-perf}
if [ "$perf" != no ] && ! command -v "$perf" >/dev/null 2>&1; then
	echo "# perf: no $perf here: no cycles or misses"
	perf=no
fi
if [ "$perf" != no ]; then
	t=$(mktemp)
	"$perf" stat -x, -e cycles -o "$t" true >/dev/null 2>&1 &&
		grep -q '^[0-9][0-9.]*,' "$t" || {
		echo "# perf: \"$perf stat -e cycles true\" counts nothing here: no cycles or misses"
		perf=no
	}
	rm -f "$t"
fi
[ "$perf" != no ] || perf=""

echo "=== PN-RSS-HERE column=$col shape=$shape cpus=$allowed online=$online" \
	"possible=$possible kernel=$(uname -r) secs=$secs perf=${perf:+yes}${perf:-no}"
. "$dir/rss_bench.sh"
RSS_PERF=$perf rss_bench_all "$dir" "$secs" 0 "${RSS_RECLAIM:-0}"
rc=$?
echo "=== PN-RSS-HERE-END rc=$rc"
exit $rc
