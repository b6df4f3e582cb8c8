# Stock lane (Debian's kernel): load, the sample client, selftests, a short stress of every
# test, rmmod; then rmmod in the middle of a run.
. /lib.sh
pn_insmod || exit 1
pn_client
pn_selftests
for t in $(pn_tests stress); do
	pn_stress "test=$t ms=1500"
done
pn_stress "test=percpu ms=1000 threads=8 pin=random"
pn_rmmod
pn_rmmod_during_run
exit 0
