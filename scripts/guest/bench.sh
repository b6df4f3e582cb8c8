# Bench lane: every test's benchmark, one after the other, in this VM's
# CPU shape, under the instrument check.sh picked (-icount or KVM).
. /lib.sh
pn_insmod || exit 1
# pn_bench_tests=a,b on the kernel command line: those benchmarks only.
only=$(sed -n 's/.*pn_bench_tests=\([a-z,]*\).*/\1/p' /proc/cmdline | tr , ' ')
for t in ${only:-$(pn_tests bench)}; do
	pn_bench "test=$t ms=${PN_BENCH_MS:-400}"
done
# The real cid path, from user threads (selftests/mmcid_bench.c).
if [ -x /bench/mmcid_bench ] && { [ -z "$only" ] || [ -z "${only##*mmcid*}" ]; }; then
	/bench/mmcid_bench
	[ $? -eq 0 ] && pn_result PASS bench:mmcid-user || pn_result FAIL bench:mmcid-user
fi
pn_rmmod
exit 0
