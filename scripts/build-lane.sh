#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build lane (no VM), TAP on stdout: the module must build warning-free
# (W=1) against every flavour of Debian's newest 6.12 headers that exists
# (amd64, cloud-amd64, rt-amd64), against 7.2 prepared with the config of
# Debian's own 7.2 amd64 image (scripts/kdir.sh debian72),
# KUnit suites included against a 6.12 tree with KUnit
# (scripts/kdir.sh kunit; against 7.2 the debug and rt lanes build
# them), and a build against a kernel older than
# the supported minimum (Debian's 6.1 headers) must stop at once with one
# line naming the found and the needed version.  The library must build
# without its harness (CONFIG_PCPU_NEXT_TORTURE off) and with its fast-path
# statistics (CONFIG_PCPU_NEXT_STATS); and the layout rule holds: no
# library file includes a harness header, no library object refers to a
# symbol the harness defines, the public headers hold no test hooks.
# Then the kernel's style tools: checkpatch --strict, kernel-doc -Wall,
# sparse.
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

# 7.2 as Debian configures it, and 6.12 with KUnit: the KUnit suites and
# the harness compile, W=1 silent.  Against 7.2 with KUnit, and against
# 7.2 with PREEMPT_RT, the debug and rt lanes build the same module W=1
# (vm.sh fails on any warning), so this lane prepares no more 7.2 trees.
for t in "debian72 amd64" "kunit 6.12"; do
	# shellcheck disable=SC2086 # two words: kind and argument
	if ! kd=$(bash "$REPO/scripts/kdir.sh" $t 2>"$work/kdir.err"); then
		tap not-ok "prepare the $t tree: $(tail -n 1 "$work/kdir.err")"
		continue
	fi
	what="$(basename "$kd")"
	case $t in kunit*) what="$what (KUnit suites built)" ;; esac
	# The KUnit trees are prepared, not built: no vmlinux, no
	# Module.symvers, so modpost may only warn of the kernel's symbols.
	opts="CONFIG_PCPU_NEXT_TORTURE=y"
	case $t in kunit*) opts="$opts KBUILD_MODPOST_WARN=1" ;; esac
	if (PN_OPTS=$opts build_module "$REPO" "$kd" "$work/${t// /-}" >/dev/null); then
		if [ "${t%% *}" = kunit ] && [ ! -e "$work/${t// /-}/src/kunit/mmcid_pcpu_kunit.o" ]; then
			tap not-ok "W=1 build against $what: no KUnit objects"
		else
			tap ok "W=1 build against $what, warning-free"
		fi
	else
		tap not-ok "W=1 build against $what"
	fi
done

# The library alone, and everything with statistics, against amd64.
kdir=/usr/src/linux-headers-$abi-amd64
for opts in "" "CONFIG_PCPU_NEXT_TORTURE=y CONFIG_PCPU_NEXT_STATS=y"; do
	what=${opts:-library only (no harness, no statistics)}
	if (PN_OPTS=$opts build_module "$REPO" "$kdir" "$work/opts-${#opts}" >/dev/null); then
		tap ok "W=1 build against $abi-amd64: $what"
	else
		tap not-ok "W=1 build against $abi-amd64: $what"
	fi
done

# The rss series carries the library as patch 0001, generated from this
# repository: it must not be stale.
if out_lp=$(bash "$REPO/scripts/rss-libpatch.sh" --check 2>&1); then
	tap ok "rss/patches 0001 is what scripts/rss-libpatch.sh generates from this tree"
else
	tap not-ok "rss/patches 0001 is stale: $(echo "$out_lp" | head -n 1)"
fi

# The log check forgives the kernel's own debugfs open/rmmod race warning,
# in 6.12's and 7.x's WARNING formats, and nothing else.
race_log=$work/race.log
for fmt in "WARNING: CPU: 1 PID: 99 at fs/debugfs/file.c:310 full_proxy_open+0x12/0x30" \
	"WARNING: fs/debugfs/file.c:310 at full_proxy_open+0x12/0x30, CPU#1: cat/99"; do
	printf '%s\ndebugfs file owner did not clean up at exit: mmcid\nCall Trace:\n' "$fmt"
done >"$race_log"
printf 'WARNING: mm/slub.c:1 at kfree+0x1/0x2, CPU#0: insmod/5\n' >"$race_log.other"
if ! splats "$race_log" && splats "$race_log.other"; then
	tap ok "log check: the debugfs race warning is forgiven in both formats, another WARNING is not"
else
	tap not-ok "log check: debugfs race filter (6.12 and 7.x formats)"
fi

# The rss_stat table maker on its fake logs (ratios, path lengths,
# spreads, bad lines).
if sh "$REPO/rss/progs/testdata/check_table.sh" >"$work/check_table.log" 2>&1; then
	tap ok "rss_table.py: $(tail -n 1 "$work/check_table.log")"
else
	tap not-ok "rss_table.py self-check (see $work/check_table.log)"
fi

