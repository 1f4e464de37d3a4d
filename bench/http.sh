#!/usr/bin/env bash
# HTTP benchmark: weft against nginx and against the floor (limit_responder).
#
#   bench/http.sh [--weft PATH] [--quick] [--only nginx|weft|limit[,...]]
#                 [--backend epoll|uring|both] [--rounds N] [--duration S] [--idle N] [--keep]
#
# Each server runs alone, on one loop pinned to CPU 0, with the client on
# CPU 1, on 127.0.0.1 and a free port. Cases: a 13-byte `response` (hello), a
# 1 KiB file (file1k) and a 1 MiB file (file1m); limit_responder serves only
# hello. The servers alternate A B A B A B over the rounds; figures are medians.
#
# weft runs once per I/O backend (--backend; default both when `weft -t` takes
# `io_backend = uring` without falling back, else epoll): weft-epoll and
# weft-uring are two servers in the same rounds, so their ratios come from one
# run. The backend is set by `io_backend` in weft's configuration, or by
# WEFT_IO_BACKEND for a weft that refuses the key; the run stops with the reason
# when weft's loop is not on the backend asked for (its fds show which it is).
#
# Requests/s cannot separate fast servers here (wrk saturates its own core
# first), so the table also gives each server's own cost per request:
#   instr     userland instructions, under callgrind (deterministic), with
#             bench/http_load: requests only (no connect, no close)
#   h2_instr  the same with `h2load --h1 -c 16 -t 1 -n N` (nghttp2-client),
#             as a load generator sees it: its User-Agent, its connections'
#             accept and close counted; "na" when the server cannot run under
#             callgrind on its backend (the reason is printed)
#   cpu_us    server CPU time (utime+stime from /proc/PID/stat), in µs
#   sys@16, sys@64  syscalls, under strace -f -c, at 16 and 64 connections
#             (the calls by name per request are printed below the table)
#   idle      bytes of server RSS per idle keep-alive connection (--idle of them)
# wrk (rps, p99) and h2load (h2_rps) give requests/s over 16 connections for
# --duration seconds; bench/http_load sends the exact counts the other figures
# are divided by.
#
# The last line is machine-readable (ratios as decimals, "na" when a server or
# backend was left out). Its first keys are weft's on the first backend (epoll
# unless --backend uring):
#   result hello_instr=N file1k_instr=N hello_cpu_vs_limit=N
#          file1k_cpu_vs_nginx=N file1m_rps_vs_nginx=N idle_bytes_per_conn=N
# then for B in epoll and uring, weft's figures on B:
#          B_hello_instr B_file1k_instr B_hello_h2load_instr B_file1k_h2load_instr
#          B_hello_cpu_us B_file1k_cpu_us B_hello_sys16 B_hello_sys64
#          B_file1k_sys16 B_file1k_sys64 B_hello_rps B_hello_h2load_rps
#          B_file1k_rps B_idle_bytes_per_conn
# and nginx_hello_h2load_instr nginx_file1k_h2load_instr
#     uring_hello_cpu_vs_epoll uring_file1k_cpu_vs_epoll
#     uring_hello_sys64_vs_epoll uring_file1k_sys64_vs_epoll
#
# WEFT_FILES_KEYS (environment): lines added to weft's `files /` section, to
# measure what a key costs (WEFT_FILES_KEYS='deny = /private *.less /a/**/*.md').
#
# Needs nginx, wrk, h2load (nghttp2-client), valgrind, strace, taskset
# (util-linux); installs nothing (.ci/install-deps --bench does).

set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
weft=$root/build/release/weft
bin=$root/build/release/bench
servers=(nginx weft limit)
backend=''
cases=(hello file1k file1m)
rounds=3
duration=5
idle=10000
keep=0
quick=0

usage() {
    sed -n '4,5p' "$0" | sed 's/^# *//' >&2
    exit 2
}

while (($#)); do
    case $1 in
    --weft) weft=${2:?}; shift ;;
    --quick) quick=1 ;;
    --only) IFS=, read -r -a servers <<<"${2:?}"; shift ;;
    --backend) backend=${2:?}; shift ;;
    --rounds) rounds=${2:?}; shift ;;
    --duration) duration=${2:?}; shift ;;
    --idle) idle=${2:?}; shift ;;
    --keep) keep=1 ;;
    -h | --help) usage ;;
    *) usage ;;
    esac
    shift
