# SPDX-License-Identifier: GPL-2.0
#
# pcpu_next out-of-tree build and the two project commands:
#   make            build pcpu_next.ko against $(KDIR)
#   make demo       boot the stock Debian kernel in QEMU, load, stress, bench
#   make check      every test lane, ending in "N passed, N failed"
#   make kselftest  the selftests in the debug-kernel VM
#   make rss        mm->rss_stat on a patched kernel, every rss_stat= mode:
#                   correctness, then the benchmark table (scripts/rss.sh)
#   make rss-deb    Debian packages of that kernel for a real machine
#                   (scripts/rss-deb.sh)
#   make rss-here   the rss benchmarks on the running kernel, one table
#                   column per boot (scripts/rss-here.sh)
#
# KDIR defaults to the running kernel's build directory if it exists, else
# to the newest installed Debian 6.12 headers of the running kernel's
# flavour: rt-amd64 or cloud-amd64 if its release ends so, else the
# generic amd64 (a module built for one flavour does not load into
# another).  `make kdir` prints the choice and why.

ifneq ($(KERNELRELEASE),)
include $(src)/Kbuild
else

UNAME_R ?= $(shell uname -r)
HEADERS_DIR ?= /usr/src
RUNNING_KDIR ?= /lib/modules/$(UNAME_R)/build
FLAVOUR := $(shell echo '$(UNAME_R)' | sed -n 's/.*-\(rt\|cloud\)-amd64$$/\1-/p')amd64
DEBIAN_KDIR := $(shell ls -d $(HEADERS_DIR)/linux-headers-6.12.*+deb*-$(FLAVOUR) 2>/dev/null | \
	grep -E -- '/linux-headers-6\.12\.[0-9]+\+deb[0-9]+-$(FLAVOUR)$$' | sort -V | tail -n 1)
ifeq ($(origin KDIR),undefined)
ifneq ($(wildcard $(RUNNING_KDIR)/Makefile),)
KDIR := $(RUNNING_KDIR)
KDIR_WHY := the running kernel's, $(UNAME_R)
else
KDIR := $(DEBIAN_KDIR)
KDIR_WHY := no headers of the running $(UNAME_R): Debian's newest 6.12 $(FLAVOUR)
endif
else
KDIR_WHY := KDIR set by the $(origin KDIR)
endif

# The harness is built unless PCPU_NEXT_TORTURE=n; the fast-path
# statistics only with PCPU_NEXT_STATS=y (see Kconfig).
PCPU_NEXT_TORTURE ?= y
PCPU_NEXT_STATS ?= n

all: modules

modules: kdir
	$(MAKE) -C $(KDIR) M=$(CURDIR) CONFIG_PCPU_NEXT=m \
		CONFIG_PCPU_NEXT_TORTURE=$(PCPU_NEXT_TORTURE) \
		CONFIG_PCPU_NEXT_STATS=$(PCPU_NEXT_STATS) modules

kdir:
	@test -n "$(KDIR)" || { echo "pcpu_next: no kernel headers: install" \
		"linux-headers-$(UNAME_R) or linux-headers-6.12.*-$(FLAVOUR), or set KDIR" >&2; exit 1; }
	@echo "pcpu_next: KDIR=$(KDIR) ($(KDIR_WHY))"

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	$(MAKE) -C selftests clean

deps:
	bash scripts/deps.sh

check:
	bash scripts/check.sh

demo:
	bash scripts/demo.sh

bench-cost:
	bash scripts/bench-cost.sh

kselftest:
	bash scripts/check.sh --lane kselftest

rss:
	bash scripts/rss.sh

rss-deb:
	bash scripts/rss-deb.sh

rss-here:
	bash scripts/rss-here.sh

.PHONY: all modules kdir clean deps check demo bench-cost kselftest rss rss-deb rss-here
endif
