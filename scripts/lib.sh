# SPDX-License-Identifier: GPL-2.0
# Shared helpers for the pcpu_next lane scripts.  Sourced, not run.

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Build caches live outside the repository so that a fresh clone reuses them.
CACHE=${PCPU_NEXT_CACHE:-/var/cache/pcpu_next}
JOBS=${JOBS:-$(nproc)}

die()
{
	echo "error: $*" >&2
	exit 1
}

stock_abi()
{
	cat "$CACHE/stock-abi" 2>/dev/null || die "run scripts/deps.sh first"
}

# Debian's archive beyond bookworm (sid, trixie-backports),
# through apt's own configuration kept under $CACHE/apt7: the system's
# sources and its installed packages are never touched.  Packages from
# there are only downloaded and unpacked (they need a newer libc).
APT7=$CACHE/apt7
apt7()	# apt-get|apt-cache ARGS...
{
	local tool=$1
	shift
	"$tool" -o Dir::Etc::SourceList="$APT7/sources.list" \
		-o Dir::Etc::SourceParts=/nonexistent -o Dir::State::Lists="$APT7/lists" \
		-o Dir::Cache="$APT7/cache" -o APT::Architecture=amd64 \
		-o Acquire::Languages=none -o APT::Sandbox::User=root "$@"
}

# Linux 7.x from Debian's archive: deps.sh records, per series, the
# source package version it picked (7.2: 7.2.13-1; 7.3: 7.3.4-1~bpo13+1)
# and the ABI of Debian's image of it (7.2.13+deb14, 7.3.4+deb13).
# 7.2 is what the test kernels and the rss series are built from; 7.3
# has a stock lane and a build of the series.
k7_version()	# series
{
	cat "$CACHE/k${1/./}-version" 2>/dev/null || die "no $1 source picked: run scripts/deps.sh"
}

k7_abi()	# series
{
	cat "$CACHE/k${1/./}-abi" 2>/dev/null || die "no $1 image picked: run scripts/deps.sh"
}

k72_version() { k7_version 7.2; }
k72_abi() { k7_abi 7.2; }

# Pristine kernel source: Debian's linux-source-7.2, unpacked once.
# KSRC_SERIES=7.3 picks linux-source-7.3 (trixie-backports), 6.12
# Debian's linux-source-6.12 (bookworm), for what has not moved to 7.2.
ksrc_version()
{
	case ${KSRC_SERIES:-7.2} in
	7.2 | 7.3) k7_version "${KSRC_SERIES:-7.2}" ;;
	6.12)
		dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null ||
			die "linux-source-6.12 missing: run scripts/deps.sh"
		;;
	*) die "KSRC_SERIES=$KSRC_SERIES: 7.2, 7.3 or 6.12" ;;
	esac
}

ksrc()
{
	local ver dir series
	ver=$(ksrc_version)
	dir="$CACHE/src/$ver"
	if [ ! -e "$dir/.unpacked" ]; then
		mkdir -p "$CACHE/src"
		exec 8>"$dir.lock"
		flock 8
	fi
	if [ ! -e "$dir/.unpacked" ]; then
		rm -rf "$dir"
		mkdir -p "$dir"
		case ${KSRC_SERIES:-7.2} in
		7.2 | 7.3)
			series=${KSRC_SERIES:-7.2}
			dpkg-deb --fsys-tarfile "$CACHE/debs/linux-source-${series}_${ver}_all.deb" |
				tar -xO "./usr/src/linux-source-$series.tar.xz" |
				tar -xJ -C "$dir" --strip-components=1 ||
				die "cannot unpack linux-source-$series $ver"
			;;
		6.12)
			tar -xJf /usr/src/linux-source-6.12.tar.xz -C "$dir" --strip-components=1 ||
				die "cannot unpack linux-source-6.12"
			;;
		esac
		touch "$dir/.unpacked"
	fi
	echo "$dir"
}

