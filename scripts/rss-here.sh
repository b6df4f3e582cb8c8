#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make rss-here: the benchmarks of `make rss` on the running kernel of a
# real machine, one column per boot.  Boot the kernel of `make rss-deb`
# with rss_stat=MODE, run this, reboot into the next mode, run it again;
# each run adds its column to the table.
#
#   scripts/rss-here.sh                 build rss/progs (gcc -static),
#                                       run rss/progs/rss_here.sh (root),
#                                       keep its log, then print the
#                                       table of every kept run
#   scripts/rss-here.sh --table [LOG...]
#                                       the table only, of LOGs (default:
#                                       every kept run)
#
# Kept runs: $RSS_HERE_DIR/runs (default .out/rss-here/runs), one log a
# finished run, <column>-<shape>-<n>.log.  The table is scripts/rss_table.py's, the
# machine's clock: ops/s and per-op cycles, instructions and cache
# misses relative to the rss_stat=mainline column, above 1 is better.
# Passed to rss_here.sh: RSS_SECS (seconds per benchmark, default 1),
# RSS_CPUS, RSS_PERF, RSS_RECLAIM, RSS_COLUMN (see rss/progs/rss_here.sh).
# Needs gcc, glibc's static libc (libc6-dev) and python3; runs nothing
# in a VM and installs nothing.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
dir=${RSS_HERE_DIR:-$REPO/.out/rss-here}

die()
{
	echo "rss-here: $*" >&2
	exit 1
}

# table LOG...: rss_table.py over the logs, each filed under the column
# and shape its header line names, runs numbered per column and shape.
table()
{
	local log hdr col shape args=() key
	declare -A seen=()
	for log in "$@"; do
		# (a console prefix "[   1.0] " may stand before it)
		hdr=$(grep -m 1 -E '(^|\] )=== PN-RSS-HERE ' "$log" 2>/dev/null) ||
			{ echo "rss-here: $log: no PN-RSS-HERE line, left out" >&2; continue; }
		col=$(sed -n 's/.* column=\([^ ]*\).*/\1/p' <<<"$hdr")
		shape=$(sed -n 's/.* shape=\([^ ]*\).*/\1/p' <<<"$hdr")
		case $col$shape in
		*[!A-Za-z0-9_.+-]*) echo "rss-here: $log: bad column or shape, left out" >&2; continue ;;
		esac
		key=$col:$shape
		seen[$key]=$((${seen[$key]:-0} + 1))
		args+=("$key:${seen[$key]}=$log")
	done
	[ ${#args[@]} -gt 0 ] || die "no runs to tabulate"
	echo "rss_stat benchmarks on $(uname -n), machine clock (CLOCK_MONOTONIC);" \
		"cycles, insns and misses per op from perf where it counts"
	python3 "$REPO/scripts/rss_table.py" --json "$dir/table.json" "${args[@]}"
}

mkdir -p "$dir/runs" || die "cannot create $dir/runs"
if [ "${1:-}" = --table ]; then
	shift
	if [ $# -eq 0 ]; then
		set -- "$dir"/runs/*.log
		[ -e "$1" ] || die "no runs in $dir/runs: run make rss-here first"
	fi
	table "$@"
	exit
fi
[ $# -eq 0 ] || die "usage: rss-here.sh [--table [LOG...]]"
[ "$(id -u)" = 0 ] || die "run as root: the benchmarks read dmesg, fork 1000 children, pin CPUs"

progs=$dir/progs
make -s -C "$REPO/rss/progs" OUTPUT="$progs" >"$dir/progs.log" 2>&1 ||
	{ tail -n 20 "$dir/progs.log" >&2; die "rss/progs build failed (gcc, libc6-dev)"; }
# A run counts once it finished without a failed benchmark.
run=$dir/run.tmp
sh "$progs/rss_here.sh" "${RSS_SECS:-1}" 2>&1 | tee "$run"
grep -q '^=== PN-RSS-HERE-END rc=0' "$run" ||
	die "the run did not finish or a benchmark failed: $run (not kept)"
hdr=$(grep -m 1 '^=== PN-RSS-HERE ' "$run")
col=$(sed -n 's/.* column=\([^ ]*\).*/\1/p' <<<"$hdr")
shape=$(sed -n 's/.* shape=\([^ ]*\).*/\1/p' <<<"$hdr")
n=1
while [ -e "$dir/runs/$col-$shape-$n.log" ]; do
	n=$((n + 1))
done
mv "$run" "$dir/runs/$col-$shape-$n.log"
echo "rss-here: kept as $dir/runs/$col-$shape-$n.log"
echo
table "$dir"/runs/*.log
