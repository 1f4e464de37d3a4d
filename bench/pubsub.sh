#!/usr/bin/env bash
# Pub/sub benchmark: weft's pubsub hub against nginx + nchan.
#
#   bench/pubsub.sh [--weft PATH] [--quick] [--only weft|nchan[,...]]
#                   [--kinds ws|sse[,...]] [--seconds S] [--rounds N] [--keep]
#
# Each server runs alone, freshly started for every case, on one loop (one
# worker) pinned to CPU 0, on 127.0.0.1 and a free port; the load generator
# (bench/pubsub_client) runs on CPU 1. Loads, each for --seconds (default 10)
# of publishing to one topic by HTTP POST on one keep-alive connection:
#   1k    1,000 subscribers, 100 publishes/s (100,000 deliveries/s)
#   10k  10,000 subscribers,  10 publishes/s (100,000 deliveries/s too)
# (--quick: 200 and 2,000 subscribers for 2 s, a smoke run)
# each with WebSocket subscribers (ws) and with EventSource ones (sse). The
# servers alternate within each load: weft ws, nchan ws, weft sse, nchan sse,
# and the whole sequence repeats --rounds times (default 1): figures are
# medians over the rounds; lost, ooo and closed are sums.
#   weft    `pubsub /live { }` with its defaults (history = 0), threads = 1
#   nchan   nginx 1.22 + Debian's libnginx-mod-nchan: `nchan_pubsub` on
#           /live/(.+) (POST publishes, GET subscribes by websocket or
#           eventsource), nchan_message_buffer_length 0 (no history, as
#           weft's default), one worker, master_process off
# Figures per case:
#   p50/p99/max_ms  delivery latency: POST sent (CLOCK_MONOTONIC, in the
#                   body) to the message parsed by its subscriber, over every
#                   delivery
#   cpu_ms/1k       server CPU (utime+stime, /proc/PID/stat) from the first
#                   timed POST to the last delivery, per 1,000 deliveries
#   rss_B/sub       (server RSS with every subscriber ready - RSS before they
#                   connected) / subscribers
#   lost, ooo       deliveries missing (subscribers x publishes - delivered,
#                   where a delivery counts if it came within 30 s of the last
#                   POST), deliveries out of order; closed: subscribers the
#                   server closed (its queue limit; their misses count as lost)
#   pub_p99_ms      99th percentile of POST answer times (the POSTs are
#                   pipelined, sent when due whatever the server answers)
#   wait_s          seconds the server was runnable but waiting for CPU 0
#                   (run-queue delay, /proc/PID/task/*/schedstat) over the
#                   same window: other work on a shared host shows here, and
#                   in the latencies
#
# The last line is machine-readable (weft's figures per case; ratios to
# nchan's as decimals, "na" when a server was left out or a run failed):
#   result ws1k_p50_ms=N ws1k_p99_ms=N ws1k_max_ms=N ws1k_cpu_ms_per_1k=N
#          ws1k_rss_b_per_sub=N ws1k_lost=N ws1k_ooo=N ws1k_p99_vs_nchan=N
#          ws1k_cpu_vs_nchan=N ws1k_rss_vs_nchan=N  (the same for sse1k,
#          ws10k, sse10k) failed=N
#
# Needs nginx, libnginx-mod-nchan, curl, taskset (util-linux); installs
# nothing: apt-get install nginx libnginx-mod-nchan curl. 10,000 subscribers
# need 10,100 open files in the server and in the client (ulimit -n).

set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
weft=$root/build/release/weft
bin=$root/build/release/bench
servers=(weft nchan)
kinds=(ws sse)
loads=(1k 10k)
seconds=10
rounds=1
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
    --kinds) IFS=, read -r -a kinds <<<"${2:?}"; shift ;;
    --seconds) seconds=${2:?}; shift ;;
    --rounds) rounds=${2:?}; shift ;;
    --keep) keep=1 ;;
    -h | --help) usage ;;
    *) usage ;;
    esac
    shift
done
for s in "${servers[@]}"; do [[ $s == weft || $s == nchan ]] || usage; done
for k in "${kinds[@]}"; do [[ $k == ws || $k == sse ]] || usage; done
[[ $seconds =~ ^[1-9][0-9]*$ && $rounds =~ ^[1-9][0-9]*$ ]] || usage

declare -A subscribers=([1k]=1000 [10k]=10000) rate=([1k]=100 [10k]=10)
if ((quick)); then
    seconds=2
    subscribers=([1k]=200 [10k]=2000)
fi
drain=30 # seconds the client waits for the last deliveries after the last POST

log() { echo "pubsub.sh: $*" >&2; }
die() {
    log "$*"
    exit 1
}
# stop, cpu_ticks, get (a median), ratio
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"

# --- tools, binaries, limits ---------------------------------------------------

nchan_module=/usr/lib/nginx/modules/ngx_nchan_module.so
missing=()
for tool in curl taskset timeout; do
    command -v $tool >/dev/null || missing+=("$tool")
