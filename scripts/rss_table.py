#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tables of the rss_stat benchmarks: every mode against mainline.

Usage: rss_table.py [--path-length] [--json FILE] MODE:SHAPE:RUN=LOGFILE...

LOGFILE may be several files joined by commas, read as one: a guest log
and the lines scripts/cost.py made from its cost plugin's counts.  Rows
NAME.cycles, .insns, .llc, .xfer and .locked go to a second table per
shape (the other cost rows to --json only).

Each LOGFILE is a whole guest console log (scripts/vm.sh); the benchmarks
in it printed lines "rss-bench NAME VALUE UNIT" (UNIT "ops/s": higher is
better; "bytes", "pages", "insns", and the per-op "cycles" and
"misses" of a real machine's perf (rss/progs/rss_bench.sh): lower is better).  Lines may carry a console prefix
("[   12.3] ") or carriage returns; a line that names one benchmark twice
in one log counts as the median of its values.  A result line starts
its line, after at most the console prefix.

One markdown table per SHAPE (in first-seen order): a row per benchmark
(first-seen order), a column per MODE (command-line order).  A cell is
the ratio to mainline of that shape: for each run (log) of the mode,
value / median(mainline values) for ops/s and median(mainline values) /
value for bytes, so > 1.00 is better than mainline; the cell shows the
median of those per-run ratios and half their range ("0.97 ±0.02"), and
"(k/n)" when only k of the mode's n runs have the benchmark.  The
mainline column is mainline's own spread around its median.  No data (or
no mainline data) gives "n/a".  The last column is mainline's median
value itself.

--path-length: the logs come from QEMU's instruction-counted clock
(-icount shift=0: one nanosecond of guest time per instruction), so an
ops/s value v is a path length of 10^9 / v instructions per op.  Every
cell is then a cost ratio to mainline, < 1.00 is better: path length,
or bytes.  The last column is mainline's path length (insns/op) or
bytes.  A column named "mainline-2nd" (the mainline image booted again)
shows the instrument's own spread.  Two lines under each table give
its largest deviation: of its cells from 1.00, median plus half-range,
over the single-threaded path lengths (see solo()), then over every
row; and of each of its boots from the mainline boot of the same run
number (rss.sh: the same seed), with how many rows did not differ.

--json FILE writes every parsed number and every cell.
Exit status: 0 if any benchmark line was found, 1 if none, 2 on bad usage.

