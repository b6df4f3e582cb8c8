#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check: every test lane, then one closing line "N passed, N failed".
#
#   deps     scripts/deps.sh (idempotent)
#   build    W=1 builds against Debian's 6.12 headers, every flavour
#            (amd64, cloud-amd64, rt-amd64); Debian's 6.1 headers must be
#            refused with one line; the library alone (no harness) and
#            with fast-path statistics; the layout rule (no library file
#            includes or links against the harness, no test hooks in the
#            public headers) (scripts/build-lane.sh, TAP; no VM)
#   host     the host-side choices, driven with stand-ins: the KVM
#            probe (lib.sh kvm_works) against stand-in QEMUs that fail
#            each way seen, and make's choice of headers
#            (scripts/host-tests.sh, TAP; no VM)
#   model    SPIN: the lazy-counter upgrade protocol over all interleavings
#            of a small model, and mutants of it that must fail
#            (scripts/model.sh; no VM)
#   stock    Debian's kernel, 2 vCPUs: insmod, selftests, stress, rmmod
#   stock-rt the same on Debian's PREEMPT_RT kernel (linux-image-*-rt-amd64)
#   stock72  the same on Debian's own 7.2 image (sid), the module built
#            against linux-source-7.2 prepared with that image's config
#   stock73  the same on Debian's 7.3 image (trixie-backports) and
#            linux-source-7.3
#   The test kernels (debug, rt, rss) are built from Debian's
#   linux-source-7.2; Debian's 6.12 keeps the build, stock and stock-rt
#   lanes.
#   debug    the debug kernel (KASAN, lockdep with PROVE_RAW_LOCK_NESTING,
#            kmemleak, fault injection for fail-nth), 4 online of 8
#            possible CPUs: KUnit at
#            insmod, selftests, stress, fault-injected stress (faults=),
#            rmmod, rmmod during a run and during a fuzzing storm, kmemleak
#   rt       a PREEMPT_RT kernel from the same source with KCSAN, lockdep
#            (PROVE_RAW_LOCK_NESTING), DEBUG_ATOMIC_SLEEP, kmemleak, KUnit,
#            fault injection (scripts/rt.config), 4 online of 16 possible
#            CPUs: the debug lane's guest script
#   kunitpy  kunit.py exec --arch=x86_64, -smp 4, on the rss kernel: the
#            library built in by the series, no harness, its KUnit suites
#            beside it (scripts/kunit-lane.sh)
#   bench    every benchmark on Debian's kernel, 4 online CPUs (ratios
#            only; a bench passes when it ran; make demo adds 4 online
#            of 64 possible, whose 64-vCPU boot costs 5 minutes here);
#            under -icount, two short boots must print the same log
#            (scripts/guest/repeat.sh)
#   cost     the cost model's QEMU plugin (scripts/cost-check.sh, TAP):
#            Debian's 7.2 image on QEMU 10's q35 under -icount, 4 vCPUs,
#            booted twice with one seed; probes whose counts are known
#            (locked adds, REP iterations, LLC misses, line transfers),
#            every window's raw count against the guest's path length,
#            and the two boots' plugin output identical
#   hotplug  debug kernel: every stress, then the fault-injected ones,
#            while CPUs go offline and online at random; kmemleak
#   cycles   debug kernel booted with kunit.enable=0: 50 x (insmod, short
#            stress, rmmod); live per-CPU allocations back to their count
#            after a warm-up round; kmemleak
#   rss      the rss_stat kernel (linux-source-7.2 + rss/patches, the
#            library built in under mm/; KASAN, lockdep, kmemleak): every
#            rss_stat= mode booted once, 4 online of 16 possible CPUs (mmcid
#            8, so its cids pass 7): the
#            mode took, rss/progs/rss_check (and its exact reads again
#            under random CPU hotplug), the kernel's mm selftests that
#            run under busybox, no "Bad rss-counter state"
#            (scripts/rss.sh --short)
#   rss73    the build check on 7.3: the series applies to
#            linux-source-7.3 without fuzz and the patched kernel builds
#            (scripts/rss-kernel.sh build73; 7.2 stays the series' base)
#
# `scripts/check.sh --lane NAME` runs one lane (kselftest: the selftests
# alone in the debug VM).  Exit status: non-zero on any failure or splat.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

# Lanes that boot a test kernel come last, so that the background
# builder (below) has the most time to build them; the rt lane, the
# shortest after its kernel, is the last.
lanes="build host model stock stock-rt stock72 stock73 bench cost debug hotplug cycles kunitpy rss rt rss73"
if [ "${1:-}" = --lane ]; then
	lanes=$2
fi

t_start=$(date +%s)
bash "$REPO/scripts/deps.sh" || die "dependencies"
runs=$OUT/runs.txt
: >"$runs"

