#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""One screen: each component's key ratio next to its target.

Usage: headline.py LABEL=LOG[,COST] [LABEL=LOG[,COST] ...]
Each LOG is a VM console log holding the bench tables (=== PN-BENCH-BEGIN
... === PN-BENCH-END) of one run; LABEL names its machine shape (e.g.
4of4, 4of64).  Every ratio is ours / the kernel's (or / the floor),
measured in the same VM run; under an emulator only ratios mean anything,
and none of this is a test (a bench passes when it ran).

COST is the cost plugin's output for that boot (scripts/cost/pn_cost.c,
vm.sh --cost).  Then a second table judges the same rows in modeled
cycles (scripts/cost.py's pricing): a row whose two sides were marked
("# window W ops N window W ops N" before it) compares cycles per op,
summed over every vCPU in the window.  A row without windows (the user
threads' mmcid row) and the byte rows read as in the first table.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cost  # noqa: E402  (scripts/cost.py: the plugin's lines, the prices)

WIN = re.compile(r'^# window (\d+) ops (\d+) window (\d+) ops (\d+)$')

ROW = re.compile(r'^(?P<name>\S.*?)\s+(?P<ops>\d+)\s\s(?P<base>\S.*?)\s+'
                 r'(?P<bops>\d+)\s+(?P<ratio>\d+\.\d\d)$')


def parse(path, costs=None, lat=None):
    """Return (rows, comments) of every bench table in the log.  With
    the plugin's counts (costs, lat), a row is priced in modeled cycles:
    its ops become cycles per op inverted (ops per cycle, x 1e9), so the
    ratios below read the same way in both units."""
    rows, comments, inside, win = {}, [], False, None
    with open(path, errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            if line.startswith('=== PN-BENCH-BEGIN'):
                inside = True
                continue
            if line.startswith('=== PN-BENCH-END'):
                inside = False
                continue
            if not inside:
                continue
            if line.startswith('#'):
                comments.append(line)
                w = WIN.match(line)
                win = tuple(int(x) for x in w.groups()) if w else None
                continue
            m = ROW.match(line)
            if m and costs is None:
                key = (m['name'], m['base'])
                rows.setdefault(key, (int(m['ops']), int(m['bops']),
                                      float(m['ratio'])))
            elif m:
                key = (m['name'], m['base'])
                priced = price(win, costs, lat)
                if key in rows:
                    pass
                elif priced:
                    a, b = priced
                    rows[key] = (1e9 / a, 1e9 / b, b / a)
                elif win:
                    rows[key] = None    # marked, not counted: no value
            win = None
    return rows, comments


def price(win, costs, lat):
    """(ours, base) modeled cycles per op of a row's two windows."""
    if not win:
        return None
    out = []
    for wid, ops in ((win[0], win[1]), (win[2], win[3])):
        c = costs.get(wid, {}).get('all')
        if c is None or ops <= 0:
            return None
        out.append(cost.cycles(c, lat) / ops)
    return out if out[0] > 0 and out[1] > 0 else None


def row_ratio(name, base):
    def get(rows, comments):
        r = rows.get((name, base))
        return r[2] if r else None
    return get


def comment_ratio(pattern):
    def get(rows, comments):
        for c in comments:
            m = re.search(pattern, c)
            if m:
                return float(m.group(1)) / float(m.group(2)) \
                    if m.lastindex == 2 else float(m.group(1))
        return None
    return get


METRICS = [
    ('lazy add, upgraded (flat) / percpu_counter_add', '>=', 1.0,
     row_ratio('add_local (flat)', 'percpu_counter_add (own)')),
    ('lazy add, upgraded (tree) / raw tree add', '>=', 0.9,
     row_ratio('add_local (tree)', 'pn_ctree_add (own)')),
    ('init+upgrade(flat)+destroy x4 / percpu_counter x4', '>=', 1.0,
     row_ratio('init+upgrade(flat)+destroy x4', 'percpu_counter init+destroy x4')),
    ('  the same accounted (module: the kernel allocator)', None, None,
     row_ratio('init+upgrade(flat)+destroy x4, accounted',
               'percpu_counter init+destroy x4, accounted')),
    ('init+upgrade(tree)+destroy x4 / percpu_counter x4', '>=', 1.0,
     row_ratio('init+upgrade(tree)+destroy x4', 'percpu_counter init+destroy x4')),
    ('  the same from every thread at once (flat)', '>=', 1.0,
     row_ratio('all threads: upgrade(flat) x4', 'all threads: percpu_counter x4')),
    ('  the same from every thread at once (tree)', '>=', 1.0,
     row_ratio('all threads: upgrade(tree) x4', 'all threads: percpu_counter x4')),
    ('tree precise sum / percpu_counter_sum', '>=', 0.8,
     row_ratio('tree_precise_sum', 'percpu_counter_sum')),
    ('tree bytes per counter / percpu_counter', '<=', 2.0,
     comment_ratio(r'this VM: bytes/counter in an array of \d+: tree=(\d+) .* percpu_counter=(\d+)')),
    ('mmcid add, real cid (user threads) / percpu_counter_add', '>=', 0.9,
     row_ratio('mmcid_counter_add (real cid)', 'percpu_counter_add (same)')),
    ('mmcid add, CPU number as cid* / percpu_counter_add', None, None,
     row_ratio('mmcid_counter_add (cid slot)', 'percpu_counter_add')),
    ('mmcid array of 4 x 8 B, 4 threads: cid slots / per-CPU', '<=', 0.125,
     comment_ratio(r'footprint counters=4 \(one array\) threads=4 possible=\d+ units.*ratio_units=([\d.]+)'),
     ('4of64',)),
    ('  the same, every byte of metadata / per-CPU', '<=', 0.25,
     comment_ratio(r'footprint counters=4 \(one array\) threads=4 possible=\d+ units.*ratio_all=([\d.]+)'),
     ('4of64',)),
    ('  the same at 256 possible (computed), every byte', '<=', 0.25,
     comment_ratio(r'footprint counters=4 \(one array\) threads=4 possible=256 \(computed\).*ratio_all=([\d.]+)')),
    ('  four separate counters instead, every byte', None, None,
     comment_ratio(r'footprint objects=4 payload=8 threads=4 possible=\d+ units.*ratio_all=([\d.]+)')),
    ('sized alloc+free, 1 thread / zeroing floor', '>=', 0.85,
     row_ratio('pn_alloc_percpu 1 thread', 'zeroing floor 1 thread')),
    ('sized alloc+free / __alloc_percpu, 1 thread', '>=', 1.0,
     row_ratio('pn_alloc_percpu 1 thread', '__alloc_percpu 1 thread')),
]


def main(argv):
    runs, priced = [], []
    lat = cost.read_lat(cost.DEFAULT_LAT)
    for arg in argv:
        label, _, paths = arg.partition('=')
        path, _, costpath = paths.partition(',')
        try:
            runs.append((label, parse(path)))
            if costpath:
                rows, comments = parse(path, cost.costs_of_plugin(costpath), lat)
                # the rows without windows read as in the first table
                for k, v in runs[-1][1][0].items():
                    rows.setdefault(k, v)
                priced.append((label, (rows, comments)))
        except OSError as e:
            print(f'headline: {path}: {e}', file=sys.stderr)
            runs.append((label, ({}, [])))
    table(runs, 'key ratio (ours / kernel, same VM run)')
    if priced:
        print()
        table(priced, 'the same in modeled cycles (per op, all vCPUs)')
    notes(argv)
    return 0


def table(runs, heading):
    head = f"{heading:56}" + ''.join(f'{label:>8}' for label, _ in runs) + '  target'
    print(head)
    for title, op, target, get, *judged in METRICS:
        cells, verdict = '', []
        for label, (rows, comments) in runs:
            v = get(rows, comments)
            if v is None:
                cells += f"{'-':>8}"
                continue
            if op is None or (judged and label not in judged[0]):
                cells += f'{"(%.2f)" % v:>8}'
                continue
            cells += f'{v:8.2f}'
            verdict.append(v >= target if op == '>=' else v <= target)
        if op is None:
            print(f'{title:56}{cells}  (no target)')
            continue
        tag = 'met' if verdict and all(verdict) else \
            'missed' if verdict and not any(verdict) else \
            'partly' if verdict else 'n/a'
        print(f'{title:56}{cells}  {op} {target:<5g} {tag}')


def notes(argv):
    print('* kthreads have no mm_cid in 6.12: the control-plane bench indexes by')
    print('  the CPU number through a test-only out-of-line path (no target; the')
    print('  real cid row, from selftests/mmcid_bench.c, is the one users take).')
    print('(x.xx): not judged there (the footprint targets are about 64 possible).')
    instruments = sorted({instrument(path) for path in
                          (a.partition('=')[2].partition(',')[0] for a in argv)})
    print('instrument: ' + '; '.join(instruments))
    if any('icount' in i for i in instruments):
        print('(-icount: a ratio of path lengths; atomics, locks and cache misses')
        print(' cost one instruction each there)')
    if any(',' in a for a in argv):
        print('(modeled cycles: scripts/cost/pn_cost.c counts, priced by')
        print(' scripts/cost/sapphire-rapids.lat; Documentation/cost_model.rst)')
    print('(a benchmark, not a test: ratios, not timed asserts)')


def instrument(path):
    """The === PN-INSTRUMENT line vm.sh appends to a VM log."""
    try:
        with open(path, errors='replace') as f:
            for line in f:
                if line.startswith('=== PN-INSTRUMENT '):
                    return line[len('=== PN-INSTRUMENT '):].strip()
    except OSError:
        pass
    return 'unknown'


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
