#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make rss: mm->rss_stat on a real kernel, every mode of rss_stat=.
#
#   scripts/rss.sh            correctness in every mode, then the
#                             benchmarks under QEMU's instruction-counted
#                             clock: per shape (RSS_SHAPES, default 4
#                             online of 4 and 1024 possible CPUs under
#                             the cost plugin; of 4, 64, 256 and 1024
#                             without it),
#                             RSS_ROUNDS rounds (default 1 under the
#                             cost plugin, else 3) in ABAB order of the
#                             control build and each mode of the
#                             patched image; RSS_SECS x 10^9
#                             instructions per benchmark (default 0.2).
#                             Prints one table per shape
#                             (scripts/rss_table.py --path-length), also
#                             saved to .out/rss/table.md, and how far
#                             it is from the previous run's
#                             (rss_table.py --compare)
#   scripts/rss.sh --short    correctness only, every mode, on the debug
#                             build (rss/debug.config: KASAN, lockdep,
#                             kmemleak), 4 online of 16 possible CPUs;
#                             mmcid 8 of 16, so that mm_cid reaches
#                             block 1 (the `make check` lane; the full
#                             run checks on the lean build, 4 of 8,
#                             before it measures)
#   scripts/rss.sh --bench-only
#                             the benchmarks alone (a second run, to
#                             check that the first repeats)
#   --runs FILE               append "<lane> <rc> vm <log>" lines for
#                             scripts/summary.py (make check)
#
# RSS_SHAPES takes ONofPOSSIBLE shapes (e.g. "16of256 64of256": CPUs
# online at boot of the possible ones).  RSS_COST=1 (default) runs every
# bench boot under the cost plugin (scripts/cost/pn_cost.c, vm.sh
# --cost; about 4 times slower): a second table per shape of modeled
# cycles, retired instructions, LLC misses, line transfers and locked
# operations per op (scripts/cost.py); RSS_COST=0 leaves it out.
# RSS_AGAIN=1 adds mainline booted again (the instrument's spread; the
# cost lane of make check shows it is nil).  RSS_SEEDS="2 3" runs those
# rounds (seeds) instead of 1..RSS_ROUNDS: more seeds for a run.
# RSS_APPEND adds to every bench boot's command line (e.g.
# clearcpuid=395,fsrm,erms).
#
# Correctness per mode (scripts/guest/rss.sh): the kernel took the mode,
# rss/progs/rss_check (RssAnon/RssShmem/VmRSS against the pages really
# mapped, 1..8 threads, process_vm_writev and ptrace into a child, fork;
# the exact reads once more under random CPU hotplug),
# the kernel's own mm selftests that run under busybox, and zero "Bad
# rss-counter state" reports (any other splat fails the boot too).
set -uo pipefail
. "$(dirname "$0")/lib.sh"

short=0 benchonly=0 runs="" secs=${RSS_SECS:-0.2} vmflags=()
cost=${RSS_COST:-1} again=${RSS_AGAIN:-0}
# The default run stays within about two hours on 2 cores: under the
# plugin a boot takes 10 to 13 minutes of a core (it reads the guest's
# GS at every block), so one seed and the two end shapes, 16 boots;
# without it three seeds of four shapes.
shapes=${RSS_SHAPES:-$([ "$cost" = 1 ] && echo "4of4 4of1024" || echo "4of4 4of64 4of256 4of1024")}
rounds=${RSS_ROUNDS:-$([ "$cost" = 1 ] && echo 1 || echo 3)}
case $cost$again in [01][01]) ;; *) die "rss.sh: RSS_COST and RSS_AGAIN are 0 or 1" ;; esac
for r in ${RSS_SEEDS:-}; do
	case $r in [1-9] | [1-9][0-9]) ;; *) die "rss.sh: RSS_SEEDS takes numbers 1..99" ;; esac
