#!/usr/bin/env bash
# Start or stop the Neo4j of tools/neo4j-server in the background.
#
#   neo4j.sh start STATE_DIR   build if needed, start, wait until Bolt answers,
#                              print NEO4J_HTTP=… (the HTTP connector, which serves
#                              Neo4j Browser at /browser/), then NEO4J_URI=…,
#                              NEO4J_USER=…, NEO4J_PASSWORD=… last
#   neo4j.sh stop STATE_DIR    stop the server whose pid STATE_DIR/neo4j.pid holds
#
# STATE_DIR (an ignored folder) holds the pid file, the log, the password, the
# ready file and the server's home (data and logs). A second start while the
# server runs prints the same four lines. Sizes: NEO4J_HEAP (default 1g) and
# NEO4J_PAGECACHE (default 512m); ports: NEO4J_BOLT_PORT and NEO4J_HTTP_PORT
# (default 0: free ones); any other server setting: NEO4J_SETTINGS
# ("name=value;name=value").
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
action="${1:-}"
state="${2:-}"
if [[ -z "$action" || -z "$state" ]]; then
    echo "usage: $0 start|stop STATE_DIR" >&2
    exit 2
fi
mkdir -p "$state"
state="$(cd "$state" && pwd)"
pid_file="$state/neo4j.pid"
log="$state/neo4j.log"
ready="$state/ready"
password_file="$state/password"

running() {
    [[ -f "$pid_file" ]] && kill -0 "$(cat "$pid_file")" 2>/dev/null
}

print_env() {
    echo "NEO4J_HTTP=$(sed -n 2p "$ready")"
    echo "NEO4J_URI=$(head -n 1 "$ready")"
    echo "NEO4J_USER=neo4j"
    echo "NEO4J_PASSWORD=$(cat "$password_file")"
}

# The runtime classpath (target/lib) is built once, and again when the pom or
# the launcher changes; the jars come from Maven Central through mvn (~/.m2).
build() {
    local stamp="$here/target/.built"
    if [[ -f "$stamp" && "$stamp" -nt "$here/pom.xml" \
          && "$stamp" -nt "$here/src/main/java/hippocampus/neo4jserver/Launcher.java" ]]; then
        return
    fi
    command -v java >/dev/null || { echo "neo4j: java is not installed" >&2; exit 1; }
    command -v mvn >/dev/null || { echo "neo4j: mvn is not installed" >&2; exit 1; }
    echo "neo4j: building tools/neo4j-server (mvn package)" >&2
    rm -rf "$here/target/lib"
    mvn -q -B --no-transfer-progress -Dstyle.color=never -f "$here/pom.xml" package >&2
    touch "$stamp"
}

# Bolt answers when the handshake gets a version back (stdlib only: no venv needed).
bolt_answers() {
    python3 - "$1" <<'PY'
import socket, sys
from urllib.parse import urlsplit
url = urlsplit(sys.argv[1])
try:
    with socket.create_connection((url.hostname, url.port), timeout=2) as s:
        s.sendall(bytes.fromhex("6060b017") + bytes.fromhex("00000005") + bytes(12))
        version = s.recv(4)
except OSError:
    sys.exit(1)
sys.exit(0 if len(version) == 4 and version != bytes(4) else 1)
PY
}

start() {
    if running && [[ -f "$ready" ]]; then
        echo "neo4j: already running (pid $(cat "$pid_file"))" >&2
        print_env
        return
    fi
    build
    if [[ ! -s "$password_file" ]]; then
        python3 -c 'import secrets; print(secrets.token_urlsafe(18))' > "$password_file"
        chmod 600 "$password_file"
    fi
    rm -f "$ready"
    nohup java -Xms"${NEO4J_HEAP:-1g}" -Xmx"${NEO4J_HEAP:-1g}" \
        -Dneo4j.pagecache="${NEO4J_PAGECACHE:-512m}" -Dneo4j.settings="${NEO4J_SETTINGS:-}" \
        -cp "$here/target/classes:$here/target/lib/*" hippocampus.neo4jserver.Launcher \
        "$state/home" "$password_file" "$ready" \
        "${NEO4J_BOLT_PORT:-0}" "${NEO4J_HTTP_PORT:-0}" >"$log" 2>&1 </dev/null &
    echo $! > "$pid_file"
    local deadline=$((SECONDS + ${NEO4J_START_TIMEOUT_S:-180}))
    until [[ -f "$ready" ]] && bolt_answers "$(head -n 1 "$ready")"; do
        if ! running; then
            echo "neo4j: the server exited while starting; the end of $log:" >&2
            tail -n 40 "$log" >&2
            rm -f "$pid_file"
            exit 1
        fi
        if (( SECONDS > deadline )); then
            echo "neo4j: Bolt did not answer in time; the end of $log:" >&2
            tail -n 40 "$log" >&2
            stop
            exit 1
        fi
        sleep 1
    done
    echo "neo4j: running (pid $(cat "$pid_file")), Browser at $(sed -n 2p "$ready")/browser/" >&2
    print_env
}

stop() {
    if ! running; then
        rm -f "$pid_file" "$ready"
        echo "neo4j: not running" >&2
        return
    fi
    local pid
    pid="$(cat "$pid_file")"
    kill "$pid"
    for _ in $(seq 120); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "neo4j: pid $pid did not stop in 60 s; killing it" >&2
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$pid_file" "$ready"
    echo "neo4j: stopped" >&2
}

case "$action" in
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop STATE_DIR" >&2; exit 2 ;;
esac
