#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Patch 0001 of the rss_stat series: the pcpu_next library in a kernel
# tree's layout, generated from this repository (the one copy of the
# library; the series carries it, nothing is overlaid at build time).
#
#   scripts/rss-libpatch.sh [--dir DIR]   (re)write DIR/0001-*.patch
#   scripts/rss-libpatch.sh --check [--dir DIR]
#                                         exit 1 if DIR/0001-*.patch is not
#                                         what this repository generates
#
# DIR defaults to rss/patches.  What goes in:
#   include/pcpu_next/*.h    -> include/linux/pcpu_next/*.h
#   the library's .c files   -> mm/pcpu_next/  (the pcpu_next-y objects of
#                               Kbuild outside torture/ and kunit/)
#   internal/*.h they use    -> mm/pcpu_next/internal/
#   mm/pcpu_next/Kconfig, mm/pcpu_next/Makefile (below), and the hooks in
#   mm/Kconfig, mm/Makefile and MAINTAINERS of the 7.2 source (ksrc)
# with every `<pcpu_next/...>` (includes, and comments that name the
# headers) turned into `<linux/pcpu_next/...>`, and include/pcpu_next/
# into include/linux/pcpu_next/.  The harness (torture/), the KUnit
# suites (kunit/) and the selftests stay here.
#
# The output depends only on those files: fixed author, dates and
# commit ids, git's configuration ignored, so a rerun on the same
# files writes the same bytes.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

check=0
dir=$REPO/rss/patches
while [ $# -gt 0 ]; do
	case $1 in
	--check) check=1; shift ;;
	--dir) dir=$2; shift 2 ;;
	*) die "usage: rss-libpatch.sh [--check] [--dir DIR]" ;;
	esac
done
name=0001-mm-add-the-pcpu_next-library.patch
src=$(KSRC_SERIES=7.2 ksrc)

# The library: what Kbuild links into pcpu_next.o outside the harness and
# the KUnit suites.
lib_c=$(sed -n 's/^pcpu_next-y[[:space:]]*[:+]=[[:space:]]*\([a-z_]*\)\.o[[:space:]]*$/\1.c/p' "$REPO/Kbuild")
[ -n "$lib_c" ] || die "no library objects in Kbuild"
for f in $lib_c; do
	[ -f "$REPO/$f" ] || die "Kbuild names $f, which does not exist"
