#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host lane (no VM), TAP on stdout: the choices the scripts make about
# this machine, driven with stand-ins.
#
#   kvm_works (lib.sh) against stand-in QEMUs that fail each way seen:
#   abort at vCPU reset, a guest that dies after it starts (and then
#   hangs, or exits), a guest that hangs silently (a paused vCPU), a
#   kernel that prints its banner and then dies; each must get "no"
#   within the probe's timeout, and one that prints the init's marker
#   "yes" at once.  No stand-in may outlive the probe.
#
#   make rss-here's pieces: rss/progs/rss_bench.sh's per-op perf
#   figures from a stand-in perf whose counts are known lines in the
#   operations, and scripts/rss-here.sh --table of two boots' logs.
#
#   make's KDIR (Makefile) in a stand-in /usr/src: the running kernel's
#   headers first, else the newest Debian 6.12 headers of its flavour
#   (generic amd64 unless the release ends in -rt-amd64 or
#   -cloud-amd64), a clear error when there are none.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0

tap()	# 0|1 description [diagnostic]
{
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		[ -z "${3:-}" ] || echo "$3" | sed 's/^/# /'
	fi
}

# ---- the KVM probe ----
secs=3
: >"$work/kvm"
echo "not a kernel" >"$work/vmlinuz"
standin()	# name body: an executable stand-in QEMU
{
	{
		echo '#!/bin/bash'
		echo "echo \$\$ >>'$work/$1.pids'"
		echo "$2"
	} >"$work/$1"
	chmod +x "$work/$1"
}
dump='echo "KVM internal error. Suberror: 1"; echo "RIP=0000000000100000 RFL=00010046"
echo "Code=00 00 00 00 <c4> 42 69 f7 c8 48 89 c7"'
standin abort 'echo "qemu-system-x86_64: error: failed to set MSR 0x48b to 0x1ffff00000000" >&2; kill -ABRT $$'
standin dies-hangs "$dump"$'\nexec sleep 3600'
standin dies-exits "$dump"$'\nexit 1'
standin hangs 'exec sleep 3600'
standin hangs-deaf "trap '' TERM; exec sleep 3600"
standin banner-dies 'echo "[    0.000000] Linux version 6.12.118+deb12-amd64"'$'\n'"$dump"$'\nexec sleep 3600'
standin boots 'echo "[    0.000000] Linux version 6.12.118+deb12-amd64"; sleep 0.5
echo "'"$KVM_MARKER"'"; exec sleep 3600'

probe()	# stand-in [device]: prints "yes" or "no", then the seconds it took
{
	local t0 t1 r
	t0=$(date +%s.%N)
	if PN_KVM_QEMU=$work/$1 PN_KVM_DEV=${2:-$work/kvm} PN_KVM_KERNEL=$work/vmlinuz \
		PN_KVM_PROBE_SECS=$secs kvm_probe 2>/dev/null; then
		r=yes
	else
		r=no
	fi
	t1=$(date +%s.%N)
	printf '%s %.1f\n' "$r" "$(echo "$t1 - $t0" | bc)"
}

running()	# pid: true if it runs (exists and is not a zombie)
{
	[ -r "/proc/$1/stat" ] && ! sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | grep -q '^Z'
}

alive()	# stand-in: its processes still running, if any
{
	local p left="" i
	for p in $(cat "$work/$1.pids" 2>/dev/null); do
		# A SIGKILL sent as the probe returned takes effect when the
		# process next runs: give it up to 5 s.
		for ((i = 0; i < 50; i++)); do
			running "$p" || break
			sleep 0.1
		done
		! running "$p" || { left="$left $p"; kill -9 "$p"; }
	done
	echo "$left"
}

for s in abort dies-hangs dies-exits hangs hangs-deaf banner-dies boots; do
	want=no
	[ "$s" != boots ] || want=yes
	read -r got took < <(probe "$s")
	left=$(alive "$s")
	# The bound is the probe's own timeout, its 1 s kill grace and a
	# margin of 3 s for a loaded host (it is not a benchmark): the
	# stand-ins that hang are stopped by timeout(1), not by luck
	# (hangs-deaf ignores SIGTERM: timeout's -k 1 kills it).
	if [ "$got" = "$want" ] && [ -z "$left" ] &&
		[ "$(echo "$took < $secs + 4" | bc)" = 1 ]; then
		tap 0 "kvm probe: stand-in '$s' gets $want ($took s, within ${secs} s + 4)"
	else
		tap 1 "kvm probe: stand-in '$s' gets $want" \
			"got $got after $took s; still running:${left:- none}"
	fi
