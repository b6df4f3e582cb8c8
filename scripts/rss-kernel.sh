#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (incrementally, cached) the rss_stat kernels of `make rss`:
#
#   rss-kernel.sh patched   linux-source-7.2 (ksrc) + the series
#                           rss/patches/0001..*.patch (0000, the cover
#                           letter, has no diff): 0001 carries the library
#                           (scripts/rss-libpatch.sh writes it from this
#                           repository and must find it up to date), so
#                           nothing is overlaid and no -I leads out of the
#                           tree; config: Debian's own 7.2 config without
#                           modules, rss/bench.config, rss/rss-alt.config
#   rss-kernel.sh debug     the patched tree, config allnoconfig +
#                           rss/rss.config + rss/rss-alt.config +
#                           rss/debug.config
#                           (KASAN, lockdep, PROVE_RAW_LOCK_NESTING,
#                           DEBUG_ATOMIC_SLEEP, DEBUG_VM, kmemleak): the
#                           correctness lane of `make check`
#   rss-kernel.sh control   the source without the series, config as
#                           patched without rss-alt.config: the control
#                           for rss_stat=mainline
#   rss-kernel.sh nohotplug the patched tree for arm64 without
#                           CONFIG_HOTPLUG_CPU (rss/nohotplug.config,
#                           cross gcc): compiles the files the series
#                           touches, no image; prints the build directory
#   rss-kernel.sh deb       the series alone (no rss/bench/) on Debian's
#                           own 7.2 config, modules included, +
#                           rss/rss-alt.config + rss/deb.config: `make
#                           bindeb-pkg` (make rss-deb); prints the
#                           directory of the .deb files
#   rss-kernel.sh deb-config
#                           that kernel's config only; prints its .config
#   rss-kernel.sh build73   the series alone (no rss/bench/) on
#                           linux-source-7.3, allnoconfig + rss/rss.config +
#                           rss/rss-alt.config: the build check on 7.3
#                           (7.2 stays the series' base)
#
# The 7.2 kinds but deb also carry the bench-only changes of rss/bench/ (not part
# of the series; acpi_hotplug_slots: QEMU's CPU hotplug slots count as
# possible CPUs under TCG), so the control and the modes differ by the
# series alone.
#
# Prints the path of the bzImage.  The trees are hard-linked copies of
# the pristine source ($CACHE/rss-tree/, $CACHE/rss-control-tree/), see
# patch_tree(): an unchanged series does not rebuild the kernel and a
# library change rebuilds only mm/pcpu_next and what links it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kind=${1:?usage: rss-kernel.sh patched|debug|control|nohotplug|deb|deb-config|build73}
if [ "$kind" = build73 ]; then
	export KSRC_SERIES=7.3
elif [ "${KSRC_SERIES:-7.2}" != 7.2 ]; then
	die "rss-kernel.sh $kind: the series' base is 7.2, not KSRC_SERIES=$KSRC_SERIES"
fi
src=$(ksrc)
ver=$(ksrc_version)
rss_series
# Locks: one patch_tree() at a time per tree (the patched, debug and
# nohotplug builds share the patched tree; the control has its own),
# then one build at a time per build directory.  So the debug kernel of
# make check boots while a benchmark kernel builds from the same tree.
mkdir -p "$CACHE/rss-build"
case $kind in
control) exec 9>"$CACHE/rss-build/.lock-control" ;;
*) exec 9>"$CACHE/rss-build/.lock" ;;
esac
flock 9