done
while [ $# -gt 0 ]; do
	case $1 in
	--short) short=1; shift ;;
	--runs) runs=$2; shift 2 ;;
	--bench-only) benchonly=1; shift ;;
	*) die "usage: rss.sh [--short | --bench-only] [--runs FILE]" ;;
	esac
done
[ $((short + benchonly)) -lt 2 ] || die "rss.sh: --short and --bench-only exclude each other"
MODES=${RSS_MODES:-"mainline lazy lazy-tree tree mmcid cache flat"}
fail=0

dir=$OUT/rss
mkdir -p "$dir"
progs=$dir/progs
rm -rf "$progs"
mkdir -p "$progs/mm"
make -s -C "$REPO/rss/progs" OUTPUT="$progs" >"$dir/progs.log" 2>&1 &&
	make -s -C "$REPO/rss/progs" mm-selftests KSRC="$(ksrc)" OUTPUT="$progs/mm" \
		>>"$dir/progs.log" 2>&1 ||
	{ tail -n 30 "$dir/progs.log" >&2; die "rss programs build failed"; }
if [ $short = 1 ]; then
	# On two host cores a mode's boot took 4.4 minutes with 8 vCPUs and
	# 2 with 4 (cold runs); only mmcid needs the cids past 7.
	ckernel=rss-debug csmp=4 cpossible=16 csmp_mmcid=8
	kimg=$(bash "$REPO/scripts/rss-kernel.sh" debug) || die "rss_stat debug kernel build"
	# Build checks, a TAP line each (rss-builds): a module under a
	# non-GPL license that reads RSS (get_mm_rss() and friends are
	# inline) still links, rss/nongpl; the series compiles for arm64
	# without CONFIG_HOTPLUG_CPU, where struct percpu_counter is smaller.
	kb=${kimg%/arch/x86/boot/bzImage}
	rm -rf "$dir/nongpl"
	cp -r "$REPO/rss/nongpl" "$dir/nongpl"
	{
		make -C "$kb" modules &&
			grep -qw mm_rss_alt_key "$kb/Module.symvers" &&
			make -C "$kb" M="$dir/nongpl" modules
	} >"$dir/nongpl.log" 2>&1
	r1=$?
	nohp=$(bash "$REPO/scripts/rss-kernel.sh" nohotplug 2>"$dir/nohotplug.log") &&
		grep -qx '# CONFIG_HOTPLUG_CPU is not set' "$nohp/.config" &&
		grep -qx 'CONFIG_MM_RSS_ALT=y' "$nohp/.config"
	r2=$?
	# make rss-deb's kernel, configured (its build takes hours here):
	# Debian's config with its modules, the series on, its own release.
	debcfg=$(bash "$REPO/scripts/rss-kernel.sh" deb-config 2>"$dir/deb-config.log") &&
		grep -qx 'CONFIG_MM_RSS_ALT=y' "$debcfg" && grep -qx 'CONFIG_MODULES=y' "$debcfg" &&
		grep -qx 'CONFIG_LOCALVERSION="-rss"' "$debcfg" &&
		[ "$(grep -c '=m$' "$debcfg")" -gt 1000 ]
	r3=$?
	{
		echo "1..3"
		if [ $r1 -eq 0 ]; then
			echo "ok 1 - a non-GPL module that calls get_mm_rss() links against the series"
		else
			echo "not ok 1 - a non-GPL module that calls get_mm_rss() links against the series"
			sed 's/^/# /' "$dir/nongpl.log" | tail -n 20
		fi
		if [ $r2 -eq 0 ]; then
			echo "ok 2 - the series compiles for arm64 without CONFIG_HOTPLUG_CPU"
		else
			echo "not ok 2 - the series compiles for arm64 without CONFIG_HOTPLUG_CPU"
			sed 's/^/# /' "$dir/nohotplug.log" | tail -n 20
		fi
		if [ $r3 -eq 0 ]; then
			echo "ok 3 - make rss-deb's config: Debian's 7.2 with $(grep -c '=m$' "$debcfg") modules, MM_RSS_ALT, release -rss"
		else
			echo "not ok 3 - make rss-deb's config: Debian's 7.2 with modules, MM_RSS_ALT, release -rss"
			sed 's/^/# /' "$dir/deb-config.log" | tail -n 20
		fi
	} >"$dir/builds.tap"
	cat "$dir/builds.tap"
	r=$((r1 | r2 | r3))
	[ -z "$runs" ] || echo "rss-builds $r tap $dir/builds.tap" >>"$runs"
	[ $r -eq 0 ] || fail=1