done

# Without a writable device there is no probe boot at all.
rm -f "$work/boots.pids"
read -r got took < <(probe boots "$work/absent")
[ "$got" = no ] && [ ! -e "$work/boots.pids" ]
tap $? "kvm probe: no /dev/kvm gets no"

# kvm_works keeps its answer for the children of the shell that probed.
rm -f "$work/boots.pids"
r=$(export PN_KVM_QEMU=$work/boots PN_KVM_DEV=$work/kvm PN_KVM_KERNEL=$work/vmlinuz \
	PN_KVM_PROBE_SECS=$secs; unset PN_KVM_OK
    kvm_works 2>/dev/null && bash -c '. "$1/scripts/lib.sh"; kvm_works 2>/dev/null && echo "$PN_KVM_OK"' _ "$REPO")
alive boots >/dev/null
[ "$r" = yes ] && [ "$(wc -l <"$work/boots.pids")" = 1 ]
tap $? "kvm_works: one probe per run, its answer inherited (got '${r}', $(wc -l <"$work/boots.pids") probe boots)"

# ---- make's choice of headers ----
hdr=$work/usr-src
for d in 6.12.9+deb12-amd64 6.12.118+deb12-amd64 6.12.118+deb12-rt-amd64 \
	6.12.118+deb12-cloud-amd64 6.12.118+deb12-common 6.1.0-57-amd64; do
	mkdir -p "$hdr/linux-headers-$d"
	touch "$hdr/linux-headers-$d/Makefile"
done
mkdir -p "$work/running"
touch "$work/running/Makefile"
# make without the caller's KDIR or make flags (make check KDIR=...).
mk()
{
	env -u KDIR -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make "$@"
}
kdir_of()	# uname-r running-kdir: make kdir's line
{
	mk -s -C "$REPO" kdir UNAME_R="$1" HEADERS_DIR="$hdr" RUNNING_KDIR="$2" 2>&1
}
check_kdir()	# uname-r running-kdir expected-dir description
{
	local out
	out=$(kdir_of "$1" "$2")
	case $out in
	"pcpu_next: KDIR=$3 ("*) tap 0 "make kdir: $4" ;;
	*) tap 1 "make kdir: $4" "uname -r $1: got: $out; want KDIR=$3" ;;
	esac
}
check_kdir 6.1.0-57-amd64 "$work/none" "$hdr/linux-headers-6.12.118+deb12-amd64" \
	"no running headers: the newest generic 6.12 (not 6.12.9 by text order, not rt or cloud)"
check_kdir 6.12.118+deb12-rt-amd64 "$work/none" "$hdr/linux-headers-6.12.118+deb12-rt-amd64" \
	"no running headers, an rt kernel runs: rt-amd64"
check_kdir 6.12.118+deb12-cloud-amd64 "$work/none" \
	"$hdr/linux-headers-6.12.118+deb12-cloud-amd64" \
	"no running headers, a cloud kernel runs: cloud-amd64"
check_kdir 6.12.118+deb12-rt-amd64 "$work/running" "$work/running" \
	"the running kernel's headers when they exist"
out=$(mk -s -C "$REPO" kdir UNAME_R=6.1.0-57-amd64 HEADERS_DIR="$work/empty" \
	RUNNING_KDIR="$work/none" 2>&1)
r=$?
[ $r -ne 0 ] && echo "$out" | grep -q 'no kernel headers'
tap $? "make kdir: no headers at all fails with one line" "rc $r: $out"
out=$(mk -s -C "$REPO" kdir KDIR=/opt/k 2>&1)
[ "$out" = "pcpu_next: KDIR=/opt/k (KDIR set by the command line)" ]
tap $? "make kdir: KDIR= on the command line wins" "$out"

# ---- make rss-here's pieces ----
# A benchmark that does 100 ops/s however long it runs, and a perf that
# counts 1000 + 7 cycles and 500 + 3 instructions an op, cache misses
# not at all: the per-op figures must be 7 and 3, setup cancelled.
cat >"$work/fakebench" <<'EOF2'
#!/bin/sh
echo "# fake: $*"
echo "rss-bench fake 100.000 ops/s"
EOF2
cat >"$work/perf" <<'EOF2'
#!/bin/bash
[ "$1" = stat ] || exit 1
shift
while [ "$1" != -- ]; do
	[ "$1" != -o ] || o=$2
	shift