rss_table.py --compare A.json B.json: do two --path-length runs of the
same kernels agree?  For every path-length cell (ops/s and insns rows)
that both runs have, in the same unit: the relative difference of the
two cell medians (ratios to mainline), and in the mainline column that
of mainline's own medians, |a - b| / min(a, b).  Prints the cells over
2 %, then per shape the largest difference over the single-threaded
rows (see solo()) and over all, and what only one run has.
Exit status: 0 if every single-threaded cell agrees within 2 %, 1 if
not or if no cell is in both, 2 on bad usage or input.
"""
import json
import re
import sys

REF = "mainline"
AGAIN = "mainline-2nd"
PATH_LENGTH = False
UNITS = {"ops/s": True, "bytes": False, "pages": False,
         "insns": False, "cycles": False, "misses": False,
         "events": False}  # unit -> higher is better
# The cost plugin's rows (scripts/cost.py: NAME.SUFFIX), a table of their
# own; the rest stay in --json.
COST_SHOWN = ("cycles", "insns", "llc", "xfer", "locked")
COST_ALL = COST_SHOWN + ("l1", "l2", "upg")

# At the start of a line, after at most a console prefix: a comment
# that quotes a result ("# 2x: ...", rss_bench.sh) is not one.
LINE_RE = re.compile(
    r"^(?:\[[^\]]*\]\s*)?rss-bench\s+([A-Za-z0-9_.+-]+)\s+"
    r"([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s+"
    r"(ops/s|bytes|pages|insns|cycles|misses|events)(?=\s|$)")
ARG_RE = re.compile(r"^([^:=]+):([^:=]+):([^:=]+)=(.+)$")


def warn(msg):
    print("rss_table: " + msg, file=sys.stderr)


def median(values):
    v = sorted(values)
    n = len(v)
    if not n:
        return None
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def parse_log(paths):
    """Return ({bench: value}, {bench: unit}, [bench order]) of one run:
    a log, or several joined by commas (a log and its cost.py lines)."""
    values, units, order = {}, {}, []
    for path in paths.split(","):
        v, u, o = parse_one(path)
        for name in o:
            if name in values:
                warn("%s: %s again, ignored" % (path, name))
                continue
            values[name], units[name] = v[name], u[name]
            order.append(name)
    return values, units, order


def parse_one(path):
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except OSError as e:
        warn("%s: %s (no data from this run)" % (path, e.strerror))
        return {}, {}, []
    found, units, order = {}, {}, []
    for line in re.split(r"[\r\n]+", text):
        for m in LINE_RE.finditer(line):
            name, value, unit = m.group(1), float(m.group(2)), m.group(3)
            if name not in found:
                found[name] = []
                units[name] = unit
                order.append(name)
            elif units[name] != unit:
                warn("%s: %s in %s and in %s, ignoring the latter"
                     % (path, name, units[name], unit))
                continue
            found[name].append(value)
    values = {}
    for name, vals in found.items():
        if len(vals) > 1:
            warn("%s: %s printed %d times, using the median"
                 % (path, name, len(vals)))
        values[name] = median(vals)
    return values, units, order


def ratio(value, ref, higher_better):
    """Per-run ratio to the reference, > 1 better (a cost ratio, < 1
    better, with --path-length); None if undefined."""
    if value is None or ref is None:
        return None
    if PATH_LENGTH:
        higher_better = not higher_better
    if higher_better:
        return value / ref if ref > 0 else None
    return ref / value if value > 0 and ref > 0 else None


def fmt_value(v, unit):
    if v is None:
        return "n/a"
    if PATH_LENGTH and unit == "ops/s":
        if v <= 0:
            return "n/a"
        return "%.0f insns/op" % (1e9 / v)
    if abs(v) >= 100:
        return "%.0f %s" % (v, unit)
    return "%.3g %s" % (v, unit)


def build(runs):
    """Group the runs by shape and compute every cell."""
    shapes, modes = [], []
    for r in runs:
        if r["shape"] not in shapes:
            shapes.append(r["shape"])
        if r["mode"] not in modes:
            modes.append(r["mode"])
    tables = []
    for shape in shapes:
        sruns = [r for r in runs if r["shape"] == shape]
        smodes = [m for m in modes if any(r["mode"] == m for r in sruns)]
        benches, units = [], {}
        for r in sruns:
            for b in r["order"]:
                if b not in units:
                    benches.append(b)
                    units[b] = r["units"][b]
                elif units[b] != r["units"][b]:
                    warn("shape %s: %s is %s in %s but %s before, ignored there"
                         % (shape, b, r["units"][b], r["log"], units[b]))
        nruns = {m: sum(1 for r in sruns if r["mode"] == m) for m in smodes}

        def values(mode, bench):
            return [r["values"][bench] for r in sruns
                    if r["mode"] == mode and bench in r["values"]
                    and r["units"][bench] == units[bench]]

        cells, refs = {}, {}
        for b in benches:
            higher = UNITS[units[b]]
            ref = median(values(REF, b))
            refs[b] = ref
            cells[b] = {}
            for m in smodes:
                vals = values(m, b)
                rats = [x for x in (ratio(v, ref, higher) for v in vals)
                        if x is not None]
                if ref is not None and len(rats) < len(vals):
                    warn("shape %s, %s, %s: %d value(s) <= 0 left out"
                         % (shape, m, b, len(vals) - len(rats)))
                cell = {"values": vals, "ratios": rats, "runs": nruns[m],
                        "median": median(rats),
                        "half_range": (max(rats) - min(rats)) / 2 if rats else None}
                cells[b][m] = cell
        # The second mainline against the first, run by run: under
        # rss.sh's icount both boots of a round have the same seed, so
        # this is the instrument's own spread, not the guest's.
        paired = {}
        for b in benches:
            by_run = {}
            for r in sruns:
                if (r["mode"] in (REF, AGAIN) and b in r["values"]
                        and r["units"][b] == units[b]):
                    by_run.setdefault(r["run"], {})[r["mode"]] = r["values"][b]
            d = [0.0 if v[AGAIN] == v[REF] else
                 abs(v[AGAIN] - v[REF]) / min(v[AGAIN], v[REF])
                 for v in by_run.values()
                 if len(v) == 2 and (v[AGAIN] == v[REF] or min(v[AGAIN], v[REF]) > 0)]
            if d:
                paired[b] = max(d)
        tables.append({"shape": shape, "modes": smodes, "runs": nruns,
                       "benches": benches, "units": units, "cells": cells,
                       "mainline_median": refs, "paired_spread": paired})
    return tables


def table_row(t, b):
    """One markdown row: bench, a cell per mode, mainline's own value."""
    row = [b]
    for m in t["modes"]:
        c = t["cells"][b][m]
        if c["median"] is None:
            row.append("n/a")
            continue
        s = "%.2f ±%.2f" % (c["median"], c["half_range"])
        if len(c["ratios"]) < c["runs"]:
            s += " (%d/%d)" % (len(c["ratios"]), c["runs"])
        row.append(s)
    row.append(fmt_value(t["mainline_median"][b], t["units"][b]))
    return "| " + " | ".join(row) + " |"


