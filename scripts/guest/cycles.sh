# Load/unload cycles: insmod, a short stress (rotating over the tests),
# rmmod, PN_CYCLES times (100 by default).  Booted with kunit.enable=0 so
# the suites do not rerun at every load.  Afterwards the Percpu: line of
# /proc/meminfo must be back to its value before the first load, and
# kmemleak must find nothing.
. /lib.sh
pn_kmemleak_clear
n=${PN_CYCLES:-100}
before=$(pn_percpu_kb)
i=0 bad=0
while [ $i -lt "$n" ]; do
	insmod /pcpu_next.ko || { bad=$((bad + 1)); break; }
	set -- $(pn_tests stress)
	shift $((i % $#))
	echo "test=$1 ms=100" >"$PN/stress" && pn_wait stress
	tail -n 1 "$PN/stress" | grep -q ' PASS$' || { bad=$((bad + 1)); tail -n 1 "$PN/stress"; }
	rmmod pcpu_next || { bad=$((bad + 1)); break; }
	i=$((i + 1))
done
after=$(pn_percpu_kb)
echo "=== PN-CYCLES $i cycles, $bad failures, Percpu: ${before} kB before, ${after} kB after"
[ $i -eq "$n" ] && [ $bad -eq 0 ] && pn_result PASS load-unload-cycles ||
	pn_result FAIL load-unload-cycles
[ "$after" -le "$before" ] && pn_result PASS percpu-meminfo-restored ||
	pn_result FAIL percpu-meminfo-restored
pn_kmemleak_check
exit 0
