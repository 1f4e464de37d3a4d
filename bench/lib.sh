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
# and on the caller's log MESSAGE and die MESSAGE (which exits).

stop() {
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    pid=''
}

alive() { kill -0 "$pid" 2>/dev/null || die "$1 died: $(tail -5 "$tmp/$1.log")"; }

# begin CASE N: a client on CPU 1, connected and warmed up, paused before N
# requests of CASE; go runs them; finish lets it close. The figures are taken
# around go, so they hold requests only (no accept, no close). begin returns 1
# (the client reaped, its reason logged) if the warm-up fails.
begin() {
    coproc LOAD { exec timeout 300 taskset -c 1 "$load" --port "$port" --path "${path[$1]}" \
        --connections "$connections" --warmup "${warm_n[$1]}" --requests "$2" --pause \
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
    timeout 60 callgrind_control -d "$pid" >"$tmp/cgc.out" 2>&1 || die "callgrind_control -d failed"
    finish
    dumps=$((dumps + 1))
    local file=$tmp/cg.$2.out.$dumps
    [[ -f $file ]] || die "no callgrind dump $file"
    v=$(awk -v n="${cg_n[$1]}" '/^totals:/ { printf "%.0f\n", $2 / n }' "$file")
    [[ -n $v ]] || die "no totals in $file"
}

# syscalls CASE: system calls per request (strace -f -c attached to the server)
measure_syscalls() {
    begin "$1" "${st_n[$1]}" || die "$1 failed"
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
