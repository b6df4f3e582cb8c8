#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The cost lane of make check (TAP): the cost model's plugin
# (scripts/cost/pn_cost.c) on make rss's machine, QEMU 10's q35 under
# -icount, booting Debian's 7.2 image with 4 vCPUs.  Two boots of one
# seed, side by side, run scripts/guest/cost.sh.
#   - the probes' counts are the ones their code implies
#     (rss/progs/cost_probe.c): locked adds, REP iterations, LLC misses,
#     line transfers, each on the vCPU that did the work;
#   - every window's raw count is the guest's -icount path length;
#   - the two boots wrote the same plugin output and the same results;
#   - scripts/cost/pn_cost_test.c: the cache and directory model fed
#     chosen accesses without QEMU, a case per fix found in review.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

dir=$OUT/cost
# COST_CHECK_AGAIN=1: the checks again on the last run's boots.
if [ "${COST_CHECK_AGAIN:-0}" != 1 ]; then
rm -rf "$dir"
mkdir -p "$dir/progs"
make -s -C "$REPO/rss/progs" OUTPUT="$dir/progs" >"$dir/progs.log" 2>&1 ||
	{ tail -n 20 "$dir/progs.log" >&2; die "cost: rss programs build failed"; }
for i in 1 2; do
	bash "$REPO/scripts/vm.sh" --kernel stock72 --no-module --icount --x2apic --seed 1 --smp 4 \
		--cost "$dir/boot$i.cost" --rss-progs "$dir/progs" --timeout 1200 \
		--log "$dir/boot$i.log" "$REPO/scripts/guest/cost.sh" >"$dir/boot$i.out" 2>&1 &
done
wait
for i in 1 2; do
	python3 "$REPO/scripts/cost.py" "$dir/boot$i.log" "$dir/boot$i.cost" >"$dir/boot$i.per-op" 2>&1
	echo "cost.py rc=$?" >>"$dir/boot$i.per-op"