done
shift
s=${*: -1}
"$@"
ops=$(echo "100 * $s" | bc)
{
	echo "# started"
	echo "$(echo "1000 + 7 * $ops" | bc),,cycles,1,100.00,,"
	echo "$(echo "500 + 3 * $ops" | bc),,instructions:u,1,100.00,,"
	echo "<not counted>,,cache-misses,0,0.00,,"
} >"$o"
EOF2
chmod +x "$work/fakebench" "$work/perf"
out=$(. "$REPO/rss/progs/rss_bench.sh"; RSS_PERF=$work/perf rb_timed 0.5 "$work/fakebench" --x)
exp="rss-bench fake 100.000 ops/s
rss-bench fake.cycles 7.000 cycles
rss-bench fake.insns 3.000 insns"
[ "$(echo "$out" | grep '^rss-bench')" = "$exp" ] &&
	echo "$out" | grep -q '^# perf: cache-misses not counted for fake$' &&
	echo "$out" | grep -q '^# 2x: fake 100.000 ops/s$'
tap $? "rss_bench.sh: per-op cycles and instructions from two perf runs, setup cancelled" "$out"
# The second, longer run is not a result: the table sees one value.
cat >"$work/fakebench2" <<'EOF2'
#!/bin/sh
case $* in *"--seconds 1") v=300 ;; *) v=100 ;; esac
echo "rss-bench fake $v.000 ops/s"
EOF2
chmod +x "$work/fakebench2"
{
	echo "=== PN-RSS-HERE column=mainline shape=4of16 cpus=0-3 online=4 possible=16 perf=yes"
	(. "$REPO/rss/progs/rss_bench.sh"; RSS_PERF=$work/perf rb_timed 0.5 "$work/fakebench2")
} >"$work/perf.log"
out=$(python3 "$REPO/scripts/rss_table.py" mainline:4of16:1="$work/perf.log" 2>&1)
echo "$out" | grep -q '^| fake | 1.00 ±0.00 | 100 ops/s |$'
tap $? "rss_table.py: the perf rerun's result is a comment, not a second value" "$out"
out=$(. "$REPO/rss/progs/rss_bench.sh"; RSS_PERF="" rb_timed 0.5 "$work/fakebench" --x)
[ "$out" = "# fake: --x --seconds 0.5
rss-bench fake 100.000 ops/s" ]
tap $? "rss_bench.sh: without perf a benchmark runs once, as make rss runs it" "$out"

# Two boots' logs (console prefixes, comments) make two columns.
mkdir -p "$work/here"
hl()	# column value
{
	printf '[ 1.0] === PN-RSS-HERE column=%s shape=4of16 cpus=0-3 online=4 possible=16 perf=no\n' "$1"
	printf 'rss-bench fork_exit_1 %s ops/s\nrss-bench fork_exit_1.cycles %s cycles\n' "$2" "$3"
	echo "=== PN-RSS-HERE-END rc=0"
}
hl mainline 100.000 2000.000 >"$work/here/a.log"
hl flat 125.000 1000.000 >"$work/here/b.log"
echo "no header" >"$work/here/c.log"
out=$(RSS_HERE_DIR=$work/here bash "$REPO/scripts/rss-here.sh" --table \
	"$work/here/a.log" "$work/here/b.log" "$work/here/c.log" 2>&1)
echo "$out" | grep -q '^| fork_exit_1 | 1.00 ±0.00 | 1.25 ±0.00 | 100 ops/s |$' &&
	echo "$out" | grep -q '^| fork_exit_1.cycles | 1.00 ±0.00 | 2.00 ±0.00 | 2000 cycles |$' &&
	echo "$out" | grep -q 'c.log: no PN-RSS-HERE line, left out'
tap $? "rss-here.sh --table: a column per boot, ratios to mainline (ops/s and cycles/op)" "$out"

# The choice, used: top-level `make` in a copy of this tree (not the
# checkout: its objects would mislead build_module's copies) builds
# for the headers `make kdir` names, and the module's vermagic is that
# kernel's, not the rt flavour's.
if abi=$(cat "$CACHE/stock-abi" 2>/dev/null) &&
	[ -d "/usr/src/linux-headers-$abi-amd64" ]; then
	mkdir -p "$work/src"
	rsync -a --exclude .git --exclude .out --exclude 'selftests/out' "$REPO"/ "$work/src"/
	want=/usr/src/linux-headers-$abi-amd64
	line=$(mk -s -C "$work/src" kdir UNAME_R=6.1.0-57-amd64 RUNNING_KDIR="$work/none" 2>&1)
	if mk -C "$work/src" UNAME_R=6.1.0-57-amd64 RUNNING_KDIR="$work/none" \
		PCPU_NEXT_TORTURE=n >"$work/make.log" 2>&1; then
		vm=$(modinfo -F vermagic "$work/src/pcpu_next.ko")
		case "$line|$vm" in
		"pcpu_next: KDIR=$want ("*"|$abi-amd64 SMP preempt "*) r=0 ;;
		*) r=1 ;;
		esac
	else
		r=1 vm="build failed: $(tail -n 5 "$work/make.log")"
	fi
	tap $r "make without the running kernel's headers builds for $abi-amd64 (vermagic: $vm)" "$line"