# Layout: the arrows go one way.  The library is core.c, the four
# component files, include/pcpu_next/ (public) and internal/ (private).
lib_c="core.c pcpu_alloc.c lazy_counter.c counter_tree.c mmcid_pcpu.c"
lib_h="$(cd "$REPO" && echo include/pcpu_next/*.h internal/*.h)"
bad=$(cd "$REPO" && grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<][^">]*(torture|kunit/test|kunit/resource)' $lib_c $lib_h)
if [ -z "$bad" ]; then
	tap ok "layout: no library file includes a harness or KUnit-test header ($(echo $lib_c $lib_h | wc -w) files)"
else
	tap not-ok "layout: library files include harness headers: $(tr '\n' ' ' <<<"$bad")"
fi
# Symbols: what the library objects need must not come from torture/.
objs=$work/amd64/src
if [ -d "$objs/torture" ]; then
	harness_defs=$(nm --defined-only "$objs"/torture/*.o | awk 'NF == 3 && $2 ~ /[TDBR]/ { print $3 }' | sort -u)
	lib_undef=$(for f in $lib_c; do nm -u "$objs/${f%.c}.o"; done | awk '{ print $2 }' | sort -u)
	both=$(comm -12 <(echo "$harness_defs") <(echo "$lib_undef") | tr '\n' ' ')
	if [ -z "$both" ]; then
		tap ok "layout: the library objects use no symbol of the harness ($(echo "$harness_defs" | wc -l) harness symbols)"
	else
		tap not-ok "layout: library objects use harness symbols: $both"
	fi
else
	tap not-ok "layout: no harness objects in the amd64 build"
fi
# Public headers: the API, no test hooks.
bad=$(cd "$REPO" && grep -nE 'CONFIG_KUNIT|VISIBLE_IF_KUNIT|EXPORT_SYMBOL_IF_KUNIT|MMCID_SRC_|_inject_|expect_misuse' include/pcpu_next/*.h)
if [ -z "$bad" ]; then
	tap ok "layout: include/pcpu_next/ holds no KUnit-only or test hook"
else
	tap not-ok "layout: test hooks in public headers: $(tr '\n' ' ' <<<"$bad")"
fi

# The kernel's own style tools, from the kernel source this lane's test
# kernels are built from: checkpatch --strict on every kernel C file and
# header (library, KUnit, harness, sample; the trace-event header keeps
# the TRACE_EVENT() macro layout every kernel trace header has, which
# --strict flags, and is checked without --strict), kernel-doc -Wall on
# the library and its headers, sparse (make C=2) on the whole module.
# Userspace C (selftests/, rss/progs/) is not kernel code: it cannot use
# BIT(), __printf() or ARRAY_SIZE(), so it is left out, as tools/ is.
src=$(ksrc)
kfiles=$(cd "$REPO" && git ls-files '*.c' '*.h' | grep -vE '^(selftests|scripts|rss/progs)/|trace_pcpu_alloc\.h$')
# include/pcpu_next/compat.h is where the kernel-version tests live, by
# design: checked without the two rules about LINUX_VERSION_CODE.
kfiles=$(echo "$kfiles" | grep -v '^include/pcpu_next/compat\.h$')
cp_out=$(cd "$REPO" && "$src/scripts/checkpatch.pl" --strict --no-tree --terse -f $kfiles 2>&1 | grep -v '^total:')
cp_out=$cp_out$(cd "$REPO" && "$src/scripts/checkpatch.pl" --strict --no-tree --terse \
	--ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON -f include/pcpu_next/compat.h 2>&1 | grep -v '^total:')
cp_out2=$(cd "$REPO" && "$src/scripts/checkpatch.pl" --no-tree --terse -f internal/trace_pcpu_alloc.h 2>&1 | grep -v '^total:')
if [ -z "$cp_out$cp_out2" ]; then
	tap ok "checkpatch --strict: 0 errors, warnings, checks ($(echo $kfiles | wc -w) files)"
else
	tap not-ok "checkpatch: $(echo "$cp_out$cp_out2" | head -5 | tr '\n' ' ')"
fi
kd_out=$(cd "$REPO" && "$src/scripts/kernel-doc" -none -Wall core.c pcpu_alloc.c counter_tree.c lazy_counter.c mmcid_pcpu.c include/pcpu_next/*.h internal/*.h 2>&1)
if [ -z "$kd_out" ]; then
	tap ok "kernel-doc -Wall: library and headers clean"
else
	tap not-ok "kernel-doc: $(echo "$kd_out" | head -5 | tr '\n' ' ')"
fi
mkdir -p "$work/sparse/src"
rsync -a --exclude .git --exclude .out --exclude selftests/out "$REPO"/ "$work/sparse/src"/
make -C "$kdir" M="$work/sparse/src" CONFIG_PCPU_NEXT=m C=2 \
	CONFIG_PCPU_NEXT_TORTURE=y CONFIG_PCPU_NEXT_STATS=y modules >"$work/sparse.log" 2>&1
rc=$?
sp=$(grep -E 'warning:|error:' "$work/sparse.log")
checked=$(grep -c '^  CHECK' "$work/sparse.log")
if [ "$rc" -eq 0 ] && [ -z "$sp" ] && [ "$checked" -gt 0 ]; then
	tap ok "sparse (make C=2): $checked files checked, no warning"
else
	tap not-ok "sparse: rc=$rc, $checked checked: $(echo "$sp" | head -3 | tr '\n' ' ')"
fi

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
