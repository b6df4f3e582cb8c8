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

# Pristine kernel source, unpacked once from Debian's linux-source-6.12.
ksrc_version()
{
	dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null ||
		die "linux-source-6.12 missing: run scripts/deps.sh"
}

ksrc()
{
	local ver dir
	ver=$(ksrc_version)
	dir="$CACHE/src/$ver"
	if [ ! -e "$dir/.unpacked" ]; then
		rm -rf "$dir"
		mkdir -p "$dir"
		tar -xJf /usr/src/linux-source-6.12.tar.xz -C "$dir" --strip-components=1 ||
			die "cannot unpack linux-source-6.12"
		touch "$dir/.unpacked"
	fi
	echo "$dir"
}

# Stable short hash of files/strings, for cache keys.
key_of()
{
	cat "$@" | sha256sum | cut -c1-12
}

# Where build logs and VM logs of this run go.
OUT=${PCPU_NEXT_OUT:-$REPO/.out}
mkdir -p "$OUT"
