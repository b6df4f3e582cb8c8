# SPDX-License-Identifier: GPL-2.0
# rss_stat lane (scripts/rss.sh), in a guest booted from the rss_stat
# kernel (or its unpatched control) with the static programs of
# rss/progs in /rss.  The kernel command line says what to do:
#   rss_stat=MODE   the mode the kernel should be in (none: mainline)
#   pn_rss=check    correctness: the mode took, rss_check, the kernel's
#                   own mm selftests, no "Bad rss-counter state" report
#   pn_rss=bench    the benchmarks (rss-bench lines; ratios are made on
#                   the host, none of this output is a pass/fail check)
#   pn_rss_secs=S   seconds per benchmark (default 2)
#   pn_rss_icount=1 the boot runs under QEMU -icount (bench_tick's
#                   path length)
#   pn_rss_here=1   with check: also rss/progs/rss_here.sh, make
#                   rss-here's runner, short
. /lib.sh

arg()	# name default
{
	local v
	v=$(tr ' ' '\n' </proc/cmdline | sed -n "s/^$1=//p" | tail -n 1)
	echo "${v:-$2}"
}

mode=$(arg rss_stat mainline)
what=$(arg pn_rss check)
secs=$(arg pn_rss_secs 2)
rc=0

# The patched kernel says which mode it took; the control says nothing.
got=$(dmesg | sed -n 's/.*rss_stat: mode \([a-z-]*\).*/\1/p' | tail -n 1)
echo "# rss_stat: asked for $mode, kernel reports ${got:-nothing (control kernel)}"
if [ -n "$got" ] || [ "$mode" != mainline ]; then
	if [ "$got" = "$mode" ]; then
		pn_result PASS "rss-mode-$mode"
	else
		pn_result FAIL "rss-mode-$mode"
		rc=1
	fi
fi

run_tap()	# name command...
{
	local name=$1 r
	shift
	echo "=== PN-SELFTEST-BEGIN $name"
	"$@"
	r=$?
	echo "=== PN-SELFTEST-END rc=$r"
	[ $r -eq 0 ] || rc=1
}

