# Debug lane (KASAN, lockdep, kmemleak, KUnit): KUnit suites run at
# insmod, then selftests, a short stress of every test, rmmod, rmmod in
# the middle of a run, and a kmemleak scan.
. /lib.sh
pn_kmemleak_clear
pn_insmod || exit 1
pn_ktap
pn_selftests
for t in $(pn_tests stress); do
	pn_stress "test=$t ms=1500"
done
pn_stress "test=percpu ms=1000 threads=8 pin=random"
pn_rmmod
pn_rmmod_during_run
pn_kmemleak_check
exit 0
