#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make rss-deb: installable Debian packages of the rss_stat kernel for a
# real machine: linux-source-7.2 with the series of rss/patches (not the
# bench-only rss/bench/), Debian's own 7.2 amd64 config with its modules,
# CONFIG_MM_RSS_ALT, release 7.2.13-rss (scripts/rss-kernel.sh deb,
# `make bindeb-pkg`).  Built here, on the bookworm machine of make check
# (scripts/deps.sh); installed there.  Copies the packages to
# .out/rss-deb/ and says how to boot each rss_stat= mode.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bash "$REPO/scripts/deps.sh" >/dev/null || die "scripts/deps.sh failed"
# 7.2's bindeb-pkg runs debhelper (dh_listpackages, dh_builddeb).
if ! command -v dh_listpackages >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		debhelper >/dev/null || die "cannot install debhelper"
fi
echo "rss-deb: building; on 2 cores Debian's config takes hours" \
	"(log: $CACHE/rss-build/deb-*/build.log)"
debs=$(bash "$REPO/scripts/rss-kernel.sh" deb) || die "the package build failed"
out=$OUT/rss-deb
rm -rf "$out" && mkdir -p "$out"
cp "$debs"/*.deb "$out"/
img=$(cd "$out" && ls linux-image-*.deb | grep -v -- -dbg_ | head -n 1)
rel=$(dpkg-deb -f "$out/$img" Package)
rel=${rel#linux-image-}
cat <<EOF
rss-deb: packages in $out:
$(cd "$out" && ls ./*.deb | sed 's|^\./|    |')

On the machine to measure (as root):

    dpkg -i $img
    # once per mode: mainline (the reference), flat, cache, lazy,
    # lazy-tree, tree, mmcid; kexec keeps the machine's command line
    apt-get install kexec-tools
    kexec -l /boot/vmlinuz-$rel --initrd=/boot/initrd.img-$rel \\
        --append="\$(sed 's/ rss_stat=[^ ]*//' /proc/cmdline) rss_stat=MODE"
    systemctl kexec
    # after the boot: dmesg says "rss_stat: mode MODE"
    make rss-here      # in this repository; adds the boot's column

Or add rss_stat=MODE to GRUB_CMDLINE_LINUX in /etc/default/grub,
update-grub and reboot.  Without rss_stat= the kernel runs mainline.
The kernel is not signed for Secure Boot: with Secure Boot (or kernel
lockdown) on, neither kexec nor the boot loader takes it.
EOF
