# shellcheck shell=bash disable=SC2154 # the globals below are the caller's
# Shell functions shared by bench/http.sh and bench/php.sh (sourced, not run).
#
# They work on the caller's globals, so that die and the list of processes to
# kill stay right (no subshells):
#   pid       the server (started by the caller's start), port its port
#   client    a running load client, tracer a running strace: pids or ''
#   tmp       the run's temp dir ($tmp/NAME.log is server NAME's output)
#   load      the fixed-count client: bench/http_load or anything taking its
#             flags and its --pause protocol
#   path[CASE] warm_n[CASE] cg_n[CASE] st_n[CASE] connections
#   weft      weft's binary (for io_backend_setup)
# and on the caller's log MESSAGE and die MESSAGE (which exits).

stop() {
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    pid=''
}

alive() { kill -0 "$pid" 2>/dev/null || die "$1 died: $(tail -5 "$tmp/$1.log")"; }

# begin CASE N [CONNECTIONS]: a client on CPU 1, connected and warmed up, paused
# before N requests of CASE; go runs them; finish lets it close. The figures are
# taken around go, so they hold requests only (no accept, no close). begin
# returns 1 (the client reaped, its reason logged) if the warm-up fails.
begin() {
    coproc LOAD { exec timeout 300 taskset -c 1 "$load" --port "$port" --path "${path[$1]}" \
        --connections "${3:-$connections}" --warmup "${warm_n[$1]}" --requests "$2" --pause \
        --timeout 290 2>"$tmp/load.err"; }
    client=$LOAD_PID
    local line=''
    read -r -t 120 line <&"${LOAD[0]}"
    [[ $line == ready ]] && return 0
    log "$(cat "$tmp/load.err")"
    kill "$client" 2>/dev/null
    wait "$client"
    client=''
    return 1
}
go() {
    local line=''
    echo go >&"${LOAD[1]}"
    read -r -t 300 line <&"${LOAD[0]}"
    [[ $line == done* ]] || die "${load##*/}: $(cat "$tmp/load.err")"
}
finish() {
    echo close >&"${LOAD[1]}"
    wait "$client" || die "${load##*/}: $(cat "$tmp/load.err")"
    client=''
}

# --- measures (each sets v; no subshells, so die and the pid list work) -----------

cpu_ticks() { sed 's/.*) //' "/proc/$pid/stat" | awk '{ print $12 + $13 }'; }

# callgrind CASE NAME: userland instructions per request (server under callgrind)
dumps=0
measure_instr() {
    # Valgrind 3.19 lacks some syscalls (openat2): a server may fail under it alone.
    if ! begin "$1" "${cg_n[$1]}"; then
        log "$2 $1 fails under callgrind: $(grep -m1 -i unhandled "$tmp/$2.log")"
        v=na
        return
    fi
    timeout 60 callgrind_control -z "$pid" >"$tmp/cgc.out" 2>&1 || die "callgrind_control -z failed"
    go
    callgrind_per_request "$2" "${cg_n[$1]}"
    finish
}

# callgrind_per_request NAME N: dumps the counts since the last zeroing and sets
# v to the instructions per request, for N requests.
callgrind_per_request() {
    timeout 60 callgrind_control -d "$pid" >"$tmp/cgc.out" 2>&1 || die "callgrind_control -d failed"
    dumps=$((dumps + 1))
    local file=$tmp/cg.$1.out.$dumps
    [[ -f $file ]] || die "no callgrind dump $file"
    v=$(awk -v n="$2" '/^totals:/ { printf "%.0f\n", $2 / n }' "$file")
    [[ -n $v ]] || die "no totals in $file"
}

# syscalls CASE [CONNECTIONS]: system calls per request (strace -f -c attached
# to the server); sys_mix gets the calls per request of each, most first.
measure_syscalls() {
    begin "$1" "${st_n[$1]}" "${2:-$connections}" || die "$1 failed"
    # The last run's file would say "attached" before this strace truncates it.
    rm -f "$tmp/strace.err"
    strace -f -c -o "$tmp/strace.out" -p "$pid" 2>"$tmp/strace.err" &
    tracer=$!
    local tries=100
    until grep -qs attached "$tmp/strace.err"; do
        ((--tries > 0)) || die "strace did not attach: $(cat "$tmp/strace.err")"
        sleep 0.1
    done
    go
    kill -INT "$tracer"
    wait "$tracer"
    tracer=''
    finish
    v=$(awk -v n="${st_n[$1]}" '$NF == "total" { printf "%.2f\n", $4 / n }' "$tmp/strace.out")
    [[ -n $v ]] || die "no total from strace: $(cat "$tmp/strace.out")"
    # shellcheck disable=SC2034 # the caller's
    sys_mix=$(awk -v n="${st_n[$1]}" '$4 ~ /^[0-9]+$/ && $NF != "total" && $4 / n >= 0.005 {
                                          printf "%s %.2f\n", $NF, $4 / n }' "$tmp/strace.out" |
        sort -k2,2gr | paste -sd ' ')
}

# --- h2load (nghttp2-client), HTTP/1.1, one thread on CPU 1 -------------------------

