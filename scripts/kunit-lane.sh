#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kunit.py lane: overlay this repository into a scratch copy of the kernel
# tree (Kconfig `source` + Makefile `obj-` line under drivers/misc, the way
# WireGuard's compat tree did) and run
#   tools/testing/kunit/kunit.py run --arch=x86_64 \
#       --kunitconfig=<repo>/kunit/.kunitconfig --qemu_args='-smp 4'
# The scratch tree and the build directory are cached under $CACHE, keyed
# by source version and .kunitconfig, so a rerun only rebuilds the module.
# Output: kunit.py's own, saved to .out/kunit-py.log.
#
#   kunit-lane.sh --build   only build the kernel (kunit.py build), for
#                           make check's background builder
set -euo pipefail
. "$(dirname "$0")/lib.sh"

build_only=0
[ "${1:-}" = --build ] && build_only=1
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
if [ "$build_only" = 1 ]; then
	exec python3 tools/testing/kunit/kunit.py build --arch=x86_64 \
		--kunitconfig="$REPO/kunit/.kunitconfig" --build_dir="$bdir" --jobs="$JOBS"
fi
set +e
python3 tools/testing/kunit/kunit.py run --arch=x86_64 \
	--kunitconfig="$REPO/kunit/.kunitconfig" --qemu_args='-smp 4' \
	--build_dir="$bdir" --jobs="$JOBS" --timeout=900 2>&1 | tee "$OUT/kunit-py.log"
rc=${PIPESTATUS[0]}
exit "$rc"