# rss_series: the rss_stat series of rss/patches into the array
# `patches`, every numbered patch with a diff (not the cover letter);
# dies unless the source is the 7.2 the series is against, or the 7.3
# it is build-checked on.
rss_series()
{
	local p ver
	ver=$(ksrc_version)
	case $ver in
	7.2.* | 7.3.*) ;;
	*) die "the rss_stat series is against linux-source-7.2 (or 7.3), not $ver" ;;
	esac
	patches=()
	for p in "$REPO"/rss/patches/[0-9][0-9][0-9][0-9]-*.patch; do
		grep -q '^diff --git ' "$p" && patches+=("$p")
	done
	[ ${#patches[@]} -gt 0 ] || die "no patches in rss/patches"
}

# Stable short hash of files/strings, for cache keys.
key_of()
{
	cat "$@" | sha256sum | cut -c1-12
}

# Where build logs and VM logs of this run go.
OUT=${PCPU_NEXT_OUT:-$REPO/.out}
mkdir -p "$OUT"

# build_module SRC KDIR WORKDIR: build pcpu_next.ko from a copy of SRC (so
# that builds for several kernels never share objects); W=1 must be silent.
# The module's options come from PN_OPTS (default: library and harness,
# no fast-path statistics; e.g. PN_OPTS="CONFIG_PCPU_NEXT_TORTURE=y
# CONFIG_PCPU_NEXT_STATS=y").  Prints the path of the .ko.
build_module()
{
	local src=$1 kdir=$2 work=$3 blog
	mkdir -p "$work/src"
	rsync -a --delete --exclude .git --exclude .out --exclude 'selftests/out' \
		"$src"/ "$work/src"/
	blog=$work/build.log
	# shellcheck disable=SC2086 # PN_OPTS is a list of make assignments
	if ! make -C "$kdir" M="$work/src" CONFIG_PCPU_NEXT=m \
		${PN_OPTS-CONFIG_PCPU_NEXT_TORTURE=y} W=1 modules >"$blog" 2>&1; then
		tail -n 40 "$blog" >&2
		die "module build against $kdir failed"
	fi
	if grep -E 'warning:|error:' "$blog" >&2; then
		die "module build against $kdir is not warning-free (W=1)"
	fi
	echo "$work/src/pcpu_next.ko"
}

# build_client KDIR WORKDIR: build the sample client (samples/) of the
# module that build_module built in WORKDIR, against that module's
# Module.symvers (KBUILD_EXTRA_SYMBOLS), W=1 silent.  Prints the .ko.
build_client()
{
	local kdir=$1 work=$2 blog
	blog=$work/client.log
	if ! make -C "$kdir" M="$work/src/samples" \
		KBUILD_EXTRA_SYMBOLS="$work/src/Module.symvers" W=1 modules >"$blog" 2>&1; then
		tail -n 40 "$blog" >&2
		die "sample client build against $kdir failed"
	fi
	if grep -E 'warning:|error:' "$blog" >&2; then
		die "sample client build against $kdir is not warning-free (W=1)"
	fi
	echo "$work/src/samples/pcpu_next_client.ko"
}

# build_selftests SRC WORKDIR: static selftest binaries in WORKDIR/bin.
build_selftests()
{
	local src=$1 work=$2
	mkdir -p "$work/bin"
	make -s -C "$src/selftests" OUTPUT="$work/bin" KSRC="$(ksrc)" >"$work/build.log" 2>&1 ||
		{ tail -n 40 "$work/build.log" >&2; die "selftests build failed"; }
}

SPLAT_RE='BUG:|WARNING:|Oops|Call Trace|general protection fault|unreferenced object|kmemleak: [0-9]+ new suspected|possible recursive locking|possible circular locking|inconsistent lock state|suspicious RCU usage|sleeping function called from invalid context|UBSAN:|Kernel panic|soft lockup|hung_task|rcu: INFO|detected stall'

# kcsan_filter: copy a console log, replacing every KCSAN report in which
# neither racing access has a pcpu_next frame among its first two by one
# note line.  Such reports are races inside the kernel itself (seen here:
# osq_lock/osq_unlock under a contended mutex); they stay in the raw log.
# A report with a pcpu_next frame near either access is kept, and fails.
kcsan_filter()
{
	awk '
	/BUG: KCSAN:/ { inrep = 1; buf = $0 "\n"; ours = 0; frames = 0; done = 0; next }
	inrep {
		buf = buf $0 "\n"
		if ($0 ~ /(read|write).* by (task|interrupt|hardirq|softirq)/) { frames = 2; next }
		if (frames > 0) { if ($0 ~ /\[pcpu_next\]/) ours = 1; frames-- }
		if ($0 ~ /^Reported by Kernel Concurrency Sanitizer/) done = 1
		if (done && $0 ~ /^=====/) {
			if (ours) printf "%s", buf
			else print "pcpu_next: kernel-internal KCSAN report without a module frame (see raw log)"
			inrep = 0
		}
		next
	}
	{ print }
	END { if (inrep) printf "%s", buf }' "$1"
}

# debugfs_race_filter: drop the one warning that the kernel itself raises
# when a debugfs file is opened while its module is being removed: 6.12's
# delete_module() drops the module's last reference before it marks the
# module GOING (try_stop_module()), and an open in between fails
# try_module_get() on a module that still looks live, which
# full_proxy_open() reports as "debugfs file owner did not clean up at
# exit" (seen on the PREEMPT_RT kernel, where rmmod can be preempted
# there, in the rmmod-during-fuzz step).  A module that really left a
# file behind fails that step instead: it checks that the module's debugfs
# directory is gone.  Each such WARNING and the Call Trace line of its
# report become one note; any other splat stays.
debugfs_race_filter()
{
	awk '
	/debugfs file owner did not clean up at exit/ { next }
	# 6.12: "WARNING: CPU: 1 PID: 99 at fs/debugfs/file.c:310 full_proxy_open+0x..."
	# 7.x:  "WARNING: fs/debugfs/file.c:310 at full_proxy_open+0x..., CPU#1: cat/99"
	/WARNING: (CPU: [0-9]+ PID: [0-9]+ at )?fs\/debugfs\/file\.c:[0-9]+ (at )?full_proxy_open/ {
		pending++
		print "pcpu_next: kernel-internal debugfs open/rmmod race warning (see raw log)"
		next
	}
	pending > 0 && /Call Trace:/ { pending--; next }
	{ print }'
}

# splats LOG: true if the console log shows a kernel splat.
splats()
{
	kcsan_filter "$1" | debugfs_race_filter | grep -qE "$SPLAT_RE"
}

splats_show()
{
	kcsan_filter "$1" | debugfs_race_filter | grep -nE -A 12 "$SPLAT_RE" | head -n 60
}

# bench_instrument: set $instrument and $vmflags for a benchmark's boots.
# Where KVM works (kvm_works, and PN_NO_KVM is empty): KVM, the machine's own
# time.  Otherwise QEMU's instruction-counted clock: a guest nanosecond
# is one instruction, so a figure is a path length, the same under any
# host load.  Every table says which one made it.

# kvm_works: KVM runs a real guest here.  A /dev/kvm that opens proves
# nothing.  Seen here: vCPUs that abort QEMU at reset ("failed to set
# MSR"), and a paused (-S) vCPU that stays up while every real guest
# dies at its first instruction, then hangs.  So the probe boots
# Debian's stock kernel with a one-line init under KVM, -cpu host, and
# says yes only if that init prints its marker within PN_KVM_PROBE_SECS
# (default 8) seconds.  QEMU is stopped either way.  The answer is kept
# in PN_KVM_OK (yes/no) for this shell and its children.
# For the host lane's stand-ins: PN_KVM_QEMU, the QEMU binary;
# PN_KVM_DEV, the device (default /dev/kvm); PN_KVM_KERNEL, the kernel.
KVM_MARKER="=== PN-KVM-PROBE init ran"
kvm_works()
{
	case ${PN_KVM_OK:-} in
	yes) return 0 ;;
	no) return 1 ;;
	esac
	PN_KVM_OK=no
	! kvm_probe || PN_KVM_OK=yes
	export PN_KVM_OK
	echo "kvm probe: ${PN_KVM_OK/no/no, TCG}" >&2
	[ "$PN_KVM_OK" = yes ]
}

