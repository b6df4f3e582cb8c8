# SPDX-License-Identifier: GPL-2.0
# The benchmarks of `make rss`, in their order, on the running kernel.
# Sourced, not run: by the rss guest (scripts/guest/rss.sh, busybox sh)
# and by rss_here.sh, make rss-here's runner (sh).  POSIX sh.
#
#   rss_bench_all PROGS SECS ICOUNT RECLAIM
#	PROGS    the directory of rss/progs' static programs
#	SECS     seconds per timed benchmark
#	ICOUNT   1 under QEMU -icount (bench_tick's path length), else 0
#	RECLAIM  1: reclaim into a 64 MiB zram swap and back (zram0 must
#	         be free), else 0
#
# RSS_MEM_CHILDREN (default 512) and RSS_OOM_CHILDREN (default 1000) size
# bench_mem and bench_oom; make check's short run takes fewer.
#
# Every result is a line "rss-bench NAME VALUE UNIT" (rss/progs/README).
# With RSS_PERF set to a perf binary, each timed benchmark also runs a
# second time for 2 x SECS, both under `perf stat` (cycles,
# instructions, cache-misses; children included).  The difference of
# the two runs over the difference of their operations is the cost of
# one operation, setup cancelled: "rss-bench NAME.cycles V cycles",
# "NAME.insns V insns", "NAME.misses V misses".  Children and threads
# count too: status_read_4f's include its four faulters.
# rss_bench_all returns 1 if a benchmark program failed.

# rb_timed SECS PROGRAM ARGS...: PROGRAM ARGS --seconds SECS
rb_timed()
{
	local s=$1 out1 out2 d r=0
	shift
	if [ -z "${RSS_PERF:-}" ]; then
		"$@" --seconds "$s"
		return
	fi
	d=$(mktemp -d) || return 1
	out1=$("$RSS_PERF" stat -x, -e cycles,instructions,cache-misses -o "$d/1" -- \
		"$@" --seconds "$s") || r=1
	echo "$out1"
	out2=$("$RSS_PERF" stat -x, -e cycles,instructions,cache-misses -o "$d/2" -- \
		"$@" --seconds "$(awk -v s="$s" 'BEGIN { print 2 * s }')") || r=1
	# (not a result line: the table must not count it)
	echo "$out2" | sed 's/^rss-bench /# 2x: /'
	# perf -x, lines: "value,unit,event,..."; "<not counted>" stays out.
	{ echo "$out1"; echo "@"; echo "$out2"; echo "@"; cat "$d/1"; echo "@"; cat "$d/2"; } |
		awk -F, -v s="$s" '
		BEGIN { part = 0 }
		$0 == "@" { part++; next }
		part < 2 && /^rss-bench / {
			split($0, f, " ")
			if (f[4] == "ops/s") { name = f[2]; ops[part] = f[3] * s * (part + 1) }
			next
		}
		part >= 2 && $1 ~ /^[0-9.]+$/ {
			# "cycles:u"; on hybrid CPUs "cpu_core/cycles/" and
			# "cpu_atom/cycles/", summed
			ev = $3
			sub(/:.*/, "", ev)
			sub(/^cpu_[a-z]+\//, "", ev)
			sub(/\/$/, "", ev)
			c[part - 2, ev] += $1
		}
		END {
			if (name == "" || !(ops[1] > ops[0])) {
				print "# perf: " (name == "" ? "no ops/s result" : name ": no more ops in 2x the time")
				exit
			}
			split("cycles cycles instructions insns cache-misses misses", u, " ")
			for (i = 1; i < 6; i += 2) {
				if ((0, u[i]) in c && (1, u[i]) in c)
					printf "rss-bench %s.%s %.3f %s\n", name, u[i + 1],
						(c[1, u[i]] - c[0, u[i]]) / (ops[1] - ops[0]), u[i + 1]
				else
					printf "# perf: %s not counted for %s\n", u[i], name
			}
		}'
	rm -rf "$d"
	return $r
}

# The per-CPU allocator's lock holds per child of bench_fork --mode $1
# (rss/bench/: debugfs percpu_hold, path length under icount), what the
# contention model of rss_table.py works from: the difference of a 0.1
# and a 0.3 s run, so that the shell's own forks and bench_fork's start
# cancel out.  Kernels without rss/bench/ (a real machine's) skip it.
rb_hold_run()	# progs mode seconds: "children and the six sums"
{
	local f=/sys/kernel/debug/percpu_hold out n mns mn alns aln flns fln
	echo 1 >$f
	out=$("$1/bench_fork" --mode "$2" --forkers 1 --true "$1/true" --seconds "$3") ||
		return 1
	read -r mns mn alns aln flns fln <$f
	echo 0 >$f
	n=$(echo "$out" | sed -n 's/^# [a-z_0-9]*: \([0-9]*\) children.*/\1/p')
	[ -n "$fln" ] && [ -n "$n" ] || return 1
	echo "$n $mns $mn $alns $aln $flns $fln"
}

rb_hold()	# progs mode
{
	local a b
	if [ ! -w /sys/kernel/debug/percpu_hold ]; then
		echo "# no debugfs percpu_hold: no hold times"
		return
	fi
	if ! a=$(rb_hold_run "$1" "$2" 0.1) || ! b=$(rb_hold_run "$1" "$2" 0.3); then
		echo "# hold $2: a run failed"
		return
	fi
	echo "$a $b" | awk -v m="$2" '{
		dn = $8 - $1
		if (dn <= 0)
			exit 1
		printf "rss-bench hold_mutex_fork_%s %.3f insns\n", m, ($9 - $2) / dn
		printf "rss-bench hold_alloc_lock_fork_%s %.3f insns\n", m, ($11 - $4) / dn
		printf "rss-bench hold_free_lock_fork_%s %.3f insns\n", m, ($13 - $6) / dn
		fmt = "# hold %s: %d children apart; per child: pcpu_alloc_mutex %.2f, pcpu_lock %.2f + %.2f times\n"
		printf fmt, m, dn, ($10 - $3) / dn, ($12 - $5) / dn, ($14 - $7) / dn
	}' || echo "# hold $2: the runs did not differ in children"
}

