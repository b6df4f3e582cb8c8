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
set -uo pipefail
. "$(dirname "$0")/lib.sh"

shapes=${BENCH_COST_SHAPES:-"4of4 4of64"}
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
	echo "== bench under the cost plugin: Debian $(stock_abi), $on online / $pos possible CPUs"
	bash "$REPO/scripts/vm.sh" --kernel stock --smp "$on" --possible "$pos" --icount --x2apic \
		--seed 1 --cost "$dir/$shape.cost" --timeout "${BENCH_COST_TIMEOUT:-5400}" \
		--log "$dir/$shape.log" "$REPO/scripts/guest/bench.sh" || rc=1
	grep -q '^=== PN-GUEST-EXIT rc=0' "$dir/$shape.log" || rc=1
	args+=("$shape=$dir/$shape.log,$dir/$shape.cost")
done
python3 "$REPO/scripts/headline.py" "${args[@]}" | tee "$dir/headline.txt"
exit $rc
