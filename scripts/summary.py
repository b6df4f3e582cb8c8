#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Count what every pcpu_next lane proved and print one closing line.

Input: a file with one line per lane run: "<lane> <rc> <kind> <log>",
kind being "vm" (a scripts/vm.sh console log), "kunitpy" (kunit.py run
output) or "tap" (a plain TAP document, e.g. scripts/model.sh).  From a vm
log it counts
  - KUnit cases: the KTAP blocks of the in-module suites, parsed by the
    kernel's own tools/testing/kunit/kunit.py parse;
  - selftest cases: the kselftest harness's top-level TAP lines;
  - PN-RESULT markers: stress runs, benches, rmmod, kmemleak.
A lane whose script failed without a failed case (splat, crash, timeout)
counts as one failure of its own.  Prints a table and ends with
"N passed, N failed" (skips, if any, are counted on the line before).
"""
import os
import re
import subprocess
import sys
import tempfile


def kunit_parse(kunit_py, ktap):
    """Run kunit.py parse on a KTAP text; return (passed, failed, skipped)."""
    with tempfile.NamedTemporaryFile("w", suffix=".ktap", delete=False) as f:
        f.write(ktap)
        name = f.name
    try:
        out = subprocess.run([sys.executable, kunit_py, "parse", name],
                             capture_output=True, text=True).stdout
    finally:
        os.unlink(name)
    m = re.search(r"Ran (\d+) tests?: (.*)", out)
    if not m:
        return 0, 1, 0, out
    counts = dict((k, int(v)) for k, v in
                  re.findall(r"(passed|failed|crashed|skipped|errors): (\d+)",
                             m.group(2)))
    failed = counts.get("failed", 0) + counts.get("crashed", 0) + \
        counts.get("errors", 0)
    return counts.get("passed", 0), failed, counts.get("skipped", 0), out


def tap_counts(text):
    """Top-level TAP lines of text: ([passed, failed, skipped], not-ok lines)."""
    ok = re.findall(r"^ok \d+ .*$", text, re.M)
    nok = re.findall(r"^not ok \d+ .*$", text, re.M)
    skip = [l for l in ok if "# SKIP" in l]
    return [len(ok) - len(skip), len(nok), len(skip)], nok


def vm_log(path, kunit_py):
    text = open(path, errors="replace").read() if os.path.exists(path) else ""
    res = {"kunit": [0, 0, 0], "selftest": [0, 0, 0], "check": [0, 0, 0]}
    fails = []

    suites = re.findall(r"=== PN-KTAP-BEGIN (\S+)\n(.*?)=== PN-KTAP-END",
                        text, re.S)
    if suites:
        # One KTAP document: a header, then every suite renumbered.
        doc = ["KTAP version 1", "1..%d" % len(suites)]
        for i, (name, body) in enumerate(suites, 1):
            lines = body.splitlines()[2:]       # drop the suite's own header
            for line in lines:
                m = re.match(r"^(not ok|ok) 1 (\S+)(.*)$", line)
                doc.append("%s %d %s%s" % (m.group(1), i, m.group(2),
                                             m.group(3)) if m else line)
        p, f, s, out = kunit_parse(kunit_py, "\n".join(doc) + "\n")
        res["kunit"] = [p, f, s]
        if f:
            fails += [l for l in out.splitlines() if "FAILED" in l or
                      "CRASHED" in l][:20]

    for body in re.findall(r"=== PN-SELFTEST-BEGIN \S+\n(.*?)=== PN-SELFTEST-END rc=(\d+)",
                           text, re.S):
        (p, f, s), nok = tap_counts(body[0])
        res["selftest"][0] += p
        res["selftest"][1] += f + (1 if int(body[1]) and not nok else 0)
        res["selftest"][2] += s
        fails += nok

    for verdict, name in re.findall(r"^=== PN-RESULT (PASS|FAIL) (\S+)", text, re.M):
        res["check"][0 if verdict == "PASS" else 1] += 1
        if verdict == "FAIL":
            fails.append("FAIL " + name)
    return res, fails


def kunitpy_log(path):
    text = open(path, errors="replace").read() if os.path.exists(path) else ""
    m = None
    for m in re.finditer(r"Ran (\d+) tests?: (.*)", text):
        pass
    if not m:
        return {"kunit.py": [0, 0, 0]}, ["kunit.py: no result line"]
    counts = dict((k, int(v)) for k, v in
                  re.findall(r"(passed|failed|crashed|skipped|errors): (\d+)", m.group(2)))
    failed = counts.get("failed", 0) + counts.get("crashed", 0) + counts.get("errors", 0)
    fails = [l for l in text.splitlines() if "[FAILED]" in l or "[CRASHED]" in l]
    return {"kunit.py": [counts.get("passed", 0), failed, counts.get("skipped", 0)]}, fails


def tap_log(path, what):
    text = open(path, errors="replace").read() if os.path.exists(path) else ""
    counts, nok = tap_counts(text)
    return {what: counts}, nok


def main():
    runs, kunit_py = sys.argv[1], sys.argv[2]
    total = [0, 0, 0]
    print("\n%-14s %-10s %7s %7s %7s  %s" % ("lane", "what", "passed", "failed", "skipped", "log"))
    for line in open(runs):
        lane, rc, kind, log = line.split()
        rc = int(rc)
        if kind == "vm":
            res, fails = vm_log(log, kunit_py)
        elif kind == "tap":
            res, fails = tap_log(log, lane)
        else:
            res, fails = kunitpy_log(log)
        lane_failed = sum(v[1] for v in res.values())
        if rc != 0 and lane_failed == 0:
            res["lane-exit"] = [0, 1, 0]
            fails.append("%s exited %d (splat, crash or timeout: see %s)" % (lane, rc, log))
        for what, (p, f, s) in res.items():
            if p or f or s:
                print("%-14s %-10s %7d %7d %7d  %s" % (lane, what, p, f, s, log))
            total[0] += p
            total[1] += f
            total[2] += s
        for f in fails:
            print("    %s: %s" % (lane, f.strip()))
    if total[2]:
        print("%d skipped (counted neither as passed nor as failed)" % total[2])
    print("%d passed, %d failed" % (total[0], total[1]))
    return 1 if total[1] or not total[0] else 0


if __name__ == "__main__":
    sys.exit(main())