# h2load_run CASE N CONNECTIONS: N requests of CASE; dies unless each got a 2xx.
h2load_run() {
    local out rc=0
    out=$(timeout 300 taskset -c 1 h2load --h1 -c "$3" -t 1 -n "$2" \
        "http://127.0.0.1:$port${path[$1]}" 2>&1) || rc=$?
    # A server that stops answering leaves h2load waiting: say so, not its progress.
    ((rc != 124)) || die "h2load $1: $2 requests over $3 connections not done in 300 s" \
        "($(grep '^progress' <<<"$out" | tail -1)): the server stalled"
    ((rc == 0)) || die "h2load: $(tail -3 <<<"$out")"
    grep -q "^status codes: $2 2xx" <<<"$out" ||
        die "h2load $1: $(grep -e '^requests:' -e '^status codes:' <<<"$out" | paste -sd ';')"
}

# h2load instructions CASE NAME CONNECTIONS: userland instructions per request of
# the server under callgrind, as a load generator sees them: h2load connects its
# clients, sends N requests (with its User-Agent) and closes, all counted.
measure_h2load_instr() {
    h2load_run "$1" "${warm_n[$1]}" "$3"
    timeout 60 callgrind_control -z "$pid" >"$tmp/cgc.out" 2>&1 || die "callgrind_control -z failed"
    h2load_run "$1" "${cg_n[$1]}" "$3"
    callgrind_per_request "$2" "${cg_n[$1]}"
}

# h2load requests/s CASE CONNECTIONS: over --duration seconds; v="RPS FAILED"
# (failed: responses that were not 2xx or 3xx, errors, timeouts).
measure_h2load_rps() {
    local out
    out=$(timeout $((duration + 30)) taskset -c 1 h2load --h1 -c "$2" -t 1 -D "$duration" \
        "http://127.0.0.1:$port${path[$1]}" 2>&1) || die "h2load: $(tail -3 <<<"$out")"
    v=$(awk '/^finished in/ { rps = $4 }
             /^requests:/ { gsub(/,/, ""); failed = $10 + $12 + $14 }
             END { if (rps > 0) printf "%.0f %d\n", rps, failed }' <<<"$out")
    [[ -n $v ]] || die "no figures from h2load: $out"
}

# --- weft's I/O backend ----------------------------------------------------------------

# weft is told its backend by `io_backend = B` in its configuration; a weft whose
# `weft -t` refuses that line (one from before the key, or built without
# liburing) gets WEFT_IO_BACKEND=B in its environment instead. Either way the
# caller's start checks with backend_mismatch that the loop really runs on B, so
# a weft that cannot fails with its reasons instead of measuring epoll twice.
# A WEFT_IO_BACKEND in the bench's own environment is dropped (it would win
# over the configuration).
# io_backend_setup B sets io_line[B] (the line for the configuration, or empty),
# io_env[B] (the environment assignment, or empty) and io_said[B] (what weft -t
# said about the backend, if anything).
declare -A io_line io_env io_said
io_backend_setup() {
    local b=$1 probe_port said
    probe_port=$("$load" --free-port) || die "no free port"
    printf 'io_backend = %s\nlistener 127.0.0.1:%s\nsite {\n    response / {\n        body = ok\n    }\n}\n' \
        "$b" "$probe_port" >"$tmp/io_probe.conf"
    if said=$(env -u WEFT_IO_BACKEND "$weft" -t -c "$tmp/io_probe.conf" 2>&1); then
        io_line[$b]="io_backend = $b" io_env[$b]=''
    else
        io_line[$b]='' io_env[$b]="WEFT_IO_BACKEND=$b"
    fi
    io_said[$b]=$(grep -i -e io_backend -e uring -e epoll <<<"$said" | head -3 | paste -sd ';')
}
# uring_usable: weft -t takes `io_backend = uring` and says nothing of a fallback
uring_usable() {
    [[ -n ${io_line[uring]} ]] && ! grep -qi -e unavailable -e 'using epoll' <<<"${io_said[uring]}"
}

# backend_mismatch B NAME: returns 1 when the server's loop runs on B (its fds
# hold an io_uring ring, or an epoll instance and no ring); else 0, and v says
# what runs and why (weft -t's words and the backend lines of NAME's log).
backend_mismatch() {
    local fds
    fds=$(ls -l "/proc/$pid/fd" 2>/dev/null)
    case $1 in
    uring) grep -qF '[io_uring]' <<<"$fds" && return 1 ;;
    epoll) grep -qF '[eventpoll]' <<<"$fds" && ! grep -qF '[io_uring]' <<<"$fds" && return 1 ;;
    esac
    local runs=none
    grep -qF '[eventpoll]' <<<"$fds" && runs=epoll
    grep -qF '[io_uring]' <<<"$fds" && runs="an io_uring ring"
    v="$2 runs on $runs, not $1 (told by ${io_line[$1]:-${io_env[$1]}}; weft -t said:"
    v+=" ${io_said[$1]:-nothing about it}; its log: $(grep -i -e uring -e backend -e unhandled \
        "$tmp/$2.log" | head -3 | paste -sd ';'))"
    return 0
}

# --- figures ------------------------------------------------------------------------

median() {
    tr ' ' '\n' <<<"$1" | grep . | sort -g |
        awk '{ a[NR] = $1 } END { if (NR == 0) print "na"; else if (NR % 2) print a[(NR + 1) / 2];
                                  else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
get() { # ARRAY KEY: the median, or na
    local -n array=$1
    median "${array[$2]:-}"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "na" || b == "na" || b == 0) print "na";
                                            else printf "%.3f\n", a / b }'; }
