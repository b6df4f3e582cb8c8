#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Per-op costs of the benchmark windows the cost plugin counted.

Usage: cost.py [--lat FILE] GUEST_LOG PLUGIN_OUT

GUEST_LOG is a console log of rss/progs' benchmarks: before its result
line, each marked benchmark printed "# window ID ops N".  PLUGIN_OUT is
what scripts/cost/pn_cost.c wrote for that boot: "pn-cost ID VCPU
raw insns mem l1 l2 llc xfer upg locked", the window's totals so far
(the last line of an ID is the whole window).

Prints, per marked benchmark NAME, result lines rss_table.py reads:
    rss-bench NAME.cycles V cycles      modeled cycles per op
    rss-bench NAME.insns V insns        retired instructions (REP once)
    rss-bench NAME.EVENT V events       l1 l2 llc xfer upg locked per op
and "# cost" comment lines: the window's raw instructions per op against
the guest's path length (-icount's clock; they differ by timer warps and
blocks cut short by an exception), and each vCPU's modeled cycles per op.

The latencies (--lat, default scripts/cost/sapphire-rapids.lat) price a
window as insns + (l1 - l2) * l2 + (l2 - llc - xfer) * llc + llc * dram
+ xfer * xfer + upg * upg + locked * locked.
Exit status: 0 if every marked benchmark had its window, 1 if not, 2 on
bad usage or input.
"""
import os
import re
import sys

COUNTERS = ["raw", "insns", "mem", "l1", "l2", "llc", "xfer", "upg", "locked"]
EVENTS = ["l1", "l2", "llc", "xfer", "upg", "locked"]
LAT_KEYS = ["insn", "l2", "llc", "dram", "xfer", "upg", "locked"]
DEFAULT_LAT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           "cost", "sapphire-rapids.lat")
WINDOW_RE = re.compile(r"^(?:\[[^\]]*\]\s*)?# window (\d+) ops (\d+)\s*$")
RESULT_RE = re.compile(r"^(?:\[[^\]]*\]\s*)?rss-bench\s+([A-Za-z0-9_.+-]+)\s+"
                       r"(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\s+ops/s(?=\s|$)")
COST_RE = re.compile(r"^pn-cost (\d+) (\d+|all)((?: \d+){%d})\s*$" % len(COUNTERS))


def fail(msg):
    print("cost.py: " + msg, file=sys.stderr)
    sys.exit(2)


def read_text(path):
    try:
        return open(path, "rb").read().decode("utf-8", "replace")
    except OSError as e:
        fail("%s: %s" % (path, e.strerror))


def read_lat(path):
    lat = {}
    for line in read_text(path).splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        f = line.split()
        if len(f) != 2 or f[0] not in LAT_KEYS or f[0] in lat:
            fail("%s: bad line '%s'" % (path, line))
        try:
            lat[f[0]] = float(f[1])
        except ValueError:
            fail("%s: bad number in '%s'" % (path, line))
        if lat[f[0]] < 0:
            fail("%s: negative latency in '%s'" % (path, line))
    missing = [k for k in LAT_KEYS if k not in lat]
    if missing:
        fail("%s: no %s" % (path, " ".join(missing)))
    return lat


def cycles(c, lat):
    """Modeled cycles of counters c (a dict)."""
    served_llc = c["l2"] - c["llc"] - c["xfer"]
    return (c["insns"] * lat["insn"] + (c["l1"] - c["l2"]) * lat["l2"]
            + max(served_llc, 0) * lat["llc"] + c["llc"] * lat["dram"]
            + c["xfer"] * lat["xfer"] + c["upg"] * lat["upg"]
            + c["locked"] * lat["locked"])


def windows_of_log(path):
    """[(name, id, ops, path length per op)] of the ops/s results; id
    None for a result with no window line before it (every ops/s result
    of rss/progs has one)."""
    out, pending = [], None
    for line in re.split(r"[\r\n]+", read_text(path)):
        m = WINDOW_RE.match(line)
        if m:
            pending = (int(m.group(1)), int(m.group(2)))
            continue
        m = RESULT_RE.match(line)
        if m:
            rate = float(m.group(2))
            wid, ops = pending if pending else (None, 0)
            out.append((m.group(1), wid, ops, 1e9 / rate if rate > 0 else None))
            pending = None
    return out


def costs_of_plugin(path):
    """{id: {vcpu: counters}}, the last line of each (id, vcpu)."""
    got = {}
    for line in read_text(path).splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = COST_RE.match(line)
        if not m:
            fail("%s: bad line '%s'" % (path, line))
        vals = [int(x) for x in m.group(3).split()]
        got.setdefault(int(m.group(1)), {})[m.group(2)] = dict(zip(COUNTERS, vals))
    return got


def main(argv):
    lat_path = DEFAULT_LAT
    args = argv[1:]
    if len(args) >= 2 and args[0] == "--lat":
        lat_path = args[1]
        args = args[2:]
    if len(args) != 2:
        fail("usage: cost.py [--lat FILE] GUEST_LOG PLUGIN_OUT")
    lat = read_lat(lat_path)
    wins = windows_of_log(args[0])
    costs = costs_of_plugin(args[1])
    rc = 0
    print("# cost model: %s (%s)" % (os.path.basename(lat_path),
                                     ", ".join("%s %g" % (k, lat[k]) for k in LAT_KEYS)))
    for name, wid, ops, path in wins:
        if wid is None:
            print("# cost %s: no window line before its result" % name)
            rc = 1
            continue
        c = costs.get(wid, {}).get("all")
        if c is None or ops <= 0:
            print("# cost %s: no plugin window %d" % (name, wid))
            rc = 1
            continue
        raw = c["raw"] / ops
        if path:
            print("# cost %s: raw %.0f insns/op, path length %.0f, %+.2f %%"
                  % (name, raw, path, 100 * (raw - path) / path))
        print("rss-bench %s.cycles %.3f cycles" % (name, cycles(c, lat) / ops))
        print("rss-bench %s.insns %.3f insns" % (name, c["insns"] / ops))
        for e in EVENTS:
            print("rss-bench %s.%s %.3f events" % (name, e, c[e] / ops))
        per = ["%s %.0f" % (v, cycles(cv, lat) / ops)
               for v, cv in sorted(costs[wid].items(), key=lambda kv: (kv[0] == "all", kv[0].zfill(4)))
               if v != "all"]
        print("# cost %s: modeled cycles per op by vCPU: %s" % (name, ", ".join(per)))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