done
for s in "${servers[@]}"; do
    [[ $s == nginx || $s == weft || $s == limit ]] || usage
done
[[ -z $backend || $backend == epoll || $backend == uring || $backend == both ]] || usage

# Requests per fixed-count run, by case: for CPU time (long enough for the
# 10 ms clock tick), under callgrind (slow, but deterministic) and strace.
declare -A cpu_n=([hello]=200000 [file1k]=200000 [file1m]=4000)
declare -A cg_n=([hello]=20000 [file1k]=20000 [file1m]=400)
declare -A st_n=([hello]=20000 [file1k]=20000 [file1m]=400)
declare -A warm_n=([hello]=2000 [file1k]=2000 [file1m]=100)
declare -A path=([hello]=/hello [file1k]=/1k.bin [file1m]=/1m.bin)
if ((quick)); then
    rounds=1
    duration=2
    cpu_n=([hello]=50000 [file1k]=50000 [file1m]=1000)
    cg_n=([hello]=3000 [file1k]=3000 [file1m]=100)
    st_n=([hello]=5000 [file1k]=5000 [file1m]=100)
fi
connections=16
wide=64 # the second connection count syscalls are counted at
files_keys=${WEFT_FILES_KEYS:-}

log() { echo "http.sh: $*" >&2; }
die() {
    log "$*"
    exit 1
}
# stop, alive, begin/go/finish, cpu_ticks, measure_instr, measure_syscalls,
# median, get, ratio
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"

# --- tools, binaries, limits ---------------------------------------------------

missing=()
for tool in nginx wrk h2load valgrind callgrind_control strace taskset timeout; do
    command -v $tool >/dev/null || missing+=("$tool")
done
((${#missing[@]} == 0)) ||
    die "missing: ${missing[*]} (Debian packages: nginx wrk nghttp2-client valgrind strace" \
        "util-linux coreutils; .ci/install-deps --bench)"
(($(nproc) >= 2)) || die "needs two CPUs (server on 0, client on 1)"

# Built (or brought up to date: a no-op when they are) with the release preset.
(cd "$root" && { [[ -d build/release ]] || cmake --preset release >/dev/null; } &&
    cmake --build build/release --target limit_responder http_load >/dev/null) ||
    die "could not build bench/limit_responder and bench/http_load"
for s in "${servers[@]}"; do
    [[ $s != weft || -x $weft ]] ||
        die "no weft binary at $weft (cmake --build --preset release, or --weft PATH)"
done

# Both servers and the idle client inherit this shell's limit.
ulimit -n 30000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
if (($(ulimit -n) < idle + 200)); then
    idle=$(($(ulimit -n) - 200))
    log "open files limited to $(ulimit -n): $idle idle connections"
fi

tmp=$(mktemp -d /tmp/weft-http-bench.XXXXXX)
# The processes this script started and has not yet reaped: only those are killed.
pid='' tracer='' client=''
cleanup() {
    local p
    for p in $pid $tracer $client; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    if ((keep)); then log "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$tmp/www" "$tmp/nginx/tmp"
head -c 1024 /dev/urandom >"$tmp/www/1k.bin"
head -c $((1024 * 1024)) /dev/urandom >"$tmp/www/1m.bin"
load=$bin/http_load
clk_tck=$(getconf CLK_TCK)
load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)

# --- weft's backends: weft becomes weft-epoll and/or weft-uring ----------------------

backends=()
if [[ " ${servers[*]} " == *" weft "* ]]; then
    io_backend_setup epoll
    io_backend_setup uring
    case ${backend:-} in
    epoll | uring) backends=("$backend") ;;
    both) backends=(epoll uring) ;;
    '')
        if uring_usable; then
            backends=(epoll uring)
        else
            backends=(epoll)
            log "weft-uring left out (--backend both insists): weft -t said: ${io_said[uring]}"
        fi
        ;;
    esac
    runs=()
    for s in "${servers[@]}"; do
        if [[ $s == weft ]]; then runs+=("${backends[@]/#/weft-}"); else runs+=("$s"); fi
    done
    servers=("${runs[@]}")
fi

# --- servers -------------------------------------------------------------------