done
pub_h=$(cd "$REPO" && ls include/pcpu_next/*.h)
# The private headers the library includes, and those they include.
priv_h=""
todo="$lib_c $pub_h"
while [ -n "$todo" ]; do
	next=""
	for f in $todo; do
		# shellcheck disable=SC2013 # words: one header name a line
		for h in $(sed -n 's/^#include "\(internal\/[a-z_]*\.h\)"/\1/p' "$REPO/$f"); do
			case " $priv_h " in *" $h "*) continue ;; esac
			[ -f "$REPO/$h" ] || die "$f includes $h, which does not exist"
			priv_h="$priv_h $h"
			next="$next $h"
		done
	done
	todo=$next
done
priv_h=$(echo "$priv_h" | tr ' ' '\n' | sed '/^$/d' | sort)

# Every CONFIG_PCPU_NEXT_* the library tests must exist in the tree's
# Kconfig below (the harness's option stays out: its code is not here).
# shellcheck disable=SC2086 # lists of file names, no spaces in them
opts=$(cd "$REPO" && grep -ho 'CONFIG_PCPU_NEXT_[A-Z_]*' $lib_c $pub_h $priv_h | sort -u)
for o in $opts; do
	case $o in
	CONFIG_PCPU_NEXT_STATS | CONFIG_PCPU_NEXT_TORTURE) ;;
	*) die "the library tests $o, which mm/pcpu_next/Kconfig lacks: add it here" ;;
	esac
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME="pcpu_next developers" GIT_AUTHOR_EMAIL=pcpu-next@localhost
export GIT_COMMITTER_NAME="pcpu_next developers" GIT_COMMITTER_EMAIL=pcpu-next@localhost
export GIT_AUTHOR_DATE="2026-12-06T00:00:00+0000" GIT_COMMITTER_DATE="2026-12-06T00:00:00+0000"
g()
{
	git -C "$tmp/tree" -c core.abbrev=12 -c diff.renames=false "$@"
}

mkdir -p "$tmp/tree/mm"
cp "$src/mm/Kconfig" "$src/mm/Makefile" "$tmp/tree/mm/"
cp "$src/MAINTAINERS" "$tmp/tree/"
g init -q
g add -A
g commit -q -m base

# mm/Kconfig, mm/Makefile, MAINTAINERS: one hook each, at a fixed anchor.
hook()	# file anchor-regex text-to-add-after
{
	local f=$tmp/tree/$1
	grep -qE "$2" "$f" || die "7.2 $1: no line matching '$2' to hook the library after"
	RE=$2 ADD=$3 awk '{ print } $0 ~ ENVIRON["RE"] && !done { print ENVIRON["ADD"]; done = 1 }' \
		"$f" >"$f.new"
	mv "$f.new" "$f"
}
hook mm/Kconfig '^source "mm/damon/Kconfig"$' $'\nsource "mm/pcpu_next/Kconfig"'
# shellcheck disable=SC2016 # make's $(...), not the shell's
hook mm/Makefile '^obj-\$\(CONFIG_PERCPU_STATS\) \+= percpu-stats\.o$' \
	'obj-$(CONFIG_PCPU_NEXT) += pcpu_next/'
hook MAINTAINERS '^F:	mm/percpu-internal\.h$' \
	$'\nPER-CPU NEXT LIBRARY (PCPU_NEXT)\nM:	pcpu_next developers <pcpu-next@localhost>\nL:	linux-mm@kvack.org\nS:	Maintained\nF:	include/linux/pcpu_next/\nF:	mm/pcpu_next/'

# In the tree the library builds for one kernel, this one: its tests of
# LINUX_VERSION_CODE (include/pcpu_next/compat.h) are decided here.  An
# `#if` of comparisons with KERNEL_VERSION(), alone or and-ed with other
# terms, keeps its taken branch (and the other terms, if any); any other
# use of LINUX_VERSION_CODE stops the script.
kver=$(sed -n 's/^\(VERSION\|PATCHLEVEL\|SUBLEVEL\) = \([0-9]*\)$/\2/p' "$src/Makefile" | tr '\n' ' ')
resolve_version()	# file: rewritten in place
{
	# shellcheck disable=SC2086 # three numbers
	python3 - "$1" $kver <<'PY'
import re
import sys

path = sys.argv[1]
code = (int(sys.argv[2]) << 16) + (int(sys.argv[3]) << 8) + min(int(sys.argv[4]), 255)
cmp_re = re.compile(r'LINUX_VERSION_CODE\s*(>=|<=|>|<|==|!=)\s*'
                    r'KERNEL_VERSION\(\s*(\d+),\s*(\d+),\s*(\d+)\s*\)')
ops = {'>=': int.__ge__, '<=': int.__le__, '>': int.__gt__, '<': int.__lt__,
       '==': int.__eq__, '!=': int.__ne__}


def decide(m):
    v = (int(m.group(2)) << 16) + (int(m.group(3)) << 8) + int(m.group(4))
    return '1' if ops[m.group(1)](code, v) else '0'


def fail(n, why):
    sys.exit(f'{path}:{n}: {why}')


out, stack = [], []	# stack: [kind, active]; kind 'keep' or 'gone'
for n, line in enumerate(open(path).read().split('\n'), 1):
    active = all(f[1] for f in stack)
    d = re.match(r'#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)', line)
    if d and d.group(1) == 'if' and 'LINUX_VERSION_CODE' in line:
        if '||' in line:
            fail(n, 'only && of version tests and other terms is handled')
        terms = [t.strip() for t in cmp_re.sub(decide, d.group(2)).split('&&')]
        if any('LINUX_VERSION_CODE' in t for t in terms):
            fail(n, 'a LINUX_VERSION_CODE test of an unknown form')
        rest = [t for t in terms if t not in ('0', '1')]
        if '0' in terms:
            stack.append(['gone', False])
        elif not rest:
            stack.append(['gone', True])
        else:
            stack.append(['keep', True])
            if active:
                one = re.fullmatch(r'defined\s*\(\s*(\w+)\s*\)', rest[0])
                out.append(f'#ifdef {one.group(1)}' if len(rest) == 1 and one
                           else '#if ' + ' && '.join(rest))
        continue
    if d and d.group(1) in ('if', 'ifdef', 'ifndef'):
        stack.append(['keep', True])
    elif d and d.group(1) == 'elif' and stack and stack[-1][0] == 'gone':
        fail(n, '#elif after a version test')
    elif d and d.group(1) == 'else' and stack and stack[-1][0] == 'gone':
        stack[-1][1] = not stack[-1][1]
        continue
    elif d and d.group(1) == 'endif':
        if stack.pop()[0] == 'gone':
            continue
    if 'LINUX_VERSION_CODE' in line and not line.lstrip().startswith(('*', '/*')):
        fail(n, 'LINUX_VERSION_CODE outside an #if')
    if active:
        out.append(line)
text = re.sub(r'\n{3,}', '\n\n', '\n'.join(out))
if 'KERNEL_VERSION' not in text:
    text = text.replace('#include <linux/version.h>\n', '')
open(path, 'w').write(text)
PY
}

# The library's files, public headers under <linux/pcpu_next/>.
copy()	# from to
{
	mkdir -p "$(dirname "$tmp/tree/$2")"
	sed -e 's|<pcpu_next/|<linux/pcpu_next/|g' \
		-e 's|\([^/]\)include/pcpu_next/|\1include/linux/pcpu_next/|g' \
		"$REPO/$1" >"$tmp/tree/$2"
	if grep -q LINUX_VERSION_CODE "$tmp/tree/$2"; then
		resolve_version "$tmp/tree/$2" || die "$1: cannot decide its version tests"
	fi
}
for f in $pub_h; do
	copy "$f" "include/linux/pcpu_next/$(basename "$f")"
done
for f in $lib_c $priv_h; do
	copy "$f" "mm/pcpu_next/$f"
done
if grep -rnE '^#include <pcpu_next/|-I.*include' "$tmp/tree/include/linux/pcpu_next" \
	"$tmp/tree/mm/pcpu_next"; then
	die "an include of <pcpu_next/...> is left that the rewrite missed"
fi

objs=$(for f in $lib_c; do echo "${f%.c}.o"; done | tr '\n' ' ' | sed 's/ $//')
cat >"$tmp/tree/mm/pcpu_next/Makefile" <<EOF
# SPDX-License-Identifier: GPL-2.0
#
# The pcpu_next library.  Generated from the pcpu_next repository, where
# its test harness and KUnit suites are kept.

obj-\$(CONFIG_PCPU_NEXT) += pcpu_next.o
pcpu_next-y := $objs

# define_trace.h includes internal/trace_pcpu_alloc.h from this directory
CFLAGS_pcpu_alloc.o := -I\$(src)
EOF
cat >"$tmp/tree/mm/pcpu_next/Kconfig" <<'EOF'
# SPDX-License-Identifier: GPL-2.0

config PCPU_NEXT
	tristate "pcpu_next: per-CPU object caches and per-CPU counters"
	depends on SMP
	# The lazy counters keep a long owner count and a remote total in a
	# long shifted by one, and the flat target reads an s64 with a plain
	# load: correct only where long is 64 bits.
	depends on 64BIT
	select MMU_NOTIFIER
	help
	  The pcpu_next library: an object cache in front of the per-CPU
	  allocator, lazy (dual-mode) per-CPU counters, hierarchical
	  per-CPU counter trees, and per-mm storage indexed by the mm's
	  concurrency id.  Its slow-path statistics appear under
	  /sys/kernel/debug/pcpu_next/ when DEBUG_FS is set.

	  If unsure, say N.

config PCPU_NEXT_STATS
	bool "pcpu_next fast-path statistics"
	depends on PCPU_NEXT
	help
	  Count every allocation, free, magazine hit and miss, counter add
	  and redirect, as SLUB_STATS does for slab.  The counters are
	  per-CPU, but they are extra stores on every fast path: say N
	  except to study behaviour.

	  If unsure, say N.
EOF

cat >"$tmp/msg" <<'EOF'
mm: add the pcpu_next library

pcpu_next is a library of per-CPU building blocks.  It is kept out of
tree.  This patch adds it so that the next patches can keep
mm->rss_stat with it.

  pcpu_alloc.c    an object cache in front of the per-CPU allocator.
                  Objects keep their constructed state between uses,
                  so a reuse costs no alloc_percpu() and no zeroing.
  lazy_counter.c  dual-mode counters: one word while a single task
                  updates, per-CPU counters after an upgrade.
  counter_tree.c  hierarchical per-CPU counter trees.
  mmcid_pcpu.c    per-mm storage indexed by the mm's concurrency id.
  core.c, main.c  statistics, fault injection sites, the mask of CPUs
                  that ever came up, and the init order.

Public headers go to include/linux/pcpu_next/.  The code and the
private headers go to mm/pcpu_next/.  include/linux/pcpu_next/compat.h
holds the few differences between the kernel versions the library
builds on.  Here it comes decided for this kernel: of each
LINUX_VERSION_CODE test only the branch that holds is kept.

The files are generated from the pcpu_next repository by its script
scripts/rss-libpatch.sh.  The test harness, the KUnit suites and the
selftests stay in the repository.

CONFIG_PCPU_NEXT builds the library.  Built in, it comes up at
device_initcall time.  Nothing uses it yet.

Signed-off-by: pcpu_next developers <pcpu-next@localhost>
EOF
g add -A
g commit -q -F "$tmp/msg"

# [PATCH 1/N]: N counts this patch and the others of the series in DIR.
nr=1
for p in "$dir"/[0-9][0-9][0-9][0-9]-*.patch; do
	[ -e "$p" ] || continue
	case $(basename "$p") in 0000-* | 0001-*) continue ;; esac
	nr=$((nr + 1))
done
g format-patch -1 --stdout --zero-commit --no-signature --stat=80 \
	--subject-prefix="PATCH 1/$nr" >"$tmp/out"

if [ $check = 1 ]; then
	if ! cmp -s "$tmp/out" "$dir/$name"; then
		echo "rss-libpatch.sh: $dir/$name is stale: run scripts/rss-libpatch.sh" >&2
		diff -u "$dir/$name" "$tmp/out" 2>&1 | head -n 20 >&2 || true
		exit 1
	fi
	echo "rss-libpatch.sh: $name is up to date"
	exit 0
fi
mkdir -p "$dir"
cp "$tmp/out" "$dir/$name"
echo "$dir/$name"
