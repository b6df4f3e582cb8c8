# SPDX-License-Identifier: GPL-2.0
#
# pcpu_next out-of-tree build and the two project commands:
#   make            build pcpu_next.ko against $(KDIR)
#   make demo       boot the stock Debian kernel in QEMU, load, stress, bench
#   make check      every test lane, ending in "N passed, N failed"
#   make kselftest  the selftests in the debug-kernel VM
#   make rss        mm->rss_stat on a patched kernel, every rss_stat= mode:
#                   correctness, then the benchmark table (scripts/rss.sh)
#
# KDIR defaults to the running kernel's build directory if it exists, else
# to the newest installed Debian 6.12 headers.

ifneq ($(KERNELRELEASE),)
include $(src)/Kbuild
else

RUNNING_KDIR := /lib/modules/$(shell uname -r)/build
DEBIAN_KDIR := $(lastword $(sort $(wildcard /usr/src/linux-headers-6.12.*-amd64)))
KDIR ?= $(if $(wildcard $(RUNNING_KDIR)/Makefile),$(RUNNING_KDIR),$(DEBIAN_KDIR))

# The harness is built unless PCPU_NEXT_TORTURE=n; the fast-path
# statistics only with PCPU_NEXT_STATS=y (see Kconfig).
PCPU_NEXT_TORTURE ?= y
PCPU_NEXT_STATS ?= n

all: modules

modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) CONFIG_PCPU_NEXT=m \
		CONFIG_PCPU_NEXT_TORTURE=$(PCPU_NEXT_TORTURE) \
		CONFIG_PCPU_NEXT_STATS=$(PCPU_NEXT_STATS) modules

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	$(MAKE) -C selftests clean

deps:
	bash scripts/deps.sh

check:
	bash scripts/check.sh

demo:
	bash scripts/demo.sh

kselftest:
	bash scripts/check.sh --lane kselftest

rss:
	bash scripts/rss.sh

.PHONY: all modules clean deps check demo kselftest rss
endif