# The background builder.  With a cold cache the three test kernels
# (kunit.py runs on the rss one) are the critical path: about 60
# minutes beside the lanes (Documentation/testing.rst).  They are built
# at idle priority (SCHED_IDLE) while the lanes run, in the order the
# lanes need them.  A lane whose kernel is not ready waits
# on that build's lock; a warm cache makes the builder a no-op.
kernels=""
case " $lanes " in *" debug "* | *" hotplug "* | *" cycles "* | *" kselftest "*) kernels=debug ;; esac
case " $lanes " in *" kunitpy "* | *" rss "*) kernels="$kernels rss" ;; esac
case " $lanes " in *" rt "*) kernels="$kernels rt" ;; esac
case " $lanes " in *" rss73 "*) [ ! -s "$CACHE/k73-version" ] || kernels="$kernels rss73" ;; esac
prebuild()
{
	local k rc
	chrt --idle -p 0 "$BASHPID" >/dev/null
	for k in $kernels; do
		echo "prebuild: $k kernel ($(date +%T))"
		case $k in
		debug) bash "$REPO/scripts/kernel.sh" ;;
		rt) bash "$REPO/scripts/kernel.sh" "$REPO/scripts/rt.config" ;;
		rss) bash "$REPO/scripts/rss-kernel.sh" debug ;;
		rss73) bash "$REPO/scripts/rss-kernel.sh" build73 ;;
		esac
		rc=$?
		echo "prebuild: $k kernel done, status $rc ($(date +%T))"
	done
}
builder=""
if [ -n "$kernels" ]; then
	setsid bash -c "$(declare -f prebuild); REPO='$REPO' kernels='$kernels' prebuild" \
		>"$OUT/prebuild.log" 2>&1 </dev/null &
	builder=$!
	# Stop the builder's whole process group if make check stops early.
	trap '[ -z "$builder" ] || kill -- -"$builder" 2>/dev/null' EXIT
fi

run_vm()	# lane kernel smp possible guest [kernel command line [vm.sh options]]
{
	local lane=$1 kernel=$2 smp=$3 possible=$4 guest=$5 extra=${6:-} rc
	local log=$OUT/$lane.log
	local opt=("${@:7}")
	rm -f "$log"
	echo "== lane $lane: $kernel kernel, $smp online / $possible possible CPUs${7:+, ${*:7}}"
	bash "$REPO/scripts/vm.sh" "${opt[@]}" --kernel "$kernel" --smp "$smp" --possible "$possible" \
		--append "$extra" --log "$log" "$REPO/scripts/guest/$guest"
	rc=$?
	grep -E '^=== PN-(RESULT|STRESS|CYCLES)|^(not )?ok [0-9]|^    (not )?ok [0-9]|^hotplug:|^# fuzz|^faults:|^rmmod during' "$log" |
		sed 's/^/   /'
	echo "$lane $rc vm $log" >>"$runs"
}

run_tap()	# lane script title shown-lines-regex: a TAP lane without a VM
{
	local lane=$1 script=$2 title=$3 shown=$4 rc
	echo "== lane $lane: $title"
	bash "$REPO/scripts/$script" >"$OUT/$lane.log" 2>&1
	rc=$?
	grep -E "$shown" "$OUT/$lane.log" | sed 's/^/   /'
	echo "$lane $rc tap $OUT/$lane.log" >>"$runs"
}

skip_lane()	# lane why: one skipped TAP case
{
	printf '1..1\nok 1 - %s # SKIP %s\n' "$1" "$2" >"$OUT/$1.tap"
	sed 's/^/   /' "$OUT/$1.tap"
	echo "$1 0 tap $OUT/$1.tap" >>"$runs"
}