# kvm_probe: one probe boot, no caching (kvm_works).  0: the marker came.
kvm_probe()
{
	local qemu=${PN_KVM_QEMU:-qemu-system-x86_64} secs=${PN_KVM_PROBE_SECS:-8}
	local dev=${PN_KVM_DEV:-/dev/kvm} dir kernel pid i ok=1
	[ -w "$dev" ] || return 1
	kernel=${PN_KVM_KERNEL:-$CACHE/stock-$(cat "$CACHE/stock-abi" 2>/dev/null)/vmlinuz}
	[ -s "$kernel" ] || { echo "kvm probe: no stock kernel (scripts/deps.sh)" >&2; return 1; }
	dir=$(mktemp -d) || return 1
	mkdir -p "$dir/root/bin"
	cp /bin/busybox "$dir/root/bin/busybox" || { rm -rf "$dir"; return 1; }
	printf '#!/bin/busybox sh\n/bin/busybox echo "%s"\n/bin/busybox poweroff -f\n' \
		"$KVM_MARKER" >"$dir/root/init"
	chmod +x "$dir/root/init"
	(cd "$dir/root" && find . | cpio -o -H newc --quiet) >"$dir/initrd" || { rm -rf "$dir"; return 1; }
	timeout -k 1 "$secs" "$qemu" -accel kvm -cpu host -machine pc -m 256 -smp 1 \
		-nodefaults -display none -monitor none -no-reboot -serial stdio \
		-kernel "$kernel" -initrd "$dir/initrd" -append "console=ttyS0 panic=-1 quiet" \
		</dev/null >"$dir/log" 2>&1 &
	pid=$!
	# (bash reports a QEMU that aborted on stderr: not ours to show.)
	{
		for ((i = 0; i < secs * 10; i++)); do
			if grep -qF "$KVM_MARKER" "$dir/log"; then
				ok=0
				break
			fi
			kill -0 "$pid" || break
			sleep 0.1
		done
		kill "$pid"
		wait "$pid"
	} 2>/dev/null
	# The marker may have come with QEMU's exit.
	[ "$ok" = 0 ] || ! grep -qF "$KVM_MARKER" "$dir/log" || ok=0
	[ "$ok" = 0 ] || echo "kvm probe: no marker within $secs s; QEMU's last line:" \
		"$(grep -v '^[[:space:]]*$' "$dir/log" | tail -n 1 | cut -c1-120)" >&2
	rm -rf "$dir"
	return "$ok"
}

bench_instrument()
{
	if [ -z "${PN_NO_KVM:-}" ] && kvm_works; then
		instrument=kvm vmflags=(--kvm)
	else
		instrument=icount vmflags=(--icount)
	fi
}

# bench_title: one line naming the instrument, for a table's head.
bench_title()
{
	if [ "$instrument" = kvm ]; then
		echo "instrument: KVM on $(nproc) host CPUs, wall clock"
	else
		echo "instrument: QEMU TCG -icount shift=0 (guest ns = instructions: path lengths;" \
			"threads share one host thread, so scaling is not measured)"
	fi
}
