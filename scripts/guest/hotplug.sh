# Hotplug torture: every stress test runs while CPUs go offline and online
# at random; at quiescence the tests check their own exactness, and the
# kmemleak scan checks that drained caches leaked nothing.
. /lib.sh
pn_kmemleak_clear
insmod /pcpu_next.ko || { pn_result FAIL insmod; exit 1; }
for t in $(pn_tests stress); do
	pn_hotplug_start
	pn_stress "test=$t ms=${PN_HOTPLUG_MS:-3000}"
	pn_hotplug_stop
done
# Faults and hotplug together: failures injected while CPUs come and go.
pn_hotplug_start
PN_FAULT_MS=${PN_HOTPLUG_MS:-3000} pn_stress_faults 200
pn_hotplug_stop
pn_rmmod
pn_kmemleak_check
exit 0
