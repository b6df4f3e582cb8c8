# SPDX-License-Identifier: GPL-2.0
# Guest-side helpers (busybox sh) for the pcpu_next QEMU lanes.  Every
# outcome is printed as a "=== PN-..." marker line that scripts/summary.py
# counts on the host.

PN=/sys/kernel/debug/pcpu_next

pn_result()	# PASS|FAIL name
{
	echo "=== PN-RESULT $1 $2"
	[ "$1" = PASS ]
}

pn_insmod()
{
	echo "=== PN-INSMOD-BEGIN"
	if insmod /pcpu_next.ko "$@"; then
		echo "=== PN-INSMOD-END ok"
	else
		echo "=== PN-INSMOD-END failed"
		pn_result FAIL insmod
		return 1
	fi
}

# The sample client (samples/): its load runs its checks against the
# loaded pcpu_next through the public API only; rmmod it again.
pn_client()
{
	echo "=== PN-CLIENT-BEGIN"
	if insmod /pcpu_next_client.ko; then
		rmmod pcpu_next_client
		pn_result PASS client
	else
		pn_result FAIL client
	fi
	dmesg | grep 'pcpu_next_client:' | sed 's/^/# /'
	echo "=== PN-CLIENT-END"
}

pn_rmmod()
{
	if rmmod pcpu_next; then pn_result PASS rmmod; else pn_result FAIL rmmod; fi
}

# KTAP of every pcpu_next KUnit suite that ran at insmod (KUNIT_DEBUGFS).
pn_ktap()
{
	local d n=0
	for d in /sys/kernel/debug/kunit/pcpu_next*; do
		[ -d "$d" ] || continue
		n=$((n + 1))
		echo "=== PN-KTAP-BEGIN $(basename "$d")"
		cat "$d/results"
		echo "=== PN-KTAP-END"
	done
	[ "$n" -gt 0 ] || { pn_result FAIL kunit-suites-present; return 1; }
}

# pn_wait FILE: wait until the run started on FILE ends (bounded).
pn_wait()
{
	local i=0
	while grep -q '^RUNNING' "$PN/$1"; do
		usleep 100000
		i=$((i + 1))
		[ $i -lt 9000 ] || { echo "run on $1 never ended"; return 1; }
	done
}

# pn_stress "test=NAME key=value ...": one stress run, PASS/FAIL marker.
pn_stress()
{
	local line name
	name=$(echo "$1" | sed 's/^test=\([a-z0-9_]*\).*/\1/')
	if ! echo "$1" >"$PN/stress"; then
		pn_result FAIL "stress:$name:write"
		return 1
	fi
	pn_wait stress || { pn_result FAIL "stress:$name:timeout"; return 1; }
	line=$(tail -n 1 "$PN/stress")
	echo "=== PN-STRESS $line"
	case "$line" in
	*" PASS") pn_result PASS "stress:$name" ;;
	*) pn_result FAIL "stress:$name" ;;
	esac
}

# pn_bench "test=NAME ...": print the table between markers.
pn_bench()
{
	local name
	name=$(echo "$1" | sed 's/^test=\([a-z0-9_]*\).*/\1/')
	if ! echo "$1" >"$PN/bench"; then
		pn_result FAIL "bench:$name:write"
		return 1
	fi
	pn_wait bench || { pn_result FAIL "bench:$name:timeout"; return 1; }
	echo "=== PN-BENCH-BEGIN $name"
	cat "$PN/bench"
	echo "=== PN-BENCH-END"
	tail -n 1 "$PN/bench" | grep -q '^# PASS' && pn_result PASS "bench:$name" ||
		pn_result FAIL "bench:$name"
}

pn_selftests()
{
	local t rc all=0
	for t in /selftests/*; do
		[ -x "$t" ] || continue
		echo "=== PN-SELFTEST-BEGIN $(basename "$t")"
		"$t"
		rc=$?
		echo "=== PN-SELFTEST-END rc=$rc"
		[ $rc -eq 0 ] || all=1
	done
	return $all
}

# Names of the tests that have a stress (or bench) mode.
pn_tests()	# stress|bench
{
	grep "$1" "$PN/list" | cut -d' ' -f1
}

pn_kmemleak_clear()
{
	[ -e /sys/kernel/debug/kmemleak ] && echo clear >/sys/kernel/debug/kmemleak
}

pn_kmemleak_check()
{
	local f=/sys/kernel/debug/kmemleak
	[ -e "$f" ] || { echo "no kmemleak"; return 0; }
	sleep 6
	echo scan >$f
	sleep 1
	echo scan >$f
	if [ -s $f ]; then
		cat $f
		pn_result FAIL kmemleak
	else
		pn_result PASS kmemleak
	fi
}

# rmmod while a 60 s run is active must stop the run and unload promptly.
pn_rmmod_during_run()
{
	local t0 t1
	insmod /pcpu_next.ko || { pn_result FAIL rmmod-during-run; return 1; }
	echo "test=${1:-percpu} seconds=60" >"$PN/stress" ||
		{ pn_result FAIL rmmod-during-run; return 1; }
	sleep 1
	t0=$(date +%s)
	if ! rmmod pcpu_next; then
		pn_result FAIL rmmod-during-run
		return 1
	fi
	t1=$(date +%s)
	echo "rmmod during run took $((t1 - t0)) s"
	[ $((t1 - t0)) -lt 20 ] && pn_result PASS rmmod-during-run ||
		pn_result FAIL rmmod-during-run
}

# Random CPU hotplug in the background: CPUs other than 0 go offline and
# online at random until pn_hotplug_stop.  Prints how many transitions.
pn_hotplug_start()
{
	(
		n=0
		trap 'echo "hotplug: $n transitions"; exit 0' TERM
		cpus=$(ls -d /sys/devices/system/cpu/cpu[1-9]* 2>/dev/null)
		[ -n "$cpus" ] || exit 0
		while :; do
			for c in $cpus; do
				[ $((RANDOM % 2)) -eq 0 ] && continue
				f=$c/online
				if [ "$(cat $f)" = 1 ]; then
					echo 0 >$f 2>/dev/null && n=$((n + 1))
				else
					echo 1 >$f 2>/dev/null && n=$((n + 1))
				fi
			done
			usleep $((RANDOM * 10))
		done
	) &
	PN_HOTPLUG_PID=$!
}

pn_hotplug_stop()
{
	local c
	[ -n "${PN_HOTPLUG_PID:-}" ] || return 0
	kill -TERM "$PN_HOTPLUG_PID"
	wait "$PN_HOTPLUG_PID"
	PN_HOTPLUG_PID=
	for c in /sys/devices/system/cpu/cpu[1-9]*/online; do
		echo 1 >"$c" 2>/dev/null
	done
}

