#!/usr/bin/env python3
"""Markdown table and SVG plot of bench/writes/run.sh's results.csv.

usage: report.py DIR   (reads DIR/results.csv, writes DIR/summary.md and DIR/reads.svg)

Per build (label) and index: the reads' tps in each mix as a share of their
read-only tps, the inserts' average latency, and the COPY's time.  The plot
draws the shares, one group of bars per index and build, one bar per mix.
No dependency beyond python3.
"""
import csv
import sys
from collections import OrderedDict

d = sys.argv[1]
rows = list(csv.DictReader(open(f"{d}/results.csv")))
# one group per run: a read-only cell starts a new run of its build, index and mode
cells = OrderedDict()
copies = {}
runs = {}
last = {}
for r in rows:
    if r["mode"] == "copy":
        if (r["label"], r["index"]) in last:
            copies[last[(r["label"], r["index"])]] = (r["mix"], r["secs"])
        continue
    base = (r["label"], r["index"], r["mode"])
    if r["mix"] == "ro" or base not in runs:
        runs[base] = runs.get(base, 0) + 1
    key = base + (runs[base],)
    last[(r["label"], r["index"])] = key
    cells.setdefault(key, {})[r["mix"]] = r

out = ["| build | index | mode | run | read-only tps | 90/10 reads tps (share) | 90/10 insert ms | 50/50 reads tps (share) | 50/50 insert ms | COPY |",
       "|---|---|---|---|---|---|---|---|---|---|"]
bars = []
for (label, ix, mode, run), mixes in cells.items():
    ro = float(mixes["ro"]["read_tps"]) if "ro" in mixes else None
    line = [label, ix, mode, str(run), f"{ro:,.0f}" if ro else "-"]
    for mix in ("90", "50"):
        m = mixes.get(mix)
        if m is None:
            line += ["-", "-"]
            continue
        rt = float(m["read_tps"])
        share = rt / ro if ro else None
        line.append(f"{rt:,.0f} ({share:.0%})" if share is not None else f"{rt:,.0f}")
        line.append(m["insert_ms"])
        if share is not None:
            bars.append((f"{ix} {mode}" if mode != "default" else ix, f"{label} {run}", mix, share))
    c = copies.get((label, ix, mode, run))
    line.append(f"{int(c[0]):,} rows: {c[1]} s" if c else "-")
    out.append("| " + " | ".join(line) + " |")
open(f"{d}/summary.md", "w").write("\n".join(out) + "\n")
print("\n".join(out))

# the plot: reads' share of their read-only tps, 90/10 and 50/50
W, H, left, bottom, top = 760, 360, 60, 90, 30
groups = OrderedDict()
for ix, label, mix, share in bars:
    groups.setdefault((ix, label), {})[mix] = share
n = max(len(groups), 1)
gw = (W - left - 20) / n
colors = {"90": "#3b6ea8", "50": "#d08a2c"}
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
       f'<text x="{W/2}" y="18" text-anchor="middle" font-size="13">reads under inserts: tps as a share of read-only tps</text>']
ph = H - bottom - top
for t in (0, 0.2, 0.4, 0.6, 0.8, 1.0):
    y = top + ph * (1 - t)
    svg.append(f'<line x1="{left}" x2="{W-20}" y1="{y}" y2="{y}" stroke="{"#c33" if t == 0.6 else "#ddd"}"/>')
    svg.append(f'<text x="{left-6}" y="{y+4}" text-anchor="end">{t:.0%}</text>')
for i, ((ix, label), mixes) in enumerate(groups.items()):
    x0 = left + i * gw + gw * 0.15
    bw = gw * 0.7 / 2
    for j, mix in enumerate(("90", "50")):
        if mix not in mixes:
            continue
        s = min(mixes[mix], 1.2)
        h = ph * min(s, 1.0)
        svg.append(f'<rect x="{x0 + j*bw:.1f}" y="{top + ph - h:.1f}" width="{bw-2:.1f}" height="{h:.1f}" fill="{colors[mix]}"/>')
        svg.append(f'<text x="{x0 + j*bw + bw/2:.1f}" y="{top + ph - h - 3:.1f}" text-anchor="middle">{mixes[mix]:.0%}</text>')
    svg.append(f'<text x="{x0 + bw:.1f}" y="{top + ph + 16}" text-anchor="middle">{ix}</text>')
    svg.append(f'<text x="{x0 + bw:.1f}" y="{top + ph + 30}" text-anchor="middle">{label}</text>')
svg.append(f'<rect x="{left}" y="{H-30}" width="10" height="10" fill="{colors["90"]}"/><text x="{left+14}" y="{H-21}">90% reads, 10% inserts</text>')
svg.append(f'<rect x="{left+170}" y="{H-30}" width="10" height="10" fill="{colors["50"]}"/><text x="{left+184}" y="{H-21}">50% reads, 50% inserts</text>')
svg.append(f'<text x="{left+340}" y="{H-21}" fill="#c33">red line: the 60% target</text>')
svg.append("</svg>")
open(f"{d}/reads.svg", "w").write("\n".join(svg) + "\n")
