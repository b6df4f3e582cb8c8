#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The committed raw data of make rss runs, and the text that quotes it.

rss-archive-check.py --render DIR TMP
    unpack DIR/raw.txt.gz into TMP, run rss_table.py --path-length on
    DIR/args, print its output (what DIR/table.md holds)
rss-archive-check.py FILE... DIR...
    for each DIR: render again and compare with DIR/table.md; then every
    table row a FILE (a document) quotes from a run ("    | ..." lines of
    a literal block after a line naming "data/rss-NAME", in the same
    section) must be a row of that run's table.md, digit for digit.  Prints one line per problem
    and the number of rows checked; exit 0 if no problem.
"""
import gzip
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def unpack(d, tmp):
    cur = None
    with gzip.open(os.path.join(d, "raw.txt.gz"), "rt", errors="replace") as f:
        for line in f:
            m = re.match(r"^=== PN-ARCHIVE (\S+)$", line.rstrip("\n"))
            if m:
                if cur:
                    cur.close()
                name = m.group(1)
                if "/" in name or name.startswith("."):
                    raise SystemExit("bad archived name %r" % name)
                cur = open(os.path.join(tmp, name), "w")
                continue
            if cur is None:
                raise SystemExit("%s: data before the first file" % d)
            cur.write(line)
    if cur:
        cur.close()


def render(d, tmp):
    """rss_table.py on the archived files; a .costs file is made again
    from its log and the plugin's .cost by cost.py and must match."""
    unpack(d, tmp)
    for name in sorted(os.listdir(tmp)):
        if not name.endswith(".costs"):
            continue
        base = os.path.join(tmp, name[:-len(".costs")])
        again = subprocess.run([sys.executable, os.path.join(HERE, "cost.py"),
                                base + ".log", base + ".cost"],
                               capture_output=True, text=True).stdout
        if again != open(base + ".costs").read():
            return "%s: not what cost.py makes of its log and .cost\n" % name
    args = []
    for a in open(os.path.join(d, "args")).read().split():
        spec, files = a.split("=", 1)
        args.append(spec + "=" + ",".join(os.path.join(tmp, x) for x in files.split(",")))
    out = subprocess.run([sys.executable, os.path.join(HERE, "rss_table.py"),
                          "--path-length"] + args, capture_output=True, text=True)
    return out.stdout


def main(argv):
    if len(argv) == 4 and argv[1] == "--render":
        sys.stdout.write(render(argv[2], argv[3]))
        return 0
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    docs = [a for a in argv[1:] if not os.path.isdir(a)]
    dirs = [a for a in argv[1:] if os.path.isdir(a)]
    bad = []
    tables = {}
    for d in dirs:
        name = os.path.basename(d.rstrip("/"))
        with tempfile.TemporaryDirectory() as tmp:
            again = render(d, tmp)
        kept = open(os.path.join(d, "table.md")).read()
        if again != kept:
            bad.append("%s: table.md is not what its raw data renders" % name)
        tables[name] = set(l.strip() for l in kept.splitlines() if l.startswith("| "))
    # Quoted rows: a literal block's "| " lines after a line naming a run.
    rows = 0
    for doc in docs:
        cur = None
        for line in open(doc).read().splitlines():
            if re.match(r"^([-=~])\1{2,}$", line):
                cur = None		# a new section quotes afresh
            m = re.search(r"data/(rss-[a-z0-9.-]*[a-z0-9])", line)
            if m:
                cur = m.group(1)
            if cur and line.startswith("    | "):
                rows += 1
                if cur not in tables:
                    bad.append("%s: quotes %s, which is not checked here" % (doc, cur))
                elif line.strip() not in tables[cur]:
                    bad.append("%s: row not in %s: %s" % (doc, cur, line.strip()[:80]))
    print("\n".join(bad + ["%d quoted rows, %d runs" % (rows, len(dirs))]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
