# Lab 5 (a tracepoint): sourced by labs/grade with GL_TREE, GL_WORK and
# gradelib.sh loaded.
#
# The event is Linux's sched:sched_process_exit. The expected format is
# Linux 6.1's (read from a real kernel's tracefs, written out below). The
# grader makes `calltree 1 K` start K tasks (K drawn per run), named
# calltree/0 .. calltree/K-1, which exit when done: K exit events, whose
# pids it checks against the sched_process_fork events of the same tasks
# (an event the lab does not touch). Then a filter on a random task's comm,
# the event disabled again, and the same run recorded by ktrace and read
# by Debian's trace-cmd.

# Linux 6.1's /sys/kernel/tracing/events/sched/sched_process_exit/format,
# after the common fields.
LAB5_FORMAT=$'\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:1;
\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;

print fmt: "comm=%s pid=%d prio=%d", REC->comm, REC->pid, REC->prio'

lab5_boot() {
    LAB5_K=$(gl_rand 2 7)
    LAB5_PICK=$(gl_rand 0 $((LAB5_K - 1)))
    LAB5_K2=$(gl_rand 2 5)
    gl_boot "$GL_WORK/boot" --smp 2 <<EOF
@ format
cat /tracing/events/sched/sched_process_exit/format
@ trace
echo 1 > /tracing/events/sched/sched_process_fork/enable
echo 1 > /tracing/events/sched/sched_process_exit/enable
calltree 1 $LAB5_K
echo 0 > /tracing/tracing_on
cat /tracing/trace
@ filter
echo > /tracing/trace
echo 'comm == "calltree/$LAB5_PICK"' > /tracing/events/sched/sched_process_exit/filter
echo 1 > /tracing/tracing_on
calltree 1 $LAB5_K
echo 0 > /tracing/tracing_on
cat /tracing/trace
@ disabled
echo 0 > /tracing/events/sched/sched_process_exit/filter
echo 0 > /tracing/events/sched/sched_process_exit/enable
echo > /tracing/trace
echo 1 > /tracing/tracing_on
calltree 1 $LAB5_K
cat /tracing/trace | grep -c sched_process_exit:
EOF
}

lab5_format() {
    local out body
    out="$(gl_step "$GL_WORK/boot" format)" || return 1
    body="$(echo "$out" | sed -n '/field:char comm\[16\];\|^print fmt:/,$p' | sed '/^print fmt:/q')"
    if [ "$body" != "$LAB5_FORMAT" ]; then
        echo "events/sched/sched_process_exit/format differs from Linux's. Expected, after the common fields:"
        echo "$LAB5_FORMAT" | cat -A | sed 's/\$$//; s/^/  /'
        echo "got the whole file (tabs shown as ^I):"
        echo "$out" | grep -v '^/ # ' | cat -A | sed 's/\$$//; s/^/  /'
        return 1
    fi
}

# lab5_events TEXT EVENT: the lines of EVENT in TEXT, as "comm pid prio".
lab5_exits() {
    echo "$1" | sed -n 's/.*sched_process_exit: *comm=\([^ ]*\) pid=\([0-9-]*\) prio=\([0-9-]*\)$/\1 \2 \3/p'
}

lab5_trace() {
    local out exits forks i line pid bad=""
    out="$(gl_step "$GL_WORK/boot" trace)" || return 1
    exits="$(lab5_exits "$out")"
    forks="$(echo "$out" | sed -n 's/.*sched_process_fork: comm=[^ ]* pid=[0-9]* child_comm=\([^ ]*\) child_pid=\([0-9]*\)$/\1 \2/p')"
    for i in $(seq 0 $((LAB5_K - 1))); do
        pid="$(echo "$forks" | awk -v c="calltree/$i" '$1 == c { print $2 }')"
        line="$(echo "$exits" | awk -v c="calltree/$i" '$1 == c')"
        if [ -z "$pid" ]; then
            bad="${bad}no sched_process_fork for calltree/$i (grader cannot check its pid)"$'\n'
        elif [ "$line" != "calltree/$i $pid 120" ]; then
            bad="${bad}calltree/$i (pid $pid, prio 120): expected one 'sched_process_exit: comm=calltree/$i pid=$pid prio=120', got '${line:-nothing}'"$'\n'
        fi
    done
    [ "$(echo "$exits" | grep -c 'calltree/' || true)" = "$LAB5_K" ] ||
        bad="${bad}$(echo "$exits" | grep -c 'calltree/' || true) exit events of calltree tasks, expected $LAB5_K"$'\n'
    [ -z "$bad" ] || { printf '%s' "$bad"; echo "the trace's event lines:"; echo "$out" | grep 'sched_process\|lab 5\|panic' | head -n 12; return 1; }
}

lab5_filter() {
    local out exits
    out="$(gl_step "$GL_WORK/boot" filter)" || return 1
    exits="$(lab5_exits "$out" | awk '{ print $1 }' | sort | tr '\n' ' ')"
    [ "$exits" = "calltree/$LAB5_PICK " ] ||
        gl_fail "with filter 'comm == \"calltree/$LAB5_PICK\"' the exit events were for: ${exits:-nothing}" \
            "$(echo "$out" | grep -m 3 'write error\|lab 5\|panic')"
}

lab5_disabled() {
    local out n
    out="$(gl_step "$GL_WORK/boot" disabled)" || return 1
    n="$(echo "$out" | grep -x '[0-9]*' | tail -n 1)"
    [ "$n" = 0 ] || gl_fail "after 'echo 0 > enable', $n sched_process_exit events were recorded"
    gl_step "$GL_WORK/boot" end >/dev/null
}

# ktrace records the same run into trace.dat; trace-cmd reads it with the
# format the kernel exported.
lab5_tracecmd() {
    local k=$LAB5_K2 report exits i bad=""
    if ! (cd "$GL_TREE" && timeout "${GL_BOOT_TIMEOUT:-600}" cargo run --quiet --release -p build-tools --bin ktrace -- \
        record --smp 2 -e sched:sched_process_exit -o "$GL_WORK/trace.dat" -- "calltree 1 $k") >"$GL_WORK/ktrace.log" 2>&1; then
        echo "ktrace record failed:"
        grep -m 4 "lab 5\|panic\|error" "$GL_WORK/ktrace.log" || tail -n 5 "$GL_WORK/ktrace.log"
        return 1
    fi
    report="$(trace-cmd report "$GL_WORK/trace.dat" 2>&1)" || { echo "trace-cmd report failed:"; echo "$report" | tail -n 5; return 1; }
    exits="$(lab5_exits "$report" | awk '$1 ~ /^calltree\// && $3 == 120 && $2 > 0 { print $1 }' | sort | tr '\n' ' ')"
    for i in $(seq 0 $((k - 1))); do
        case " $exits" in *" calltree/$i "*) ;; *) bad="${bad}calltree/$i " ;; esac
    done
    [ -z "$bad" ] || { echo "trace-cmd report has no 'sched_process_exit: comm=... pid=... prio=120' line for: $bad"; echo "$report" | grep -m 8 'sched_process_exit\|lab 5'; return 1; }
}

lab_tests() {
    lab5_boot
    gl_test "the format file is Linux's" 25 lab5_format
    gl_test "trace shows every exit with its pid" 30 lab5_trace
    gl_test "a filter on comm selects one task" 15 lab5_filter
    gl_test "a disabled event records nothing" 5 lab5_disabled
    gl_test "trace-cmd reads the event from ktrace's trace.dat" 25 lab5_tracecmd
}