rss_bench_all()	# progs secs icount reclaim
{
	local p=$1 secs=$2 ic="" rc=0 n

	# The benchmarks "from every CPU" use every CPU this shell may run
	# on: 4 in make rss's 4-online shapes and in make rss-here's pinned
	# runs, 16 or 64 in the many-online shapes.
	n=$(nproc)
	[ "$n" -le 256 ] || n=256	# the programs' MAX_THREADS

	# Memory first: before the fork benchmarks leave free populated
	# per-CPU pages and constructed objects behind (rss/progs/README).
	"$p/bench_mem" --children "${RSS_MEM_CHILDREN:-512}" || rc=1
	"$p/bench_mem" --children "${RSS_MEM_CHILDREN:-512}" --threads-per-child 4 || rc=1
	rb_timed "$secs" "$p/bench_fork" --mode exec --forkers 1 --true "$p/true" || rc=1
	rb_timed "$secs" "$p/bench_fork" --mode exec --forkers "$n" --true "$p/true" || rc=1
	rb_timed "$secs" "$p/bench_fork" --mode exit --forkers 1 || rc=1
	rb_timed "$secs" "$p/bench_fork" --mode exit --forkers 1 --threads 4 || rc=1
	rb_timed "$secs" "$p/bench_fork" --mode spawn --forkers 1 --true "$p/true" || rc=1
	rb_hold "$p" exit
	rb_hold "$p" exec
	rb_timed "$secs" "$p/bench_thread" || rc=1
	rb_timed "$secs" "$p/bench_fault" --threads 1 || rc=1
	rb_timed "$secs" "$p/bench_fault" --threads "$n" || rc=1
	rb_timed "$secs" "$p/bench_status" --faulters "$n" || rc=1
	rb_timed "$secs" "$p/bench_oom" --children "${RSS_OOM_CHILDREN:-1000}" || rc=1
	"$p/bench_drift" || rc=1
	# The tick's RSS read (TASK_XACCT): a process spins secs x 10^9
	# instructions of a user loop.  Its path length needs the
	# instruction-counted clock; elsewhere bench_tick prints "#" lines
	# only.  One thread only: beside three sleeping threads of its
	# process the same loop measured 0.6 to 1.7 million instructions a
	# tick, with hundreds of function-call IPIs (CAL in
	# /proc/interrupts): not a path length.  With the other CPUs
	# offline even one thread measured 0.8 million: offline vCPUs are
	# not idle under QEMU.  The clock counts every CPU: let what the
	# benchmarks above left running settle first.
	[ "$3" != 1 ] || ic=--icount
	sleep 1
	"$p/bench_tick" --threads 1 --loops "$(awk -v s="$secs" 'BEGIN { printf "%d", s * 1e9 / 2 }')" $ic ||
		rc=1
	# Reclaim into zram and back; swap is on for these two only.
	if [ "$4" != 1 ]; then
		echo "# reclaim not asked for: no reclaim benchmarks"
	elif echo 64M 2>/dev/null >/sys/block/zram0/disksize && mkswap /dev/zram0 >/dev/null &&
		swapon /dev/zram0; then
		rb_timed "$secs" "$p/bench_reclaim" --mode pageout || rc=1
		rb_timed "$secs" "$p/bench_reclaim" --mode swapin || rc=1
		swapoff /dev/zram0
	else
		echo "# no zram swap: no reclaim benchmarks"
	fi
	return $rc
}
