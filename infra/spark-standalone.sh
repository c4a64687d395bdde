#!/usr/bin/env bash
# A Spark standalone cluster from the installed pyspark (no separate Spark download), for
# `burstlake metrics --spark-master spark://HOST:PORT`. Runs one master and N workers on this
# machine; on several machines, run `start-worker` on each with the master's URL.
#
#   infra/spark-standalone.sh start  [--host H] [--port P] [--workers N] [--cores C] [--memory M]
#   infra/spark-standalone.sh start-worker spark://H:P [--cores C] [--memory M]
#   infra/spark-standalone.sh stop
#
# State (pid files, logs, worker scratch) lives in $BURSTLAKE_SPARK_DIR (default ./.spark).
# Defaults: host 127.0.0.1, port 7077, 1 worker, all cores, 2g per worker. The master's URL is
# printed when it is up; every process is stopped by `stop`.
set -euo pipefail

PYTHON="${PYTHON:-$(dirname "$0")/../.venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON=python3
SPARK_HOME="$("$PYTHON" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
export SPARK_HOME PYSPARK_PYTHON="${PYSPARK_PYTHON:-$PYTHON}"
DIR="${BURSTLAKE_SPARK_DIR:-$PWD/.spark}"
HOST=127.0.0.1 PORT=7077 WORKERS=1 CORES="$(nproc)" MEMORY=2g

die() { echo "spark-standalone: $*" >&2; exit 2; }

launch() {  # launch NAME READY-TEXT CLASS ARGS...: start in the background, wait until ready
    local name=$1 ready=$2 log="$DIR/$1.log"
    shift 2
    mkdir -p "$DIR"
    setsid "$SPARK_HOME/bin/spark-class" "$@" >"$log" 2>&1 < /dev/null &
    echo $! >"$DIR/$name.pid"
    for _ in $(seq 240); do
        grep -q "$ready" "$log" && return 0
        kill -0 "$(cat "$DIR/$name.pid")" 2>/dev/null || die "$name exited; see $log"
        sleep 0.5
    done
    die "$name not ready after 120 s; see $log"
}

worker() {  # worker INDEX MASTER-URL
    launch "worker-$1" "Successfully registered" org.apache.spark.deploy.worker.Worker "$2" \
        --host "$HOST" --cores "$CORES" --memory "$MEMORY" --webui-port 0 \
        --work-dir "$DIR/work-$1"
}

command=${1:-}; shift || true
while [ $# -gt 0 ]; do
    case "$1" in
        --host) HOST=$2; shift 2 ;;
        --port) PORT=$2; shift 2 ;;
        --workers) WORKERS=$2; shift 2 ;;
        --cores) CORES=$2; shift 2 ;;
        --memory) MEMORY=$2; shift 2 ;;
        spark://*) URL=$1; shift ;;
        *) die "unknown option $1 (see the comment at the top of $0)" ;;
    esac
done

case "$command" in
    start)
        [ -e "$DIR/master.pid" ] && kill -0 "$(cat "$DIR/master.pid")" 2>/dev/null \
            && die "a master is already running (pid $(cat "$DIR/master.pid")); stop it first"
        launch master "Starting Spark master" org.apache.spark.deploy.master.Master \
            --host "$HOST" --port "$PORT" --webui-port 0
        for i in $(seq "$WORKERS"); do worker "$i" "spark://$HOST:$PORT"; done
        echo "spark://$HOST:$PORT"
        ;;
    start-worker)
        [ -n "${URL:-}" ] || die "start-worker needs the master's spark:// URL"
        worker "$(date +%s%N)" "$URL"
        ;;
    stop)
        for pidfile in "$DIR"/*.pid; do
            [ -e "$pidfile" ] || continue
            kill -TERM -- "-$(cat "$pidfile")" 2>/dev/null || true
            rm -f "$pidfile"
        done
        ;;
    *) die "usage: $0 start|start-worker|stop [options]" ;;
esac
