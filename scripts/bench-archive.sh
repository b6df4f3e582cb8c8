#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/bench-archive.sh NAME: keep the last make bench-cost run's raw
# data beside the text that quotes it, in Documentation/data/bench-NAME/:
#   SHAPE.log.gz, SHAPE.cost.gz  each boot's console log and plugin counts
#   args                         headline.py's arguments, relative
#   headline.txt                 headline.py's output for them
# scripts/host-tests.sh renders headline.txt again from the raw files and
# checks that Documentation/benchmarks.rst quotes it right.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

name=${1:?usage: bench-archive.sh NAME}
case $name in *[!a-z0-9.-]*) die "bench-archive.sh: NAME is [a-z0-9.-]" ;; esac
run=$OUT/bench-cost
[ -s "$run/headline.txt" ] || die "bench-archive.sh: no finished make bench-cost run in $run"
dst=$REPO/Documentation/data/bench-$name
rm -rf "$dst"
mkdir -p "$dst"
: >"$dst/args"
for log in "$run"/*.log; do
	shape=$(basename "$log" .log)
	[ -s "$run/$shape.cost" ] || die "bench-archive.sh: no $shape.cost"
	gzip -9 -n <"$log" >"$dst/$shape.log.gz"
	gzip -9 -n <"$run/$shape.cost" >"$dst/$shape.cost.gz"
	echo "$shape" >>"$dst/args"
done
python3 "$REPO/scripts/bench-archive-check.py" --render "$dst" >"$dst/headline.txt"
echo "$dst: $(wc -l <"$dst/args") boots"