# nginx at its cheapest for these cases: sendfile on, no access log, no
# tcp_nopush (Debian's nginx.conf turns it on; it costs two setsockopt calls
# per file response), keep-alive that never ends a connection.
write_nginx_conf() { # port
    cat >"$tmp/nginx/nginx.conf" <<EOF
worker_processes 1;
worker_rlimit_nofile 30000;
error_log $tmp/nginx/error.log error;
pid $tmp/nginx/nginx.pid;
events {
    worker_connections 20000;
}
http {
    access_log off;
    default_type application/octet-stream;
    sendfile on;
    keepalive_timeout 1h;
    keepalive_requests 1000000000;
    client_body_temp_path $tmp/nginx/tmp/body;
    proxy_temp_path $tmp/nginx/tmp/proxy;
    fastcgi_temp_path $tmp/nginx/tmp/fastcgi;
    uwsgi_temp_path $tmp/nginx/tmp/uwsgi;
    scgi_temp_path $tmp/nginx/tmp/scgi;
    server {
        listen 127.0.0.1:$1;
        root $tmp/www;
        location = /hello {
            default_type text/plain;
            return 200 "Hello, World!";
        }
        location / {
        }
    }
}
EOF
}

write_weft_conf() { # port backend
    cat >"$tmp/weft.conf" <<EOF
${io_line[$2]}
threads = 1
keep_alive_timeout = 1h
access_log = off
error_log = stderr
listener 127.0.0.1:$1
site {
    root = $tmp/www
    response /hello {
        status = 200
        content_type = text/plain
        body = Hello, World!
    }
    files / {
$files_keys
    }
}
EOF
}

