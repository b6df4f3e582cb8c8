#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Make a small git repository for working on the rss_stat series: the
# files rss/patches/ touch, from the pristine linux-source-7.2 (ksrc),
# committed as a base (tag `base`), then the series applied with
# `git am`: 0001, the library (tag `lib`), and the rest.  Edit and commit
# there, then regenerate the patches after the library:
#   git -C DIR -c core.abbrev=12 format-patch --zero-commit \
#       --no-signature --stat=80 -n --start-number 2 -o <repo>/rss/patches lib
# 0001 is never edited there: scripts/rss-libpatch.sh writes it from
# this repository's files.  The cover letter (0000) is kept by hand.
# Usage: scripts/rss-devtree.sh DIR (default $CACHE/rss-dev)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dir=${1:-$CACHE/rss-dev}
src=$(ksrc)
ver=$(ksrc_version)
rss_series
[ ! -e "$dir" ] || die "$dir exists"
mkdir -p "$dir"
cd "$dir"
sed -n 's|^+++ b/||p' "${patches[@]}" | sort -u | while read -r f; do
	[ -e "$src/$f" ] || continue
	mkdir -p "$(dirname "$f")"
	cp "$src/$f" "$f"
done
git init -q
git add -A
git -c user.name=base -c user.email=base@localhost commit -qm \
	"Linux $ver (Debian linux-source-7.2): files the series touches"
git tag base
git -c user.name="pcpu_next developers" -c user.email=pcpu-next@localhost \
	am -q "${patches[0]}"
git tag lib
git -c user.name="pcpu_next developers" -c user.email=pcpu-next@localhost \
	am -q "${patches[@]:1}"
git log --oneline
