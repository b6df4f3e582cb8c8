#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Make a small git repository for working on the rss_stat series: the
# files rss/patches/ touch, from the pristine linux-source-6.12, committed
# as a base, then the series applied with `git am`.  Edit and commit
# there, then regenerate the series:
#   git -C DIR format-patch -o <repo>/rss/patches base
# Usage: scripts/rss-devtree.sh DIR (default $CACHE/rss-dev)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dir=${1:-$CACHE/rss-dev}
src=$(ksrc)
[ ! -e "$dir" ] || die "$dir exists"
mkdir -p "$dir"
cd "$dir"
sed -n 's|^+++ b/||p' "$REPO"/rss/patches/*.patch | sort -u | while read -r f; do
	[ -e "$src/$f" ] || continue
	mkdir -p "$(dirname "$f")"
	cp "$src/$f" "$f"
done
git init -q
git add -A
git -c user.name=base -c user.email=base@localhost commit -qm \
	"Linux $(ksrc_version) (Debian linux-source-6.12): files the series touches"
git tag base
git -c user.name="pcpu_next developers" -c user.email=pcpu-next@localhost \
	am -q "$REPO"/rss/patches/*.patch
git log --oneline