def cost_row(bench):
    """NAME.SUFFIX of scripts/cost.py: (NAME, SUFFIX), else None."""
    name, dot, suffix = bench.rpartition(".")
    return (name, suffix) if dot and suffix in COST_ALL else None


def render_cost(t):
    """The cost plugin's rows: modeled cycles, retired instructions and
    events per op, as ratios to mainline (< 1.00 is cheaper)."""
    rows = [b for b in t["benches"] if cost_row(b) and cost_row(b)[1] in COST_SHOWN]
    if not rows:
        return []
    if any(t["units"][b] == "events" for b in rows):
        what = ("modeled cost per op (scripts/cost.py: cycles, retired"
                " instructions, LLC misses, line transfers, locked operations)")
    else:
        what = "per op under perf"
    better = "< 1.00 is cheaper" if PATH_LENGTH else "> 1.00 is cheaper"
    out = ["### %s: %s, relative to %s, %s" % (t["shape"], what, REF, better), "",
           "| bench | " + " | ".join(t["modes"]) + " | %s median |" % REF,
           "|---|" + "---:|" * len(t["modes"]) + "---:|"]
    out += [table_row(t, b) for b in rows]
    out.append("")
    return out


def render(t):
    out = []
    runs = ", ".join("%s %d" % (m, t["runs"][m]) for m in t["modes"])
    if PATH_LENGTH:
        out.append("### %s: cost (path length, bytes) relative to %s, < 1.00 is"
                   " better (runs per mode: %s)" % (t["shape"], REF, runs))
    else:
        out.append("### %s: ratio to %s, > 1.00 is better (runs per mode: %s)"
                   % (t["shape"], REF, runs))
    out.append("")
    if REF not in t["modes"]:
        out.append("(no %s runs for this shape: every ratio is n/a)" % REF)
        out.append("")
    out.append("| bench | " + " | ".join(t["modes"]) + " | %s median |" % REF)
    out.append("|---|" + "---:|" * len(t["modes"]) + "---:|")
    out += [table_row(t, b) for b in t["benches"] if not cost_row(b)]
    if not t["benches"]:
        out.append("| (no rss-bench lines) |" + " |" * (len(t["modes"]) + 1))
    if AGAIN in t["modes"]:
        worst = {}
        for b in t["benches"]:
            c = t["cells"][b][AGAIN]
            if c["median"] is None:
                continue
            d = abs(c["median"] - 1) + c["half_range"]
            for k in ("solo", "all") if solo(b) else ("all",):
                if k not in worst or d > worst[k][0]:
                    worst[k] = (d, b)
        if worst:
            out.append("")
            parts = ["%s at most %.1f %% (%s)" % (what, 100 * worst[k][0], worst[k][1])
                     for k, what in (("solo", "single-threaded path lengths"),
                                     ("all", "every row")) if k in worst]
            out.append("spread of %s's cells (its rounds against %s's median): %s"
                       % (AGAIN, REF, "; ".join(parts)))
    paired = t.get("paired_spread", {})
    if paired:
        b = max(paired, key=lambda k: paired[k])
        out.append("instrument spread (%s against %s, boot by boot of the same"
                   " round): at most %.1f %% (%s), %d of %d rows identical"
                   % (AGAIN, REF, 100 * paired[b], b,
                      sum(1 for v in paired.values() if v == 0), len(paired)))
    if PATH_LENGTH:
        m = model(t)
        if m:
            out.append(m)
    out.append("")
    out += render_cost(t)
    return "\n".join(out)


