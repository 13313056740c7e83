# The queries sqlsmith wrote (--dump-all-queries, each ends with ";" and a
# newline) that reach gpuidx: naming one of its operators, functions or its
# type; reading one of setup.sql's views (each runs gpuidx); writing rows of
# an indexed table (the index's insert).
BEGIN { RS = ";\n"; n = 0 }
NF {
	n++
	named = ($0 ~ /@@&|<=>|(^|[^a-z0-9_])(pl_[a-z0-9_]+|gpuidx_[a-z0-9_]+)\(|postinglist/)
	view = ($0 ~ /public\.(hits|kernel_docs|tsv_docs|expr_docs|part_docs|ranked|ranked_tsv|scores|list_ops|list_ids)[ \n]/)
	write = ($0 ~ /^[ \n]*(insert into|update|delete from|merge into) public\.(docs|kernel_docs|tsv_docs|expr_docs|part_docs)[ \n]/)
	nnamed += named; nview += view; nwrite += write; any += (named || view || write)
}
END {
	if (n == 0) { printf "seed %s: no query\n", seed; exit }
	printf "seed %s: %d queries; reaching gpuidx: %d (%.1f%%); naming its operators, functions or type: %d (%.1f%%); through its views: %d (%.1f%%); writing indexed rows: %d (%.1f%%)\n",
		seed, n, any, 100 * any / n, nnamed, 100 * nnamed / n, nview, 100 * nview / n, nwrite, 100 * nwrite / n
}
