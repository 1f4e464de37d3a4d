#!/usr/bin/env bash
# PHP benchmark: weft and nginx in front of the same PHP-FPM pool.
#
#   bench/php.sh [--weft PATH] [--quick] [--rounds N] [--duration S] [--keep]
#                [--only nginx-new|nginx-keep|weft-keep|weft-new[,...]]
#                [--backend epoll|uring|both]
#
# One php-fpm8.2 pool (pm = static, 4 children, a unix socket, Debian's fpm
# php.ini with opcache) serves every server in turn:
#   nginx-new   nginx, a new backend connection per request (fastcgi_pass unix:)
#   nginx-keep  nginx keep-alive: upstream keepalive 8 + fastcgi_keep_conn on
#   weft-keep   weft, upstream keepalive = 4, max_conns = 4 (= the pool's children)
#   weft-new    weft, keepalive = 0 (a new connection per request), max_conns = 4
# weft runs once per I/O backend, as in bench/http.sh (--backend; default both
# when `weft -t` takes `io_backend = uring` without falling back, else epoll):
# weft-keep-epoll, weft-keep-uring, weft-new-epoll, weft-new-uring, all in the
# same rounds; the run stops with the reason when weft cannot run a backend.
# nginx checks that the script exists and splits PATH_INFO as Debian's
# snippets/fastcgi-php.conf does, with fastcgi.conf's params: the work weft
# does on every request too. Cases: hello.php (`echo "Hello, World!"`) and
# big.php (a 100 KiB body); neither sets a length, so both go out chunked.
#
# Where things run (2 CPUs): the server (one worker / one loop) AND php-fpm on
# CPU 0, the client on CPU 1. The server and PHP share a core as on a real
# machine, so every cycle the proxy spends is taken from PHP and shows in
# requests/s; the client has a core to itself, so it is never the limit. The
# same for every server. The servers alternate A B C D, A B C D, ... over the
# rounds; figures are medians, error counts are sums over the rounds.
#
# wrk (one thread, as it has one CPU; 32 connections; --duration seconds; a 2 s
# timeout) gives:
#   rps, p99_us     requests/s and 99th percentile latency
#   errors          socket errors (connect, read, write) and non-2xx responses
#   timeouts        requests wrk gave up on after 2 s
#   cpu_us, php_us  CPU time (utime+stime) per request of the server and of
#                   the whole pool (master and children), in µs
# and h2load (nghttp2-client: --h1, one thread, 16 connections; 4 for
# nginx-keep, whose upstream keepalive would hold more backend connections
# than the pool has children, the others waiting forever), for hello.php:
#   h2_rps          requests/s over --duration seconds
#   h2_instr        userland instructions per request of the server under
#                   callgrind, `h2load --h1 -c 16 -t 1 -n N` as issue 20 measures:
#                   h2load's connects, User-Agent and closes counted
# and for hello.php, over an exact count of requests on 4 keep-alive client
# connections (so nginx-keep never opens more backend connections than the
# pool has children), counted on the server process only:
#   instr           userland instructions per request, under callgrind
#   syscalls        system calls per request, under strace -f -c (by name
#                   below the table)
# bench/php/php_load.py sends those exact counts: bench/http_load's flags and
# --pause protocol, but it reads chunked bodies (http_load needs a length).
#
# The last line is machine-readable (weft-keep's figures on the first backend,
# epoll unless --backend uring, unless named; ratios as decimals; "na" when a
# server or backend was left out):
#   result hello_rps_vs_nginx=N hello_rps_vs_nginx_keepalive=N big_rps_vs_nginx=N
#          hello_instr=N hello_syscalls=N hello_errors=N nginx_keepalive_timeouts=N
#          hello_p99_us=N big_errors=N weft_new_hello_rps_vs_nginx=N
# then for B in epoll and uring, weft-keep-B's hello.php figures:
#          B_hello_instr B_hello_h2load_instr B_hello_syscalls B_hello_cpu_us
#          B_hello_rps B_hello_h2load_rps
# and nginx_hello_h2load_instr (nginx-new's), uring_hello_cpu_vs_epoll,
#     uring_hello_syscalls_vs_epoll.
# hello_errors and big_errors are weft-keep's errors + timeouts; *_vs_nginx
# divide by nginx-new; nginx_keepalive_timeouts are nginx-keep's on hello.php.
#
# Needs php-fpm8.2, nginx, wrk, h2load (nghttp2-client), valgrind, strace,
# taskset, python3; installs nothing (.ci/install-deps --bench does).

