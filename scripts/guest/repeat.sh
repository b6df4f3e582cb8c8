# Bench lane, repeat check: what an -icount boot prints must depend only
# on its kernel, initramfs and seed.  The boot id comes from the kernel's
# random pool; the benchmark's counts from the instruction clock.
# check.sh boots this twice and compares the logs.
. /lib.sh
echo "boot_id $(cat /proc/sys/kernel/random/boot_id)"
pn_insmod || exit 1
pn_bench "test=percpu ms=100"
pn_rmmod
exit 0
