#!/usr/bin/env python3
"""The most a GPU configuration could rank at saturation, from measured costs.

Each query of a per-query file (bench/rank/run.sh PER_QUERY=1: a query's time
in a backend alone) is ranked either by the cores or by the device.  The
cores' time for a query is its share of what the cores alone rank at 32
clients (CORES, rankings a second on 16 cores, weighted by the query's time
alone); the device's is DEVICE_US a ranking on average, a share ALPHA of it
fixed and the rest in proportion to the query's postings; a query sent to
the device still costs its backend PostgreSQL's own work (FLOOR: what 16
cores run a second of the statement with nothing ranked).  The best split
sends the queries with the most core time for their device time to the
device, up to the point where both sides are equally loaded; this prints
the rate of that split and the queries it sends the device.  An estimate
from one client's times for an open system, both sides loaded at once: with
a fixed number of clients, each waiting for its own ranking, a busy device
holds clients the cores then lack: splits by size that it favoured measured
0.94x to 1.00x the cores at 32 clients (bench/results/rank-gpu-split.md).

  bench/rank/split_bound.py PERQUERY.csv SHAPE CORES DEVICE_US [ALPHA...]
  e.g. bench/rank/split_bound.py bench/results/rank-cache/perquery-debian-paths.csv any 36141 43 0 0.5 1
"""
import csv
import sys

FLOOR = 312161.0        # rankings a second with nothing ranked, 32 clients, 16 cores (rank-gpu-lookups.md)
CORES = 16


def best_split(core_s, device_s, overhead_s):
    """(rate, queries sent to the device) of the best split of the mix."""
    n = len(core_s)
    # a query with no posting found never goes to the device: last, and never taken
    order = sorted((i for i in range(n) if device_s[i] > 0), key=lambda i: -(core_s[i] - overhead_s) / device_s[i])
    device_load = 0.0
    core_load = sum(core_s) / n
    best = (CORES / core_load, 0)
    for k, i in enumerate(order, 1):
        device_load += device_s[i] / n
        core_load -= (core_s[i] - overhead_s) / n
        rate = min(1.0 / device_load, CORES / core_load if core_load > 0 else float('inf'))
        if rate > best[0]:
            best = (rate, k)
    return best


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    path, shape, cores, device_us = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    alphas = [float(a) for a in sys.argv[5:]] or [0.0, 0.5, 1.0]
    rows = [r for r in csv.DictReader(open(path)) if r['shape'] == shape]
    if not rows:
        sys.exit('no %s queries in %s' % (shape, path))
    alone = [float(r['cpu_ms']) for r in rows]
    postings = [sum(int(x) for x in r['dfs'].split()) for r in rows]
    mean_alone = sum(alone) / len(alone)
    mean_postings = sum(postings) / len(postings)
    # core-seconds a query: the cores' rate spread by each query's time alone
    core_s = [a / mean_alone * CORES / cores for a in alone]
    print('%d %s-term queries, %.0f postings on average; the cores alone %.0f a second; '
          'the device %.1f µs a ranking on average' % (len(rows), shape, mean_postings, cores, device_us))
    print()
    print('| device time fixed a ranking | best split, a second | of the cores alone | queries to the device |')
    print('|---:|---:|---:|---:|')
    for alpha in alphas:
        device_s = [device_us * 1e-6 * (alpha + (1 - alpha) * p / mean_postings) for p in postings]
        rate, k = best_split(core_s, device_s, CORES / FLOOR)
        print('| %d%% | %.0f | %.2fx | %d of %d |' % (alpha * 100, rate, rate / cores, k, len(rows)))


if __name__ == '__main__':
    main()
