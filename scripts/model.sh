#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Exhaustive SPIN check of the lazy-counter upgrade protocol
# (scripts/model/lazy_upgrade.pml; its header says what is modelled).
#
# For the model and for each mutant: spin -a in a temporary directory,
# gcc -O2 -DSAFETY -DCOLLAPSE, ./pan -m$DEPTH -w$HASH (no BITSTATE: every
# reachable state is stored).  -DSAFETY because every property is an
# assertion or pan's invalid-end-state check (a reader stuck on
# slot->ready is one); there is no progress or acceptance property, so the
# cycle search would only cost time.  -DCOLLAPSE compresses stored states
# losslessly (about half the memory of the plain store).
#
#   model    must finish with 0 errors, search complete (no "max search
#            depth too small", no memory limit hit) and every statement of
#            every process reached (all paths exercised)
#   mutant   must end in an assertion violation; passing is a failure of
#            the model (it could not tell the broken protocol apart)
#
# Output: TAP 13 on stdout, pan's statistics as "# " lines.  Exit status
# non-zero on any "not ok".  spin comes from scripts/deps.sh.
#
# Usage: scripts/model.sh   (from anywhere; about 30 s and 1.2 GB for the
# model on one core, the mutants take a few seconds together)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PML=$REPO/scripts/model/lazy_upgrade.pml
DEPTH=${MODEL_DEPTH:-10000}	# the model's depth is under 100: a wide margin
HASH=25			# 2^25 slots: 256 MB of table for ~19M states
MEMLIM=2048		# MB; pan stops (search incomplete) beyond this
TIMEOUT=300		# s per pan run; the model needs about 30

# name:spin -D flags (empty for the real model)
cases=(
	"lazy_upgrade:"
	"NO_REDIRECT:-DMUTANT_NO_REDIRECT"
	"LOAD_STORE:-DMUTANT_LOAD_STORE"
	"RESET_LOCAL:-DMUTANT_RESET_LOCAL"
	"NO_READY_WAIT:-DMUTANT_NO_READY_WAIT"
	"NO_CLAIM:-DMUTANT_NO_CLAIM"
)

echo "TAP version 13"
for tool in spin gcc timeout; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "Bail out! $tool not installed (scripts/deps.sh installs spin)"
		echo "error: $tool not found; install the Debian package (spin: apt-get install spin)" >&2
		exit 1
	fi
done
[ -r "$PML" ] || { echo "Bail out! $PML missing"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "1..${#cases[@]}"
k=0
failed=0

# Print the interesting lines of pan's report as TAP diagnostics.
diag()
{
	grep -E 'states, stored|transitions \(|total actual memory|State-vector|elapsed time|assertion violated|error|pan:.*invalid end state' "$1" |
		sed -e 's/^[[:space:]]*/# /'
}

# Echo the number before "label" in pan's output, or "?".
stat_of()
{
	local n
	n=$(grep -E "^[[:space:]]*[0-9.e+]+ $2" "$1" | head -n 1 | awk '{ print $1 }')
	echo "${n:-?}"
}

for c in "${cases[@]}"; do
	name=${c%%:*}
	flags=${c#*:}
	k=$((k + 1))
	dir=$tmp/$name
	mkdir -p "$dir"
	log=$dir/pan.out
	# shellcheck disable=SC2086 # $flags is a word list (empty for the model)
	if ! (cd "$dir" && spin -a $flags "$PML" >spin.out 2>&1 &&
	      gcc -O2 -DSAFETY -DCOLLAPSE -DMEMLIM=$MEMLIM -o pan pan.c \
		>gcc.out 2>&1); then
		echo "not ok $k - $name: spin -a or gcc failed"
		sed -e 's/^/# /' "$dir/spin.out" "$dir/gcc.out" 2>/dev/null | head -n 20
		failed=$((failed + 1))
		continue
	fi
	t0=$(date +%s.%N)
	rc=0
	(cd "$dir" && timeout "$TIMEOUT" ./pan -m"$DEPTH" -w"$HASH" >"$log" 2>&1) || rc=$?
	t1=$(date +%s.%N)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	states=$(stat_of "$log" "states, stored")
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$log" | head -n 1)
	incomplete=""
	if grep -qE 'max search depth too small|depth limit reached' "$log"; then
		incomplete="search depth limit reached"
	elif grep -qE 'out of memory|MEMLIM bound' "$log"; then
		incomplete="memory limit reached"
	elif [ "$rc" -eq 124 ]; then
		incomplete="timed out after ${TIMEOUT}s"
	elif [ -z "$errors" ]; then
		incomplete="no pan summary (exit $rc)"
	fi

	if [ -z "$flags" ]; then
		unreached=$(grep -c '^[[:space:]]*lazy_upgrade.pml:[0-9]*, state' "$log" || true)
		if [ -n "$incomplete" ]; then
			echo "not ok $k - $name: $incomplete"
			failed=$((failed + 1))
		elif [ "$errors" != 0 ] || [ "$rc" -ne 0 ]; then
			echo "not ok $k - $name: $errors errors (pan exit $rc)"
			failed=$((failed + 1))
		elif [ "$unreached" != 0 ]; then
			echo "not ok $k - $name: $unreached statements never reached"
			grep -A1 '^unreached in' "$log" | sed -e 's/^/# /'
			failed=$((failed + 1))
		else
			echo "ok $k - $name: exhaustive, $states states, 0 errors"
		fi
	else
		if grep -q 'assertion violated' "$log" && [ "${errors:-0}" -ge 1 ]; then
			echo "ok $k - mutant $name caught (assertion violated)"
		elif [ -n "$incomplete" ]; then
			echo "not ok $k - mutant $name: $incomplete, no violation found"
			failed=$((failed + 1))
		else
			echo "not ok $k - mutant $name passed: the model cannot see this bug"
			failed=$((failed + 1))
		fi
	fi
	diag "$log"
	echo "# wall time ${secs} s"
done

if [ "$failed" -ne 0 ]; then
	echo "# $failed of ${#cases[@]} failed"
	exit 1
fi
exit 0
