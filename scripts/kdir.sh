#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Prepared kernel trees that the module is built against (make M=), where
# Debian ships no headers package this machine can use.  Cached under
# $CACHE/kdir/; prints the directory.
#
#   kdir.sh debian72|debian73 amd64|rt-amd64
#       linux-source-7.2 (7.3) with the config of Debian's own image of that
#       flavour, KERNELRELEASE the image's (vermagic matches; Debian's 7.2
#       has no MODVERSIONS), modules_prepare, and the image's
#       Module.symvers.  Debian builds 7.2 with gcc 16 and Rust; gcc 12
#       here drops what needs them (Rust, some CC_HAS_* options), none of
#       which changes a structure the module touches.  Debian's 7.2 headers package
#       cannot serve: its tools are linked against a newer libc.
#   kdir.sh kunit 6.12|7.2
#       that source with x86_64_defconfig plus KUnit and fault injection:
#       the build lane compiles the KUnit suites against both kernels,
#       which Debian's configs do not enable.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kind=${1:?usage: kdir.sh debian72|debian73 FLAVOUR | kunit SERIES}
arg=${2:?usage: kdir.sh debian72|debian73 FLAVOUR | kunit SERIES}
case $kind in
debian72 | debian73)
	series=${kind#debian}
	series=${series:0:1}.${series:1}
	img=$CACHE/stock${kind#debian}-${arg%amd64}$(k7_abi "$series")
	[ -s "$img/config" ] || die "no Debian $series $arg image: run scripts/deps.sh"
	release=$(cat "$img/release")
	export KSRC_SERIES=$series
	bdir=$CACHE/kdir/$release-$(ksrc_version)
	;;
kunit)
	export KSRC_SERIES=$arg
	bdir=$CACHE/kdir/kunit-$(ksrc_version)
	release=""
	;;
*) die "kdir.sh: debian72, debian73 or kunit" ;;
esac
if [ -e "$bdir/.prepared" ]; then
	echo "$bdir"
	exit 0
fi
mkdir -p "$(dirname "$bdir")"
exec 9>"$bdir.lock"
flock 9
if [ -e "$bdir/.prepared" ]; then
	echo "$bdir"
	exit 0
fi
src=$(ksrc)
rm -rf "$bdir" && mkdir -p "$bdir"
log=$bdir/prepare.log
mk()
{
	make -C "$src" O="$bdir" ${release:+KERNELRELEASE="$release"} "$@"
}
{
	case $kind in
	debian7*)
		cp "$img/config" "$bdir/.config"
		"$src/scripts/config" --file "$bdir/.config" \
			--set-str SYSTEM_TRUSTED_KEYS "" --set-str SYSTEM_REVOCATION_KEYS "" \
			--set-str LOCALVERSION ""
		;;
	kunit)
		mk x86_64_defconfig
		"$src/scripts/config" --file "$bdir/.config" -e KUNIT -e FAULT_INJECTION \
			-e FAULT_INJECTION_DEBUG_FS -e FAILSLAB -e FAIL_PAGE_ALLOC -e DEBUG_FS
		;;
	esac
	mk olddefconfig
	mk -j"$JOBS" modules_prepare
} >"$log" 2>&1 || { tail -n 40 "$log" >&2; die "$kind $arg tree: modules_prepare failed"; }
if [ "$kind" != kunit ]; then
	cp "$img/Module.symvers" "$bdir/Module.symvers"
	grep -qx "$release" "$bdir/include/config/kernel.release" ||
		die "$kind tree: kernel.release is not $release"
else
	grep -q '^CONFIG_KUNIT=y' "$bdir/.config" || die "kunit tree: CONFIG_KUNIT did not survive"
fi
touch "$bdir/.prepared"
echo "$bdir"
