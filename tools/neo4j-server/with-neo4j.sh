#!/usr/bin/env bash
# Run a command (the test suite) with a live Neo4j beside it.
#
# - NEO4J_URI already set: that server is used as it is.
# - Else, where java and mvn are installed: a fresh Neo4j of tools/neo4j-server
#   starts (state in .neo4j/test, its data wiped first), NEO4J_URI, NEO4J_USER,
#   NEO4J_PASSWORD, NEO4J_HTTP (where Neo4j Browser is served) and
#   NEO4J_REQUIRED=1 are exported to the command, and the
#   server is stopped when the command ends, whether it passed or failed.
# - Else the command runs without one (its Neo4j tests skip, saying why),
#   unless NEO4J_REQUIRED=1, which makes a missing Neo4j a failure.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
state="$root/.neo4j/test"

if [[ -n "${NEO4J_URI:-}" ]]; then
    exec "$@"
fi
if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
    if [[ "${NEO4J_REQUIRED:-}" == "1" ]]; then
        echo "with-neo4j: NEO4J_REQUIRED=1, but neither NEO4J_URI nor java and mvn are here" >&2
        exit 1
    fi
    echo "with-neo4j: no java and mvn here and NEO4J_URI is not set: the Neo4j tests skip" >&2
    exec "$@"
fi

"$here/neo4j.sh" stop "$state" >/dev/null 2>&1 || true
rm -rf "$state/home"
# The plan tests write batches of 2,000 memories with 30,000 edges: a
# transaction may hold 70% of the heap, and 1 GB's 700 MB is not enough.
if ! lines="$(NEO4J_HEAP="${NEO4J_HEAP:-2g}" NEO4J_PAGECACHE="${NEO4J_PAGECACHE:-1g}" \
        "$here/neo4j.sh" start "$state")"; then
    echo "with-neo4j: the Neo4j of tools/neo4j-server did not start" >&2
    exit 1
fi
trap '"$here/neo4j.sh" stop "$state"' EXIT
while IFS= read -r line; do
    export "${line?}"
done < <(tail -n 4 <<<"$lines")
export NEO4J_REQUIRED=1
echo "with-neo4j: the suite runs on the embedded store and on Neo4j at $NEO4J_URI" >&2
"$@"
status=$?
exit "$status"
