# Bench lane: every test's benchmark, one after the other, in this VM's
# CPU shape.  Under TCG only the ratios mean anything.
. /lib.sh
pn_insmod || exit 1
for t in $(pn_tests bench); do
	pn_bench "test=$t ms=${PN_BENCH_MS:-400}"
done
pn_rmmod
exit 0