GROWTH_ROWS = ("fork_exit_1", "fork_exec_1", "fork_exit_1_4t", "spawn_exec_1",
               "thread_once")


def growth(tables):
    """--path-length: per mode, how a fork row's cost grows from the
    shape with the fewest possible CPUs to each shape with the same
    online CPUs and more possible: median path length (insns/op) and,
    where the cost plugin ran, median modeled cycles per op."""
    shapes = []
    for t in tables:
        m = re.match(r"^(\d+)of(\d+)$", t["shape"])
        if m:
            shapes.append((int(m.group(1)), int(m.group(2)), t))
    out = []
    for online in sorted(set(s[0] for s in shapes)):
        same = sorted((s for s in shapes if s[0] == online), key=lambda s: s[1])
        if len(same) < 2:
            continue
        base = same[0][2]
        modes = [m for m in base["modes"] if all(m in s[2]["modes"] for s in same)]
        for _, _, t in same[1:]:
            out.append("### growth from %s to %s: median cost per op, %% change"
                       % (base["shape"], t["shape"]))
            out.append("")
            out.append("| row | " + " | ".join(modes) + " |")
            out.append("|---|" + "---:|" * len(modes))
            pct, per = [], []
            dcpu = t_possible(t) - t_possible(base)
            for row in GROWTH_ROWS:
                for b, unit, punit in ((row, "insns", "path insns/CPU"),
                                       (row + ".insns", None, "retired insns/CPU"),
                                       (row + ".cycles", "cycles", "cycles/CPU")):
                    if b not in base["cells"] or b not in t["cells"]:
                        continue
                    pc, pp = [], []
                    for m in modes:
                        a = median(base["cells"][b][m]["values"])
                        z = median(t["cells"][b][m]["values"])
                        if not a or not z:
                            pc.append("n/a")
                            pp.append("n/a")
                            continue
                        if base["units"][b] == "ops/s":
                            a, z = 1e9 / a, 1e9 / z
                        pc.append("%+.1f %%" % (100 * (z - a) / a))
                        pp.append("%.0f" % ((z - a) / dcpu))
                    if unit:
                        pct.append("| %s (%s) | %s |" % (row, unit, " | ".join(pc)))
                    per.append("| %s (%s) | %s |" % (row, punit, " | ".join(pp)))
            out += pct
            out.append("")
            if per:
                out.append("### growth from %s to %s: per added possible CPU"
                           % (base["shape"], t["shape"]))
                out.append("")
                out.append("| row | " + " | ".join(modes) + " |")
                out.append("|---|" + "---:|" * len(modes))
                out += per
                out.append("")
    return "\n".join(out)


def t_possible(t):
    return int(re.match(r"^\d+of(\d+)$", t["shape"]).group(1))


def solo(bench):
    """A single-threaded path length: one process or thread does the work
    alone, so under -icount it repeats.  The other rows interleave threads
    (their spinning counts), time a lock with the whole machine's clock
    (hold_*), or read memory and drift, not instructions."""
    return bench.endswith("_1") or bench in ("thread_once", "oom_scan_1000")


def mva(n_max, demands, think):
    """Exact mean-value analysis of a closed network: n_max customers, one
    queueing center per demand (a lock held that long per op), and a
    delay center of the rest (think).  Returns [X(1)..X(n_max)], ops per
    unit of time."""
    q = [0.0] * len(demands)
    xs = []
    for n in range(1, n_max + 1):
        r = [d * (1 + qi) for d, qi in zip(demands, q)]
        x = n / (sum(r) + think)
        q = [x * ri for ri in r]
        xs.append(x)
    return xs


MODEL_N = (4, 24, 64, 192, 256, 1024)