pn_percpu_kb()
{
	sed -n 's/^Percpu: *\([0-9]*\) kB/\1/p' /proc/meminfo
}

# Live per-CPU allocations in the kernel (CONFIG_PERCPU_STATS).
pn_percpu_allocs()
{
	sed -n 's/^ *nr_cur_alloc *: *\([0-9]*\)$/\1/p' /sys/kernel/debug/percpu_stats 2>/dev/null
}

# pn_percpu_allocs_settled [TARGET]: the live allocation count once it
# stops moving (two equal reads 1 s apart), or as soon as it is at most
# TARGET; gives up after 30 s and prints the last value.
pn_percpu_allocs_settled()
{
	local i=0 prev="" cur
	while [ $i -lt 30 ]; do
		cur=$(pn_percpu_allocs)
		[ -n "${1:-}" ] && [ -n "$cur" ] && [ "$cur" -le "$1" ] && break
		[ -z "${1:-}" ] && [ "$cur" = "$prev" ] && break
		prev=$cur
		sleep 1
		i=$((i + 1))
	done
	echo "$cur"
}

# pn_stress_faults [RATES]: every test that supports faults= runs at each
# rate (per mille).  The tests check themselves that every injected failure
# surfaced and cost nothing; here the high-rate runs must also have
# injected something, or the fault sites are not wired.  faults= needs
# CONFIG_FAULT_INJECTION (the sites are fault_attrs), whose sign is
# /proc/self/fail-nth, as in the selftests; without it nothing runs.
pn_stress_faults()
{
	local t rate line inj sum n
	if [ ! -e /proc/self/fail-nth ]; then
		echo "faults: no CONFIG_FAULT_INJECTION, fault-injected runs skipped"
		return 0
	fi
	for t in $(pn_tests faults); do
		for rate in ${1:-20 300}; do
			pn_stress "test=$t ms=${PN_FAULT_MS:-1500} faults=$rate"
			[ "$rate" -ge 100 ] || continue
			line=$(tail -n 1 "$PN/stress")
			inj=$(echo "$line" | sed -n 's/.*injected=\([a-z0-9:,]*\).*/\1/p')
			sum=0
			for n in $(echo "$inj" | tr ',' '\n' | cut -d: -f2); do
				sum=$((sum + n))
			done
			echo "faults: test=$t rate=$rate injected=$inj"
			[ "$sum" -gt 0 ] && pn_result PASS "faults:$t:$rate:injected" ||
				pn_result FAIL "faults:$t:$rate:injected"
		done
	done
}

# rmmod while writers and readers hammer every debugfs file and a
# fault-injected run is active: rmmod must succeed (retried while an open
# file pins the module), the run must not survive it, and the kernel log
# stays clean (checked by the host).
pn_rmmod_during_fuzz()
{
	local i pids="" ok=0 f=" faults=50" f2=" faults=200"
	[ -e /proc/self/fail-nth ] || { f=""; f2=""; }	# no fault injection
	insmod /pcpu_next.ko || { pn_result FAIL rmmod-during-fuzz; return 1; }
	echo "test=alloc seconds=60$f" >"$PN/stress" ||
		{ pn_result FAIL rmmod-during-fuzz; return 1; }
	for i in 1 2 3; do
		(
			while :; do
				echo "test=lazy ms=40$f2" >"$PN/stress"
				echo "test=percpu ms=30 threads=2" >"$PN/bench"
				echo "test=nosuch x=1" >"$PN/stress"
				echo "add $i" >"$PN/mmcid"
				echo "add x" >"$PN/mmcid"
				cat "$PN/stress" "$PN/bench" "$PN/list" \
				    "$PN/alloc/stats" \
				    "$PN/mmcid"
			done >/dev/null 2>&1
		) &
		pids="$pids $!"
	done
	sleep 2
	for i in $(seq 1 100); do
		if rmmod pcpu_next 2>/dev/null; then
			ok=1
			break
		fi
		usleep 100000
	done
	kill $pids
	wait $pids 2>/dev/null
	echo "rmmod during fuzz: $i attempt(s)"
	# gone, and its debugfs files with it (the host forgives the
	# kernel's own open/rmmod race warning because of this check)
	if [ $ok = 1 ] && [ ! -d /sys/module/pcpu_next ] && [ ! -e "$PN" ]; then
		pn_result PASS rmmod-during-fuzz
	else
		pn_result FAIL rmmod-during-fuzz
		rmmod pcpu_next 2>/dev/null
	fi
}
