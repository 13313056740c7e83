#!/usr/bin/env python3
"""The rank benchmark's Markdown summary: bench/rank/report.py WORKDIR

Reads info.txt, builds.csv and results.csv of one run of bench/rank/run.sh
and prints one section per corpus: the indexes' build times and sizes, and
per shape (any term, every term) a table of latency at 1 client and
throughput at each client count, with ratios to GIN + ts_rank."""
import csv
import os
import sys

SHAPES = {
    'any': ('Any term',
            'gpuidx: `ORDER BY body <=> q LIMIT 10` (documents with no term rank last, at 0); '
            'GIN: `WHERE to_tsvector(\'english\', body) @@ qo ORDER BY ts_rank(tsv, qo) DESC LIMIT 10`; '
            'RUM: `WHERE tsv @@ qo ORDER BY tsv <=> qo LIMIT 10`; qo: the lexemes of the query joined by `|`'),
    'every': ('Every term',
              'gpuidx: `WHERE body @@& q ORDER BY body <=> q LIMIT 10`; '
              'GIN: `WHERE to_tsvector(\'english\', body) @@ qa ORDER BY ts_rank(tsv, qa) DESC LIMIT 10`; '
              'RUM: `WHERE tsv @@ qa ORDER BY tsv <=> qa LIMIT 10`; qa: `plainto_tsquery(\'english\', q)`'),
    'floor': ('The floor',
              'gpuidx: the any-term statement with every word of the query prefixed so that no document '
              'has it (`FLOOR=1`): pgbench, PostgreSQL and the statement with no list read and nothing '
              'ranked, the most any way of ranking could reach'),
}
NAMES = {'gin_rank': 'GIN + ts_rank', 'rum': 'RUM <=>', 'gpuidx': 'gpuidx BM25',
         'gpuidx_gpu': 'gpuidx BM25, GPU worker', 'gpuidx_cpu': 'gpuidx BM25, CPU',
         'gpuidx_gpu_nolimit': 'gpuidx BM25, GPU worker, no backlog limit',
         'gpuidx_cpu_nocache': 'gpuidx BM25, CPU, lists read each query (rank_cache_size 0)',
         'gpuidx_floor': 'gpuidx, no term in the index'}


def label(method):
    if method.startswith('gpuidx_gpu_min_'):
        return f'gpuidx BM25, GPU worker, gpu_min_postings {int(method.rsplit("_", 1)[1]):,}'
    if method.startswith('gpuidx_gpu_split_'):
        return f'gpuidx BM25, GPU worker takes every ranking of {int(method.rsplit("_", 1)[1]):,} postings or more'
    if method.startswith('gpuidx_gpu_backlog_'):
        return f'gpuidx BM25, GPU worker, backlog {int(method.rsplit("_", 1)[1]):,} postings'
    return NAMES.get(method, method)


INDEXES = {'docs_gin': 'GIN (to_tsvector(\'english\', body))', 'docs_rum': 'RUM (tsv rum_tsvector_ops)',
           'docs_gpx': 'gpuidx (body)'}


def size(b):
    b = float(b)
    for unit in ('bytes', 'kB', 'MB', 'GB'):
        if b < 1024 or unit == 'GB':
            return f'{b:.0f} {unit}' if unit == 'bytes' else f'{b:.1f} {unit}'
        b /= 1024


def num(v, fmt):
    return format(float(v), fmt) if v not in ('', None) else 'n/a'


def ratio(a, b):
    try:
        return f'{float(a) / float(b):.2f}x'
    except (TypeError, ValueError, ZeroDivisionError):
        return 'n/a'


def main():
    work = sys.argv[1]
    info = open(os.path.join(work, 'info.txt')).read().splitlines()
    builds = list(csv.DictReader(open(os.path.join(work, 'builds.csv'))))
    results = list(csv.DictReader(open(os.path.join(work, 'results.csv'))))
    out = ['# Ranked top-10 search: gpuidx BM25 against GIN + ts_rank and RUM', '']
    out += ['```'] + info + ['```', '']
    out += ['Written by `bench/rank/run.sh` (bench/rank/README.md). Each cell is pgbench running one '
            'prepared statement a transaction, the query picked at random among the corpus\'s queries '
            'and read by a sub-select; latencies are per transaction, from pgbench\'s log, at 1 client; '
            'tps at each client count. Ratios are to GIN + ts_rank of the same shape '
            '(latency: below 1 is faster; tps: above 1 is faster). The methods rank differently '
            '(ts_rank, RUM\'s ts_rank-like distance, BM25): the rows are not the same, the work is.', '']
    for corpus in dict.fromkeys(r['corpus'] for r in builds):
        b = [r for r in builds if r['corpus'] == corpus]
        out += [f'## {corpus}: {int(b[0]["documents"]):,} documents, {b[0]["queries"]} queries', '']
        out += ['| index | build s | size |', '|---|---:|---:|']
        for r in b:
            out.append(f'| {INDEXES.get(r["index"], r["index"])} | {r["build_s"]} | {size(r["size_bytes"])} |')
        out.append('')
        for shape, (title, what) in SHAPES.items():
            rows = [r for r in results if r['corpus'] == corpus and r['shape'] == shape]
            if not rows:
                continue
            clients = sorted({int(r['clients']) for r in rows})
            cell = {(r['method'], int(r['clients'])): r for r in rows}
            out += [f'### {title}', '', what, '']
            head = '| method | p50 ms, 1 client | p99 ms, 1 client | p50 / GIN |'
            head += ''.join(f' tps, {c} | tps / GIN, {c} |' for c in clients)
            out += [head, '|---|' + '---:|' * (3 + 2 * len(clients))]
            for m in dict.fromkeys(r['method'] for r in rows):
                one = cell.get((m, 1), {})
                gin1 = cell.get(('gin_rank', 1), {})
                line = f'| {label(m)} | {num(one.get("p50_ms"), ".3f")} | {num(one.get("p99_ms"), ".2f")} '
                line += f'| {ratio(one.get("p50_ms"), gin1.get("p50_ms"))} |'
                for c in clients:
                    r = cell.get((m, c), {})
                    g = cell.get(('gin_rank', c), {})
                    failed = r.get('failed') not in (None, '', '0')
                    line += f' {num(r.get("tps"), ".0f")}{" (failed: " + r["failed"] + ")" if failed else ""}'
                    line += f' | {ratio(r.get("tps"), g.get("tps"))} |'
                out.append(line)
            out.append('')
    print('\n'.join(out))


if __name__ == '__main__':
    main()
