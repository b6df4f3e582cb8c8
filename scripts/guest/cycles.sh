# Load/unload cycles: insmod, a short stress (rotating over the tests),
# rmmod, PN_CYCLES times (50 by default).  Booted with kunit.enable=0 so
# the suites do not rerun at every load.
#
# Leak criterion: the kernel's count of live per-CPU allocations
# (nr_cur_alloc in /sys/kernel/debug/percpu_stats, CONFIG_PERCPU_STATS)
# after the cycles may exceed its value after one warm-up cycle by at
# most PN_CYCLES_SLACK (4), and kmemleak must find nothing.  The slack is
# the kernel's own: the same point of two boots read 291 and 287, and a
# run went 287 -> 291 (another 291 -> 288) with kmemleak clean, while a
# leak of one allocation per load shows as 50.  Both counts are taken once they settle:
# some frees complete asynchronously after rmmod (workqueue teardown and
# RCU-deferred frees), so the count is polled for up to 30 s.  The Percpu: line of /proc/meminfo is
# printed every 10 cycles but not asserted: it counts populated pages, and
# the kernel's allocator keeps an empty chunk and populated free pages in
# reserve and returns them asynchronously (pcpu_balance_workfn()), so it
# moves up and down with no leak (seen here: 1440..3008 kB over 100
# cycles, back near its start).
. /lib.sh
pn_kmemleak_clear
n=${PN_CYCLES:-50}
start=$(pn_percpu_kb)
insmod /pcpu_next.ko || { pn_result FAIL load-unload-cycles; exit 0; }
for t in $(pn_tests stress); do
	echo "test=$t ms=300" >"$PN/stress" && pn_wait stress
done
rmmod pcpu_next
allocs0=$(pn_percpu_allocs_settled)
before=$(pn_percpu_kb)
echo "=== PN-CYCLES Percpu: ${start} kB at boot, ${before} kB after the warm-up cycle, $allocs0 live per-CPU allocations"
i=0 bad=0
while [ $i -lt "$n" ]; do
	insmod /pcpu_next.ko || { bad=$((bad + 1)); break; }
	set -- $(pn_tests stress)
	shift $((i % $#))
	echo "test=$1 ms=100" >"$PN/stress" && pn_wait stress
	tail -n 1 "$PN/stress" | grep -q ' PASS$' || { bad=$((bad + 1)); tail -n 1 "$PN/stress"; }
	rmmod pcpu_next || { bad=$((bad + 1)); break; }
	i=$((i + 1))
	[ $((i % 10)) -eq 0 ] && echo "=== PN-CYCLES after $i cycles: Percpu: $(pn_percpu_kb) kB"
done
allocs1=$(pn_percpu_allocs_settled "$allocs0")
echo "=== PN-CYCLES live per-CPU allocations may end at most ${PN_CYCLES_SLACK:-4} above the warm-up's"
after=$(pn_percpu_kb)
echo "=== PN-CYCLES $i cycles, $bad failures, Percpu: ${before} kB before, ${after} kB after; live per-CPU allocations: $allocs0 before, $allocs1 after"
[ $i -eq "$n" ] && [ $bad -eq 0 ] && pn_result PASS load-unload-cycles ||
	pn_result FAIL load-unload-cycles
slack=${PN_CYCLES_SLACK:-4}
[ -n "$allocs1" ] && [ "$allocs1" -le $((allocs0 + slack)) ] &&
	pn_result PASS percpu-allocations-restored ||
	pn_result FAIL percpu-allocations-restored
pn_kmemleak_check
exit 0
