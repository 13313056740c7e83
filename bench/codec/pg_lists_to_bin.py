#!/usr/bin/env python3
"""Convert PostgreSQL COPY text output into the benchmark's binary files.

  pg_lists_to_bin.py lists NDOCS OUT    stdin: term_id, {doc ids}, {tids}
  pg_lists_to_bin.py queries OUT        stdin: query_id, nlexemes, {term ids}

The layouts (all integers little-endian) are described in bench/README.md:

  lists.bin    "GPXLIST1" | u32 ndocs | u32 nterms |
               per term: u32 n | u32 doc_id[n] | u64 tid[n] (block << 16 | offset)
  queries.bin  "GPXQRY01" | u32 nqueries |
               per query: u32 query_id | u32 nlexemes | u32 nfound | u32 term[nfound]
"""
import struct
import sys
from array import array


def int_array(text, typecode):
    """A PostgreSQL integer array literal such as {1,2,3} as an array."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        sys.exit("pg_lists_to_bin: not an array literal: %.40r" % text)
    body = body[1:-1]
    values = array(typecode, map(int, body.split(","))) if body else array(typecode)
    if sys.byteorder != "little":
        values.byteswap()
    return values


def convert_lists(ndocs, out):
    nterms = 0
    out.write(b"GPXLIST1")
    out.write(struct.pack("<II", ndocs, 0))
    for line in sys.stdin:
        term, docs, tids = line.rstrip("\n").split("\t")
        if int(term) != nterms:
            sys.exit("pg_lists_to_bin: term ids not dense at %s" % term)
        doc_ids = int_array(docs, "I")
        heap_tids = int_array(tids, "Q")
        if len(doc_ids) != len(heap_tids) or len(doc_ids) == 0:
            sys.exit("pg_lists_to_bin: bad list for term %s" % term)
        out.write(struct.pack("<I", len(doc_ids)))
        doc_ids.tofile(out)
        heap_tids.tofile(out)
        nterms += 1
    # the term count is known only at the end
    out.seek(12)
    out.write(struct.pack("<I", nterms))
    return nterms


def convert_queries(out):
    rows = []
    for line in sys.stdin:
        qid, nlex, terms = line.rstrip("\n").split("\t")
        rows.append((int(qid), int(nlex), int_array(terms, "I")))
    out.write(b"GPXQRY01")
    out.write(struct.pack("<I", len(rows)))
    for qid, nlex, terms in rows:
        out.write(struct.pack("<III", qid, nlex, len(terms)))
        terms.tofile(out)
    return len(rows)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "lists":
        with open(sys.argv[3], "wb") as out:
            n = convert_lists(int(sys.argv[2]), out)
        print("pg_lists_to_bin: %d lists -> %s" % (n, sys.argv[3]), file=sys.stderr)
    elif len(sys.argv) == 3 and sys.argv[1] == "queries":
        with open(sys.argv[2], "wb") as out:
            n = convert_queries(out)
        print("pg_lists_to_bin: %d queries -> %s" % (n, sys.argv[2]), file=sys.stderr)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