else
	ckernel=rss csmp=4 cpossible=8 csmp_mmcid=4
	bash "$REPO/scripts/rss-kernel.sh" patched >/dev/null || die "rss_stat kernel build"
fi

boot()	# name kernel smp possible cmdline [vm.sh options]
{
	local name=$1 kernel=$2 smp=$3 possible=$4 cmd=$5 log r
	shift 5
	log=$dir/$name.log
	bash "$REPO/scripts/vm.sh" --kernel "$kernel" --smp "$smp" --possible "$possible" \
		--append "$cmd" --log "$log" --rss-progs "$progs" --timeout "${RSS_TIMEOUT:-1200}" "${vmflags[@]}" \
		"$@" "$REPO/scripts/guest/rss.sh"
	r=$?
	# A bench boot must have the shape it is filed under.
	case $cmd in *pn_rss=bench*)
		grep -q "^=== PN-RSS-BENCH-BEGIN .* possible=0-$((possible - 1))\$" "$log" || {
			echo "rss.sh: $name: the guest's possible CPUs are not 0-$((possible - 1))" >&2
			r=1
		}
		;;
	esac
	[ -z "$runs" ] || echo "rss-$name $r vm $log" >>"$runs"
	[ $r -eq 0 ] || fail=1
	return $r
}

[ $benchonly = 1 ] || echo "== rss_stat correctness: modes $MODES"
for m in $MODES; do
	[ $benchonly = 0 ] || break
	smp=$csmp
	[ "$m" != mmcid ] || smp=$csmp_mmcid
	# make rss-here's runner in two modes of make check: two columns.
	here=""
	case $short$m in 1mainline | 1flat) here=" pn_rss_here=1" ;; esac
	boot "check-$m" "$ckernel" "$smp" "$cpossible" "rss_stat=$m pn_rss=check kunit.enable=0$here"
	echo "   $m: rc=$? $(grep -cE '^ok [0-9]' "$dir/check-$m.log") ok," \
		"$(grep -cE '^not ok [0-9]' "$dir/check-$m.log") not ok," \
		"$(grep -E '^# Bad rss-counter' "$dir/check-$m.log")"