# patch_tree TREE PATCH...: TREE becomes a hard-linked copy of the
# pristine source with PATCH... applied.  The files the patches touch are
# copied (links broken) before `patch` runs, and re-made from the pristine
# source only when the patch set changes; a file whose result did not
# change keeps its time, so make rebuilds only what a patch changed.
patch_tree()
{
	local tree=$1 pkey keep f p
	shift
	pkey=$(key_of "$@")
	[ "$(cat "$tree/.patches-key" 2>/dev/null)" != "$pkey" ] || return 0
	if [ ! -e "$tree/.linked" ]; then
		rm -rf "$tree"
		mkdir -p "$(dirname "$tree")"
		cp -al "$src" "$tree"
		touch "$tree/.linked"
	fi
	# Keep the previous series' results, to give the files it
	# leaves unchanged back their times (no needless rebuild).
	keep=$(mktemp -d)
	while read -r f; do
		[ -e "$tree/$f" ] || continue
		mkdir -p "$keep/$(dirname "$f")"
		cp -p "$tree/$f" "$keep/$f"
	done < <(cat "$tree/.patched-files" 2>/dev/null || true)
	# Undo the previous series: pristine copies (links broken
	# for good, patch edits in place) or removal of new files.
	while read -r f; do
		[ -n "$f" ] || continue
		rm -f "$tree/$f"
		if [ -e "$src/$f" ]; then
			cp "$src/$f" "$tree/$f"
		fi
	done < <(cat "$tree/.patched-files" 2>/dev/null || true)
	sed -n 's|^+++ b/||p' "$@" | sort -u >"$tree/.patched-files"
	while read -r f; do
		if [ -e "$tree/$f" ]; then
			cp "$tree/$f" "$tree/$f.new" && mv "$tree/$f.new" "$tree/$f"
		fi
	done <"$tree/.patched-files"
	for p in "$@"; do
		patch -d "$tree" -p1 -s --no-backup-if-mismatch ${fuzz:+-F "$fuzz"} <"$p" ||
			die "$(basename "$p") does not apply to linux-source $ver"
	done
	while read -r f; do
		if [ -e "$keep/$f" ] && cmp -s "$keep/$f" "$tree/$f"; then
			touch -r "$keep/$f" "$tree/$f"
		fi
	done <"$tree/.patched-files"
	rm -rf "$keep"
	echo "$pkey" >"$tree/.patches-key"
}

# Bench-only kernel changes (rss/bench/), not part of the series: applied
# to the patched and the control trees alike.
bench=("$REPO"/rss/bench/[0-9][0-9][0-9][0-9]-*.patch)
[ -e "${bench[0]}" ] || die "no patches in rss/bench"

