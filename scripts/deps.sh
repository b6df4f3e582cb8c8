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

# One run at a time (apt's locks, the shared download directories).
mkdir -p "$CACHE"
exec 7>"$CACHE/deps.lock"
flock 7

need_pkgs="build-essential qemu-system-x86 qemu-system-data busybox-static \
cpio kmod xz-utils bc flex bison libelf-dev libssl-dev sparse dkms \
python3 python3-matplotlib rsync linux-source-6.12 spin gcc-aarch64-linux-gnu \
libglib2.0-dev pkg-config curl"

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
echo "deps: 6.12 ok (stock kernel $abi, source $(dpkg-query -W -f='${Version}' linux-source-6.12))"

# Linux 7.2 and 7.3 from Debian's archive beyond bookworm.  Per series,
# the newest amd64 image that any suite offers (sid, trixie-backports)
# is picked, then linux-source of that very package version, so that
# the test kernels, the prepared tree the module is built against and
# the stock image are one source.  Fetched with apt-get download through
# $APT7's own sources list and unpacked into the cache: never installed.
mkdir -p "$APT7/lists/partial" "$APT7/cache/archives/partial" "$CACHE/debs"
kr=/usr/share/keyrings/debian-archive-keyring.gpg
cat >"$APT7/sources.list.new" <<LIST
deb [signed-by=$kr] http://deb.debian.org/debian sid main
deb [signed-by=$kr] http://deb.debian.org/debian trixie-backports main
LIST
# The lists are refreshed once a day (apt may store them compressed:
# *_Packages.lz4).  Without the archive, a complete earlier pick is used.
fresh=$(find "$APT7/lists" -name '*_Packages*' -mmin -1440 2>/dev/null | head -n 1)
if ! cmp -s "$APT7/sources.list.new" "$APT7/sources.list" || [ -z "$fresh" ]; then
	mv "$APT7/sources.list.new" "$APT7/sources.list"
	apt7 apt-get update -qq || echo "deps: apt-get update of the 7.x suites failed" >&2
fi
rm -f "$APT7/sources.list.new"
# fetch7 SERIES FLAVOUR...: the newest amd64 image of a SERIES ABI that
# any suite offers, linux-source-SERIES of that very package version,
# and Debian's images of the FLAVOURs (amd64; rt-amd64 where it
# exists): vmlinuz, its config, and Module.symvers from the headers
# package (a module is built against a tree prepared with that config).
# Debian's 7.x headers package cannot serve: its tools need a newer libc.
fetch7()
{
	local series=$1 s=${1/./} abi ver src flavour dir deb re
	shift
	re="s/^linux-binary-unsigned-\(${series//./\\.}\.[0-9]*+deb[0-9]*\)-amd64$/\1/p"
	abi=$(apt7 apt-cache pkgnames "linux-binary-unsigned-$series." | sed -n "$re" |
		sort -V | tail -n 1)
	ver=""
	[ -z "$abi" ] || ver=$(apt7 apt-cache show "linux-binary-unsigned-$abi-amd64" |
		sed -n 's/^Version: //p' | sort -V | tail -n 1)
	if [ -z "$ver" ]; then
		abi=$(cat "$CACHE/k$s-abi" 2>/dev/null) || true
		ver=$(cat "$CACHE/k$s-version" 2>/dev/null) || true
		[ -n "$abi" ] && [ -s "$CACHE/debs/linux-source-${series}_${ver}_all.deb" ] &&
			[ -s "$CACHE/stock$s-$abi/version" ] ||
			die "no linux-binary-unsigned-$series.*-amd64 in sid or trixie-backports, none cached"
		echo "deps: $series not in the archive now: using the cached $ver"
	fi
	src=$CACHE/debs/linux-source-${series}_${ver}_all.deb
	if [ ! -s "$src" ]; then
		echo "deps: fetching linux-source-$series $ver"
		(cd "$CACHE/debs" && apt7 apt-get download -qq "linux-source-$series=$ver" >/dev/null) ||
			die "linux-source-$series $ver not in the archive"
	fi
	for flavour in "$@"; do
		dir=$CACHE/stock$s-${flavour%amd64}$abi
		# "version" is written last: the image of this very source is complete.
		[ "$(cat "$dir/version" 2>/dev/null)" = "$ver" ] && continue
		if ! apt7 apt-cache show "linux-binary-unsigned-$abi-$flavour" >/dev/null 2>&1; then
			[ "$flavour" = amd64 ] && die "no Debian $series amd64 image"
			continue
		fi
		echo "deps: fetching Debian's $abi-$flavour image"
		rm -rf "$dir" && mkdir -p "$dir/deb"
		(cd "$dir/deb" && apt7 apt-get download -qq "linux-binary-unsigned-$abi-$flavour=$ver" \
			"linux-base-$abi-$flavour=$ver" "linux-headers-$abi-$flavour=$ver" >/dev/null) ||
			die "cannot fetch the $abi-$flavour image"
		for deb in "$dir"/deb/*.deb; do
			dpkg-deb -x "$deb" "$dir/root"
		done
		cp "$dir/root/usr/lib/modules/$abi-$flavour/vmlinuz.unsigned" "$dir/vmlinuz"
		cp "$dir/root/usr/lib/modules/$abi-$flavour/config" "$dir/config"
		cp "$dir/root/usr/src/linux-headers-$abi-$flavour/Module.symvers" "$dir/Module.symvers"
		echo "$abi-$flavour" >"$dir/release"
		rm -rf "$dir/deb" "$dir/root"
		echo "$ver" >"$dir/version"
	done
	echo "$ver" >"$CACHE/k$s-version"
	echo "$abi" >"$CACHE/k$s-abi"
	KSRC_SERIES=$series ksrc >/dev/null
	echo "deps: ok ($series: source $ver, Debian image $abi)"
}

# 7.2: the test kernels, the rss series, the stock72 lanes.  7.3: the
# stock73 lane and the series' build check.
fetch7 7.2 amd64 rt-amd64
# 7.3 is not required: where the archive has none (and none is cached),
# the two lanes that need it skip (check.sh).
# (In the background, so that set -e holds inside: an if would lift it.)
(fetch7 7.3 amd64) &
if ! wait $!; then
	echo "deps: no Linux 7.3: the stock73 and rss73 lanes will skip" >&2
	rm -f "$CACHE/k73-version" "$CACHE/k73-abi"
fi
