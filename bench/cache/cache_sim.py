#!/usr/bin/env python3
"""Trace-driven comparison of LRU and CLOCK for the GPU worker's list cache.

Reads export.sql's output (qid, lexeme, df, bytes per line), places each
query's rounds as src/sched/placement.c does (lists sorted by df; the
shortest at least gpu_min_postings; then each next list while its df is under
ratio x the shortest), keeps the lists that would be cached (GPX_CACHE_MIN_BYTES
and up, at most the cache's size), and replays a stream of queries drawn
uniformly at random, as the pgbench benchmark draws them, through an LRU and
a CLOCK cache of several sizes (counted as the directory counts: bytes rounded
up to 256).  Prints a Markdown table of byte and list hit rates; with --plot
FILE also a PNG.
"""
import argparse
import collections
import random
import sys


def load(path):
    queries = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            qid, lex, df, size = line.rstrip("\n").split("\t")
            queries[int(qid)].append((lex, int(df), int(size)))
    return queries


def device_lists(terms, min_postings, ratio, min_bytes):
    terms = sorted(terms, key=lambda t: t[1])
    if len(terms) < 2 or terms[0][1] < min_postings or terms[0][1] == 0:
        return []
    k = 2
    while k < len(terms) and terms[k][1] < ratio * terms[0][1]:
        k += 1
    if terms[1][1] >= ratio * terms[0][1]:
        return []
    return [(lex, size) for lex, _, size in terms[:k] if size >= min_bytes]


def aligned(size):
    return (size + 255) // 256 * 256


class LRU:
    def __init__(self, capacity):
        self.capacity, self.used, self.d = capacity, 0, collections.OrderedDict()

    def access(self, key, size):
        if key in self.d:
            self.d.move_to_end(key)
            return True
        if size > self.capacity:
            return False
        while self.used + size > self.capacity:
            _, s = self.d.popitem(last=False)
            self.used -= s
        self.d[key] = size
        self.used += size
        return False


class Clock:
    def __init__(self, capacity):
        self.capacity, self.used = capacity, 0
        self.ring, self.where, self.hand = [], {}, 0

    def access(self, key, size):
        if key in self.where:
            self.ring[self.where[key]][2] = True
            return True
        if size > self.capacity:
            return False
        while self.used + size > self.capacity:
            e = self.ring[self.hand]
            if e is not None and e[2]:
                e[2] = False
                self.hand = (self.hand + 1) % len(self.ring)
                continue
            if e is not None:
                del self.where[e[0]]
                self.used -= e[1]
                self.ring[self.hand] = None
            self.hand = (self.hand + 1) % len(self.ring)
        # a free place in the ring (as the directory's free entries), else a new one
        try:
            i = self.ring.index(None)
        except ValueError:
            i = len(self.ring)
            self.ring.append(None)
        self.ring[i] = [key, size, True]
        self.where[key] = i
        self.used += size
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--min-postings", type=int, default=16384)
    ap.add_argument("--ratio", type=int, default=128)
    ap.add_argument("--min-bytes", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--plot")
    ap.add_argument("--title", default="")
    a = ap.parse_args()

    queries = load(a.trace)
    placed = {q: device_lists(t, a.min_postings, a.ratio, a.min_bytes) for q, t in queries.items()}
    sizes = {lex: aligned(s) for ls in placed.values() for lex, s in ls}
    working = sum(sizes.values())
    rng = random.Random(a.seed)
    qids = sorted(queries)
    stream = [l for _ in range(a.requests) for l in placed[rng.choice(qids)]]
    print(f"{len(queries)} queries, {sum(1 for v in placed.values() if v)} with rounds on the GPU; "
          f"{len(sizes)} distinct cacheable lists, {working / 2**20:.1f} MiB in all; "
          f"{len(stream)} list accesses from {a.requests} queries drawn uniformly (seed {a.seed})\n")
    print("| cache size | share of the lists' bytes | LRU byte hits | CLOCK byte hits | LRU list hits | CLOCK list hits |")
    print("|---:|---:|---:|---:|---:|---:|")
    rows = []
    for share in (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0):
        cap = int(working * share)
        res = []
        for cls in (LRU, Clock):
            c = cls(cap)
            hb = tb = hl = 0
            for lex, s in stream:
                s = sizes[lex]
                hit = c.access(lex, s)
                tb += s
                hb += s if hit else 0
                hl += hit
            res.append((hb / tb if tb else 0, hl / len(stream) if stream else 0))
        rows.append((share, res))
        print(f"| {cap / 2**20:.1f} MiB | {share:.0%} | {res[0][0]:.1%} | {res[1][0]:.1%} | {res[0][1]:.1%} | {res[1][1]:.1%} |")
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot([r[0] * 100 for r in rows], [r[1][0][0] * 100 for r in rows], "o-", label="LRU")
        ax.plot([r[0] * 100 for r in rows], [r[1][1][0] * 100 for r in rows], "s--", label="CLOCK")
        ax.set_xlabel("cache size, % of the cacheable lists' bytes")
        ax.set_ylabel("byte hit rate, %")
        ax.set_title(a.title or "GPU list cache: LRU vs CLOCK")
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(a.plot, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
