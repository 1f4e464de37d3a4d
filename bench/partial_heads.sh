#!/usr/bin/env bash
# Memory held by connections that sent half a request head (a slowloris
# crowd): weft against nginx, both with one loop or worker.
#
#   bench/partial_heads.sh [--weft PATH] [--only nginx|weft[,...]] [--connections N]
#
# For each server: warm it up, read its VmRSS, open N connections that each
# send half of a browser-sized head (bench/http_load --partial), wait until
# the server holds all N (its open fds), read VmRSS again, then complete every
# head and check that each is answered 200. request_timeout (weft) and
# client_header_timeout (nginx) are set to minutes, so no head times out.
#
# The last line is machine-readable ("na" for a server left out):
#   result weft_bytes_per_conn=N nginx_bytes_per_conn=N connections=N
#
# Needs nginx (only when measured; .ci/install-deps --bench) and taskset.

set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
weft=$root/build/release/weft
load=$root/build/release/bench/http_load
servers=(weft nginx)
connections=10000

usage() {
    sed -n '4,5p' "$0" | sed 's/^# *//' >&2
    exit 2
}

while (($#)); do
    case $1 in
    --weft) weft=${2:?}; shift ;;
    --only) IFS=, read -r -a servers <<<"${2:?}"; shift ;;
    --connections) connections=${2:?}; shift ;;
    *) usage ;;
    esac
    shift
done

log() { echo "partial_heads.sh: $*" >&2; }
die() {
    log "$*"
    exit 1
}

for s in "${servers[@]}"; do
    case $s in
    weft) [[ -x $weft ]] || die "no weft binary at $weft (cmake --build --preset release)" ;;
    nginx) command -v nginx >/dev/null || die "no nginx (.ci/install-deps --bench, or --only weft)" ;;
    *) usage ;;
    esac
done
(cd "$root" && { [[ -d build/release ]] || cmake --preset release >/dev/null; } &&
    cmake --build build/release --target http_load >/dev/null) || die "could not build bench/http_load"

# The servers and the client inherit this shell's limit.
ulimit -n $((connections + 1000)) 2>/dev/null ||
    die "cannot raise the open files limit to $((connections + 1000))"

tmp=$(mktemp -d /tmp/weft-partial-heads.XXXXXX)
pid='' client=''
cleanup() {
    local p
    for p in $pid $client; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$tmp/nginx/tmp"

start() { # NAME: sets pid and port once it answers
    local name=$1 tries=100 cmd
    port=$("$load" --free-port) || die "no free port"
    case $name in
    weft)
        cat >"$tmp/weft.conf" <<EOF
threads = 1
request_timeout = 5m
keep_alive_timeout = 5m
access_log = off
listener 127.0.0.1:$port
site {
    response /hello {
        body = Hello, World!
    }
}
EOF
        cmd=("$weft" -c "$tmp/weft.conf")
        ;;
    nginx)
        # Twice the connections: with less than 1/16 of worker_connections
        # free, nginx closes ("reuses") connections still waiting for bytes.
        cat >"$tmp/nginx/nginx.conf" <<EOF
worker_processes 1;
worker_rlimit_nofile $((connections + 1000));
error_log $tmp/nginx/error.log error;
pid $tmp/nginx/nginx.pid;
events {
    worker_connections $((connections * 2));
}
http {
    access_log off;
    client_header_timeout 5m;
    keepalive_timeout 5m;
    client_body_temp_path $tmp/nginx/tmp/body;
    proxy_temp_path $tmp/nginx/tmp/proxy;
    fastcgi_temp_path $tmp/nginx/tmp/fastcgi;
    uwsgi_temp_path $tmp/nginx/tmp/uwsgi;
    scgi_temp_path $tmp/nginx/tmp/scgi;
    server {
        listen 127.0.0.1:$port backlog=4096;
        location = /hello {
            return 200 "Hello, World!";
        }
    }
}
EOF
        cmd=(nginx -p "$tmp/nginx/" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/error.log"
            -g "daemon off; master_process off;")
        ;;
    esac
    taskset -c 0 "${cmd[@]}" >"$tmp/$name.log" 2>&1 &
    pid=$!
    while ! "$load" --port "$port" --path /hello --connections 1 --requests 1 \
        --timeout 5 >/dev/null 2>&1; do
        kill -0 "$pid" 2>/dev/null || die "$name did not start: $(tail -5 "$tmp/$name.log")"
        ((--tries > 0)) || die "$name does not answer on port $port"
        sleep 0.1
    done
}

stop() {
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    pid=''
}

open_fds() { find "/proc/$pid/fd" -mindepth 1 | wc -l; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"; }

# measure NAME: v = bytes of RSS per connection holding half a head
measure() {
    "$load" --port "$port" --path /hello --connections 16 --requests 2000 --timeout 60 \
        >/dev/null || die "$1: the warm-up failed"
    sleep 0.5
    local before after fds tries=600 line=''
    before=$(rss_kb)
    fds=$(open_fds)
    coproc PARTIAL { exec timeout 300 taskset -c 1 "$load" --port "$port" --path /hello \
        --partial "$connections" --timeout 290 2>"$tmp/partial.err"; }
    client=$PARTIAL_PID
    read -r -t 120 line <&"${PARTIAL[0]}"
    [[ $line == "partial $connections" ]] || die "$1: the client failed: $(cat "$tmp/partial.err")"
    # The server accepts (TCP_DEFER_ACCEPT: once the bytes are in) a little
    # after the client's connect returns.
    until (($(open_fds) - fds >= connections)); do
        ((--tries > 0)) || die "$1 holds only $(($(open_fds) - fds)) of $connections" \
            "connections: $(tail -3 "$tmp/$1.log" "$tmp/nginx/error.log" 2>/dev/null)"
        sleep 0.1
    done
    sleep 1
    after=$(rss_kb)
    echo complete >&"${PARTIAL[1]}"
    read -r -t 120 line <&"${PARTIAL[0]}"
    [[ $line == "answered $connections" ]] ||
        die "$1: not every completed head was answered: $(cat "$tmp/partial.err")"
    wait "$client"
    client=''
    v=$(((after - before) * 1024 / connections))
    log "$1: VmRSS $before kB before, $after kB with $connections half heads: $v bytes each"
}

declare -A bytes
for s in "${servers[@]}"; do
    start "$s"
    measure "$s"
    bytes[$s]=$v
    kill -0 "$pid" 2>/dev/null || die "$s died: $(tail -5 "$tmp/$s.log")"
    stop
done

for s in "${servers[@]}"; do
    echo "bytes/conn with half a head, $s: ${bytes[$s]} ($connections connections)"
done
echo "result weft_bytes_per_conn=${bytes[weft]:-na} nginx_bytes_per_conn=${bytes[nginx]:-na}" \
    "connections=$connections"
