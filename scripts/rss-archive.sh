#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/rss-archive.sh NAME: keep the last `make rss` run's raw data
# beside the text that quotes it, in Documentation/data/rss-NAME/:
#   about      the run's first line (kernel, QEMU, instrument, rounds)
#   args       rss_table.py's run arguments, files relative to the run
#   table.md   rss_table.py --path-length's output for them
#   raw.txt.gz every file args names (guest logs, plugin counts, cost.py
#              lines), each after a line "=== PN-ARCHIVE FILE"
# scripts/host-tests.sh renders table.md again from raw.txt.gz and
# checks that Documentation/rss_stat.rst quotes it right.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

name=${1:?usage: rss-archive.sh NAME}
case $name in *[!a-z0-9.-]*) die "rss-archive.sh: NAME is [a-z0-9.-]" ;; esac
run=$OUT/rss
[ -s "$run/table.args" ] && [ -s "$run/table.md" ] || die "rss-archive.sh: no finished make rss run in $run"
dst=$REPO/Documentation/data/rss-$name
rm -rf "$dst"
mkdir -p "$dst"
head -n 1 "$run/table.md" >"$dst/about"
cp "$run/table.args" "$dst/args"
files=()
while read -r a; do
	IFS=, read -ra fs <<<"${a#*=}"
	files+=("${fs[@]}")
	# the plugin's own counts, to price again with another table
	case ${fs[1]:-} in *.costs) files+=("${fs[1]%.costs}.cost") ;; esac
done <"$dst/args"
for f in "${files[@]}"; do
	[ -s "$run/$f" ] || die "rss-archive.sh: $f is missing or empty"
	echo "=== PN-ARCHIVE $f"
	cat "$run/$f"
done | gzip -9 -n >"$dst/raw.txt.gz"
# rss_table.py from the archived files, as the test will.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$REPO/scripts/rss-archive-check.py" --render "$dst" "$tmp" >"$dst/table.md"
echo "$dst: $(wc -l <"$dst/args") runs, $(du -k "$dst/raw.txt.gz" | cut -f1) KiB raw"
