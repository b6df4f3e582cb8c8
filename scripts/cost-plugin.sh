#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build scripts/cost/pn_cost.c, the QEMU TCG plugin of make rss's cost
# model, for the QEMU of scripts/qemu-bpo.sh.  Debian's binary loads
# plugins but ships no qemu-plugin.h: the header comes from the same
# version's source, bookworm-backports' deb-src, fetched (checked
# against the Sources index by apt) through a sources list of its own.
# Only the upstream tarball is needed; the header is taken from it.
# glib's headers: libglib2.0-dev (scripts/deps.sh).  Cached per QEMU
# version and plugin source; prints the .so path.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

qemu=$(bash "$REPO/scripts/qemu-bpo.sh") || die "cost-plugin: no QEMU from bookworm-backports"
qver=$("$qemu" --version | sed -n '1s/.*version \([0-9.]*\).*/\1/p')
[ -n "$qver" ] || die "cost-plugin: cannot read $qemu --version"
src=$REPO/scripts/cost/pn_cost.c
dir=$CACHE/cost-plugin
so=$dir/pn_cost-$qver-$(key_of "$src").so
mkdir -p "$dir"
exec 8>"$dir.lock"
flock 8
if [ -s "$so" ]; then
	echo "$so"
	exit 0
fi
hdr=$dir/qemu-$qver/qemu-plugin.h
if [ ! -s "$hdr" ]; then
	a=$dir/apt
	rm -rf "$a"
	mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$a/src"
	kr=/usr/share/keyrings/debian-archive-keyring.gpg
	echo "deb-src [signed-by=$kr] http://deb.debian.org/debian bookworm-backports main" >"$a/sources.list"
	bpo()
	{
		"$@" -o Dir::Etc::SourceList="$a/sources.list" \
			-o Dir::Etc::SourceParts=/nonexistent -o Dir::State::Lists="$a/lists" \
			-o Dir::State::status=/dev/null -o Dir::Cache="$a/cache" \
			-o Acquire::Languages=none -o APT::Sandbox::User=root
	}
	bpo apt-get update -qq || die "cost-plugin: apt-get update (deb-src bookworm-backports) failed"
	# The orig tarball of the newest qemu source of this upstream version.
	line=$(bpo apt-get source --print-uris -qq qemu 2>/dev/null | grep "_$qver+ds.orig.tar" | head -n 1) ||
		true
	[ -n "$line" ] || die "cost-plugin: no qemu $qver source in bookworm-backports"
	url=$(echo "$line" | awk '{ gsub(/\x27/, "", $1); print $1 }')
	file=$(echo "$line" | awk '{ print $2 }')
	sum=$(echo "$line" | awk '{ print $4 }')
	case $sum in SHA256:*) ;; *) die "cost-plugin: no SHA256 for $file" ;; esac
	curl -fsSL -o "$a/src/$file" "$url" || die "cost-plugin: cannot fetch $url"
	echo "${sum#SHA256:}  $a/src/$file" | sha256sum -c --quiet - ||
		die "cost-plugin: $file does not match the Sources index"
	mkdir -p "$dir/qemu-$qver"
	tar -xJf "$a/src/$file" -O --wildcards "*/include/qemu/qemu-plugin.h" >"$hdr.new" &&
		[ -s "$hdr.new" ] || die "cost-plugin: no include/qemu/qemu-plugin.h in $file"
	mv "$hdr.new" "$hdr"
	rm -rf "$a"
fi
# shellcheck disable=SC2046 # pkg-config's flags are words
gcc -O2 -g -Wall -Wextra -Wno-unused-parameter -Werror -shared -fPIC \
	-I"$(dirname "$hdr")" $(pkg-config --cflags glib-2.0) -o "$so.new" "$src" ||
	die "cost-plugin: pn_cost.c does not build"
mv "$so.new" "$so"
echo "$so"
