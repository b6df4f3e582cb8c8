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
	pn_hotplug_start
	run_tap rss_check_hotplug /rss/rss_check --exact-single --loops 2
	pn_hotplug_stop
	echo "# online CPUs after the hotplug step: $(cat /sys/devices/system/cpu/online)"
	;;
bench)
	# The per-CPU allocator's lock holds per child of bench_fork --mode
	# $1 (rss/bench/: debugfs percpu_hold, path length under icount),
	# what the contention model of rss_table.py works from: the
	# difference of a 0.1 and a 0.3 s run, so that the shell's own
	# forks and bench_fork's start cancel out.
	hold_run()	# mode seconds: "children and the six sums"
	{
		local f=/sys/kernel/debug/percpu_hold out n mns mn alns aln flns fln
		echo 1 >$f
		out=$(/rss/bench_fork --mode "$1" --forkers 1 --true /rss/true --seconds "$2") ||
			return 1
		read -r mns mn alns aln flns fln <$f
		echo 0 >$f
		n=$(echo "$out" | sed -n 's/^# [a-z_0-9]*: \([0-9]*\) children.*/\1/p')
		[ -n "$fln" ] && [ -n "$n" ] || return 1
		echo "$n $mns $mn $alns $aln $flns $fln"
	}
	bench_hold()	# mode
	{
		local a b
		if [ ! -w /sys/kernel/debug/percpu_hold ]; then
			echo "# no debugfs percpu_hold: no hold times"
			return
		fi
		if ! a=$(hold_run "$1" 0.1) || ! b=$(hold_run "$1" 0.3); then
			echo "# hold $1: a run failed"
			return
		fi
		echo "$a $b" | awk -v m="$1" '{
			dn = $8 - $1
			if (dn <= 0)
				exit 1
			printf "rss-bench hold_mutex_fork_%s %.3f insns\n", m, ($9 - $2) / dn
			printf "rss-bench hold_alloc_lock_fork_%s %.3f insns\n", m, ($11 - $4) / dn
			printf "rss-bench hold_free_lock_fork_%s %.3f insns\n", m, ($13 - $6) / dn
			fmt = "# hold %s: %d children apart; per child: pcpu_alloc_mutex %.2f, pcpu_lock %.2f + %.2f times\n"
			printf fmt, m, dn, ($10 - $3) / dn, ($12 - $5) / dn, ($14 - $7) / dn
		}' || echo "# hold $1: the runs did not differ in children"
	}
	echo "=== PN-RSS-BENCH-BEGIN mode=$mode cpus=$(nproc) possible=$(cat /sys/devices/system/cpu/possible)"
	# Memory first: before the fork benchmarks leave free populated
	# per-CPU pages and constructed objects behind (rss/progs/README).
	/rss/bench_mem --children 512
	/rss/bench_mem --children 512 --threads-per-child 4
	/rss/bench_fork --mode exec --forkers 1 --true /rss/true --seconds "$secs"
	/rss/bench_fork --mode exec --forkers 4 --true /rss/true --seconds "$secs"
	/rss/bench_fork --mode exit --forkers 1 --seconds "$secs"
	/rss/bench_fork --mode exit --forkers 1 --threads 4 --seconds "$secs"
	/rss/bench_fork --mode spawn --forkers 1 --true /rss/true --seconds "$secs"
	bench_hold exit
	bench_hold exec
	/rss/bench_thread --seconds "$secs"
	/rss/bench_fault --threads 1 --seconds "$secs"
	/rss/bench_fault --threads 4 --seconds "$secs"
	/rss/bench_status --seconds "$secs"
	/rss/bench_oom --children 1000 --seconds "$secs"
	/rss/bench_drift
	# The tick's RSS read (TASK_XACCT): a process spins secs x 10^9
	# instructions of a user loop.  Its path length needs the
	# instruction-counted clock (rss.sh says so: pn_rss_icount=1).  One
	# thread only.  Beside three sleeping threads of its process the
	# same loop measured 0.6 to 1.7 million instructions a tick, with
	# hundreds of function-call IPIs (CAL in /proc/interrupts): not a
	# path length.  With the other CPUs offline even one thread
	# measured 0.8 million: offline vCPUs are not idle under QEMU.
	# The clock counts every CPU: let what the benchmarks above left
	# running settle first.
	ic=""
	[ "$(arg pn_rss_icount 0)" = 1 ] && ic=--icount
	sleep 1
	/rss/bench_tick --threads 1 --loops "$(awk -v s="$secs" 'BEGIN { printf "%d", s * 1e9 / 2 }')" $ic
	# Reclaim into zram and back; swap is on for these two only.
	if echo 64M 2>/dev/null >/sys/block/zram0/disksize && mkswap /dev/zram0 >/dev/null &&
		swapon /dev/zram0; then
		/rss/bench_reclaim --mode pageout --seconds "$secs"
		/rss/bench_reclaim --mode swapin --seconds "$secs"
		swapoff /dev/zram0
	else
		echo "# no zram swap: no reclaim benchmarks"
	fi
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
