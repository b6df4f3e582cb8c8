#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Self-check of scripts/rss_table.py on the fake console logs beside this
# script (prefixes, CRLF, a bench printed 3 times, a missing log, a bench
# without mainline, a shape without mainline, a bad value line), then
# the --path-length table of icount runs, then --compare of two runs.
# Prints the table; exits non-zero if it differs from expected.md.
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
trap 'rm -f "$out" "$out.json" "$out.a.json" "$out.b.json"' EXIT
cd "$here" || exit 1
python3 ../../../scripts/rss_table.py --json "$out.json" \
	control:4of4:1=control-4of4-1.log control:4of4:2=control-4of4-2.log \
	mainline:4of4:1=mainline-4of4-1.log lazy:4of4:1=lazy-4of4-1.log \
	mainline:4of4:2=mainline-4of4-2.log lazy:4of4:2=lazy-4of4-2.log \
	lazy:4of64:1=lazy-4of64-1.log >"$out" 2>/dev/null || exit 1
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$out.json" || exit 1
cat "$out"
diff -u expected.md "$out" || exit 1
# --path-length (icount logs): cost ratios, insns/op, and the spread of
# mainline booted again (here the other mainline log, so 5 %; boot by
# boot, fork_exec_1 moves 10 %).
python3 ../../../scripts/rss_table.py --path-length \
	mainline:4of4:1=mainline-4of4-1.log lazy:4of4:1=lazy-4of4-1.log \
	mainline-2nd:4of4:1=mainline-4of4-2.log mainline:4of4:2=mainline-4of4-2.log \
	lazy:4of4:2=lazy-4of4-2.log mainline-2nd:4of4:2=mainline-4of4-1.log \
	>"$out" 2>/dev/null || exit 1
cat "$out"
diff -u expected-path.md "$out" || exit 1
# --compare: the first logs as run A, the second as run B.  mainline's
# own fork_exec_1 moves 10 %, lazy's ratio 20 %; the bytes row is not
# compared, thread_once is in run A only; exit status 1.  A run against
# itself: 0.  Against a table that is not --path-length: 2.
python3 ../../../scripts/rss_table.py --path-length --json "$out.a.json" \
	mainline:4of4:1=mainline-4of4-1.log lazy:4of4:1=lazy-4of4-1.log >/dev/null 2>&1 &&
	python3 ../../../scripts/rss_table.py --path-length --json "$out.b.json" \
		mainline:4of4:1=mainline-4of4-2.log lazy:4of4:1=lazy-4of4-2.log >/dev/null 2>&1 ||
	exit 1
python3 ../../../scripts/rss_table.py --compare "$out.a.json" "$out.b.json" >"$out"
[ $? -eq 1 ] || exit 1
python3 ../../../scripts/rss_table.py --compare "$out.a.json" "$out.a.json" >/dev/null || exit 1
python3 ../../../scripts/rss_table.py --compare "$out.a.json" "$out.json" >/dev/null 2>&1
[ $? -eq 2 ] || exit 1
cat "$out"
diff -u expected-compare.md "$out" && echo "rss_table: 3 passed, 0 failed"