else
	tap 1 "make's default build: no Debian 6.12 amd64 headers (scripts/deps.sh)"
fi

# The cold-run table of Documentation/testing.rst against its committed
# raw output: every lane time, the total, the counts.
out=$(python3 - "$REPO/Documentation/testing.rst" \
	"$REPO/Documentation/data/check-cold-6b1b5d4.out.gz" <<'PY' 2>&1
import gzip, re, sys
doc, raw = open(sys.argv[1]).read(), gzip.open(sys.argv[2], "rt").read()
lanes = {m.group(1): int(m.group(2)) for m in
         re.finditer(r"^== lane (\S+): (\d+) s ", raw, re.M)}
lanes["bench"] = lanes.get("bench", 0)
stock = sum(lanes[k] for k in ("stock", "stock-rt", "stock72", "stock73"))
sec = doc[doc.index("The cold run of 6b1b5d4"):]
sec = sec[:sec.index("The kernels are the critical path")]
bad = []
for m in re.finditer(r"^    (\S+(?: x4)?)\s+(\d+)\b", sec, re.M):
    name, v = m.group(1), int(m.group(2))
    want = {"stock x4": stock,
            "total": int(re.search(r"^== wall time: (\d+) s", raw, re.M).group(1))
            }.get(name, lanes.get(name))
    if want != v:
        bad.append("%s: doc %d, raw %s" % (name, v, want))
total = int(re.search(r"^== wall time: (\d+) s", raw, re.M).group(1))
counts = re.search(r"^(\d+) passed, (\d+) failed$", raw, re.M).groups()
if "took %.1f minutes" % (total / 60) not in sec.replace("\n", " "):
    bad.append("minutes: raw %.1f" % (total / 60))
if "%s passed, %s failed" % counts not in sec.replace("\n", " "):
    bad.append("counts: raw %s passed, %s failed" % counts)
rows = len(re.findall(r"^    (\S+(?: x4)?)\s+(\d+)\b", sec, re.M))
if rows < 13:
    bad.append("only %d table rows found" % rows)
print("; ".join(bad) or "ok")
PY
)
[ "$out" = ok ]
tap $? "testing.rst's cold-run table agrees with its committed raw output" "$out"

# ---- the cost model's host side (scripts/cost.py, rss_table.py) ----
# A guest log and plugin output whose per-op figures are known: window
# 7 (2 ops) ran 100 retired instructions, 6 L1 misses served by L2, one
# by the LLC, one by DRAM, two transfers, an upgrade, three locked ops.
cat >"$work/cost.log" <<'EOF2'
[    1.0] # window 7 ops 2
[    1.0] rss-bench fork_exit_1 2000000.000 ops/s
# window 9 ops 4
rss-bench fault_1 4000.000 ops/s
EOF2
cat >"$work/cost.out" <<'EOF2'
# pn_cost vcpus=2
pn-cost 7 0 300 50 0 5 2 1 1 0 3
pn-cost 7 1 200 20 0 5 2 0 1 1 0
pn-cost 7 all 500 70 0 10 4 1 2 1 3
pn-cost 7 0 500 90 0 8 3 1 1 0 3
pn-cost 7 1 500 10 0 2 1 0 1 1 0
pn-cost 7 all 1000 100 0 10 4 1 2 1 3
EOF2
out=$(python3 "$REPO/scripts/cost.py" "$work/cost.log" "$work/cost.out" 2>&1)
r=$?
# (100 + 6 * 16 + 1 * 125 + 1 * 407 + 2 * 224 + 1 * 125 + 3 * 17) / 2
echo "$out" | grep -qx 'rss-bench fork_exit_1.cycles 676.000 cycles' &&
	echo "$out" | grep -qx 'rss-bench fork_exit_1.insns 50.000 insns' &&
	echo "$out" | grep -qx 'rss-bench fork_exit_1.xfer 1.000 events' &&
	echo "$out" | grep -q '^# cost fork_exit_1: raw 500 insns/op, path length 500, +0.00 %' &&
	echo "$out" | grep -q '^# cost fault_1: no plugin window 9' && [ $r = 1 ]
