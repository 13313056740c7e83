#!/usr/bin/env python3
"""Tables and plots of device_bench.sh's results.csv.

  python3 bench/worker/report.py bench/results/worker/h100-pgbench/results.csv [--plots DIR]

Prints Markdown: per corpus and shape, throughput and p50/p99 latency at each
client count for gpuidx with the GPU worker, gpuidx on the CPU and GIN, with
the ratios; then the heavy-query, batching and settings cells.  With --plots,
writes DIR/<corpus>.png: throughput against clients, one panel per shape.
"""
import argparse
import collections
import csv

MODES = ("gpu", "cpu", "gin")
LABELS = {"gpu": "gpuidx + GPU worker", "cpu": "gpuidx, CPU only", "gin": "GIN"}
SHAPES = {"count": "count(*)", "ids100": "first 100 ids (LIMIT 100)", "ids": "all matching ids"}


def load(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            for k in ("tps", "p50_ms", "p99_ms", "avg_ms"):
                r[k] = float(r[k]) if r[k] else 0.0
            r["clients"] = int(r["clients"])
            rows.append(r)
    return rows


def fmt(x):
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--plots")
    a = ap.parse_args()
    rows = load(a.csv)
    cell = {(r["corpus"], r["part"], r["shape"], r["clients"], r["mode"], r["setting"]): r for r in rows}
    corpora = list(dict.fromkeys(r["corpus"] for r in rows))

    for corpus in corpora:
        for shape, title in SHAPES.items():
            clients = sorted({r["clients"] for r in rows if r["corpus"] == corpus and r["part"] == "all"
                              and r["shape"] == shape})
            if not clients:
                continue
            print(f"\n**{corpus}, {title}**\n")
            print("| clients | GPU tps | CPU tps | GIN tps | GPU / GIN | GPU / CPU | p50 ms GPU / CPU / GIN | p99 ms GPU / CPU / GIN |")
            print("|---:|---:|---:|---:|---:|---:|---|---|")
            for c in clients:
                g, p, n = (cell.get((corpus, "all", shape, c, m, "default")) for m in MODES)
                if not (g and p and n):
                    continue
                print(f"| {c} | {fmt(g['tps'])} | {fmt(p['tps'])} | {fmt(n['tps'])} | "
                      f"{g['tps'] / n['tps']:.1f}x | {g['tps'] / p['tps']:.2f}x | "
                      f"{g['p50_ms']:.2f} / {p['p50_ms']:.2f} / {n['p50_ms']:.2f} | "
                      f"{g['p99_ms']:.2f} / {p['p99_ms']:.2f} / {n['p99_ms']:.2f} |")
        heavy = [cell.get((corpus, "heavy", "count", 32, m, "default")) for m in MODES]
        if all(heavy):
            g, p, n = heavy
            print(f"\n**{corpus}, count(*) of the queries with two or more frequent terms, 32 clients**: "
                  f"GPU {fmt(g['tps'])} tps, CPU {fmt(p['tps'])}, GIN {fmt(n['tps'])}: "
                  f"GPU / CPU {g['tps'] / p['tps']:.2f}x, GPU / GIN {g['tps'] / n['tps']:.1f}x; "
                  f"p99 {g['p99_ms']:.2f} / {p['p99_ms']:.2f} / {n['p99_ms']:.2f} ms")
        b1 = cell.get((corpus, "batching", "count", 64, "gpu", "batch_max_requests=1"))
        bn = cell.get((corpus, "batching", "count", 64, "gpu", "batch_max_requests=1024"))
        if b1 and bn:
            print(f"\n**{corpus}, batched against one launch per query** (the same heavy queries, 64 clients): "
                  f"{fmt(bn['tps'])} tps against {fmt(b1['tps'])}: {bn['tps'] / b1['tps']:.2f}x; "
                  f"p99 {bn['p99_ms']:.2f} against {b1['p99_ms']:.2f} ms")
        sweep = [r for r in rows if r["corpus"] == corpus and r["part"] == "sweep"]
        if sweep:
            print(f"\n**{corpus}, settings** (count(*) of every query, 32 clients, GPU worker)\n")
            print("| setting | tps | p50 ms | p99 ms |")
            print("|---|---:|---:|---:|")
            for r in sweep:
                print(f"| {r['setting']} | {fmt(r['tps'])} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} |")

    if a.plots:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        for corpus in corpora:
            fig, axes = plt.subplots(1, 3, figsize=(13, 4))
            for ax, (shape, title) in zip(axes, SHAPES.items()):
                for m, style in zip(MODES, ("o-", "s--", "^:")):
                    pts = sorted((r["clients"], r["tps"]) for r in rows if r["corpus"] == corpus and
                                 r["part"] == "all" and r["shape"] == shape and r["mode"] == m)
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=LABELS[m])
                ax.set_xscale("log", base=2)
                ax.set_yscale("log")
                ax.set_xticks([1, 8, 32, 64])
                ax.set_xticklabels(["1", "8", "32", "64"])
                ax.set_xlabel("clients")
                ax.set_ylabel("transactions per second")
                ax.set_title(title)
                ax.grid(True, which="both", alpha=0.3)
            axes[0].legend()
            fig.suptitle(f"{corpus}: throughput against clients (H100 host, 16 cores)")
            fig.tight_layout()
            fig.savefig(f"{a.plots}/{corpus}.png", dpi=110)
            plt.close(fig)


if __name__ == "__main__":
    main()
