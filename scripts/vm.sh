#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot a kernel under QEMU (TCG), with pcpu_next.ko and the selftests in a
# busybox initramfs, and run a guest script there.  Nothing is ever loaded
# into the build machine's own kernel.
#
#   scripts/vm.sh [options] GUEST_SCRIPT
#     --kernel stock|stock-rt|stock72|stock72-rt|stock73|debug|rt|rss|rss-debug|rss-control
#                           Debian's 6.12 kernel + headers (default; stock-rt:
#                           Debian's PREEMPT_RT flavour), Debian's own 7.2
#                           (7.3) image with the module built against a tree
#                           prepared with its config (scripts/kdir.sh),
#                           or a 7.2 test kernel built by scripts/kernel.sh from
#                           scripts/<kernel>.config (debug: KASAN, lockdep,
#                           kmemleak; rt: PREEMPT_RT, KCSAN,
#                           lockdep, kmemleak); rss: the rss_stat kernel
#                           of scripts/rss-kernel.sh (library built in, no
#                           module), rss-debug: the same with KASAN,
#                           lockdep, kmemleak (rss/debug.config),
#                           rss-control: the unpatched control
#     --rss-progs DIR       static programs copied to /rss (rss kinds:
#                           required)
#     --no-module           stock kinds: no module and no selftests in the
#                           initramfs (the cost lane: two boots side by side
#                           must decompress the same bytes, and a module
#                           built in another directory differs)
#     --append STR          extra kernel command line (may be repeated;
#                           each adds to the line)
#     --smp N               online vCPUs (default 4)
#     --possible N          possible CPUs (default = online).  QEMU gets N
#                           vCPUs and the kernel `maxcpus=<smp>`: it brings
#                           only that many online at boot, but sizes every
#                           per-CPU area for all N, as on a server whose
#                           possible CPUs far exceed the online ones.  (The
#                           "-smp 2,maxcpus=64" route does not work here:
#                           Linux counts QEMU's disabled MADT entries only
#                           under a detected hypervisor, and TCG is not one;
#                           SeaBIOS drops MP tables above ~18 CPUs.)
#     --icount              QEMU's instruction-counted clock (-icount
#                           shift=0,sleep=off,align=off): guest time counts
#                           instructions, one nanosecond each, so a
#                           benchmark's time is its path length; repeatable
#                           under host load, blind to cache misses and to
#                           the real cost of atomics and contention.  One
#                           host thread runs every vCPU in turn.  With
#                           RDRAND from QEMU's -seed and the RTC on the
#                           guest's clock, nothing the guest reads comes
#                           from the host: a boot repeats (see --seed)
#     --seed N              with --icount: QEMU's -seed (default 1); the
#                           guest's randomness, ASLR included, follows
#                           from it
#     --cost FILE           with --icount: the cost model's QEMU plugin
#                           (scripts/cost/pn_cost.c, scripts/cost-plugin.sh;
#                           QEMU 10 of --x2apic) counts each benchmark
#                           window's instructions, cache misses, line
#                           transfers and locked operations into FILE.
#                           The guest runs the same instructions with it
#                           or without it, about 4 times slower
#     --kvm                 KVM, -cpu host: the machine's own time (make
#                           rss where KVM works, lib.sh kvm_works)
#     --slots               with --possible: QEMU gets <smp> vCPUs and
#                           <possible> - <smp> CPU hotplug slots
#                           (-smp <smp>,maxcpus=<possible>), and the
#                           kernel acpi_hotplug_slots (rss/bench/: counts
#                           the slots as possible CPUs under TCG).  Boots
#                           as fast as <smp> CPUs; rss kernels only; at
#                           most 255 possible (QEMU 7.2's pc machine;
#                           see --x2apic)
#     --x2apic              QEMU 9 or later from bookworm-backports
#                           (scripts/qemu-bpo.sh), q35: --slots reaches
#                           4096 possible CPUs.  SeaBIOS hands over in
#                           x2APIC mode and the MADT lists the slots past
#                           254 as x2APIC entries, so Linux counts them.
#                           Without interrupt remapping Linux then falls
#                           back to xAPIC: slots past 254 stay possible,
#                           never online.  No IOMMU: QEMU 10's intel-iommu
#                           stops icount with "Bad icount read".
#                           Its log starts with a harmless line: it looks
#                           for bookworm's ui-opengl.so and refuses it.
#     --timeout S           kill QEMU after S seconds (default 900)
#     --log FILE            console log (default .out/vm-<kernel>.log)
#     --src DIR             module source tree (default: this repository)
#
# Inside the guest: busybox, debugfs mounted, /pcpu_next.ko and the sample
# client /pcpu_next_client.ko (not loaded),
# /selftests/*, and /lib.sh with helpers (pn_insmod, pn_stress, ...).  The
# script's exit status is reported by a marker line.  vm.sh exits non-zero
# if the guest script failed, the guest did not finish, the guest's online
# or possible CPUs are not the ones asked for, or the log shows a kernel
# splat (BUG, WARNING, Oops, Call Trace, KASAN, lockdep, kmemleak).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kind=stock smp=4 possible="" icount=0 cost="" seed=1 seedset=0 timeout=900 log="" src="$REPO" extra="" rssprogs="" nomod=0 accel=(-accel tcg) slots=0
qemu=qemu-system-x86_64 machine=(-machine pc)
while [ $# -gt 1 ]; do
	case "$1" in
	--kernel) kind=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--possible) possible=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--log) log=$2; shift 2 ;;
	--append) extra="$extra $2"; shift 2 ;;
	--src) src=$(cd "$2" && pwd); shift 2 ;;
	--rss-progs) rssprogs=$2; shift 2 ;;
	--no-module) nomod=1; shift ;;
	--icount)
		# shellcheck disable=SC2054 # one QEMU argument with commas
		accel=(-accel tcg -icount shift=0,sleep=off,align=off
		       -rtc base=2026-01-01T00:00:00,clock=vm)
		icount=1
		shift
		;;
	--seed)
		case $2 in 0 | [1-9] | [1-9]*[0-9]) ;; *) die "vm.sh: --seed takes a decimal number" ;; esac
		case $2 in *[!0-9]*) die "vm.sh: --seed takes a decimal number" ;; esac
		seed=$2 seedset=1
		shift 2
		;;
	--kvm)
		kvm_works || die "vm.sh: --kvm: KVM does not work here (lib.sh kvm_works)"
		accel=(-accel kvm -cpu host)
		icount=0
		shift
		;;
	--slots) slots=1; shift ;;
	--cost) cost=$2; shift 2 ;;
	--x2apic)
		qemu=$(bash "$REPO/scripts/qemu-bpo.sh") || die "vm.sh: --x2apic: no QEMU >= 9"
		share=${qemu%/bin/qemu-system-x86_64}/share
		machine=(-machine q35 -L "$share/qemu" -L "$share/seabios")
		# Its own device modules, not bookworm's QEMU 7.2 ones.
		export QEMU_MODULE_DIR=${qemu%/bin/qemu-system-x86_64}/lib/x86_64-linux-gnu/qemu
		shift
		;;
	*) die "vm.sh: unknown option $1" ;;
	esac