tap $? "cost.py: the last line of a window, priced per op by the latency table; a window the plugin missed fails" "$out (rc $r)"
printf 'insn 1\nl2 16\n' >"$work/short.lat"
out=$(python3 "$REPO/scripts/cost.py" --lat "$work/short.lat" "$work/cost.log" "$work/cost.out" 2>&1)
r=$?
[ $r = 2 ] && echo "$out" | grep -q 'no llc dram xfer upg locked'
tap $? "cost.py: a latency table without every event is refused" "$out (rc $r)"
sed -i '/window 9/,$d' "$work/cost.log"
python3 "$REPO/scripts/cost.py" "$work/cost.log" "$work/cost.out" >"$work/m.costs"
# two more transfers, each an L1 and L2 miss: (1352 + 2 * 224 + 2 * 0) / 2 = 900
sed 's/^\(pn-cost 7 all\) 1000 100 0 10 4 1 2 1 3$/\1 1000 100 0 12 6 1 4 1 3/' "$work/cost.out" >"$work/f.out"
python3 "$REPO/scripts/cost.py" "$work/cost.log" "$work/f.out" >"$work/f.costs"
out=$(python3 "$REPO/scripts/rss_table.py" --path-length mainline:4of4:1="$work/cost.log,$work/m.costs" \
	flat:4of4:1="$work/cost.log,$work/f.costs" 2>&1)
echo "$out" | grep -q '^### 4of4: modeled cost per op' &&
	echo "$out" | grep -q '^| fork_exit_1.cycles | 1.00 ±0.00 | 1.33 ±0.00 | 676 cycles |' &&
	echo "$out" | grep -q '^| fork_exit_1.xfer | 1.00 ±0.00 | 2.00 ±0.00 | 1 events |' &&
	! echo "$out" | grep -q '^| fork_exit_1.upg '
tap $? "rss_table.py LOG,COSTS: the cost rows in a table of their own, ratios to mainline" "$out"

# The contention model: the unpatched control is the baseline, and
# pcpu_lock's demand is both sides' holds (one spinlock).
for m in control mainline flat; do
	case $m in
	control) h="900 300 200" ;;
	mainline) h="1000 400 300" ;;
	flat) h="0 0 0" ;;
	esac
	set -- $h
	printf '%s\n' "rss-bench fork_exec_1 1000.000 ops/s" \
		"rss-bench hold_mutex_fork_exec $1 insns" "rss-bench hold_alloc_lock_fork_exec $2 insns" \
		"rss-bench hold_free_lock_fork_exec $3 insns" >"$work/model-$m.log"
done
out=$(python3 "$REPO/scripts/rss_table.py" --path-length control:4of64:1="$work/model-control.log" \
	mainline:4of64:1="$work/model-mainline.log" flat:4of64:1="$work/model-flat.log" 2>&1)
echo "$out" | grep -q 'as queues; X(N) relative to control$' &&
	echo "$out" | grep -q '^| control | 1000000 | 900 | 500 | 1111 | 1.00 | 1.00 | 1.00 |' &&
	echo "$out" | grep -q '^| mainline | 1000000 | 1000 | 700 | 1000 | 1.00 |'
tap $? "rss_table.py's contention model: control is the baseline, pcpu_lock's demand both sides" "$out"

# Growth from the fewest possible CPUs: path length and modeled cycles.
printf '%s\n' "rss-bench fork_exit_1 1000.000 ops/s" "rss-bench fork_exit_1.cycles 10.000 cycles" >"$work/g4.log"
printf '%s\n' "rss-bench fork_exit_1 500.000 ops/s" "rss-bench fork_exit_1.cycles 15.000 cycles" >"$work/g1024.log"
out=$(python3 "$REPO/scripts/rss_table.py" --path-length mainline:4of4:1="$work/g4.log" \
	mainline:4of1024:1="$work/g1024.log" 2>&1)
