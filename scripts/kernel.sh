#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (once) a test kernel from Debian's linux-source-7.2 (scripts/lib.sh
# ksrc; KSRC_SERIES=6.12 for linux-source-6.12):
# allnoconfig + scripts/debug.config.  The build directory is cached under
# $CACHE/kbuild/<source version>-<config hash>, so a rerun with the same
# source and fragment does not rebuild.  Prints the build directory.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

frag=${1:-$REPO/scripts/debug.config}
src=$(ksrc)
name=$(basename "$frag" .config)
bdir="$CACHE/kbuild/$name-$(ksrc_version)-$(key_of "$frag")"

if [ -e "$bdir/.built" ]; then
	echo "$bdir"
	exit 0
fi
mkdir -p "$bdir"
# One build per directory: a second caller waits for the first, then
# finds the kernel built.
exec 9>"$bdir.lock"
flock 9
if [ -e "$bdir/.built" ]; then
	echo "$bdir"
	exit 0
fi
log="$bdir/build.log"
{
	make -C "$src" O="$bdir" allnoconfig
	"$src/scripts/kconfig/merge_config.sh" -m -O "$bdir" "$bdir/.config" "$frag"
	make -C "$src" O="$bdir" olddefconfig
} >"$log" 2>&1 || { tail -n 40 "$log" >&2; die "kernel config failed"; }

# Every option of the fragment must have survived olddefconfig.
missing=0
while read -r line; do
	case "$line" in
	CONFIG_*=*)
		grep -qx "$line" "$bdir/.config" || { echo "kernel.sh: $line not set" >&2; missing=1; }
		;;
	esac
done <"$frag"
[ "$missing" = 0 ] || die "config fragment $frag not satisfiable"

echo "kernel.sh: building $name kernel in $bdir (log: $log)" >&2
make -C "$src" O="$bdir" -j"$JOBS" bzImage modules >>"$log" 2>&1 ||
	{ tail -n 40 "$log" >&2; die "kernel build failed"; }
touch "$bdir/.built"
echo "$bdir"
