#!/usr/bin/env bash
# README.md's SQL as a pg_regress test: every ```sql block, in order, into
# sql/readme.sql, run in a database of its own (the README creates the
# extension, as a new user does).  A block right after the line
#   <!-- readme.sql: answers not compared -->
# runs too, its answers discarded (they depend on the server: timings, the
# GPU worker), its errors still shown.
#   scripts/readme_sql.sh           write sql/readme.sql
#   scripts/readme_sql.sh --check   fail when sql/readme.sql is not README.md's,
#                                   or when README.md's rows for gpuidx_index_stats
#                                   and gpuidx_segments miss a column they return,
#                                   or when a plan it shows is not the one its test got
# `make installcheck` runs the check first, so README.md cannot drift from
# its test: after editing the README's SQL, run `make readme-sql` and update
# expected/readme.out.
set -euo pipefail
cd "$(dirname "$0")/.."

generate() {
    cat <<'EOF'
-- Generated from README.md by scripts/readme_sql.sh: edit README.md, then
-- `make readme-sql`.  The README's SQL in order, in a database of its own.
SET client_min_messages = warning;
\set regress_db :DBNAME
DROP DATABASE IF EXISTS gpuidx_readme;
CREATE DATABASE gpuidx_readme TEMPLATE template0;
\c gpuidx_readme
EOF
    awk '
        /^<!-- readme\.sql: answers not compared -->$/ { quiet = 1; next }
        !inblock && /^```sql[ \t]*$/ {
            inblock = 1; n++
            printf "\n-- README.md, SQL block %d%s\n", n, quiet ? ": answers not compared" : ""
            if (quiet) print "\\o /dev/null"
            next
        }
        inblock && /^```[ \t]*$/ {
            if (quiet) print "\\o"
            inblock = 0; quiet = 0; next
        }
        inblock { print; next }
        /^```/ { quiet = 0 }
    ' README.md
    cat <<'EOF'

\c :regress_db
DROP DATABASE gpuidx_readme;
EOF
}

# the README's row for a function returning columns names every one of them
columns_named() {
    local fn status=0
    for fn in gpuidx_index_stats gpuidx_segments; do
        local row cols c
        row=$(grep "^| \`$fn(" README.md)
        cols=$(awk -v fn="$fn" '$0 ~ "FUNCTION " fn "\\(" { on = 1 } on { print } on && /\)/ && !/\($/ && !($0 ~ fn) { exit }' \
            sql/gpuidx--*.sql | grep -o 'OUT [a-z_0-9]*' | cut -d' ' -f2)
        [ -n "$cols" ] || { echo "readme_sql.sh: no columns found for $fn in sql/" >&2; status=1; }
        for c in $cols; do
            grep -q "\`$c\`" <<<"$row" || { echo "readme_sql.sh: README.md's $fn row does not name its column $c" >&2; status=1; }
        done
    done
    return $status
}

# each EXPLAIN (COSTS OFF) of the README is followed by its plan as
# comments ("-- " and the line): the plan expected/readme.out has
plans_shown() {
    awk '
        FNR == 1 { file++ }
        file == 1 && /^EXPLAIN \(COSTS OFF\)/ { q = $0; shown[q] = ""; next }
        file == 1 && q != "" && /^-- / { shown[q] = shown[q] substr($0, 4) "\n"; next }
        file == 1 { q = ""; next }
        file == 2 && /^EXPLAIN \(COSTS OFF\)/ { p = $0; got[p] = ""; skip = 2; next }
        file == 2 && p != "" && skip > 0 { skip--; next }
        file == 2 && p != "" && /^\([0-9]+ rows?\)$/ { p = ""; next }
        file == 2 && p != "" { got[p] = got[p] $0 "\n" }
        END {
            for (e in shown)
                if (shown[e] != got[e]) {
                    printf "readme_sql.sh: README.md shows another plan than expected/readme.out for\n  %s\nREADME:\n%sexpected:\n%s", e, shown[e], got[e] > "/dev/stderr"
                    status = 1
                }
            exit status
        }' README.md expected/readme.out
}

case "${1:-}" in
    "")
        generate > sql/readme.sql ;;
    --check)
        if ! generate | cmp -s - sql/readme.sql; then
            echo "readme_sql.sh: sql/readme.sql is not README.md's SQL; run \`make readme-sql\`" >&2
            echo "readme_sql.sh: and update expected/readme.out (the differences:)" >&2
            generate | diff -u sql/readme.sql - >&2 || true
            exit 1
        fi
        columns_named && plans_shown ;;
    *)
        echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