case $what in
check)
	# debug build: what boot left behind is not the run's
	pn_kmemleak_clear
	# /proc/PID/status sums exactly in every mode (get_mm_counter_sum()).
	run_tap rss_check /rss/rss_check --exact-single
	# /proc/PID/stat's rss is the fast read (get_mm_counter(), also the
	# OOM killer's): per mode, what that read promises.  percpu_counter:
	# within (batch - 1) pages per online CPU, batch = max(32, 2 x
	# online CPUs) (percpu_counter_batch; 248 pages at 8 CPUs);
	# lazy: exact while one task uses the mm, else as percpu_counter
	# (its flat batch is at most percpu_counter_batch); flat: as lazy,
	# over the CPUs the mm used; mmcid: within 31
	# pages per cid used, at most one per possible CPU (a cid slot folds
	# at 32); trees: within their accuracy range, at most 496 pages up to
	# 16 CPUs (Documentation/counter_tree.rst, batch 32), checked as 512.
	n=$(nproc)
	np=$(($(cut -d- -f2 /sys/devices/system/cpu/possible) + 1))
	pcb=32
	[ $((2 * n)) -le 32 ] || pcb=$((2 * n))
	pcbound=$(((pcb - 1) * n))
	case $mode in
	mainline | cache) run_tap rss_check_stat /rss/rss_check --stat --bound "$pcbound" ;;
	lazy | flat) run_tap rss_check_stat /rss/rss_check --stat --exact-single --bound "$pcbound" ;;
	lazy-tree) run_tap rss_check_stat /rss/rss_check --stat --exact-single --bound 512 ;;
	tree) run_tap rss_check_stat /rss/rss_check --stat --bound 512 ;;
	mmcid) run_tap rss_check_stat /rss/rss_check --stat --bound $((31 * np)) ;;
	esac
	# The fast read after all CPUs but one went offline, per mode: the
	# error allowed per counter, times the three counters of
	# get_mm_rss().  percpu_counter folds a dead CPU's part into its
	# count (mainline: only the CPU left holds any); lazy's flat counters,
	# cache and flat are on no hotplug list, so every CPU that ran keeps
	# its part (see README); trees and mmcid as above.
	k=$((pcb - 1))
	case $mode in
	mainline) ob=$((3 * k)) ;;
	lazy | cache | flat) ob=$((3 * k * n)) ;;
	lazy-tree | tree) ob=$((3 * 496)) ;;
	mmcid) ob=$((3 * 31 * np)) ;;
	esac
	run_tap rss_check_offline /rss/rss_check --offline --pages-per-cpu "$k" --bound "$ob"
	echo "# online CPUs after the offline step: $(cat /sys/devices/system/cpu/online)"
	# memcg: the per-CPU memory the library gives an mm is charged to
	# the forking task's memcg, at least rss_stat's 16 bytes per
	# possible CPU.  Not mainline's: in a guest this small its rss_stat
	# comes from mm/percpu.c's first chunk, which keeps no obj_cgroup,
	# so it is charged to nobody (measured: 0 bytes for 64 children).
	# Not mmcid's: per cid, charged as slab.
	if [ "$mode" != mmcid ] && [ "$mode" != mainline ]; then
		cg=/sys/fs/cgroup
		mkdir -p $cg
		grep -q " $cg cgroup2 " /proc/mounts || mount -t cgroup2 none $cg
		echo +memory >$cg/cgroup.subtree_control
		mkdir -p $cg/pn
		run_tap rss_check_memcg /rss/rss_check --memcg $cg/pn --min-bytes $((16 * np))
	fi
	# The library's allocator serves the rss modes' per-CPU memory,
	# accounted or not: no object of theirs is a direct one (one
	# __alloc_percpu_gfp(), the kernel's global mutex).  Column 18 of
	# the library's stats is the direct objects ever allocated.
	st=/sys/kernel/debug/pcpu_next/alloc/stats
	direct=missing
	if [ -r $st ]; then
		cat $st
		direct=$(awk 'NR > 1 { d += $18 } END { print d + 0 }' $st)
	fi
	echo "# direct objects of the library: $direct"
	case $mode in
	lazy | lazy-tree | tree | cache | flat)
		if [ "$direct" = 0 ]; then
			pn_result PASS "rss-allocator-$mode"
		else
			pn_result FAIL "rss-allocator-$mode"
			rc=1
		fi
		;;
	esac
	# mmcid: a thread whose cid has no block (the clone's prepare failed,
	# injected for the tasks rss_check marks) grows it from a task work.
	f=/sys/kernel/debug/pcpu_next/fault/fail_mmcid
	if [ "$mode" = mmcid ] && [ -d $f ]; then
		# how often the runs above fell back, with no fault injected
		echo "# before cid-grow: rss_stat/mmcid_cid_fallbacks $(cat /sys/kernel/debug/rss_stat/mmcid_cid_fallbacks)," \
			"mmcid_grows $(cat /sys/kernel/debug/rss_stat/mmcid_grows)"
		echo Y >$f/task-filter
		echo 1 >$f/interval
		echo -1 >$f/times
		echo 100 >$f/probability
		run_tap rss_check_cid_grow /rss/rss_check --cid-grow
		echo 0 >$f/probability
		echo "# after cid-grow: rss_stat/mmcid_cid_fallbacks $(cat /sys/kernel/debug/rss_stat/mmcid_cid_fallbacks)," \
			"mmcid_grows $(cat /sys/kernel/debug/rss_stat/mmcid_grows)"
	fi
	for t in /rss/mm/*; do
		[ -x "$t" ] || continue
		run_tap "mm/$(basename "$t")" "$t"
	done
	# The exact sums again while CPUs go offline and online at random,
	# CPUs that were never online among them: percpu_counter folds a
	# dead CPU's delta through its hotplug list; the library's counters
	# and cache mode's (on no list) sum the CPUs that ever came up
	# (pcpu_next_cpus_seen()), so a cache-mode sum over the online CPUs
	# only would fail here; flat's sum the CPUs the mm used, offline or
	# not; mmcid's slots follow cids, not CPUs.
	# Afterwards every CPU is online.
	# pn_rss_here=1: make rss-here's runner, as on a real machine,
	# short (0.05 s a benchmark, 64 and 100 children); the host checks
	# that its output makes the table.  Before the hotplug step, so
	# with the boot's own CPUs online.
	if [ "$(arg pn_rss_here 0)" = 1 ]; then
		RSS_MEM_CHILDREN=64 RSS_OOM_CHILDREN=100 sh /rss/rss_here.sh 0.05 || rc=1
	fi
	pn_hotplug_start
	run_tap rss_check_hotplug /rss/rss_check --exact-single --loops 2
	pn_hotplug_stop
	echo "# online CPUs after the hotplug step: $(cat /sys/devices/system/cpu/online)"
	;;
bench)
	# rss/progs/rss_bench.sh: the same list make rss-here runs on a
	# real machine.
	. /rss/rss_bench.sh
	echo "=== PN-RSS-BENCH-BEGIN mode=$mode cpus=$(nproc) possible=$(cat /sys/devices/system/cpu/possible)"
	rss_bench_all /rss "$secs" "$(arg pn_rss_icount 0)" 1
	echo "=== PN-RSS-BENCH-END"
	;;
*)
	echo "# unknown pn_rss=$what"
	rc=1
	;;
esac

# Every mm of the run is gone (its __mmdrop() ran check_mm()) once no
# CPU holds it as a lazy TLB mm: run a few short processes on every CPU.
for i in 1 2 3 4 5 6 7 8; do /bin/true; done
sleep 1
n=$(dmesg | grep -c 'Bad rss-counter state')
echo "# Bad rss-counter state reports: $n"
if [ "$what" = check ]; then
	if [ "$n" -eq 0 ]; then
		pn_result PASS "rss-counters-$mode"
	else
		pn_result FAIL "rss-counters-$mode"
		rc=1
	fi
	# debug build: nothing the run allocated may be left unreferenced
	if [ -e /sys/kernel/debug/kmemleak ]; then
		pn_kmemleak_check || rc=1
	fi
fi
exit $rc