done
[ $# -eq 1 ] || die "usage: vm.sh [options] GUEST_SCRIPT"
guest=$1
[ -r "$guest" ] || die "no guest script $guest"
log=${log:-$OUT/vm-$kind.log}

case "$kind" in
stock)
	abi=$(stock_abi)
	kdir=/usr/src/linux-headers-$abi-amd64
	bzimage=$CACHE/stock-$abi/vmlinuz
	;;
stock-rt)
	abi=$(stock_abi)
	kdir=/usr/src/linux-headers-$abi-rt-amd64
	bzimage=$CACHE/stock-rt-$abi/vmlinuz
	;;
stock72 | stock72-rt | stock73)
	flavour=amd64
	[ "${kind%-rt}" = "$kind" ] || flavour=rt-amd64
	s=${kind#stock}
	s=${s%-rt}
	kdir=$("$REPO/scripts/kdir.sh" "debian$s" "$flavour")
	bzimage=$CACHE/stock$s-${flavour%amd64}$(k7_abi "${s:0:1}.${s:1}")/vmlinuz
	;;
debug | rt)
	kdir=$("$REPO/scripts/kernel.sh" "$REPO/scripts/$kind.config")
	bzimage=$kdir/arch/x86/boot/bzImage
	;;
rss | rss-debug | rss-control)
	case $kind in rss) k=patched ;; rss-debug) k=debug ;; *) k=control ;; esac
	bzimage=$("$REPO/scripts/rss-kernel.sh" "$k")
	kdir=$(dirname "$bzimage")
	;;
