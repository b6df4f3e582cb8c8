#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# QEMU from bookworm-backports (9.0 or later), for make rss's shapes past
# 255 possible CPUs: QEMU 7.2 has no x2APIC under TCG, and its pc machine
# stops at 255 CPUs.  Fetched with apt-get download through a sources list
# of its own and unpacked into $CACHE/qemu-bpo: never installed.  Built
# for bookworm, so bookworm's QEMU 7.2 libraries serve it.  Prints the
# qemu-system-x86_64 path; its firmware directories are beside it
# (vm.sh passes them with -L).  The tree counts once "ok" exists: it is
# unpacked beside, checked, then moved into place.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dir=$CACHE/qemu-bpo
bin=$dir/root/usr/bin/qemu-system-x86_64
mkdir -p "$CACHE"
exec 8>"$dir.lock"
flock 8
if [ -e "$dir/ok" ]; then
	echo "$bin"
	exit 0
fi
rm -rf "$dir"
mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/deb"
kr=/usr/share/keyrings/debian-archive-keyring.gpg
echo "deb [signed-by=$kr] http://deb.debian.org/debian bookworm-backports main" \
	>"$dir/apt/sources.list"
bpo()
{
	local tool=$1
	shift
	"$tool" -o Dir::Etc::SourceList="$dir/apt/sources.list" \
		-o Dir::Etc::SourceParts=/nonexistent -o Dir::State::Lists="$dir/apt/lists" \
		-o Dir::State::status=/dev/null -o Dir::Cache="$dir/apt/cache" \
		-o APT::Architecture=amd64 -o Acquire::Languages=none \
		-o APT::Sandbox::User=root "$@"
}
bpo apt-get update -qq || die "qemu-bpo: apt-get update of bookworm-backports failed"
ver=$(bpo apt-cache show qemu-system-x86 2>/dev/null | sed -n 's/^Version: //p' |
	sort -V | tail -n 1) || true
[ -n "$ver" ] || die "qemu-bpo: no qemu-system-x86 in bookworm-backports"
case $ver in
*:[0-8].*) die "qemu-bpo: bookworm-backports has QEMU $ver, x2APIC under TCG needs 9.0" ;;
esac
# QEMU 10 wants a newer SeaBIOS than bookworm's, also in backports.
sver=$(bpo apt-cache show seabios 2>/dev/null | sed -n 's/^Version: //p' |
	sort -V | tail -n 1) || true
[ -n "$sver" ] || die "qemu-bpo: no seabios in bookworm-backports"
(cd "$dir/deb" && bpo apt-get download -qq "qemu-system-x86=$ver" "qemu-system-common=$ver" \
	"qemu-system-data=$ver" "seabios=$sver" >/dev/null) ||
	die "qemu-bpo: cannot fetch QEMU $ver"
for deb in "$dir"/deb/*.deb; do
	dpkg-deb -x "$deb" "$dir/root.new"
done
"$dir/root.new/usr/bin/qemu-system-x86_64" --version >/dev/null ||
	die "qemu-bpo: QEMU $ver does not run here (ldd $dir/root.new/usr/bin/qemu-system-x86_64)"
[ -s "$dir/root.new/usr/share/seabios/bios-256k.bin" ] || die "qemu-bpo: no SeaBIOS in the tree"
mv "$dir/root.new" "$dir/root"
rm -rf "$dir/deb" "$dir/apt"
touch "$dir/ok"
echo "$bin"
