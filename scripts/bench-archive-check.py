#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The committed make bench-cost runs against the text that quotes them.

Usage: bench-archive-check.py --render DIR
       bench-archive-check.py DOC... DIR...

--render prints headline.py's output for DIR's raw files (args names the
shapes; SHAPE.log.gz and SHAPE.cost.gz).  Otherwise each DIR
(Documentation/data/bench-NAME/) must render to its headline.txt, and
every line of a literal block that a DOC quotes after naming
data/bench-NAME (in the same section) must be a line of it.
"""
import gzip
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def render(d):
    with tempfile.TemporaryDirectory() as tmp:
        args = []
        for shape in open(os.path.join(d, "args")).read().split():
            for ext in ("log", "cost"):
                with gzip.open(os.path.join(d, "%s.%s.gz" % (shape, ext))) as f, \
                        open(os.path.join(tmp, "%s.%s" % (shape, ext)), "wb") as g:
                    g.write(f.read())
            args.append("%s=%s/%s.log,%s/%s.cost" % (shape, tmp, shape, tmp, shape))
        out = subprocess.run([sys.executable, os.path.join(HERE, "headline.py")] + args,
                             capture_output=True, text=True, check=True).stdout
    # the temporary paths are not part of the result
    return out


def quoted(doc, name):
    """Lines of literal blocks after data/bench-NAME, in that section."""
    lines, out, on = open(doc).read().splitlines(), [], False
    for i, l in enumerate(lines):
        if i + 1 < len(lines) and re.match(r"^[=~-]{3,}$", lines[i + 1]):
            on = False
        if "data/bench-" + name in l:
            on = True
        if on and l.startswith("    ") and l.strip():
            out.append(l.strip())
    return out


def main(argv):
    if len(argv) == 3 and argv[1] == "--render":
        sys.stdout.write(render(argv[2]))
        return 0
    docs = [a for a in argv[1:] if os.path.isfile(a)]
    dirs = [a for a in argv[1:] if os.path.isdir(a)]
    bad, n = 0, 0
    for d in dirs:
        name = os.path.basename(os.path.normpath(d))[len("bench-"):]
        want = open(os.path.join(d, "headline.txt")).read()
        got = render(d)
        if got != want:
            print("%s: headline.txt does not render again from the raw files" % d)
            bad += 1
        have = set(l.strip() for l in got.splitlines())
        for doc in docs:
            for q in quoted(doc, name):
                n += 1
                if q not in have:
                    print("%s: quotes a line not in bench-%s: %s" % (doc, name, q))
                    bad += 1
    print("%d quoted lines, %d runs, %d wrong" % (n, len(dirs), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
