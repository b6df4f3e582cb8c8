# SPDX-License-Identifier: GPL-2.0
# The cost lane (scripts/cost-check.sh): under the cost plugin, the
# probes whose counts are known (rss/progs/cost_probe.c), then three
# short benchmarks of make rss, each a marked window.
. /lib.sh
rc=0
echo "=== PN-COST-BEGIN"
/rss/cost_probe || rc=1
/rss/bench_fork --mode exit --forkers 1 --seconds 0.02 || rc=1
/rss/bench_fork --mode exec --forkers 4 --true /rss/true --seconds 0.02 || rc=1
/rss/bench_fault --threads 1 --seconds 0.02 || rc=1
echo "# cpu flags: $(grep -m 1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -xE 'erms|fsrm|fsrs' | tr '\n' ' ')"
echo "=== PN-COST-END rc=$rc"
exit $rc