done
if [ $short = 1 ]; then
	# make rss-here's table from the runner's output in the guests.
	hl=()
	for m in mainline flat; do
		case " $MODES " in *" $m "*) hl+=("$dir/check-$m.log") ;; esac
	done
	if [ ${#hl[@]} -gt 0 ]; then
		rm -rf "$dir/here"
		RSS_HERE_DIR=$dir/here bash "$REPO/scripts/rss-here.sh" --table "${hl[@]}" \
			>"$dir/here.md" 2>&1
		r=$?
		python3 - "$dir/here/table.json" "$r" "${hl[@]}" >"$dir/here.tap" <<'PY'
import json, re, sys
path, rc, logs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
print("1..%d" % (len(logs) + 1))
n, names, cols = 0, set(), []
for log in logs:
    text = open(log, errors="replace").read()
    hdr = re.search(r"^=== PN-RSS-HERE column=(\S+) shape=(\S+)", text, re.M)
    end = re.search(r"^=== PN-RSS-HERE-END rc=0", text, re.M)
    got = set(re.findall(r"^rss-bench (\S+) ", text, re.M))
    names |= got
    n += 1
    ok = hdr and end and len(got) >= 13
    if hdr:
        cols.append(hdr.group(1))
    print("%s %d - make rss-here's runner in %s: %s, %d benchmarks"
          % ("ok" if ok else "not ok", n, log.split("/")[-1],
             "column %s, shape %s" % hdr.groups() if hdr else "no header", len(got)))
try:
    t = json.load(open(path))
    tabs = t["tables"] if isinstance(t, dict) else t
    rows = set(b for tab in tabs for b in tab["benches"])
    tcols = [m for tab in tabs for m in tab["modes"]]
    ok = rc == 0 and rows == names and sorted(tcols) == sorted(cols)
    why = "%d rows for %d benchmarks, columns %s" % (len(rows), len(names), " ".join(tcols))
except (OSError, ValueError, KeyError, TypeError) as e:
    ok, why = False, "no table: %s (rc %d)" % (e, rc)
print("%s %d - make rss-here --table of those logs: %s"
      % ("ok" if ok else "not ok", n + 1, why))
PY
		cat "$dir/here.tap"
		! grep -q '^not ok' "$dir/here.tap"
		r=$?
		[ -z "$runs" ] || echo "rss-here $r tap $dir/here.tap" >>"$runs"
		[ $r -eq 0 ] || fail=1
	fi
	exit $fail
fi

bash "$REPO/scripts/rss-kernel.sh" control >/dev/null || die "control kernel build"
# The benchmarks: QEMU's instruction-counted clock (vm.sh --icount), so a
# benchmark's guest time is its path length in instructions; 4 vCPUs and
# the rest of the shape's possible CPUs as hotplug slots (vm.sh --slots).
# Per round, every column once in the same order (ABAB over rounds):
# the control, each mode, and mainline booted a second time, whose
# spread against the first is the instrument's own.
# The instrument, chosen once: QEMU's instruction-counted clock, $JOBS
# boots side by side (instruction counts do not depend on what else the
# host runs, each boot is one host thread); or, where KVM works (kvm_works),
# KVM and the machine's own time, one boot at a time.
bench_instrument
# Every shape on one machine, q35 under QEMU >= 9 from bookworm-backports
# (vm.sh --x2apic), so 256 and more possible CPUs boot, KVM or not.
# Fetched once here, before any boot.
bash "$REPO/scripts/qemu-bpo.sh" >/dev/null || die "no QEMU >= 9 (scripts/qemu-bpo.sh)"
vmflags+=(--x2apic --slots) jobs=$JOBS
[ "$instrument" = icount ] || jobs=1
args=()
pids=()
launch()	# boot's arguments, in the background, at most $jobs at once
{
	boot "$@" &
	pids+=($!)
	if [ "${#pids[@]}" -ge "$jobs" ]; then
		wait "${pids[0]}" || fail=1
		pids=("${pids[@]:1}")
	fi
}
icarg=""
[ "$instrument" != icount ] || icarg=" pn_rss_icount=1"
# Under icount a boot repeats exactly for its seed (vm.sh --seed): round
# r boots every column with seed r, so the rounds sample the guest's
# randomness (ASLR, hashing, slab freelists) and a second run repeats
# them.
[ "$instrument" = icount ] || cost=0
[ -z "${RSS_APPEND:-}" ] || icarg="$icarg $RSS_APPEND"
cols=$MODES
[ "$again" = 0 ] || cols="$cols mainline-2nd"
for shape in $shapes; do
	[[ $shape =~ ^([1-9][0-9]*)of([1-9][0-9]*)$ ]] ||
		die "rss.sh: shape $shape is not ONLINEofPOSSIBLE"
	online=${BASH_REMATCH[1]} possible=${BASH_REMATCH[2]}
	[ "$online" -le "$possible" ] || die "rss.sh: shape $shape: more online than possible"
	[ "$cost" = 0 ] || [ "$online" -le 64 ] ||
		die "rss.sh: shape $shape: the cost plugin models at most 64 online vCPUs"
	for round in ${RSS_SEEDS:-$(seq "$rounds")}; do
		what=$instrument
		[ "$cost" = 0 ] || what="$what, cost plugin"
		echo "== rss_stat bench: $shape, round $round ($what)"
		seedarg=()
		[ "$instrument" != icount ] || seedarg=(--seed "$round")
		for m in control $cols; do
			n=bench-$m-$shape-$round
			copt=()
			[ "$cost" = 0 ] || copt=(--cost "$dir/$n.cost")
			if [ "$m" = control ]; then
				launch "$n" rss-control "$online" "$possible" \
					"pn_rss=bench pn_rss_secs=$secs$icarg" "${seedarg[@]}" "${copt[@]}"
			else
				launch "$n" rss "$online" "$possible" \
					"rss_stat=${m%-2nd} pn_rss=bench pn_rss_secs=$secs$icarg" \
					"${seedarg[@]}" "${copt[@]}"
			fi
			if [ "$cost" = 0 ]; then
				args+=("$m:$shape:$round=$dir/$n.log")
			else
				args+=("$m:$shape:$round=$dir/$n.log,$dir/$n.costs")
			fi
		done
	done
done
for p in "${pids[@]}"; do
	wait "$p" || fail=1
done
# The plugin's counts per op (scripts/cost.py), beside each log.
if [ "$cost" = 1 ]; then
	for a in "${args[@]}"; do
		f=${a#*=}
		l=${f%,*}
		python3 "$REPO/scripts/cost.py" "$l" "${l%.log}.cost" >"${l%.log}.costs" || {
			echo "rss.sh: ${l##*/}: a benchmark without its cost window" >&2
			fail=1
		}
	done
fi
vmflags=()
# The previous run's numbers, to say whether this one repeats them.
[ ! -s "$dir/table.json" ] || mv "$dir/table.json" "$dir/table.prev.json"
costabout=""
[ "$cost" = 0 ] ||
	costabout=", cost plugin $(basename "$(bash "$REPO/scripts/cost-plugin.sh")") priced by scripts/cost/sapphire-rapids.lat"
{
	if [ "$instrument" = kvm ]; then
		echo "rss_stat benchmarks, $(date -u +%Y-%m-%d): KVM on $(nproc) host CPUs" \
			"(wall clock), $rounds boots per column (ABAB), $secs s per benchmark"
		table=()
	else
		echo "rss_stat benchmarks, $(date -u +%Y-%m-%d):" \
			"$("$(bash "$REPO/scripts/qemu-bpo.sh")" --version 2>/dev/null | head -n 1), q35," \
			"TCG -icount shift=0 (guest time = instructions), $rounds boots per column (ABAB)," \
			"$secs x 10^9 instructions per benchmark$costabout${RSS_APPEND:+, $RSS_APPEND}"
		table=(--path-length)
	fi
	python3 "$REPO/scripts/rss_table.py" "${table[@]}" --json "$dir/table.json" "${args[@]}"
	# The same arguments, files relative to $dir (scripts/rss-archive.sh).
	for a in "${args[@]}"; do
		echo "${a//"$dir/"/}"
	done >"$dir/table.args"
	if [ "$instrument" = icount ] && [ -s "$dir/table.prev.json" ]; then
		echo
		echo "### Against the previous run (.out/rss/table.prev.json)"
		echo
		python3 "$REPO/scripts/rss_table.py" --compare "$dir/table.prev.json" "$dir/table.json"
	fi
} | tee "$dir/table.md"
# Debian's python3-matplotlib (scripts/deps.sh), so Debian's python3
# whatever python3 is first on PATH.
/usr/bin/python3 "$REPO/scripts/rss_plot.py" "$dir/table.json" "$dir/fork-vs-possible.png" &&
	echo "plot: $dir/fork-vs-possible.png"
exit $fail