def model(t):
    """The contention model of one shape, from the medians of its cells.
    Per child of fork+exit and of fork+exec: the path length T (10^9 /
    ops/s of fork_*_1) and the hold times of pcpu_alloc_mutex and of
    pcpu_lock (hold_*): pcpu_lock's demand is every hold of it, the
    allocator's (inside the mutex section) and free_percpu()'s, one
    spinlock.  N forkers on N CPUs, each lock a queueing center, the
    rest of T a delay: N_sat = T / the larger demand, and X(N) by
    mean-value analysis, as a ratio to the unpatched control's X(N)
    (mainline's where the shape has no control), for N up to the
    shape's possible CPUs.  Not seen: the series' own locks (pn_cache
    depot locks of the cache mode), pcpu_balance_workfn(), every other
    lock of fork and exit, cache-line transfer of the locks, spinning,
    memory bandwidth.  So a mode without these two locks scales
    linearly here: an upper bound, not a prediction."""
    out = []
    possible = None
    m = re.match(r"^\d+of(\d+)$", t["shape"])
    if m:
        possible = int(m.group(1))
    ns = [n for n in MODEL_N if possible is None or n <= possible]
    if possible is not None and possible not in ns:
        ns.append(possible)

    def med(mode, bench):
        if bench not in t["cells"] or mode not in t["cells"][bench]:
            return None
        return median(t["cells"][bench][mode]["values"])

    base = "control" if "control" in t["modes"] else REF
    for op in ("exit", "exec"):
        rows, xref = [], None
        for mode in t["modes"]:
            rate = med(mode, "fork_%s_1" % op)
            hm = med(mode, "hold_mutex_fork_%s" % op)
            hla = med(mode, "hold_alloc_lock_fork_%s" % op)
            hlf = med(mode, "hold_free_lock_fork_%s" % op)
            if not rate or hm is None or hlf is None:
                continue
            hl = max(hlf, 0.0) + max(hla or 0.0, 0.0)
            total = 1e9 / rate
            # The alloc side's pcpu_lock lies inside the mutex, so its
            # time counts in both queues; the delay is T less both
            # demands, so one forker still cycles in T.
            demands = [max(hm, 0.0), hl]
            xs = mva(max(ns), demands, max(total - sum(demands), 0.0))
            if mode == base:
                xref = xs
            rows.append((mode, total, hm, hl, xs))
        if not rows or xref is None:
            continue
        out.append("")
        out.append("model, fork+%s on N CPUs: pcpu_alloc_mutex and pcpu_lock (both"
                   " sides) as queues; X(N) relative to %s" % (op, base))
        out.append("")
        out.append("| mode | T insns | mutex insns | pcpu_lock insns | N_sat | "
                   + " | ".join("N=%d" % n for n in ns) + " |")
        out.append("|---|---:|---:|---:|---:|" + "---:|" * len(ns))
        for mode, total, hm, hl, xs in rows:
            hmax = max(hm, hl)
            nsat = "%.0f" % (total / hmax) if hmax > 0 else "none"
            out.append("| %s | %.0f | %.0f | %.0f | %s | " % (mode, total, hm, hl, nsat)
                       + " | ".join("%.2f" % (xs[n - 1] / xref[n - 1]) for n in ns)
                       + " |")
    return "\n".join(out)


LIMIT = 0.02


