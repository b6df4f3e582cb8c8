# make demo: load the module on the stock kernel, list the tests, run each
# stress and each bench, print what they say, unload.
. /lib.sh
pn_insmod || exit 1
echo "=== PN-LIST-BEGIN"
cat "$PN/list"
echo "=== PN-LIST-END"
for t in $(pn_tests stress); do
	pn_stress "test=$t seconds=2"
done
for t in $(pn_tests bench); do
	pn_bench "test=$t ms=${PN_BENCH_MS:-1000}"
done
[ -x /bench/mmcid_bench ] && /bench/mmcid_bench
pn_rmmod
exit 0