# start NAME [WRAPPER...]: the server pinned to CPU 0 (under WRAPPER if given);
# sets pid and port once it answers. weft-B on another backend than B dies,
# unless under a WRAPPER: then wrong_backend says why (else it is empty).
start() {
    local name=$1 tries=100
    shift
    (($#)) && tries=600 # valgrind starts slowly
    wrong_backend=''
    port=$("$load" --free-port) || die "no free port"
    local cmd env=()
    case $name in
    nginx)
        write_nginx_conf "$port"
        cmd=(nginx -p "$tmp/nginx/" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/error.log"
            -g "daemon off; master_process off;")
        ;;
    weft-*)
        write_weft_conf "$port" "${name#weft-}"
        cmd=("$weft" -c "$tmp/weft.conf")
        [[ -n ${io_env[${name#weft-}]} ]] && env=("${io_env[${name#weft-}]}")
        ;;
    limit) cmd=("$bin/limit_responder" --port "$port") ;;
    esac
    env -u WEFT_IO_BACKEND "${env[@]}" taskset -c 0 "$@" "${cmd[@]}" >"$tmp/$name.log" 2>&1 &
    pid=$!
    while ! "$load" --port "$port" --path /hello --connections 1 --requests 1 \
        --timeout 5 >/dev/null 2>&1; do
        if ! kill -0 "$pid" 2>/dev/null; then
            # weft on uring under callgrind: a valgrind that cannot run the ring
            [[ $# -gt 0 && $name == *-uring ]] || die "$name did not start: $(tail -5 "$tmp/$name.log")"
            wrong_backend="it did not start: $(tail -3 "$tmp/$name.log" | paste -sd ';')"
            stop
            return
        fi
        ((--tries > 0)) || die "$name does not answer on port $port"
        sleep 0.1
    done
    if [[ $name == weft-* ]] && backend_mismatch "${name#weft-}" "$name"; then
        (($#)) || die "$v"
        wrong_backend=$v
    fi
}

# run CASE N: N requests of CASE over the usual connections, client on CPU 1.
run() {
    timeout 300 taskset -c 1 "$load" --port "$port" --path "${path[$1]}" \
        --connections $connections --requests "$2" --timeout 290 >"$tmp/load.out" 2>&1 ||
        die "http_load: $(cat "$tmp/load.out")"
}

# --- measures (each sets v; no subshells, so die and the pid list work) -----------

# wrk CASE: v="RPS P99_US"
measure_wrk() {
    local out
    out=$(timeout $((duration + 30)) taskset -c 1 wrk -t1 -c$connections -d"${duration}s" \
        --latency "http://127.0.0.1:$port${path[$1]}" 2>&1) || die "wrk: $out"
    if grep -q 'Non-2xx' <<<"$out"; then die "wrk $1: $(grep 'Non-2xx' <<<"$out")"; fi
    if grep -q 'Socket errors' <<<"$out"; then log "wrk $1: $(grep 'Socket errors' <<<"$out")"; fi
    v=$(awk '/^Requests\/sec:/ { rps = $2 }
             $1 == "99%" { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
                           p99 = v * (u == "s" ? 1e6 : u == "ms" ? 1e3 : 1) }
             END { if (rps > 0) printf "%.0f %.0f\n", rps, p99 }' <<<"$out")
    [[ -n $v ]] || die "no figures from wrk: $out"
}

# cpu CASE: µs of server CPU per request
measure_cpu() {
    local before after
    begin "$1" "${cpu_n[$1]}" || die "$1 failed"
    before=$(cpu_ticks)
    go
    after=$(cpu_ticks)
    finish
    v=$(awk -v t=$((after - before)) -v hz="$clk_tck" -v n="${cpu_n[$1]}" \
        'BEGIN { printf "%.2f\n", t / hz * 1e6 / n }')
}

open_fds() { find "/proc/$pid/fd" -mindepth 1 | wc -l; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"; }

# idle: bytes of server RSS per idle keep-alive connection
measure_idle() {
    run hello 100
    sleep 0.5
    local before after fds tries=600
    before=$(rss_kb)
    fds=$(open_fds)
    timeout 200 taskset -c 1 "$load" --port "$port" --path /hello --idle "$idle" \
        --timeout 180 >"$tmp/idle.out" 2>&1 &
    client=$!
    until grep -qs '^idle' "$tmp/idle.out"; do
        kill -0 "$client" 2>/dev/null || die "idle client: $(cat "$tmp/idle.out")"
        ((--tries > 0)) || die "the idle connections took over 60 s"
        sleep 0.1
    done
    sleep 0.5
    after=$(rss_kb)
    fds=$(($(open_fds) - fds))
    ((fds >= idle)) || log "$idle idle connections, but the server holds only $fds more fds"
    kill "$client"
    wait "$client" 2>/dev/null
    client=''
    v=$(((after - before) * 1024 / idle))
}

# --- the runs ----------------------------------------------------------------------

declare -A rps p99 h2rps cpu instr h2instr sys sys_wide mix idle_bytes
cases_of() { [[ $1 == limit ]] && echo hello || echo "${cases[@]}"; }
notes=()

for ((r = 1; r <= rounds; ++r)); do
    for s in "${servers[@]}"; do
        log "round $r: $s"
        start "$s"
        for c in $(cases_of "$s"); do
            measure_wrk "$c"
            rps[$s $c]+=" ${v% *}"
            p99[$s $c]+=" ${v#* }"
            measure_h2load_rps "$c" $connections
            [[ ${v#* } == 0 ]] || die "h2load $s $c: ${v#* } requests failed"
            h2rps[$s $c]+=" ${v% *}"
            measure_cpu "$c"
            cpu[$s $c]+=" $v"
            alive "$s"
        done
        stop
    done
done

for s in "${servers[@]}"; do
    log "$s under callgrind"
    start "$s" valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$s.out"
    dumps=0
    if [[ -n $wrong_backend ]]; then
        notes+=("instr and h2_instr na for $s: under callgrind, $wrong_backend")
    else
        for c in $(cases_of "$s"); do
            measure_instr "$c" "$s"
            # shellcheck disable=SC2034 # read through get's nameref
            instr[$s $c]=$v
            alive "$s"
            measure_h2load_instr "$c" "$s" $connections
            # shellcheck disable=SC2034
            h2instr[$s $c]=$v
        done
    fi
    stop

    log "$s under strace"
    start "$s"
    for c in $(cases_of "$s"); do
        measure_syscalls "$c"
        # shellcheck disable=SC2034
        sys[$s $c]=$v
        mix[$s $c $connections]=$sys_mix
        measure_syscalls "$c" $wide
        # shellcheck disable=SC2034
        sys_wide[$s $c]=$v
        mix[$s $c $wide]=$sys_mix
    done
    alive "$s"
    stop

    [[ $s == limit ]] && continue
    log "$s with $idle idle connections"
    start "$s"
    measure_idle
    idle_bytes[$s]=$v
    alive "$s"
    stop
done

# --- the table and the result line ------------------------------------------------------

for s in "${servers[@]}"; do
    for c in $(cases_of "$s"); do
        log "$s $c by round: rps${rps[$s $c]}, h2_rps${h2rps[$s $c]}, p99_us${p99[$s $c]}," \
            "cpu_us${cpu[$s $c]}"
    done
done
row='%-10s %-6s %8s %8s %7s %9s %9s %7s %7s %7s\n'
# shellcheck disable=SC2059 # the format is row
printf "$row" server case rps h2_rps p99_us instr h2_instr cpu_us "sys@$connections" "sys@$wide"
for s in "${servers[@]}"; do
    for c in $(cases_of "$s"); do
        # shellcheck disable=SC2059
        printf "$row" "$s" "$c" "$(get rps "$s $c")" "$(get h2rps "$s $c")" "$(get p99 "$s $c")" \
            "$(get instr "$s $c")" "$(get h2instr "$s $c")" "$(get cpu "$s $c")" \
            "$(get sys "$s $c")" "$(get sys_wide "$s $c")"
    done
done
echo "syscalls per request by name:"
for s in "${servers[@]}"; do
    for c in $(cases_of "$s"); do
        for n in $connections $wide; do echo "  $s $c @$n: ${mix[$s $c $n]}"; done
    done
done
for s in "${servers[@]}"; do
    [[ $s == limit ]] || echo "idle bytes/conn $s: ${idle_bytes[$s]} ($idle connections)"
done
for note in "${notes[@]}"; do echo "$note"; done

# The result line's weft: the first backend's; backend_keys B: weft-B's figures.
main=weft-${backends[0]:-epoll}
backend_keys() {
    local w=weft-$1 b=$1 k
    for k in hello file1k; do
        printf ' %s_%s_instr=%s' "$b" $k "$(get instr "$w $k")"
    done
    for k in hello file1k; do
        printf ' %s_%s_h2load_instr=%s' "$b" $k "$(get h2instr "$w $k")"
    done
    for k in hello file1k; do
        printf ' %s_%s_cpu_us=%s' "$b" $k "$(get cpu "$w $k")"
    done
    for k in hello file1k; do
        printf ' %s_%s_sys16=%s %s_%s_sys%s=%s' "$b" $k "$(get sys "$w $k")" "$b" $k $wide \
            "$(get sys_wide "$w $k")"
    done
    printf ' %s_hello_rps=%s %s_hello_h2load_rps=%s %s_file1k_rps=%s %s_idle_bytes_per_conn=%s' \
        "$b" "$(get rps "$w hello")" "$b" "$(get h2rps "$w hello")" "$b" "$(get rps "$w file1k")" \
        "$b" "${idle_bytes[$w]:-na}"
}
echo "load average (other work on the machine skews rps and cpu): $load_at_start at start," \
    "$(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo "result hello_instr=$(get instr "$main hello") file1k_instr=$(get instr "$main file1k")" \
    "hello_cpu_vs_limit=$(ratio "$(get cpu "$main hello")" "$(get cpu 'limit hello')")" \
    "file1k_cpu_vs_nginx=$(ratio "$(get cpu "$main file1k")" "$(get cpu 'nginx file1k')")" \
    "file1m_rps_vs_nginx=$(ratio "$(get rps "$main file1m")" "$(get rps 'nginx file1m')")" \
    "idle_bytes_per_conn=${idle_bytes[$main]:-na}$(backend_keys epoll)$(backend_keys uring)" \
    "nginx_hello_h2load_instr=$(get h2instr 'nginx hello')" \
    "nginx_file1k_h2load_instr=$(get h2instr 'nginx file1k')" \
    "uring_hello_cpu_vs_epoll=$(ratio "$(get cpu 'weft-uring hello')" "$(get cpu 'weft-epoll hello')")" \
    "uring_file1k_cpu_vs_epoll=$(ratio "$(get cpu 'weft-uring file1k')" "$(get cpu 'weft-epoll file1k')")" \
    "uring_hello_sys64_vs_epoll=$(ratio "$(get sys_wide 'weft-uring hello')" "$(get sys_wide 'weft-epoll hello')")" \
    "uring_file1k_sys64_vs_epoll=$(ratio "$(get sys_wide 'weft-uring file1k')" "$(get sys_wide 'weft-epoll file1k')")"