done
for s in "${servers[@]}"; do
    [[ $s != nchan ]] && continue
    command -v nginx >/dev/null || missing+=(nginx)
    [[ -f $nchan_module ]] || missing+=("$nchan_module")
done
((${#missing[@]} == 0)) ||
    die "missing: ${missing[*]} (apt-get install nginx libnginx-mod-nchan curl util-linux)"
(($(nproc) >= 2)) || die "needs two CPUs (server on 0, client on 1)"

# Built (or brought up to date: a no-op when they are) with the release preset.
(cd "$root" && { [[ -d build/release ]] || cmake --preset release >/dev/null; } &&
    cmake --build build/release --target pubsub_client http_load >/dev/null) ||
    die "could not build bench/pubsub_client and bench/http_load"
for s in "${servers[@]}"; do
    [[ $s != weft || -x $weft ]] ||
        die "no weft binary at $weft (cmake --build --preset release, or --weft PATH)"
done

# The servers and the client inherit this shell's limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null
most=${subscribers[10k]}
(($(ulimit -n) >= most + 100)) ||
    die "open files limited to $(ulimit -n) (ulimit -Hn); $most subscribers need $((most + 100))"

tmp=$(mktemp -d /tmp/weft-pubsub-bench.XXXXXX)
# The processes this script started and has not yet reaped: only those are killed.
pid='' client=''
cleanup() {
    local p
    for p in $pid $client; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    if ((keep)); then log "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$tmp/nginx/tmp"
clk_tck=$(getconf CLK_TCK)
load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)

# --- servers -------------------------------------------------------------------

write_nginx_conf() { # port
    cat >"$tmp/nginx/nginx.conf" <<EOF
load_module $nchan_module;
worker_processes 1;
worker_rlimit_nofile $(ulimit -n);
error_log $tmp/nginx/error.log warn;
pid $tmp/nginx/nginx.pid;
events {
    worker_connections $(ulimit -n); # nchan takes more than one per subscriber
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
    server {
        listen 127.0.0.1:$1;
        location ~ ^/live/(.+)\$ {
            nchan_pubsub http websocket eventsource;
            nchan_channel_id \$1;
            nchan_message_buffer_length 0;
        }
    }
}
EOF
}

write_weft_conf() { # port
    cat >"$tmp/weft.conf" <<EOF
threads = 1
keep_alive_timeout = 1h
access_log = off
error_log = stderr
listener 127.0.0.1:$1
site {
    pubsub /live {
    }
}
EOF
}

# start NAME: the server pinned to CPU 0; sets pid and port once a POST is
# answered.
start() {
    local name=$1 tries=100
    port=$("$bin/http_load" --free-port) || die "no free port"
    local cmd
    case $name in
    nchan)
        write_nginx_conf "$port"
        cmd=(nginx -p "$tmp/nginx/" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/error.log"
            -g "daemon off; master_process off;")
        ;;
    weft)
        write_weft_conf "$port"
        cmd=("$weft" -c "$tmp/weft.conf")
        ;;
    esac
    taskset -c 0 "${cmd[@]}" >"$tmp/$name.log" 2>&1 &
    pid=$!
    until curl -fs -o /dev/null --max-time 5 -X POST --data warm "http://127.0.0.1:$port/live/warm"; do
        kill -0 "$pid" 2>/dev/null || die "$name did not start: $(tail -5 "$tmp/$name.log")"
        ((--tries > 0)) || die "$name does not answer on port $port"
        sleep 0.1
    done
}

run_wait_ns() { cat "/proc/$pid"/task/*/schedstat | awk '{ n += $2 } END { printf "%.0f\n", n }'; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"; }
field() { # KEY LINE: the value of KEY=VALUE in LINE
    local f
    for f in $2; do [[ $f == "$1="* ]] && echo "${f#*=}" && return; done
    echo na
}

ms() { awk -v us="$1" 'BEGIN { printf "%.2f\n", us / 1e3 }'; }

declare -A p50 p99 max cpu rss lost ooo closed pub99 runq
failed=0

# run SERVER KIND LOAD: one case, its figures into the arrays.
# shellcheck disable=SC2034 # the arrays are read through get and total (namerefs)
run() {
    local s=$1 k=$2 l=$3 n=${subscribers[$3]} key="$1 $2 $3"
    start "$s"
    sleep 0.2
    local rss_before ticks_before wait_before line='' done_line=''
    rss_before=$(rss_kb)
    coproc CLIENT { exec timeout $((seconds + drain + 200)) taskset -c 1 "$bin/pubsub_client" \
        --port "$port" --path /live/bench --subscribers "$n" --kind "$k" --rate "${rate[$l]}" \
        --seconds "$seconds" --drain $drain --timeout $((seconds + drain + 180)) --pause \
        2>"$tmp/client.err"; }
    client=$CLIENT_PID
    read -r -t 150 line <&"${CLIENT[0]}"
    if [[ $line == ready* ]]; then
        rss[$key]+=" $((($(rss_kb) - rss_before) * 1024 / n))"
        ticks_before=$(cpu_ticks)
        wait_before=$(run_wait_ns)
        echo go >&"${CLIENT[1]}"
        read -r -t $((seconds + drain + 60)) done_line <&"${CLIENT[0]}"
    fi
    if [[ $done_line == done* ]]; then
        local ticks=$(($(cpu_ticks) - ticks_before)) delivered
        runq[$key]+=" "$(awk -v ns=$(($(run_wait_ns) - wait_before)) 'BEGIN { printf "%.2f\n", ns / 1e9 }')
        echo close >&"${CLIENT[1]}"
        delivered=$(field delivered "$done_line")
        cpu[$key]+=" "$(awk -v t=$ticks -v hz="$clk_tck" -v d="$delivered" \
            'BEGIN { if (d > 0) printf "%.2f\n", t / hz * 1e3 / d * 1e3; else print "na" }')
        p50[$key]+=" "$(ms "$(field p50_us "$done_line")")
        p99[$key]+=" "$(ms "$(field p99_us "$done_line")")
        max[$key]+=" "$(ms "$(field max_us "$done_line")")
        pub99[$key]+=" "$(ms "$(field publish_p99_us "$done_line")")
        lost[$key]=$((${lost[$key]:-0} + $(field lost "$done_line")))
        ooo[$key]=$((${ooo[$key]:-0} + $(field out_of_order "$done_line")))
        closed[$key]=$((${closed[$key]:-0} + $(field closed "$done_line")))
        wait "$client" || log "$key: the client's close failed: $(tail -3 "$tmp/client.err")"
        log "$key: $done_line"
    else
        failed=$((failed + 1))
        log "$key failed: $(tail -3 "$tmp/client.err")"
        kill "$client" 2>/dev/null
        wait "$client" 2>/dev/null
    fi
    client=''
    kill -0 "$pid" 2>/dev/null || log "$key: $s died: $(tail -5 "$tmp/$s.log")"
    stop
}

for ((r = 1; r <= rounds; ++r)); do
    for l in "${loads[@]}"; do
        for k in "${kinds[@]}"; do
            for s in "${servers[@]}"; do
                log "round $r: $s $k, ${subscribers[$l]} subscribers x ${rate[$l]} publishes/s x $seconds s"
                run "$s" "$k" "$l"
            done
        done
    done
done

# --- the table and the result line ------------------------------------------------------

total() { # ARRAY KEY: the sum over the rounds, or na
    local -n array=$1
    echo "${array[$2]:-na}"
}
for l in "${loads[@]}"; do
    for k in "${kinds[@]}"; do
        for s in "${servers[@]}"; do
            key="$s $k $l"
            log "$key by round: p99_ms${p99[$key]:-} cpu_ms/1k${cpu[$key]:-} rss_B/sub${rss[$key]:-}"
        done
    done
done
printf '%-5s %-4s %6s %5s %8s %8s %8s %9s %9s %8s %4s %6s %10s %6s\n' server kind subs rate \
    p50_ms p99_ms max_ms cpu_ms/1k rss_B/sub lost ooo closed pub_p99_ms wait_s
for l in "${loads[@]}"; do
    for k in "${kinds[@]}"; do
        for s in "${servers[@]}"; do
            key="$s $k $l"
            printf '%-5s %-4s %6s %5s %8s %8s %8s %9s %9s %8s %4s %6s %10s %6s\n' "$s" "$k" \
                "${subscribers[$l]}" "${rate[$l]}" "$(get p50 "$key")" "$(get p99 "$key")" \
                "$(get max "$key")" "$(get cpu "$key")" "$(get rss "$key")" \
                "$(total lost "$key")" "$(total ooo "$key")" "$(total closed "$key")" \
                "$(get pub99 "$key")" "$(get runq "$key")"
        done
    done
done
echo "load average (other work on the machine skews latency and cpu): $load_at_start at start," \
    "$(cut -d' ' -f1-3 /proc/loadavg) at the end"

result=result
for l in "${loads[@]}"; do
    for k in "${kinds[@]}"; do
        w="weft $k $l" x="nchan $k $l" label=$k$l
        result+=" ${label}_p50_ms=$(get p50 "$w") ${label}_p99_ms=$(get p99 "$w")"
        result+=" ${label}_max_ms=$(get max "$w") ${label}_cpu_ms_per_1k=$(get cpu "$w")"
        result+=" ${label}_rss_b_per_sub=$(get rss "$w") ${label}_lost=$(total lost "$w")"
        result+=" ${label}_ooo=$(total ooo "$w")"
        result+=" ${label}_p99_vs_nchan=$(ratio "$(get p99 "$w")" "$(get p99 "$x")")"
        result+=" ${label}_cpu_vs_nchan=$(ratio "$(get cpu "$w")" "$(get cpu "$x")")"
        result+=" ${label}_rss_vs_nchan=$(ratio "$(get rss "$w")" "$(get rss "$x")")"
    done
done
echo "$result failed=$failed"