echo "$out" | grep -q '^### growth from 4of4 to 4of1024' &&
	echo "$out" | grep -q '^| fork_exit_1 (insns) | +100.0 % |$' &&
	echo "$out" | grep -q '^| fork_exit_1 (cycles) | +50.0 % |$'
tap $? "rss_table.py: growth of the fork rows from 4 to 1024 possible, path length and modeled cycles" "$out"

# make rss's variables are checked before anything is built or booted
# (and before its options: a wrong value is the error it reports).
bad=0
for v in RSS_COST=2 RSS_AGAIN=yes "RSS_SEEDS=0" "RSS_SEEDS=2 x"; do
	out=$(env PCPU_NEXT_OUT="$work/rssvars" "$v" timeout 20 bash "$REPO/scripts/rss.sh" --not-an-option 2>&1)
	r=$?
	case $r:$out in
	1:*"RSS_COST and RSS_AGAIN are 0 or 1"* | 1:*"RSS_SEEDS takes numbers 1..99"*) ;;
	*) bad=1; echo "$v: rc $r: $out" ;;
	esac
done >"$work/rssvars.out"
[ $bad = 0 ] && [ ! -e "$work/rssvars/rss" ]
tap $? "make rss refuses RSS_COST=2, RSS_AGAIN=yes and RSS_SEEDS 0 or x before it builds anything" \
	"$(cat "$work/rssvars.out")"

# headline.py in modeled cycles: a row's two windows priced per op; a
# row whose window the plugin did not count reads "-", not its -icount
# ratio.
cat >"$work/hl.log" <<'EOF'
=== PN-BENCH-BEGIN
# window 3 ops 1000 window 4 ops 2000
tree_precise_sum                        1000  percpu_counter_sum                     2000   0.50
# window 1 ops 100 window 2 ops 100
add_local (flat)                               500  percpu_counter_add (own)                         500   1.00
=== PN-BENCH-END
EOF
printf '%s\n' "# pn_cost vcpus=1" "pn-cost 3 all 100000 100000 0 0 0 0 0 0 0" \
	"pn-cost 4 all 100000 100000 0 0 0 0 0 0 100" "pn-cost 1 all 1000 1000 0 0 0 0 0 0 0" >"$work/hl.cost"
out=$(python3 "$REPO/scripts/headline.py" 4of4="$work/hl.log,$work/hl.cost" 2>&1)
cyc=$(echo "$out" | sed -n '/^the same in modeled cycles/,$p')
echo "$out" | grep -q '^tree precise sum / percpu_counter_sum  *0\.50  >= 0\.8   missed$' &&
	echo "$out" | grep -q '^lazy add, upgraded (flat) / percpu_counter_add  *1\.00  >= 1     met$' &&
	echo "$cyc" | grep -q '^tree precise sum / percpu_counter_sum  *0\.51  >= 0\.8   missed$' &&
	echo "$cyc" | grep -q '^lazy add, upgraded (flat) / percpu_counter_add  *-  >= 1     n/a$'
tap $? "headline.py prices a bench row's two windows in modeled cycles (100 against 50.85 a op: 0.51), and a row with an uncounted window reads -" "$out"

# ---- the committed raw data of the published make rss runs ----
# Each Documentation/data/rss-*/ renders its table.md again, and every
# table row the documents quote from it is in it, digit for digit.
arch=("$REPO"/Documentation/data/rss-*/)
if [ -d "${arch[0]}" ]; then
	out=$(python3 "$REPO/scripts/rss-archive-check.py" "$REPO/README" \
		"$REPO"/Documentation/*.rst "${arch[@]}" 2>&1)
	r=$?
	none=0
	echo "$out" | tail -n 1 | grep -q '^0 quoted rows' && none=1
	[ $r = 0 ] && [ $none = 0 ]
	tap $? "the published make rss tables render again from their committed raw data, and the documents quote them right ($(echo "$out" | tail -n 1))" "$out"
fi

# The committed make bench-cost runs: each renders its headline.txt
# again, and benchmarks.rst quotes it right.
barch=("$REPO"/Documentation/data/bench-*/)
if [ -d "${barch[0]}" ]; then
	out=$(python3 "$REPO/scripts/bench-archive-check.py" "$REPO/README" \
		"$REPO"/Documentation/*.rst "${barch[@]}" 2>&1)
	r=$?
	echo "$out" | tail -n 1 | grep -q '^0 quoted lines' && r=1
	tap $r "the published make bench-cost tables render again from their committed raw data, and the documents quote them right ($(echo "$out" | tail -n 1))" "$out"
fi

echo "1..$n"
