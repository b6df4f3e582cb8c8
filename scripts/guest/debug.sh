# Debug lane (KASAN, lockdep, kmemleak, KUnit): KUnit suites run at
# insmod, then selftests, a short stress of every test, the fault-injected
# stresses, rmmod, rmmod in the middle of a run and of a fuzzing storm, and
# a kmemleak scan.
. /lib.sh
pn_kmemleak_clear
pn_insmod || exit 1
pn_ktap
pn_selftests
for t in $(pn_tests stress); do
	pn_stress "test=$t ms=1500"
done
pn_stress "test=percpu ms=1000 threads=8 pin=random"
pn_stress_faults "20 300 1000"
pn_rmmod
pn_rmmod_during_run
pn_rmmod_during_fuzz
pn_kmemleak_check
exit 0
