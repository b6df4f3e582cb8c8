#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build lane (no VM), TAP on stdout: the module must build warning-free
# (W=1) against every flavour of Debian's newest 6.12 headers that exists
# (amd64, cloud-amd64, rt-amd64), and a build against a kernel older than
# the supported minimum (Debian's 6.1 headers) must stop at once with one
# line naming the found and the needed version.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

abi=$(stock_abi)
work=$OUT/build-lane
rm -rf "$work"
mkdir -p "$work"
n=0
out=""

tap()	# ok|not-ok description
{
	n=$((n + 1))
	if [ "$1" = ok ]; then out="$out""ok $n - $2"$'\n'; else out="$out""not ok $n - $2"$'\n'; fi
}

for flavour in amd64 cloud-amd64 rt-amd64; do
	kdir=/usr/src/linux-headers-$abi-$flavour
	if [ ! -d "$kdir" ]; then
		tap not-ok "headers $abi-$flavour missing (scripts/deps.sh installs them)"
		continue
	fi
	if (build_module "$REPO" "$kdir" "$work/$flavour" >/dev/null); then
		tap ok "W=1 build against $abi-$flavour, warning-free"
	else
		tap not-ok "W=1 build against $abi-$flavour"
	fi
done

old=$(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -n 1)
if [ -z "$old" ]; then
	tap not-ok "no Debian 6.1 headers (scripts/deps.sh installs them)"
else
	mkdir -p "$work/old/src"
	rsync -a --exclude .git --exclude .out --exclude selftests/out "$REPO"/ "$work/old/src"/
	start=$(date +%s)
	make -C "$old" M="$work/old/src" CONFIG_PCPU_NEXT=m modules >"$work/old.log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	# One error line from our Kbuild, no compiler errors, well under the
	# time a compile would take.
	lines=$(grep -c 'pcpu_next needs Linux' "$work/old.log")
	cc=$(grep -c 'error:' "$work/old.log")
	if [ "$rc" -ne 0 ] && [ "$lines" -eq 1 ] && [ "$cc" -eq 0 ] && [ "$secs" -lt 60 ]; then
		tap ok "build against $(basename "$old") refused in ${secs}s: $(grep -o 'pcpu_next needs Linux [^)]*)' "$work/old.log")"
	else
		tap not-ok "build against $(basename "$old"): rc=$rc, $lines version lines, $cc compiler errors (see $work/old.log)"
	fi
fi

echo "TAP version 13"
echo "1..$n"
printf '%s' "$out"
! grep -q '^not ok' <<<"$out"