case $kind in
patched | debug | nohotplug)
	bash "$REPO/scripts/rss-libpatch.sh" --check >/dev/null ||
		die "rss/patches/0001 is not this repository's library: run scripts/rss-libpatch.sh"
	frags=("$REPO/rss/rss.config" "$REPO/rss/rss-alt.config")
	[ "$kind" != patched ] || frags=("$REPO/rss/bench.config" "$REPO/rss/rss-alt.config")
	[ "$kind" != debug ] || frags+=("$REPO/rss/debug.config")
	[ "$kind" != nohotplug ] || frags=("$REPO/rss/nohotplug.config")
	patches+=("${bench[@]}")
	tree=$CACHE/rss-tree/$ver
	patch_tree "$tree" "${patches[@]}"
	bkey=$(key_of "${frags[@]}" "${patches[@]}")
	# The library's KUnit suites, for the debug kernel: copied (not
	# patched: they are this repository's tests, not the series') into
	# drivers/misc/pcpu_next_kunit/, built in when CONFIG_KUNIT is set.
	# `kunit.py exec` runs them on that kernel (scripts/kunit-lane.sh).
	# The harness's suite (control_kunit.c) stays out: no harness here.
	kdir=$tree/drivers/misc/pcpu_next_kunit
	suites=$(cd "$REPO/kunit" && ls ./*_kunit.c | sed 's|^\./||' | grep -vx control_kunit.c)
	mkdir -p "$kdir"
	for f in $suites; do
		sed 's|<pcpu_next/|<linux/pcpu_next/|' "$REPO/kunit/$f" >"$kdir/$f.new"
		if cmp -s "$kdir/$f.new" "$kdir/$f"; then
			rm "$kdir/$f.new"
		else
			mv "$kdir/$f.new" "$kdir/$f"
		fi
	done
	{
		echo "# SPDX-License-Identifier: GPL-2.0"
		echo "# Copied by pcpu_next's scripts/rss-kernel.sh: the library's KUnit suites."
		echo "ccflags-y += -I\$(srctree)/mm/pcpu_next"
		for f in $suites; do
			echo "obj-\$(CONFIG_KUNIT) += ${f%.c}.o"
		done
	} >"$kdir/Makefile.new"
	if cmp -s "$kdir/Makefile.new" "$kdir/Makefile"; then
		rm "$kdir/Makefile.new"
	else
		mv "$kdir/Makefile.new" "$kdir/Makefile"
	fi
	if ! grep -q pcpu_next_kunit "$tree/drivers/misc/Makefile"; then
		cp "$tree/drivers/misc/Makefile" "$tree/drivers/misc/Makefile.new"
		echo 'obj-$(CONFIG_PCPU_NEXT) += pcpu_next_kunit/' >>"$tree/drivers/misc/Makefile.new"
		mv "$tree/drivers/misc/Makefile.new" "$tree/drivers/misc/Makefile"
	fi
	# shellcheck disable=SC2046,SC2086 # file names, no spaces in them
	[ "$kind" != debug ] || bkey=$(key_of "${frags[@]}" "${patches[@]}" $(printf "$REPO/kunit/%s " $suites))
	;;
deb | deb-config)
	bash "$REPO/scripts/rss-libpatch.sh" --check >/dev/null ||
		die "rss/patches/0001 is not this repository's library: run scripts/rss-libpatch.sh"
	frags=("$REPO/rss/rss-alt.config" "$REPO/rss/deb.config")
	tree=$CACHE/rss-deb-tree/$ver
	patch_tree "$tree" "${patches[@]}"
	bkey=$(key_of "${frags[@]}" "${patches[@]}")
	;;
build73)
	bash "$REPO/scripts/rss-libpatch.sh" --check >/dev/null ||
		die "rss/patches/0001 is not this repository's library: run scripts/rss-libpatch.sh"
	frags=("$REPO/rss/rss.config" "$REPO/rss/rss-alt.config")
	tree=$CACHE/rss-tree/$ver
	# Offsets, yes; fuzz, no: every hunk's context is 7.3's own.
	fuzz=0 patch_tree "$tree" "${patches[@]}"
	bkey=$(key_of "${frags[@]}" "${patches[@]}")
	;;
control)
	frags=("$REPO/rss/bench.config")
	tree=$CACHE/rss-control-tree/$ver
	patch_tree "$tree" "${bench[@]}"
	bkey=$(key_of "${frags[@]}" "${bench[@]}")
	;;
*) die "rss-kernel.sh: unknown kind $kind" ;;
esac

# The benchmark kernels and the packages start from Debian's own 7.2
# config; the others from allnoconfig.
base=""
case $kind in
patched | control | deb | deb-config)
	base=$CACHE/stock72-$(k72_abi)/config
	[ -s "$base" ] || die "no config of Debian's 7.2 image: run scripts/deps.sh"
	;;
esac
bdir=$CACHE/rss-build/${kind%-config}-$ver-$(key_of "${frags[@]}" $base)
exec 8>"$bdir.lock"
flock 8
flock -u 9
img=$bdir/arch/x86/boot/bzImage
kmake=(make -C "$tree" O="$bdir")
if [ "$kind" = nohotplug ]; then
	kmake+=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
	img=$bdir
fi
if [ "$kind" = deb ]; then
	# bindeb-pkg writes the packages beside the build directory.
	img=$bdir.debs
fi
if [ -e "$bdir/.built-$bkey" ] && [ -e "$img" ]; then
	echo "$img"
	exit 0
fi
mkdir -p "$bdir"
log=$bdir/config.log
if [ ! -e "$bdir/.configured" ]; then
	{
		if [ -n "$base" ]; then
			cp "$base" "$bdir/.config"
			"$tree/scripts/config" --file "$bdir/.config" \
				--set-str SYSTEM_TRUSTED_KEYS "" \
				--set-str SYSTEM_REVOCATION_KEYS "" --set-str LOCALVERSION ""
			"${kmake[@]}" olddefconfig
			case $kind in deb*) ;; *) "${kmake[@]}" mod2noconfig ;; esac
		else
			"${kmake[@]}" allnoconfig
		fi
		"$tree/scripts/kconfig/merge_config.sh" -m -O "$bdir" "$bdir/.config" "${frags[@]}"
		"${kmake[@]}" olddefconfig
	} >"$log" 2>&1 || { tail -n 40 "$log" >&2; die "rss kernel config failed"; }
	missing=0
	while read -r line; do
		case "$line" in
		CONFIG_*=*)
			grep -qx "$line" "$bdir/.config" ||
				{ echo "rss-kernel.sh: $line not set" >&2; missing=1; }
			;;
		esac
	done < <(cat "${frags[@]}" | awk -F= '
		/^CONFIG_/ { v[$1] = $0 }	# the last fragment that names an option wins
		/^# CONFIG_.* is not set/ { split($0, a, " "); v[a[2]] = "" }
		END { for (k in v) if (v[k] != "") print v[k] }')
	[ "$missing" = 0 ] || die "rss config not satisfiable"
	touch "$bdir/.configured"
fi
if [ "$kind" = deb-config ]; then
	echo "$bdir/.config"
	exit 0
fi
log=$bdir/build.log
echo "rss-kernel.sh: building the $kind rss_stat kernel in $bdir (log: $log)" >&2
if [ "$kind" = nohotplug ]; then
	# what the series compiles: the library, rss_alt.c, and the
	# files whose hunks use the new types (mm.h, mm_types.h users)
	targets=(mm/pcpu_next/ mm/rss_alt.o mm/init-mm.o kernel/fork.o
		 kernel/sched/fair.o kernel/sched/core.o fs/exec.o)
elif [ "$kind" = deb ]; then
	targets=(bindeb-pkg)
	# bindeb-pkg writes beside the build directory: no package of an
	# earlier build may be taken for this one's.
	rm -f "$(dirname "$bdir")"/linux-*.deb "$(dirname "$bdir")"/linux-*.buildinfo \
		"$(dirname "$bdir")"/linux-*.changes
else
	targets=(bzImage)
fi
"${kmake[@]}" -j"$JOBS" "${targets[@]}" >"$log" 2>&1 ||
	{ grep -E 'error|warning' "$log" | head -n 20 >&2; tail -n 30 "$log" >&2; die "rss kernel build failed"; }
# No warning in a file the series adds or changes.
if [ "$kind" != control ] &&
	awk -F: 'NR == FNR { touched[$0] = 1; next }
		/: warning:/ {
			for (t in touched)
				if ($1 == t || substr($1, length($1) - length(t)) == "/" t) {
					print
					bad = 1
					break
				}
		}
		END { exit !bad }' "$tree/.patched-files" "$log" >&2; then
	die "the series or the library warns in the kernel build"
fi
if [ "$kind" = deb ]; then
	rm -rf "$img" && mkdir -p "$img"
	mv "$(dirname "$bdir")"/linux-*"$(cat "$bdir/include/config/kernel.release")"*.deb \
		"$(dirname "$bdir")"/linux-libc-dev_*.deb "$img"/ 2>/dev/null
	ls "$img"/linux-image-*.deb >/dev/null 2>&1 || die "bindeb-pkg left no linux-image package"
fi
rm -f "$bdir"/.built-*
touch "$bdir/.built-$bkey"
echo "$img"