for lane in $lanes; do
	t_lane=$(date +%s)
	case $lane in
	build)
		run_tap build build-lane.sh \
			"W=1 against Debian 6.12 headers and 7.2 (Debian config), 6.12 KUnit tree, library alone, statistics; 6.1 refused; layout" '^(not )?ok [0-9]'
		;;
	host)
		run_tap host host-tests.sh \
			"the KVM probe against stand-in QEMUs; make's choice of headers" '^(not )?ok [0-9]'
		;;
	model)
		run_tap model model.sh \
			"SPIN model of the lazy-counter upgrade protocol" '^(not )?ok [0-9]|^# '
		;;
	stock) run_vm stock stock 2 2 stock.sh ;;
	stock-rt) run_vm stock-rt stock-rt 2 2 stock.sh ;;
	stock72) run_vm stock72 stock72 2 2 stock.sh ;;
	stock73)
		if [ -s "$CACHE/k73-version" ]; then
			run_vm stock73 stock73 2 2 stock.sh
		else
			skip_lane stock73 "no Linux 7.3 in the archive (scripts/deps.sh)"
		fi
		;;
	# 4 online of 16 possible: nr_cpu_ids 16, so KASAN watches mm_cid
	# storage grow past its first block (its dir and ready words) too.
	debug) run_vm debug debug 4 16 debug.sh ;;
	kselftest) run_vm kselftest debug 4 4 kselftest.sh ;;
	hotplug) run_vm hotplug debug 4 4 hotplug.sh ;;
	cycles) run_vm cycles debug 4 4 cycles.sh kunit.enable=0 ;;
	rt)
		# 4 online of 16 possible: nr_cpu_ids 16, so mm_cid storage grows
		# past its first block (fail-nth reaches block growth) and the
		# per-CPU code sees possible CPUs that never came online.
		bash "$REPO/scripts/kernel.sh" "$REPO/scripts/rt.config" >/dev/null ||
			die "rt kernel build"
		run_vm rt rt 4 16 debug.sh
		;;
	kunitpy)
		echo "== lane kunitpy: kunit.py exec --arch=x86_64 --qemu_args='-smp 4' (rss debug kernel)"
		rm -f "$OUT/kunitpy.log"
		bash "$REPO/scripts/kunit-lane.sh" >"$OUT/kunitpy.log" 2>&1
		rc=$?
		grep -E 'Testing complete|\[(PASSED|FAILED|CRASHED|SKIPPED)\]' "$OUT/kunitpy.log" |
			sed 's/^/   /'
		echo "kunitpy $rc kunitpy $OUT/kunitpy.log" >>"$runs"
		;;
	bench)
		# The instrument of make rss: -icount here (one host thread,
		# so the background builder keeps the other core), KVM where
		# KVM works (lib.sh kvm_works).
		bench_instrument
		echo "== bench $(bench_title)"
		run_vm bench-4 stock 4 4 bench.sh "" "${vmflags[@]}"
		sed -n '/PN-BENCH-BEGIN/,/PN-BENCH-END/p' "$OUT/bench-4.log"
		echo "== bench headline (scripts/headline.py)"
		python3 "$REPO/scripts/headline.py" 4of4="$OUT/bench-4.log" | sed 's/^/   /'
		# The instrument repeats: two boots of one kernel and seed
		# print the same log, timestamps and counts alike.
		if [ "$instrument" = icount ]; then
			for i in 1 2; do
				bash "$REPO/scripts/vm.sh" --icount --kernel stock --smp 4 \
					--log "$OUT/bench-repeat-$i.log" "$REPO/scripts/guest/repeat.sh" \
					>"$OUT/bench-repeat-$i.out" 2>&1
			done
			{
				echo "1..1"
				if grep -q '^=== PN-GUEST-EXIT rc=0' "$OUT/bench-repeat-1.log" &&
					cmp -s "$OUT/bench-repeat-1.log" "$OUT/bench-repeat-2.log"; then
					echo "ok 1 - two -icount boots of one kernel and seed print the same log"
				else
					echo "not ok 1 - two -icount boots of one kernel and seed print the same log"
					diff "$OUT/bench-repeat-1.log" "$OUT/bench-repeat-2.log" |
						head -n 20 | sed 's/^/# /'
				fi
			} >"$OUT/bench-repeat.tap"
			sed 's/^/   /' "$OUT/bench-repeat.tap"
			grep -q '^ok 1' "$OUT/bench-repeat.tap"
			echo "bench-repeat $? tap $OUT/bench-repeat.tap" >>"$runs"
		fi
		;;
	cost)
		run_tap cost cost-check.sh \
			"the cost plugin on QEMU 10 q35 -icount, Debian's 7.2, two boots of one seed" '^(not )?ok [0-9]'
		;;
	rss)
		echo "== lane rss: scripts/rss.sh --short (every rss_stat= mode)"
		RSS_MODES="mainline lazy lazy-tree tree mmcid cache flat" \
			bash "$REPO/scripts/rss.sh" --short --runs "$runs" 2>&1 | sed 's/^/   /'
		;;
	rss73)
		echo "== lane rss73: the series on linux-source-7.3 (scripts/rss-kernel.sh build73)"
		if [ ! -s "$CACHE/k73-version" ]; then
			skip_lane rss73 "no Linux 7.3 in the archive (scripts/deps.sh)"
			continue
		fi
		{
			echo "1..1"
			v=$(KSRC_SERIES=7.3 ksrc_version)
			if bash "$REPO/scripts/rss-kernel.sh" build73 >"$OUT/rss73.log" 2>&1; then
				echo "ok 1 - rss/patches apply to linux-source-7.3 $v without fuzz; the patched kernel builds, no warning in the series' files"
			else
				echo "not ok 1 - rss/patches on linux-source-7.3 $v"
				tail -n 20 "$OUT/rss73.log" | sed 's/^/# /'
			fi
		} >"$OUT/rss73.tap"
		sed 's/^/   /' "$OUT/rss73.tap"
		! grep -q '^not ok' "$OUT/rss73.tap"
		echo "rss73 $? tap $OUT/rss73.tap" >>"$runs"
		;;
	*) die "unknown lane $lane" ;;
	esac
	echo "== lane $lane: $(($(date +%s) - t_lane)) s (kernel builds included)"
done

if [ -n "$builder" ]; then
	wait "$builder"
	builder=""
fi
echo "== wall time: $(($(date +%s) - t_start)) s"
python3 "$REPO/scripts/summary.py" "$runs" "$(ksrc)/tools/testing/kunit/kunit.py"
