#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kunit.py lane: the library's KUnit suites built into a kernel without
# the harness, run and parsed by the kernel's own tools/testing/kunit/.
#
#   kunit-lane.sh           make check's lane: `kunit.py exec
#                           --arch=x86_64 --qemu_args='-smp 4'` on the rss
#                           debug kernel (scripts/rss-kernel.sh debug: the
#                           library built in under mm/ by the series, the
#                           suites copied in beside it, KASAN, lockdep,
#                           kmemleak), so make check builds no kernel of
#                           its own for kunit.py
#   kunit-lane.sh --build   only build that kernel (make check's builder)
#   kunit-lane.sh --standalone
#                           what a developer does in a plain tree: overlay
#                           this repository under drivers/misc (Kconfig
#                           `source` + Makefile `obj-` line, the way
#                           WireGuard's compat tree did) in a scratch copy
#                           of linux-source-7.2 and `kunit.py run
#                           --kunitconfig=<repo>/kunit/.kunitconfig`;
#                           its own kernel, cached under $CACHE keyed by
#                           source version and .kunitconfig (not part of
#                           make check)
# Output: kunit.py's own, saved to .out/kunit-py.log.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# kunit.py asks QEMU for "-accel kvm -accel hvf -accel tcg", first that
# opens wins.  Where /dev/kvm opens but its vCPUs do not run (lib.sh
# kvm_works; seen here: no nested virtualization, every boot hung until
# kunit.py's timeout), a wrapper first in PATH drops the kvm and hvf
# choices, so QEMU runs TCG.
if [ -e /dev/kvm ] && ! kvm_works; then
	wrap=$OUT/kunit-qemu
	mkdir -p "$wrap"
	cat >"$wrap/qemu-system-x86_64" <<WRAP
#!/bin/bash
args=()
while [ \$# -gt 0 ]; do
	if [ "\$1" = -accel ] && { [ "\$2" = kvm ] || [ "\$2" = hvf ]; }; then
		shift 2
		continue
	fi
	args+=("\$1")
	shift
done
exec $(command -v qemu-system-x86_64) "\${args[@]}"
WRAP
	chmod +x "$wrap/qemu-system-x86_64"
	export PATH="$wrap:$PATH"
fi

mode=${1:-}
if [ "$mode" != --standalone ]; then
	img=$(bash "$REPO/scripts/rss-kernel.sh" debug) || die "rss debug kernel build"
	[ "$mode" != --build ] || exit 0
	bdir=${img%/arch/x86/boot/bzImage}
	cd "$(ksrc)"
	# cgroup.memory=nokmem: the built-in library must serve accounted
	# requests from its caches with kmem accounting off too (the rss
	# lane's boots have it on).
	# tsc=unstable, as scripts/vm.sh: under multi-threaded TCG the vCPUs'
	# TSCs drift, and a late switch of the clocksource can hang the boot
	# (seen: a cold run stopped in SMP bring-up for 15 minutes).  A boot
	# that never reaches KTAP output is retried, at most twice more.
	set +e
	for attempt in 1 2 3; do
		python3 tools/testing/kunit/kunit.py exec --arch=x86_64 --build_dir="$bdir" \
			--kernel_args='tsc=unstable cgroup.memory=nokmem' --qemu_args='-smp 4 -m 2048' --timeout=300 \
			2>&1 | tee "$OUT/kunit-py.log"
		rc=${PIPESTATUS[0]}
		grep -q '^KTAP version\|^TAP version' "$bdir/test.log" && break
		cp "$bdir/test.log" "$OUT/kunit-py.bootfail$attempt.log"
		echo "kunit-lane.sh: boot $attempt printed no KTAP (see $OUT/kunit-py.bootfail$attempt.log)"
	done
	exit "$rc"
fi
src=$(ksrc)
key="$(ksrc_version)-$(key_of "$REPO/kunit/.kunitconfig")"
tree=$CACHE/kunit-tree/$(ksrc_version)
bdir=$CACHE/kunit-build/$key

# One kunit.py at a time in this tree (make check's background builder
# and the lane may overlap).
mkdir -p "$CACHE/kunit-tree"
exec 9>"$tree.lock"
flock 9
if [ ! -e "$tree/.overlaid" ]; then
	rm -rf "$tree"
	mkdir -p "$(dirname "$tree")"
	cp -al "$src" "$tree"
	# Break the hard links of the two files we edit.
	for f in drivers/misc/Kconfig drivers/misc/Makefile; do
		cp "$tree/$f" "$tree/$f.new" && mv "$tree/$f.new" "$tree/$f"
	done
	sed -i '$i source "drivers/misc/pcpu_next/Kconfig"' "$tree/drivers/misc/Kconfig"
	echo 'obj-$(CONFIG_PCPU_NEXT) += pcpu_next/' >>"$tree/drivers/misc/Makefile"
	touch "$tree/.overlaid"
fi
mkdir -p "$tree/drivers/misc/pcpu_next"
rsync -a --delete --exclude=selftests/ --exclude=.out/ --exclude=.git/ \
	--exclude=scripts/ --exclude='*.mod.c' --include='*/' --include='*.c' --include='*.h' \
	--include=Kbuild --include=Kconfig --exclude='*' --prune-empty-dirs \
	"$REPO"/ "$tree/drivers/misc/pcpu_next"/
mkdir -p "$bdir"

cd "$tree"
set +e
python3 tools/testing/kunit/kunit.py run --arch=x86_64 \
	--kunitconfig="$REPO/kunit/.kunitconfig" --qemu_args='-smp 4' \
	--build_dir="$bdir" --jobs="$JOBS" --timeout=900 2>&1 | tee "$OUT/kunit-py.log"
rc=${PIPESTATUS[0]}
exit "$rc"