set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
weft=$root/build/release/weft
servers=(nginx-new nginx-keep weft-keep weft-new)
backend=''
cases=(hello big)
rounds=3
duration=5
keep=0
quick=0

usage() {
    sed -n '4,6p' "$0" | sed 's/^# *//' >&2
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
    --keep) keep=1 ;;
    -h | --help) usage ;;
    *) usage ;;
    esac
    shift
done
for s in "${servers[@]}"; do
    [[ $s == nginx-new || $s == nginx-keep || $s == weft-keep || $s == weft-new ]] || usage
done
[[ -z $backend || $backend == epoll || $backend == uring || $backend == both ]] || usage

declare -A path=([hello]=/hello.php [big]=/big.php)
# Fixed-count runs, hello.php only: under callgrind (slow, but deterministic)
# and under strace, each after a warm-up on the same connections.
declare -A cg_n=([hello]=20000) st_n=([hello]=20000) warm_n=([hello]=2000)
h2_connections=16
if ((quick)); then
    rounds=1
    duration=2
    cg_n=([hello]=3000)
    st_n=([hello]=5000)
fi
wrk_connections=32
connections=4 # the fixed-count runs': at most the pool's children in flight
children=4

log() { echo "php.sh: $*" >&2; }
die() {
    log "$*"
    exit 1
}
# stop, alive, begin/go/finish, cpu_ticks, measure_instr, measure_syscalls,
# median, get, ratio
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"

# --- tools, binaries ---------------------------------------------------------------