def compare(path_a, path_b):
    """Print how far two --json runs differ, cell by cell."""
    global PATH_LENGTH
    PATH_LENGTH = True
    try:
        with open(path_a) as f:
            a = json.load(f)
        with open(path_b) as f:
            b = json.load(f)
        if not (a["path_length"] and b["path_length"]):
            warn("--compare: both runs must be --path-length tables")
            return 2
        tb = {t["shape"]: t for t in b["tables"]}
        ta_shapes = [t["shape"] for t in a["tables"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        warn("--compare: %s" % e)
        return 2

    def rel(x, y):
        return abs(x - y) / min(x, y) if x and y and min(x, y) > 0 else None

    bad_solo, lines, summary, cells = 0, [], [], 0
    for ta in a["tables"]:
        t2 = tb.get(ta["shape"])
        if not t2:
            summary.append("%s: in run A only" % ta["shape"])
            continue
        worst, only = {}, []
        for bench in ta["benches"]:
            unit = ta["units"][bench]
            if unit not in ("ops/s", "insns"):
                continue
            if bench not in t2["benches"] or t2["units"][bench] != unit:
                only.append(bench)
                continue
            for mode in ta["modes"]:
                ca = ta["cells"][bench].get(mode)
                cb = t2["cells"][bench].get(mode)
                if not ca or not cb or ca["median"] is None or cb["median"] is None:
                    continue
                if mode == REF:
                    va, vb = ta["mainline_median"][bench], t2["mainline_median"][bench]
                    sa, sb = fmt_value(va, unit), fmt_value(vb, unit)
                else:
                    va, vb = ca["median"], cb["median"]
                    sa, sb = "%.2f" % va, "%.2f" % vb
                d = rel(va, vb)
                if d is None:
                    continue
                cells += 1
                for k in ("solo", "all") if solo(bench) else ("all",):
                    if k not in worst or d > worst[k][0]:
                        worst[k] = (d, bench, mode)
                if d > LIMIT:
                    lines.append("| %s | %s | %s | %s | %s | %.1f %% | %s |"
                                 % (ta["shape"], bench, mode, sa, sb, 100 * d,
                                    "yes" if solo(bench) else "no"))
                    bad_solo += solo(bench)
        only += [bch for bch in t2["benches"] if bch not in ta["benches"]
                 and t2["units"][bch] in ("ops/s", "insns")]
        parts = ["%s at most %.1f %% (%s, %s)" % (what, 100 * worst[k][0], worst[k][1],
                                                worst[k][2])
                 for k, what in (("solo", "single-threaded rows"), ("all", "every row"))
                 if k in worst]
        if only:
            parts.append("in one run only: %s" % ", ".join(only))
        summary.append("%s: %s" % (ta["shape"], "; ".join(parts) if parts
                                    else "no cell in both runs"))
    summary += ["%s: in run B only" % s2 for s2 in tb if s2 not in ta_shapes]
    print("cells of the two runs more than %.0f %% apart (relative difference of"
          " the ratios to %s; in the %s column, of its own path lengths):"
          % (100 * LIMIT, REF, REF))
    print("")
    if lines:
        print("| shape | bench | mode | run A | run B | difference | single-threaded |")
        print("|---|---|---|---:|---:|---:|---|")
        print("\n".join(lines))
    else:
        print("(none)")
    print("")
    print("\n".join(summary))
    return 1 if bad_solo or not cells else 0


def usage(msg=None):
    if msg:
        warn(msg)
    print("usage: rss_table.py [--path-length] [--json FILE] MODE:SHAPE:RUN=LOGFILE...\n"
          "       rss_table.py --compare A.json B.json", file=sys.stderr)
    sys.exit(2)


def main(argv):
    global PATH_LENGTH
    json_path, specs = None, []
    i = 0
    if argv and argv[0] == "--compare":
        if len(argv) != 3:
            usage("--compare needs two --json files")
        return compare(argv[1], argv[2])
    while i < len(argv):
        a = argv[i]
        if a == "--path-length":
            PATH_LENGTH = True
            i += 1
            continue
        if a == "--json":
            if i + 1 >= len(argv):
                usage("--json needs a file")
            json_path = argv[i + 1]
            i += 2
            continue
        if a.startswith("--json="):
            json_path = a[len("--json="):]
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        elif a.startswith("-"):
            usage("unknown option %s" % a)
        else:
            m = ARG_RE.match(a)
            if not m:
                usage("bad argument %r (want MODE:SHAPE:RUN=LOGFILE)" % a)
            specs.append(m.groups())
        i += 1
    if not specs:
        usage()

    runs, seen = [], set()
    for mode, shape, run, log in specs:
        if (mode, shape, run) in seen:
            warn("%s:%s:%s given twice, both counted" % (mode, shape, run))
        seen.add((mode, shape, run))
        values, units, order = parse_log(log)
        runs.append({"mode": mode, "shape": shape, "run": run, "log": log,
                     "values": values, "units": units, "order": order})
    tables = build(runs)
    text = "\n".join(render(t) for t in tables)
    if PATH_LENGTH:
        g = growth(tables)
        if g:
            text += "\n" + g
    print(text.rstrip("\n"))

    if json_path:
        with open(json_path, "w") as f:
            json.dump({"reference": REF, "path_length": PATH_LENGTH,
                       "runs": runs, "tables": tables},
                      f, indent=1, sort_keys=True)
            f.write("\n")
    if not any(r["values"] for r in runs):
        warn("no rss-bench lines in any log")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
