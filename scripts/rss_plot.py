#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Plot of `make rss`: fork+exit, fork+exit of a 4-thread child and
fork+exec path length against the number of possible CPUs, one line per
mode.

Usage: rss_plot.py TABLE_JSON OUT_PNG

TABLE_JSON is what scripts/rss_table.py --json wrote.  A shape is named
"<online>of<possible>"; a point is the median over the mode's runs of
10^9 / (ops/s), the instructions per child under QEMU's icount clock
(shift=0).  Modes without a value at some shape skip that point.
Exit status: 0 when the PNG was written, 1 if there was nothing to plot.
"""
import json
import re
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

BENCHES = (("fork_exit_1", "fork+exit, 1 forker"),
           ("fork_exit_1_4t", "fork+exit, child of 4 threads"),
           ("fork_exec_1", "fork+exec, 1 forker"))


def median(v):
    v = sorted(v)
    n = len(v)
    return (v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2) if n else None


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        data = json.load(f)
    icount = data.get("path_length", False)
    series = {}   # (bench, mode) -> [(possible, insns)]
    for t in data["tables"]:
        m = re.match(r"^(\d+)of(\d+)$", t["shape"])
        if not m:
            continue
        possible = int(m.group(2))
        for bench, _ in BENCHES:
            for mode in t["modes"]:
                c = t["cells"].get(bench, {}).get(mode)
                med = median(c["values"]) if c else None
                if med:
                    series.setdefault((bench, mode), []).append((possible, 1e9 / med))
    if not series:
        print("rss_plot: no fork_exit_1/fork_exec_1 values", file=sys.stderr)
        return 1
    fig, axes = plt.subplots(1, len(BENCHES), figsize=(15, 4.2))
    for ax, (bench, title) in zip(axes, BENCHES):
        for (b, mode), pts in sorted(series.items()):
            if b != bench:
                continue
            pts.sort()
            ax.plot([p for p, _ in pts], [v / 1000 for _, v in pts], marker="o",
                    label=mode)
        ax.set_xscale("log", base=2)
        xs = sorted({p for (b, _), pts in series.items() if b == bench for p, _ in pts})
        if xs:
            ax.set_xticks(xs)
            ax.set_xticklabels([str(x) for x in xs])
        ax.set_xlabel("possible CPUs (4 online)")
        ax.set_ylabel("thousand instructions per child" if icount
                      else "microseconds per child (wall clock)")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("rss_stat modes: fork cost against possible CPUs (%s)"
                 % ("QEMU -icount, path length" if icount else "KVM, wall clock"))
    fig.tight_layout()
    fig.savefig(argv[1], dpi=100)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