fpm_bin="php-fpm8.2"
missing=()
for tool in $fpm_bin nginx wrk h2load valgrind callgrind_control strace taskset timeout python3; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
((${#missing[@]} == 0)) ||
    die "missing: ${missing[*]} (Debian packages: php8.2-fpm nginx wrk nghttp2-client valgrind" \
        "strace util-linux coreutils python3; .ci/install-deps --bench)"
(($(nproc) >= 2)) || die "needs two CPUs (server and php-fpm on 0, client on 1)"
for s in "${servers[@]}"; do
    [[ $s != weft-* || -x $weft ]] ||
        die "no weft binary at $weft (cmake --build --preset release, or --weft PATH)"
done

tmp=$(mktemp -d /tmp/weft-php-bench.XXXXXX)
# The processes this script started and has not yet reaped: only those are killed.
pid='' tracer='' client='' fpm=''
cleanup() {
    local p
    for p in $pid $tracer $client $fpm; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    if ((keep)); then log "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$tmp/www" "$tmp/fpm" "$tmp/nginx/tmp"
cat >"$tmp/www/hello.php" <<'EOF'
<?php echo "Hello, World!";
EOF
cat >"$tmp/www/big.php" <<'EOF'
<?php echo str_repeat("x", 100 * 1024);
EOF
load=$root/bench/php/php_load.py
sock=$tmp/fpm/php.sock
clk_tck=$(getconf CLK_TCK)
load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)

# --- weft's backends: weft-keep becomes weft-keep-epoll and/or weft-keep-uring -----------

backends=()
if [[ " ${servers[*]} " == *" weft-"* ]]; then
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
            log "weft on uring left out (--backend both insists): weft -t said: ${io_said[uring]}"
        fi
        ;;
    esac
    runs=()
    for s in "${servers[@]}"; do
        if [[ $s == weft-* ]]; then runs+=("${backends[@]/#/$s-}"); else runs+=("$s"); fi
    done
    servers=("${runs[@]}")
fi

# --- php-fpm -------------------------------------------------------------------------

# In the foreground (-F), so $fpm is the master; as root, -R lets the pool run
# as root rather than need a user of its own.
start_fpm() {
    cat >"$tmp/fpm/php-fpm.conf" <<EOF
[global]
pid = $tmp/fpm/php-fpm.pid
error_log = $tmp/fpm/error.log
log_level = warning
[bench]
listen = $sock
listen.backlog = 511
pm = static
pm.max_children = $children
EOF
    local as_root=()
    (($(id -u) == 0)) && as_root=(-R)
    taskset -c 0 $fpm_bin -F "${as_root[@]}" -y "$tmp/fpm/php-fpm.conf" >"$tmp/fpm/out.log" 2>&1 &
    fpm=$!
    local tries=100
    until [[ -S $sock ]]; do
        kill -0 "$fpm" 2>/dev/null || die "php-fpm did not start: $(tail -5 "$tmp/fpm/out.log" "$tmp/fpm/error.log")"
        ((--tries > 0)) || die "php-fpm made no socket at $sock"
        sleep 0.1
    done
}

fpm_alive() {
    kill -0 "$fpm" 2>/dev/null || die "php-fpm died: $(tail -5 "$tmp/fpm/error.log")"
    local n
    n=$(pgrep -c -P "$fpm")
    ((n == children)) || die "php-fpm has $n children, not $children: $(tail -5 "$tmp/fpm/error.log")"
}

# CPU ticks of the pool: the master and its children (pm = static: the same ones
# throughout, unless one dies, which fpm_alive catches).
fpm_ticks() {
    local p t=0
    for p in $fpm $(pgrep -P "$fpm"); do
        t=$((t + $(sed 's/.*) //' "/proc/$p/stat" | awk '{ print $12 + $13 }')))
    done
    echo $t
}

# --- servers -------------------------------------------------------------------------

# write_nginx_conf PORT KEEP: fastcgi_pass to the pool's socket, or (KEEP=1)
# through an upstream that keeps 8 idle connections open.
write_nginx_conf() {
    local upstream='' pass="unix:$sock" keep_conn=''
    if (($2)); then
        upstream="upstream php { server unix:$sock; keepalive 8; }"
        pass=php
        keep_conn='fastcgi_keep_conn on;'
    fi
    cat >"$tmp/nginx/nginx.conf" <<EOF
worker_processes 1;
error_log $tmp/nginx/error.log warn;
pid $tmp/nginx/nginx.pid;
events {
    worker_connections 4096;
}
http {
    access_log off;
    keepalive_timeout 1h;
    keepalive_requests 1000000000;
    client_body_temp_path $tmp/nginx/tmp/body;
    proxy_temp_path $tmp/nginx/tmp/proxy;
    fastcgi_temp_path $tmp/nginx/tmp/fastcgi;
    uwsgi_temp_path $tmp/nginx/tmp/uwsgi;
    scgi_temp_path $tmp/nginx/tmp/scgi;
    $upstream
    server {
        listen 127.0.0.1:$1;
        root $tmp/www;
        location ~ [^/]\.php(/|\$) {
            fastcgi_split_path_info ^(.+?\.php)(/.*)\$;
            try_files \$fastcgi_script_name =404;
            set \$path_info \$fastcgi_path_info;
            fastcgi_param PATH_INFO \$path_info;
            include /etc/nginx/fastcgi.conf;
            fastcgi_pass $pass;
            $keep_conn
        }
    }
}
EOF
}

write_weft_conf() { # port keepalive backend
    cat >"$tmp/weft.conf" <<EOF
${io_line[$3]}
threads = 1
keep_alive_timeout = 1h
access_log = off
error_log = stderr
listener 127.0.0.1:$1
upstream php {
    server = unix:$sock
    keepalive = $2
    max_conns = $children
}
site {
    fastcgi / {
        upstream = php
        root = $tmp/www
    }
}
EOF
}

# start NAME [WRAPPER...]: the server pinned to CPU 0 (under WRAPPER if given);
# sets pid and port once it answers hello.php through PHP. weft-*-B on another
# backend than B dies, unless under a WRAPPER: then wrong_backend says why.
start() {
    local name=$1 tries=100
    shift
    (($#)) && tries=600 # valgrind starts slowly
    wrong_backend=''
    port=$("$load" --free-port) || die "no free port"
    local cmd env=() b=${name##*-}
    case $name in
    nginx-*)
        write_nginx_conf "$port" "$([[ $name == nginx-keep ]] && echo 1 || echo 0)"
        cmd=(nginx -p "$tmp/nginx/" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/error.log"
            -g "daemon off; master_process off;")
        ;;
    weft-*)
        write_weft_conf "$port" "$([[ $name == weft-keep-* ]] && echo $children || echo 0)" "$b"
        cmd=("$weft" -c "$tmp/weft.conf")
        [[ -n ${io_env[$b]} ]] && env=("${io_env[$b]}")
        ;;
    esac
    env -u WEFT_IO_BACKEND "${env[@]}" taskset -c 0 "$@" "${cmd[@]}" >"$tmp/$name.log" 2>&1 &
    pid=$!
    while ! "$load" --port "$port" --path /hello.php --connections 1 --requests 1 \
        --timeout 5 >/dev/null 2>"$tmp/probe.err"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            # weft on uring under callgrind: a valgrind that cannot run the ring
            [[ $# -gt 0 && $name == *-uring ]] || die "$name did not start: $(tail -5 "$tmp/$name.log")"
            wrong_backend="it did not start: $(tail -3 "$tmp/$name.log" | paste -sd ';')"
            stop
            return
        fi
        ((--tries > 0)) || die "$name does not answer hello.php on port $port: $(cat "$tmp/probe.err")"
        sleep 0.1
    done
    if [[ $name == weft-* ]] && backend_mismatch "$b" "$name"; then
        (($#)) || die "$v"
        wrong_backend=$v
    fi
}

# --- wrk -------------------------------------------------------------------------------

# wrk CASE: v="RPS P99_US ERRORS TIMEOUTS REQUESTS" (errors and timeouts are
# logged with the server's name, $s)
measure_wrk() {
    local out
    out=$(timeout $((duration + 30)) taskset -c 1 wrk -t1 -c$wrk_connections -d"${duration}s" \
        --timeout 2s --latency "http://127.0.0.1:$port${path[$1]}" 2>&1) || die "wrk: $out"
    if grep -q -e 'Non-2xx' -e 'Socket errors' <<<"$out"; then
        log "$s $1: $(grep -e 'Non-2xx' -e 'Socket errors' <<<"$out" | sed 's/^ *//' | paste -sd ';')"
    fi
    v=$(awk '/^Requests\/sec:/ { rps = $2 }
             $2 == "requests" && $3 == "in" { n = $1 }
             $1 == "99%" { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
                           p99 = v * (u == "s" ? 1e6 : u == "ms" ? 1e3 : 1) }
             /Non-2xx or 3xx responses:/ { errors += $NF }
             /Socket errors:/ { gsub(/,/, ""); errors += $4 + $6 + $8; timeouts += $10 }
             END { if (n > 0) printf "%.0f %.0f %d %d %d\n", rps, p99, errors, timeouts, n }' <<<"$out")
    [[ -n $v ]] || die "no figures from wrk: $out"
}

per_request_us() { # TICKS REQUESTS
    awk -v t="$1" -v hz="$clk_tck" -v n="$2" 'BEGIN { printf "%.1f\n", t / hz * 1e6 / n }'
}

# --- the runs ----------------------------------------------------------------------

start_fpm
declare -A rps p99 errors timeouts cpu php instr sys h2rps h2instr mix
notes=()
h2_clients() { [[ $1 == nginx-keep ]] && echo $children || echo $h2_connections; }
for ((r = 1; r <= rounds; ++r)); do
    for s in "${servers[@]}"; do
        log "round $r: $s"
        start "$s"
        for c in "${cases[@]}"; do
            server_before=$(cpu_ticks)
            fpm_before=$(fpm_ticks)
            measure_wrk "$c"
            read -r rps_v p99_v errors_v timeouts_v n <<<"$v"
            rps[$s $c]+=" $rps_v"
            p99[$s $c]+=" $p99_v"
            errors[$s $c]=$((${errors[$s $c]:-0} + errors_v))
            timeouts[$s $c]=$((${timeouts[$s $c]:-0} + timeouts_v))
            cpu[$s $c]+=" $(per_request_us $(($(cpu_ticks) - server_before)) "$n")"
            php[$s $c]+=" $(per_request_us $(($(fpm_ticks) - fpm_before)) "$n")"
            alive "$s"
        done
        measure_h2load_rps hello "$(h2_clients "$s")"
        h2rps[$s hello]+=" ${v% *}"
        ((${v#* } == 0)) || notes+=("$s hello: h2load: ${v#* } requests failed (round $r)")
        stop
        fpm_alive
    done
done

for s in "${servers[@]}"; do
    log "$s under callgrind"
    start "$s" valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$s.out"
    dumps=0
    if [[ -n $wrong_backend ]]; then
        notes+=("instr and h2_instr na for $s: under callgrind, $wrong_backend")
    else
        measure_instr hello "$s"
        # shellcheck disable=SC2034 # read through get's nameref
        instr[$s hello]=$v
        alive "$s"
        measure_h2load_instr hello "$s" "$(h2_clients "$s")"
        # shellcheck disable=SC2034
        h2instr[$s hello]=$v
    fi
    stop
    fpm_alive

    log "$s under strace"
    start "$s"
    measure_syscalls hello
    # shellcheck disable=SC2034
    sys[$s hello]=$v
    mix[$s]=$sys_mix
    alive "$s"
    stop
    fpm_alive
done

# --- the table and the result line ------------------------------------------------------

for s in "${servers[@]}"; do
    for c in "${cases[@]}"; do
        log "$s $c by round: rps${rps[$s $c]}, p99_us${p99[$s $c]}, cpu_us${cpu[$s $c]}," \
            "php_us${php[$s $c]}"
    done
done
row='%-15s %-5s %7s %7s %8s %7s %7s %6s %8s %9s %9s %8s\n'
# shellcheck disable=SC2059 # the format is row
printf "$row" server case rps h2_rps p99_us cpu_us php_us errors timeouts instr/req h2_instr sys/req
for s in "${servers[@]}"; do
    for c in "${cases[@]}"; do
        # shellcheck disable=SC2059
        printf "$row" "$s" "$c" "$(get rps "$s $c")" "$(get h2rps "$s $c")" "$(get p99 "$s $c")" \
            "$(get cpu "$s $c")" "$(get php "$s $c")" "${errors[$s $c]:-na}" \
            "${timeouts[$s $c]:-na}" "$(get instr "$s $c")" "$(get h2instr "$s $c")" \
            "$(get sys "$s $c")"
    done
done
echo "hello.php syscalls per request by name:"
for s in "${servers[@]}"; do echo "  $s: ${mix[$s]:-}"; done
for note in "${notes[@]}"; do echo "$note"; done
temp_files=$(grep -c 'buffered to a temporary file' "$tmp/nginx/error.log" 2>/dev/null)
((${temp_files:-0} == 0)) || echo "nginx buffered $temp_files responses to temporary files"

# The result line's weft: the first backend's.
main_keep=weft-keep-${backends[0]:-epoll} main_new=weft-new-${backends[0]:-epoll}
weft_errors() { # CASE: weft-keep's errors and timeouts, or na
    local e=${errors[$main_keep $1]:-} t=${timeouts[$main_keep $1]:-}
    [[ -n $e ]] && echo $((e + t)) || echo na
}
backend_keys() { # B: weft-keep-B's hello.php figures
    local w="weft-keep-$1 hello"
    printf ' %s_hello_instr=%s %s_hello_h2load_instr=%s %s_hello_syscalls=%s %s_hello_cpu_us=%s' \
        "$1" "$(get instr "$w")" "$1" "$(get h2instr "$w")" "$1" "$(get sys "$w")" \
        "$1" "$(get cpu "$w")"
    printf ' %s_hello_rps=%s %s_hello_h2load_rps=%s' "$1" "$(get rps "$w")" "$1" "$(get h2rps "$w")"
}
echo "load average (other work on the machine skews rps and cpu): $load_at_start at start," \
    "$(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo "result hello_rps_vs_nginx=$(ratio "$(get rps "$main_keep hello")" "$(get rps 'nginx-new hello')")" \
    "hello_rps_vs_nginx_keepalive=$(ratio "$(get rps "$main_keep hello")" "$(get rps 'nginx-keep hello')")" \
    "big_rps_vs_nginx=$(ratio "$(get rps "$main_keep big")" "$(get rps 'nginx-new big')")" \
    "hello_instr=$(get instr "$main_keep hello") hello_syscalls=$(get sys "$main_keep hello")" \
    "hello_errors=$(weft_errors hello) nginx_keepalive_timeouts=${timeouts[nginx-keep hello]:-na}" \
    "hello_p99_us=$(get p99 "$main_keep hello") big_errors=$(weft_errors big)" \
    "weft_new_hello_rps_vs_nginx=$(ratio "$(get rps "$main_new hello")" "$(get rps 'nginx-new hello')")$(backend_keys epoll)$(backend_keys uring)" \
    "nginx_hello_h2load_instr=$(get h2instr 'nginx-new hello')" \
    "uring_hello_cpu_vs_epoll=$(ratio "$(get cpu 'weft-keep-uring hello')" "$(get cpu 'weft-keep-epoll hello')")" \
    "uring_hello_syscalls_vs_epoll=$(ratio "$(get sys 'weft-keep-uring hello')" "$(get sys 'weft-keep-epoll hello')")"