done
fi
# The model's unit test, built against the plugin's own header.
mkdir -p "$dir"
so=$(bash "$REPO/scripts/cost-plugin.sh") || die "cost: the plugin does not build"
qver=${so##*/pn_cost-}
qver=${qver%%-*}
# shellcheck disable=SC2046 # pkg-config's flags are words
gcc -O2 -g -Wall -Wextra -Wno-unused-parameter -Werror -I"$(dirname "$so")/qemu-$qver" \
	$(pkg-config --cflags glib-2.0) -o "$dir/pn_cost_test" "$REPO/scripts/cost/pn_cost_test.c" \
	$(pkg-config --libs glib-2.0) >"$dir/unit.tap" 2>&1 &&
	"$dir/pn_cost_test" >"$dir/unit.tap" 2>"$dir/unit.err"
echo "rc $?" >>"$dir/unit.tap"
python3 - "$dir" <<'PY'
import re, sys
d = sys.argv[1]
C = ["raw", "insns", "mem", "l1", "l2", "llc", "xfer", "upg", "locked"]
n = 0
def ok(cond, what, detail=""):
    global n
    n += 1
    print("%s %d - %s%s" % ("ok" if cond else "not ok", n, what,
                            "" if cond or not detail else " # " + detail))
def read(i):
    log = open("%s/boot%d.log" % (d, i), errors="replace").read()
    try:
        cost = open("%s/boot%d.cost" % (d, i)).read()
    except OSError:
        cost = ""
    wins, pending = {}, None
    for line in log.splitlines():
        m = re.match(r"^# window (\d+) ops (\d+)$", line)
        if m:
            pending = (m.group(1), int(m.group(2)))
            continue
        m = re.match(r"^rss-bench (\S+) (\S+) ops/s$", line)
        if m and pending:
            wins[m.group(1)] = (pending[0], pending[1], 1e9 / float(m.group(2)))
            pending = None
    per = {}
    for line in cost.splitlines():
        f = line.split()
        if f[:1] == ["pn-cost"]:
            per.setdefault(f[1], {})[f[2]] = dict(zip(C, map(int, f[3:])))
    return log, cost, wins, per
unit = open("%s/unit.tap" % d).read().splitlines()
cases = [l for l in unit if re.match(r"^(not )?ok - ", l)]
print("1..%d" % (11 + len(cases)))
log1, cost1, w, per = read(1)
log2, cost2, _, _ = read(2)
po = [open("%s/boot%d.per-op" % (d, i)).read() for i in (1, 2)]
ok(all("PN-COST-END rc=0" in l and "PN-GUEST-EXIT rc=0" in l for l in (log1, log2))
   and all(p.rstrip().endswith("cost.py rc=0") for p in po),
   "both boots ran the probes and three benchmarks; cost.py priced every window",
   " / ".join(p.strip().splitlines()[-1] for p in po))
def v(name, cpu):
    if name not in w or w[name][0] not in per:
        return None
    return per[w[name][0]].get(cpu)
lock, rep, llc, hit = (v("probe_lock", "0"), v("probe_rep", "0"), v("probe_llc", "0"),
                       v("probe_hit", "0"))
x0, x1 = v("probe_xfer", "0"), v("probe_xfer", "1")
# (slack: an interrupt in the window runs the kernel's own locked ops)
ok(lock is not None and 10000 <= lock["locked"] <= 11000,
   "probe_lock: 10000 locked adds counted on vCPU 0",
   "got %s" % (lock and lock["locked"]))
# -icount runs a REP of N iterations N + 1 times (the last with RCX 0);
# an interrupt restarts the count (one fewer each); the kernel's own REP
# work on vCPU 0 (a few KiB) adds to it.
ok(rep is not None and (1 << 20) - 50 <= rep["raw"] - rep["insns"] <= (1 << 20) * 1.02,
   "probe_rep: a 1 MiB rep stosb retires once, -icount counts 2^20 + 1 executions",
   "raw - insns %s" % (rep and rep["raw"] - rep["insns"]))
ok(llc is not None and (64 << 20) // 64 <= llc["llc"] <= (64 << 20) // 64 * 1.02,
   "probe_llc: a read of 64 MiB misses the LLC once per line on vCPU 0",
   "got %s" % (llc and llc["llc"]))
# (slack: the other vCPUs' work shares the LLC; an LLC that never hit
# would miss all 65536 lines)
ok(hit is not None and hit["llc"] <= (4 << 20) // 64 // 20 and hit["l2"] >= (4 << 20) // 64,
   "probe_hit: 4 MiB read again misses L2, hits the LLC (under 5 % LLC misses on vCPU 0)",
   "got %r" % ((hit and (hit["l2"], hit["llc"])),))
# The main thread is pinned to CPU 0, the boot CPU, vCPU 0; the other
# thread to CPU 1.  Each turn, each side reads the line the other wrote
# (a transfer) and writes the line both hold (an upgrade).  A spin read
# of an unchanged line hits L1: vCPU 0 counts a transfer per turn, no
# more (the kernel's own work may add a few).  The other vCPUs count the
# other side's, and what the kernel does there.
others = None
if w.get("probe_xfer") and w["probe_xfer"][0] in per:
    pw = per[w["probe_xfer"][0]]
    others = {k: sum(c[k] for cpu, c in pw.items() if cpu not in ("0", "all"))
              for k in ("xfer", "upg")}
ok(x0 is not None and others is not None and 1000 <= x0["xfer"] <= 1100
   and 999 <= x0["upg"] <= 1100 and 1000 <= others["xfer"] <= 1500
   and 999 <= others["upg"] <= 1500,
   "probe_xfer: 1000 turns on one line, a transfer each way, an upgrade each write",
   "vCPU0 %s, the others %s" % (x0 and (x0["xfer"], x0["upg"], x0["mem"]), others))
# One function on two CPUs: each vCPU counts its own half.  (QEMU 10.0.2
# passes a block's callbacks the vCPU that translated it; the plugin
# finds the running one from the guest's GS base.)
s0, s1 = v("probe_split", "0"), v("probe_split", "1")
sa = per.get(w.get("probe_split", ("",))[0], {}).get("all")
ok(s0 is not None and s1 is not None and sa is not None and s0["insns"] >= 2000000
   and s1["insns"] >= 2000000 and sa["xfer"] <= 4000,
   "probe_split: one function on vCPUs 0 and 1, 200000 calls each: each vCPU counts its "
   "calls' instructions, under 4000 transfers",
   "insns %s %s, xfer %s" % (s0 and s0["insns"], s1 and s1["insns"], sa and sa["xfer"]))
worst = None
for name, (wid, ops, path) in w.items():
    a = per.get(wid, {}).get("all")
    if not a:
        worst = (name, float("inf"))
        break
    dev = abs(a["raw"] / ops - path) / path
    if worst is None or dev > worst[1]:
        worst = (name, dev)
ok(len(w) == 9 and worst is not None and worst[1] < 0.005,
   "every window's raw count is the guest's -icount path length within 0.5 %% (%d windows)" % len(w),
   "worst %s" % (worst,))
ok("\npn-cost " in cost1 and cost1 == cost2,
   "two boots of one seed: the same plugin output (%d lines)" % len(cost1.splitlines()),
   "boot 2 differs")
r = lambda t: [l for l in t.splitlines() if l.startswith(("rss-bench ", "# window "))]
ok(r(log1) != [] and r(log1) == r(log2), "two boots of one seed: the same results, digit for digit")
ok(len(cases) == 9 and unit[-1] == "rc 0",
   "pn_cost_test: the model's %d cases ran" % len(cases), " / ".join(unit[-3:]))
for c in cases:
    m = re.match(r"^(not )?ok - (.*)$", c)
    ok(not m.group(1), "pn_cost_test: " + m.group(2))
PY
