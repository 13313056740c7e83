# Internal errors (XX000) and "index is corrupted" (XX002) in a server log
# (log_error_verbosity = verbose: "ERROR:  XX000: message", then the same
# process's LOCATION and STATEMENT lines): prints each with its location and
# statement, but for the XX000 of the functions listed in the file given as
# known (PostgreSQL's own, raised when sqlsmith calls them with arguments
# nothing else would pass).
function pid() { return match($0, /\[[0-9]+\]/) ? substr($0, RSTART, RLENGTH) : "" }
function flush() {
	if (block != "" && !(code == "XX000" && where in known))
		printf "%s", block
	block = ""; who = ""
}
BEGIN {
	while ((getline line < known_file) > 0) {
		sub(/#.*/, "", line)
		if (split(line, f, " ") > 0)
			known[f[1]] = 1
	}
}
/ ERROR:  XX00[02]: / {
	flush()
	who = pid(); code = substr($0, index($0, "ERROR:  ") + 8, 5); where = ""
	block = $0 "\n"
	next
}
who != "" && pid() == who && / (DETAIL|HINT|CONTEXT|QUERY|LOCATION|STATEMENT):  / {
	if ($0 ~ / LOCATION:  /) {
		where = $0; sub(/.* LOCATION:  /, "", where); sub(/,.*/, "", where)
	}
	block = block $0 "\n"
	next
}
# the next lines of a multi-line statement or context (no prefix)
who != "" && !/^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] / { block = block $0 "\n"; next }
{ flush() }
END { flush() }
