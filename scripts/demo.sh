#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo: boot Debian's stock kernel under QEMU (-icount, or KVM where
# a KVM guest boots: lib.sh bench_instrument), load pcpu_next,
# run every stress and every benchmark, print their results; first with
# 4 online CPUs, then with 4 online out of 64 possible CPUs.  The module is
# built with its fast-path statistics (CONFIG_PCPU_NEXT_STATS), so the
# statistics files show everything; the bench lanes of make check measure
# without them.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

bash "$REPO/scripts/deps.sh" >/dev/null || die "dependencies"
rc=0
bench_instrument
for shape in "4 4" "4 64"; do
	set -- $shape
	log=$OUT/demo-$1of$2.log
	echo "== Debian $(stock_abi) kernel, $1 online / $2 possible CPUs"
	echo "== $(bench_title)"
	PN_OPTS="CONFIG_PCPU_NEXT_TORTURE=y CONFIG_PCPU_NEXT_STATS=y" \
	bash "$REPO/scripts/vm.sh" "${vmflags[@]}" --kernel stock --smp "$1" --possible "$2" \
		--log "$log" "$REPO/scripts/guest/demo.sh" || rc=1
	sed -n -e '/^=== PN-LIST-BEGIN/,/^=== PN-LIST-END/{/^=== /!p}' \
		-e 's/^=== PN-STRESS //p' \
		-e '/^=== PN-BENCH-BEGIN/,/^=== PN-BENCH-END/{/^=== /!p}' "$log"
	echo
done
echo "== headline: each component's key ratio next to its target (issue 13)"
python3 "$REPO/scripts/headline.py" 4of4="$OUT/demo-4of4.log" 4of64="$OUT/demo-4of64.log"
exit $rc
