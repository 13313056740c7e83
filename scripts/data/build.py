"""Turns a fetched raw corpus into docs.tsv and queries.tsv (see fetch and
README.md here).  Usage: build.py CORPUS DIR, with DIR/raw.txt or the unpacked
packages under DIR/x.  Deterministic: the same input gives the same files."""
import base64, glob, gzip, random, re, sys

corpus, out = sys.argv[1], sys.argv[2]
WORD = re.compile(r"[a-z][a-z0-9]{2,}")
rng = random.Random(20261122)

def one(pattern):  # the single file a package must have unpacked
    found = glob.glob(pattern)
    if len(found) != 1:
        sys.exit(f"build.py: expected one file {pattern}, found {len(found)}")
    return found[0]

def clean(text):
    return " ".join(text.replace("\t", " ").split())

def docs_debian_pkgs():  # Translation-en: Package, Description-md5, Description-en + indented lines
    rec = {}
    for line in open(f"{out}/raw.txt", encoding="utf-8", errors="replace"):
        if line == "\n":
            if rec.get("Description-en"):
                yield rec["Package"] + " " + rec["Description-en"], rec["Synopsis"]
            rec = {}
        elif line.startswith(" "):
            if "Description-en" in rec: rec["Description-en"] += " " + line.strip(" .\n")
        else:
            k, _, v = line.partition(":")
            rec[k] = v.strip()
            if k == "Description-en": rec["Synopsis"] = v.strip()

def docs_gcide():
    b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    num = lambda s: sum(b64.index(ch) * 64 ** i for i, ch in enumerate(reversed(s)))
    data = gzip.open(one(f"{out}/x/usr/share/dictd/gcide.dict.dz")).read()
    for line in open(one(f"{out}/x/usr/share/dictd/gcide.index"), encoding="utf-8", errors="replace"):
        f = line.rstrip("\n").split("\t")
        if len(f) < 3 or f[0].startswith("00-database"): continue
        body = data[num(f[1]):num(f[1]) + num(f[2])].decode("utf-8", "replace")
        yield body, body.split("\n", 2)[1] if body.count("\n") > 1 else body

def docs_fortunes():
    for path in sorted(glob.glob(f"{out}/x/usr/share/games/fortunes/*")):
        if path.endswith((".dat", ".u8")) or "/off/" in path: continue
        for entry in open(path, encoding="utf-8", errors="replace").read().split("\n%\n"):
            if entry.strip(): yield entry, entry

def docs_debian_paths():
    for line in open(f"{out}/raw.txt", encoding="utf-8", errors="replace"):
        path, _, pkgs = line.rstrip("\n").rpartition(" ")
        text = re.sub(r"[/._\-+,]", " ", path.strip()) + " " + re.sub(r"[/,]", " ", pkgs)
        yield text, path.strip()

gen = {"debian-pkgs": docs_debian_pkgs, "gcide": docs_gcide,
       "fortunes": docs_fortunes, "debian-paths": docs_debian_paths}[corpus]
seeds = []
with open(f"{out}/docs.tsv", "w", encoding="utf-8") as docs:
    for i, (text, seed) in enumerate(gen(), 1):
        docs.write(f"{i}\t{clean(text)}\n")
        if rng.random() < 0.02 or len(seeds) < 20000 and rng.random() < 0.2: seeds.append(seed)
# Queries: 2-4 distinct words that really occur together in one document's title line.
with open(f"{out}/queries.tsv", "w", encoding="utf-8") as q:
    n = 0
    for seed in seeds:
        words = list(dict.fromkeys(WORD.findall(seed.lower())))
        if len(words) < 2: continue
        k = rng.choice([2, 2, 3, 3, 4])
        n += 1
        q.write(f"{n}\t{' '.join(rng.sample(words, min(k, len(words))))}\n")
        if n >= 10000: break