*) die "vm.sh: --kernel stock|stock-rt|stock72|stock72-rt|stock73|debug|rt|rss|rss-debug|rss-control" ;;
esac
[ -d "$kdir" ] && [ -s "$bzimage" ] || die "kernel $kind not available: run scripts/deps.sh"

work=$OUT/vm-$kind
# rss boots, and boots under the cost plugin, may run side by side
# (make rss under --icount, the cost lane): each its own module build
# and initramfs, removed when it is done.
if [ -n "$cost" ] || [ "${kind#rss}" != "$kind" ]; then
	work=$OUT/vm-$kind-$(basename "$log" .log)
	trap 'rm -rf "$work"' EXIT
fi
# Fast-path statistics (CONFIG_PCPU_NEXT_STATS) on the test kernels, off on
# Debian's stock kernels, where the bench lanes measure; PN_OPTS overrides.
case "$kind" in
stock*) : "${PN_OPTS=CONFIG_PCPU_NEXT_TORTURE=y}" ;;
*) : "${PN_OPTS=CONFIG_PCPU_NEXT_TORTURE=y CONFIG_PCPU_NEXT_STATS=y}" ;;
esac
export PN_OPTS
case "$kind$nomod" in
rss* | *1) ;;
*)
	mod=$(build_module "$src" "$kdir" "$work/mod")
	client=$(build_client "$kdir" "$work/mod")
	build_selftests "$src" "$work/selftests"
	;;
esac

# initramfs
root=$work/initramfs
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,selftests}
cp /bin/busybox "$root/bin/busybox"
case "$kind" in
rss*)
	[ -d "$rssprogs" ] || die "vm.sh: --kernel $kind needs --rss-progs DIR"
	mkdir -p "$root/rss"
	cp -r "$rssprogs"/. "$root/rss/"
	;;
*)
	if [ -n "$rssprogs" ]; then
		mkdir -p "$root/rss"
		cp -r "$rssprogs"/. "$root/rss/"
	fi
	;;
