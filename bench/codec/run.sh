#!/bin/bash
# run.sh: the codec benchmark in one command.  Builds codec_bench, exports
# the corpora found under $GPUIDX_DATA (skipping, with a notice, those
# missing), runs the benchmark and writes bench/results/codec.md.  Exports,
# logs and the raw output stay in bench/build/codec/ (git-ignored).
#
#   LIMIT_DOCS=N    documents of debian-paths to load (default 1000000, 0: all)
#   FORCE_EXPORT=1  export again even when the corpus and scripts are unchanged
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
data=${GPUIDX_DATA:-$HOME/.cache/gpuidx-data}
build=bench/build/codec
results=bench/results
paths_limit=${LIMIT_DOCS:-1000000}
limit_note="first $paths_limit documents"
[ "$paths_limit" = 0 ] && limit_note="all documents"
corpora="debian-pkgs gcide fortunes debian-paths"
command="bash bench/codec/run.sh"
[ -n "${LIMIT_DOCS:-}" ] && command="LIMIT_DOCS=$LIMIT_DOCS $command"
[ -n "${GPUIDX_DATA:-}" ] && command="GPUIDX_DATA=$GPUIDX_DATA $command"

cd "$root"
mkdir -p "$build" "$results"
make -s -C bench/codec

args=()
for corpus in $corpora; do
	if [ ! -r "$data/$corpus/docs.tsv" ] || [ ! -r "$data/$corpus/queries.tsv" ]; then
		echo "run.sh: $corpus is not under $data, skipped (scripts/data/fetch $corpus gets it)" >&2
		continue
	fi
	limit=
	[ "$corpus" = debian-paths ] && [ "$paths_limit" != 0 ] && limit=$paths_limit
	out=$build/$corpus
	mkdir -p "$out"
	# an export is reused only for the same input files, limit and scripts
	stamp="limit=$limit $(stat -c '%s %Y' "$data/$corpus/docs.tsv" "$data/$corpus/queries.tsv" | tr '\n' ' ')"
	stamp="$stamp $(cat bench/codec/export_lists.sh bench/codec/pg_lists_to_bin.py | sha1sum | cut -c1-40)"
	if [ -z "${FORCE_EXPORT:-}" ] && [ -s "$out/lists.bin" ] && [ -s "$out/queries.bin" ] &&
		[ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
		echo "run.sh: $corpus: reusing the export in $out" >&2
	else
		echo "run.sh: $corpus: exporting${limit:+ the first $limit documents}" >&2
		rm -f "$out/stamp"
		if ! LIMIT_DOCS=$limit bench/codec/export_lists.sh "$corpus" "$out" > "$out/export.log" 2>&1; then
			cat "$out/export.log" >&2
			exit 1
		fi
		echo "$stamp" > "$out/stamp"
	fi
	name=$corpus
	[ -n "$limit" ] && name="$corpus-first$limit"
	args+=("$name=$out")
done
if [ ${#args[@]} -eq 0 ]; then
	echo "run.sh: no corpus found under $data" >&2
	exit 1
fi

echo "run.sh: running codec_bench (a few minutes)" >&2
$build/codec_bench "${args[@]}" > "$build/codec_bench.out" 2> "$build/codec_bench.log" || {
	cat "$build/codec_bench.log" >&2
	exit 1
}

# the report: how it was made, then the benchmark's tables
{
	echo "# gpuidx codec benchmark"
	echo
	echo "- run: \`$command\`"
	echo "- data: $data; debian-paths: ${limit_note}"
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- machine (lscpu): $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB memory"
	echo "- tree: $(git rev-parse --short HEAD 2>/dev/null || echo unknown) (with the working tree's changes)"
	echo "- raw output: \`$build/codec_bench.out\`, progress in \`$build/codec_bench.log\`"
	tail -n +3 "$build/codec_bench.out"
} > "$build/codec.md"
cp "$build/codec.md" "$results/codec.md"
echo "run.sh: wrote $results/codec.md" >&2
