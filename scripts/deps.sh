#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install, from Debian packages, everything the pcpu_next test lanes need.
# Idempotent: a second run installs nothing new.  Versions are chosen at
# run time (the newest linux-source-6.12 and linux-headers-6.12.*+deb12-amd64
# the archive offers); nothing is pinned.
#
# The matching Debian kernel image is not installed into this machine's
# /boot (nothing here ever boots or loads it): its .deb is fetched and
# unpacked into the cache, where the stock QEMU lane picks up vmlinuz.
set -euo pipefail

. "$(dirname "$0")/lib.sh"

need_pkgs="build-essential qemu-system-x86 qemu-system-data busybox-static \
cpio kmod xz-utils bc flex bison libelf-dev libssl-dev sparse dkms \
python3 rsync linux-source-6.12 spin"

missing=""
for p in $need_pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done

export DEBIAN_FRONTEND=noninteractive
if [ -n "$missing" ] || [ ! -e "$CACHE/.apt-updated" ]; then
	apt-get update -qq
	mkdir -p "$CACHE" && touch "$CACHE/.apt-updated"
fi
if [ -n "$missing" ]; then
	echo "deps: installing$missing"
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# Newest Debian 6.12 kernel ABI that has both headers and an image.
abi=$(apt-cache pkgnames linux-headers-6.12. |
	sed -n 's/^linux-headers-\(6\.12\.[0-9]*+deb12\)-amd64$/\1/p' |
	sort -V | tail -n 1)
[ -n "$abi" ] || die "no linux-headers-6.12.*+deb12-amd64 in the archive"
# Debian's two x86-64 flavours the lanes boot: amd64 (stock) and rt-amd64
# (PREEMPT_RT, stock-rt): headers installed, image unpacked into the cache.
# The build lane also compiles against cloud-amd64, and must be refused by
# the newest 6.1 headers (bookworm's default kernel, below the minimum).
old=$(apt-cache pkgnames linux-headers-6.1. |
	sed -n 's/^\(linux-headers-6\.1\.[0-9]*-[0-9]*-amd64\)$/\1/p' | sort -V | tail -n 1)
for hdr in "linux-headers-$abi-cloud-amd64" $old; do
	if ! dpkg-query -W -f='${Status}' "$hdr" 2>/dev/null | grep -q 'install ok installed'; then
		echo "deps: installing $hdr"
		apt-get install -y -qq --no-install-recommends "$hdr" >/dev/null
	fi
done
for flavour in amd64 rt-amd64; do
	hdr="linux-headers-$abi-$flavour"
	if ! dpkg-query -W -f='${Status}' "$hdr" 2>/dev/null | grep -q 'install ok installed'; then
		echo "deps: installing $hdr"
		apt-get install -y -qq --no-install-recommends "$hdr" >/dev/null
	fi
	case $flavour in
	amd64) imgdir="$CACHE/stock-$abi" ;;
	*) imgdir="$CACHE/stock-${flavour%-amd64}-$abi" ;;
	esac
	if [ ! -s "$imgdir/vmlinuz" ]; then
		mkdir -p "$imgdir/deb"
		img=""
		for cand in "linux-image-$abi-$flavour-unsigned" "linux-image-$abi-$flavour"; do
			if (cd "$imgdir/deb" && apt-get download -qq "$cand" >/dev/null 2>&1); then
				img=$cand
				break
			fi
		done
		[ -n "$img" ] || die "no linux-image package for $abi-$flavour"
		rm -rf "$imgdir/root"
		dpkg-deb -x "$imgdir"/deb/*.deb "$imgdir/root"
		cp "$imgdir"/root/boot/vmlinuz-* "$imgdir/vmlinuz"
		rm -rf "$imgdir/deb" "$imgdir/root"
	fi
done
echo "$abi" > "$CACHE/stock-abi"
echo "deps: ok (stock kernel $abi, source $(dpkg-query -W -f='${Version}' linux-source-6.12))"
