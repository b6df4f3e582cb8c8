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
#   mutant   must end in a violation of the assertion it is expected to
#            trip (a fixed string of pan's "assertion violated" line);
#            passing, or failing some other assertion, is a failure of
#            the model (it could not tell the broken protocol apart, or
#            the model itself is broken)
#   refute   the same for a stronger property than the code promises
#
# The cases run the default configuration (one counter) and -DNR2 (an
# array of two counters: claim on c[0], the winner publishes c[1].slot
# and switches both; losers may return 0 first), each for -DLIVE, the
# protocol of lazy_counter.c since issue 13 (the remote word stays live
# after a fetch_or switch and is always summed: no slot->base, no
# slot->ready, no redirect), and for the default variant, the earlier
# xchg-and-redirect protocol, kept as the comparison on the same
# processes and checks.
#
# Output: TAP 13 on stdout, pan's statistics as "# " lines.  Exit status
# non-zero on any "not ok".  spin comes from scripts/deps.sh.
#
# Usage: scripts/model.sh   (from anywhere; 26 cases, 1.5-3 minutes in
# all: the one-counter model needs 20-40 s and 1.1 GB on one core, the
# NR2 model and the LIVE models a few seconds and 0.27-0.35 GB each, the
# rest mostly gcc, ~2.5-5 s a case; 187 s measured with a CI sharing
# the 2 cores)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PML=$REPO/scripts/model/lazy_upgrade.pml
DEPTH=${MODEL_DEPTH:-10000}	# the model's depth is under 100: a wide margin
HASH=25			# 2^25 slots: 256 MB of table for ~19M states
MEMLIM=2048		# MB; pan stops (search incomplete) beyond this
TIMEOUT=300		# s per pan run; the model needs about 30

# kind:name:spin -D flags[:expected assertion text]
#   model   the code as it is: must pass, exhaustively, reaching every
#           statement (owner_sum runs no reader process: its unreached
#           statements are not counted)
#   mutant  a broken protocol: must violate the expected assertion
#   refute  a stronger property than the code promises (the read is a
#           linearizable snapshot; a losing upgrader's 0 means the array
#           is upgraded): must be violated, or the header's claim that it
#           does not hold is wrong
cases=(
	"model:lazy_upgrade:"
	"model:lazy_upgrade_owner_sum:-DOWNER_SUM"
	"model:lazy_upgrade_nr2:-DNR2"
	"mutant:NO_REDIRECT:-DMUTANT_NO_REDIRECT:v==done"
	"mutant:LOAD_STORE:-DMUTANT_LOAD_STORE:v==done"
	"mutant:RESET_LOCAL:-DMUTANT_RESET_LOCAL:v==done"
	"mutant:NO_READY_WAIT:-DMUTANT_NO_READY_WAIT:lo<=v"
	"mutant:NO_CLAIM:-DMUTANT_NO_CLAIM:old&1"
	"mutant:NR2_SWITCH_BEFORE_SLOT:-DNR2 -DMUTANT_SWITCH_BEFORE_SLOT:sl!=0"
	"mutant:NR2_SWITCH_BEFORE_CLAIM:-DNR2 -DMUTANT_SWITCH_BEFORE_CLAIM:slot[0]==g"
	"mutant:NR2_LOSER_FREES_WINNER:-DNR2 -DMUTANT_LOSER_FREES_WINNER:alive[sl]"
	"mutant:NR2_SWITCH_ONLY_C0:-DNR2 -DMUTANT_SWITCH_ONLY_C0:(state[0]&1)==(state[1]&1)"
	"refute:SNAPSHOT:-DCHECK_SNAPSHOT:seen"
	"refute:NR2_LOSER_UPGRADED:-DNR2 -DREFUTE_LOSER_UPGRADED:(state[0]&1)&&(state[1]&1)"
	"refute:NR2_LOSER_SLOT1:-DNR2 -DREFUTE_LOSER_SLOT1:slot[1]!=0"
	"refute:NR2_C0_MEANS_ALL:-DNR2 -DREFUTE_C0_MEANS_ALL:!(1)||"
	"model:lazy_upgrade_live:-DLIVE"
	"model:lazy_upgrade_live_owner_sum:-DLIVE -DOWNER_SUM"
	"model:lazy_upgrade_live_nr2:-DLIVE -DNR2"
	"mutant:LIVE_READER_NO_WORD:-DLIVE -DMUTANT_LIVE_READER_NO_WORD:lo<=v"
	"mutant:LIVE_SWITCH_XCHG:-DLIVE -DMUTANT_LIVE_SWITCH_XCHG:v==done"
	"mutant:LIVE_REDIRECT:-DLIVE -DMUTANT_LIVE_REDIRECT:v==done"
	"mutant:LIVE_LOAD_STORE:-DLIVE -DMUTANT_LOAD_STORE:v==done"
	"mutant:LIVE_NO_CLAIM:-DLIVE -DMUTANT_NO_CLAIM:old&1"
	"mutant:LIVE_NR2_SWITCH_BEFORE_SLOT:-DLIVE -DNR2 -DMUTANT_SWITCH_BEFORE_SLOT:sl!=0"
	"refute:LIVE_SNAPSHOT:-DLIVE -DCHECK_SNAPSHOT:seen"
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

# Unreached statements in pan's report, outside proctype $2 (if given).
unreached_count()
{
	awk -v skip="$2" '
		/^unreached in / { cur = $NF; next }
		/^[[:space:]]*[^[:space:]]*lazy_upgrade\.pml:[0-9]+, state/ {
			if (cur != skip) n++
		}
		END { print n + 0 }' "$1"
}

for c in "${cases[@]}"; do
	kind=${c%%:*}
	rest=${c#*:}
	name=${rest%%:*}
	rest=${rest#*:}
	flags=${rest%%:*}
	expect=""
	[ "$flags" != "$rest" ] && expect=${rest#*:}
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

	if [ "$kind" = model ]; then
		skip=""
		case $name in *_owner_sum) skip=reader ;; esac
		unreached=$(unreached_count "$log" "$skip")
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
		what="mutant $name"
		[ "$kind" = refute ] && what="stronger property $name"
		violated=$(grep -m 1 'assertion violated' "$log" || true)
		if [ -n "$violated" ] && [ "${errors:-0}" -ge 1 ] &&
		   [ -n "$expect" ] && ! grep -qF -- "$expect" <<<"$violated"; then
			echo "not ok $k - $what violated another assertion than expected ($expect)"
			failed=$((failed + 1))
		elif [ -n "$violated" ] && [ "${errors:-0}" -ge 1 ]; then
			if [ "$kind" = refute ]; then
				echo "ok $k - $what refuted as documented (assertion violated)"
			else
				echo "ok $k - $what caught (assertion violated)"
			fi
		elif [ -n "$incomplete" ]; then
			echo "not ok $k - $what: $incomplete, no violation found"
			failed=$((failed + 1))
		else
			echo "not ok $k - $what passed: the model cannot tell"
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