esac
case "$kind$nomod" in
rss* | *1) ;;
*)
	cp "$mod" "$root/pcpu_next.ko"
	cp "$client" "$root/pcpu_next_client.ko"
	# pahole (1.24) writes a module's .BTF in a different order from
	# one build to the next, and the kernel loads it: under --icount
	# the module goes in without it (and without debug info), so the
	# same source boots the same bytes.
	if [ "$icount" = 1 ]; then
		strip --strip-debug -R .BTF "$root/pcpu_next.ko" "$root/pcpu_next_client.ko"
	fi
	cp "$work"/selftests/bin/* "$root/selftests/" 2>/dev/null || true
	# Benchmark programs (selftests/*_bench.c) go to /bench.
	if [ -d "$work/selftests/bin/bench" ]; then
		mkdir -p "$root/bench"
		cp "$work"/selftests/bin/bench/* "$root/bench/"
	fi
	;;
esac
cp "$REPO/scripts/guest/lib.sh" "$root/lib.sh"
cp "$guest" "$root/guest.sh"
cat >"$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmp /tmp
# Kernel fault injection (kernels with FAULT_INJECTION_DEBUG_FS): failures
# are only ever requested per task through fail-nth (probability stays 0),
# and then every allocation counts, sleeping or not, order 0 included,
# without a report.
for d in /sys/kernel/debug/failslab /sys/kernel/debug/fail_page_alloc; do
	[ -d "$d" ] || continue
	echo N >"$d/ignore-gfp-wait"
	echo 0 >"$d/verbose"
	[ -e "$d/min-order" ] && echo 0 >"$d/min-order"
done
cd /
echo "=== PN-GUEST-START nproc=$(nproc) possible=$(cat /sys/devices/system/cpu/possible)"
sh /guest.sh
echo "=== PN-GUEST-EXIT rc=$?"
sync
reboot -f
INIT
chmod +x "$root/init" "$root/guest.sh"
# The same bytes for the same files (no times, sorted): a boot under
# --icount repeats only if what it decompresses does.
find "$root" -exec touch -h -d @0 {} +
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet --reproducible | gzip -1 -n) \
	>"$work/initrd.gz"

append="console=ttyS0 loglevel=5 log_buf_len=8M panic=-1 oops=panic nokaslr"
smparg="$smp"
if [ -n "$possible" ] && [ "$possible" -gt "$smp" ]; then
	if [ "$slots" = 1 ]; then
		case $kind in rss*) ;; *) die "vm.sh: --slots needs an rss kernel (rss/bench/)" ;; esac
		smparg="$smp,maxcpus=$possible"
		append="$append acpi_hotplug_slots"
	else
		smparg="$possible"
		append="$append maxcpus=$smp"
	fi
fi
case $kind in stock* | rss | rss-control) ;; *) append="$append kmemleak=on" ;; esac
[ "$icount" = 1 ] || [ "$seedset" = 0 ] || die "vm.sh: --seed needs --icount"
[ "$icount" = 0 ] || accel+=(-seed "$seed")
plugin=()
if [ -n "$cost" ]; then
	[ "$icount" = 1 ] || die "vm.sh: --cost needs --icount (one TCG thread)"
	[ "${machine[1]}" = q35 ] || die "vm.sh: --cost needs --x2apic's QEMU 10"
	so=$(bash "$REPO/scripts/cost-plugin.sh") || die "vm.sh: --cost: no plugin (scripts/cost-plugin.sh)"
	rm -f "$cost"
	plugin=(-plugin "$so,out=$cost,icount=on")
fi
append="$append $extra"

echo "vm.sh: $kind kernel, -smp $smparg, guest $(basename "$guest"), log $log" >&2
# tsc=unstable: under multi-threaded TCG the vCPUs' TSCs drift; letting
# the kernel find out late flips the sched_clock static key while other
# vCPUs execute it, and TCG's cross-modifying-code handling then trips on
# the int3 of the text patch.  Deciding before SMP bring-up avoids that.
# One host thread runs every vCPU under --icount: their TSCs agree.
[ "${accel[*]}" != "-accel tcg" ] || append="$append tsc=unstable"
cpu=(-cpu max)
case "${accel[*]}" in
*kvm*) cpu=() ;;
esac
echo "vm.sh: instrument: ${accel[*]} ($("$qemu" --version | head -n 1), ${machine[1]})" >&2
# A kernel that dies or reports a splat before the guest script starts
# has not run any of our code (TCG flakes seen here: an int3 from text
# patching, a KASAN wild access in an IRQ handler during CPU bring-up):
# boot again, at most twice more, keeping the failed log.
for attempt in 1 2 3; do
	set +e
	timeout --foreground -k 10 "$timeout" "$qemu" "${accel[@]}" "${machine[@]}" \
		"${cpu[@]}" "${plugin[@]}" -m 3G -smp "$smparg" -kernel "$bzimage" -initrd "$work/initrd.gz" \
		-append "$append" -display none -serial stdio -monitor none -no-reboot \
		</dev/null >"$log" 2>&1
	qrc=$?
	set -e
	tr -d '\r' <"$log" >"$log.tmp" && mv "$log.tmp" "$log"
	if grep -q '^=== PN-GUEST-START' "$log"; then
		sed '/^=== PN-GUEST-START/q' "$log" >"$log.boot"
		splats "$log.boot" || { rm -f "$log.boot"; break; }
		rm -f "$log.boot"
	fi
	cp "$log" "$log.bootfail$attempt"
	echo "vm.sh: boot $attempt failed before the guest started (see $log.bootfail$attempt)" >&2
done

echo "=== PN-INSTRUMENT ${accel[*]} ($("$qemu" --version | head -n 1), ${machine[1]})${cost:+ plugin $(basename "$so")}" >>"$log"
rc=$(sed -n 's/^=== PN-GUEST-EXIT rc=\([0-9]*\).*/\1/p' "$log" | tail -n 1)
if [ -z "$rc" ]; then
	echo "vm.sh: guest did not finish (qemu rc=$qrc); last lines:" >&2
	tail -n 30 "$log" >&2
	exit 2
fi
# The guest must have the CPUs it was booted with: a firmware table that
# lists fewer (SeaBIOS's MP table lists only the boot CPU here) turns
# every cross-CPU test into a skip and a lane into a quiet pass.
want="nproc=$smp possible=0"
[ "${possible:-$smp}" -le 1 ] || want="nproc=$smp possible=0-$((${possible:-$smp} - 1))"
if ! grep -q "^=== PN-GUEST-START $want\$" "$log"; then
	echo "vm.sh: the guest's CPUs are not \"$want\": $(grep -m 1 '^=== PN-GUEST-START' "$log")" >&2
	exit 4
fi
if splats "$log"; then
	echo "vm.sh: kernel splat in $log:" >&2
	splats_show "$log" >&2
	exit 3
fi
exit "$rc"
