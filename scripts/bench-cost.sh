#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench-cost: the bench lane's benchmarks (scripts/guest/bench.sh,
# the module without fast-path statistics, Debian's 6.12 kernel) under
# the cost plugin (scripts/cost/pn_cost.c): QEMU 10's q35, -icount, seed
# 1.  Per shape (BENCH_COST_SHAPES, default "4of4 4of64") one boot, then
# scripts/headline.py's key ratios in path length and in modeled cycles.
# Each bench row's two phases are the plugin's windows (torture/control.c
# pn_span_mark()).  Under the plugin a boot is about 4 times slower: the
# 64-vCPU boot of 4of64 takes most of the time.  Output: $OUT/bench-cost/.
# BENCH_COST_SEEDS="1 2 3" boots each shape once per seed (columns
# SHAPE-sN: the spread of rows where threads interleave);
# BENCH_COST_TESTS="tree lazy" runs those benchmarks only.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

shapes=${BENCH_COST_SHAPES:-"4of4 4of64"}
seeds=${BENCH_COST_SEEDS:-1} tests=${BENCH_COST_TESTS:-}
for s in $seeds; do
	case $s in [1-9] | [1-9][0-9]) ;; *) die "bench-cost: BENCH_COST_SEEDS takes numbers 1..99" ;; esac
done
for t in $tests; do
	case $t in *[!a-z]*) die "bench-cost: BENCH_COST_TESTS takes test names" ;; esac
done
extra=()
[ -z "$tests" ] || extra=(--append "pn_bench_tests=$(echo "$tests" | tr -s ' ' ,)")
dir=$OUT/bench-cost
rm -rf "$dir"
mkdir -p "$dir"
bash "$REPO/scripts/deps.sh" >/dev/null || die "dependencies"
bash "$REPO/scripts/qemu-bpo.sh" >/dev/null || die "no QEMU >= 9 (scripts/qemu-bpo.sh)"
rc=0 args=()
for shape in $shapes; do
	[[ $shape =~ ^([1-9][0-9]*)of([1-9][0-9]*)$ ]] ||
		die "bench-cost: shape $shape is not ONLINEofPOSSIBLE"
	on=${BASH_REMATCH[1]} pos=${BASH_REMATCH[2]}
	[ "$on" -le "$pos" ] && [ "$on" -le 64 ] ||
		die "bench-cost: shape $shape: online <= possible, at most 64 online"
	for seed in $seeds; do
		col=$shape
		[ "$seeds" = 1 ] || col=$shape-s$seed
		echo "== bench under the cost plugin: Debian $(stock_abi), $on online / $pos possible CPUs, seed $seed"
		bash "$REPO/scripts/vm.sh" --kernel stock --smp "$on" --possible "$pos" --icount --x2apic \
			--seed "$seed" --cost "$dir/$col.cost" --timeout "${BENCH_COST_TIMEOUT:-5400}" \
			"${extra[@]}" --log "$dir/$col.log" "$REPO/scripts/guest/bench.sh" || rc=1
		grep -q '^=== PN-GUEST-EXIT rc=0' "$dir/$col.log" || rc=1
		args+=("$col=$dir/$col.log,$dir/$col.cost")
	done
done
python3 "$REPO/scripts/headline.py" "${args[@]}" | tee "$dir/headline.txt"
exit $rc
