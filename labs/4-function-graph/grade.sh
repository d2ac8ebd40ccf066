# Lab 4 (function_graph): sourced by labs/grade with GL_TREE, GL_WORK and
# gradelib.sh loaded.
#
# One boot on 4 CPUs. The shell's `calltree N [TASKS]` runs a call tree
# whose shape kernel/src/shell/work.rs documents: per iteration
# calltree_root() calls calltree_leaf(), calltree_pair() (two leaves),
# calltree_chain() three deep (one leaf) and calltree_wide(), which returns
# 128 bits in rax:rdx. The grader runs it untraced first for the expected
# result, then under function_graph with a random N and task count.

lab4_boot() {
    LAB4_N=$(gl_rand 2 6)
    LAB4_M=$(gl_rand 3 9)
    LAB4_TASKS=$(gl_rand 3 6)
    LAB4_K=$(gl_rand 2 5)
    gl_boot "$GL_WORK/boot" --smp 4 <<EOF
@ untraced
calltree $LAB4_N
calltree $LAB4_M
@ select
echo 'kernel::shell::work::calltree_*' > /tracing/set_ftrace_filter
echo function_graph > /tracing/current_tracer
cat /tracing/current_tracer
@ traced
calltree $LAB4_N
echo 0 > /tracing/tracing_on
cat /tracing/trace
@ tasks
echo > /tracing/trace
echo 1 > /tracing/tracing_on
calltree $LAB4_M $LAB4_TASKS
echo 0 > /tracing/tracing_on
cat /tracing/trace | grep -c 'calltree_leaf()'
@ compute
echo 'kernel::shell::work::compute_*' > /tracing/set_ftrace_filter
echo 1 > /tracing/tracing_on
work compute $LAB4_K
@ off
echo nop > /tracing/current_tracer
calltree $LAB4_N
EOF
    LAB4_RESULT_N="$(gl_step "$GL_WORK/boot" untraced 2>/dev/null | sed -n "s/^calltree: $LAB4_N iterations, result \([0-9]*\)$/\1/p" | head -n 1)"
    LAB4_RESULT_M="$(gl_step "$GL_WORK/boot" untraced 2>/dev/null | sed -n "s/^calltree: $LAB4_M iterations, result \([0-9]*\)$/\1/p" | head -n 1)"
}

lab4_untraced_ok() {
    [ -n "$LAB4_RESULT_N" ] && [ -n "$LAB4_RESULT_M" ] && return 0
    echo "calltree did not run before tracing (the kernel did not boot?)"
    gl_step "$GL_WORK/boot" untraced | tail -n 5
    return 1
}

# The traced run returns what the untraced one did: every hijacked return
# came back to its caller with rax and rdx intact.
lab4_results() {
    lab4_untraced_ok || return 1
    local out
    out="$(gl_step "$GL_WORK/boot" traced)" || return 1
    echo "$out" | grep -c -x "calltree: $LAB4_N iterations, result $LAB4_RESULT_N" >/dev/null ||
        gl_fail "calltree $LAB4_N under function_graph: expected result $LAB4_RESULT_N (untraced), got:" \
            "$(echo "$out" | grep -m 3 'calltree:\|lab 4\|panic')"
}

# lab4_count TEXT PATTERN: how many lines of TEXT contain PATTERN.
lab4_count() {
    echo "$1" | grep -c -F -- "$2" || true
}

# The trace has the call tree: every entry, and every return with its
# duration. (A call that was interrupted by another event on its CPU is
# printed as `name() {` ... `}` instead of `name();`: both count.)
lab4_tree() {
    local out bad="" n="$LAB4_N" f want got
    out="$(gl_step "$GL_WORK/boot" traced)" || return 1
    out="$(echo "$out" | grep '^ *[0-9]*) ')"
    for f in root:1 pair:1 chain:3 leaf:4 wide:1; do
        want=$((n * ${f#*:}))
        got="$(lab4_count "$out" "calltree_${f%:*}()")"
        [ "$got" = "$want" ] || bad="${bad}calltree_${f%:*}: $got calls in the trace, expected $want"$'\n'
    done
    # Every call that opened a brace closes it.
    local opens closes
    opens="$(echo "$out" | grep -c '() {$' || true)"
    closes="$(echo "$out" | grep -c '|[[:space:]]*}' || true)"
    [ "$opens" = "$closes" ] || bad="${bad}$opens calls open a brace, $closes close one (a return went missing)"$'\n'
    # Every return (a `();` or `}` line) has a duration.
    local returns timed
    returns="$(echo "$out" | grep -c '();$\||[[:space:]]*}' || true)"
    timed="$(echo "$out" | grep -c 'us[[:space:]]*|.*\(();$\|}\)' || true)"
    [ "$returns" = "$timed" ] && [ "$returns" -ge $((7 * n)) ] ||
        bad="${bad}$returns returns, $timed of them with a duration (expected all, and at least $((7 * n)))"$'\n'
    [ -z "$bad" ] || { printf '%s' "$bad"; echo "the trace (first lines):"; echo "$out" | head -n 16; return 1; }
}

# Several tasks, preempted and migrated in the middle of the tree, each
# with its own shadow stack.
lab4_tasks() {
    lab4_untraced_ok || return 1
    local out leaves
    out="$(gl_step "$GL_WORK/boot" tasks)" || return 1
    echo "$out" | grep -c -x "calltree: $LAB4_TASKS tasks x $LAB4_M iterations, result $LAB4_RESULT_M" >/dev/null ||
        gl_fail "calltree $LAB4_M $LAB4_TASKS under function_graph: expected every task's result to be $LAB4_RESULT_M, got:" \
            "$(echo "$out" | grep -m 3 'calltree:\|lab 4\|panic')"
    leaves="$(echo "$out" | grep -x '[0-9]*' | tail -n 1)"
    [ "$leaves" = $((4 * LAB4_M * LAB4_TASKS)) ] ||
        gl_fail "calltree_leaf() lines: ${leaves:-none}, expected $((4 * LAB4_M * LAB4_TASKS)) (lost returns?)"
}

# The compute workload checks every return value against a loop without
# calls; a wrong register after return_to_handler shows as wrong results.
lab4_compute() {
    local out
    out="$(gl_step "$GL_WORK/boot" compute)" || return 1
    echo "$out" | grep -c "^work compute: 4 cpus x $LAB4_K iterations, result [0-9]*$" >/dev/null ||
        gl_fail "work compute $LAB4_K under function_graph (compute_* traced):" "$(echo "$out" | grep -m 3 'work compute\|lab 4\|panic')"
}

# Back to nop: every hijack is undone and the kernel still runs.
lab4_off() {
    local out
    out="$(gl_step "$GL_WORK/boot" off)" || return 1
    echo "$out" | grep -c -x "calltree: $LAB4_N iterations, result $LAB4_RESULT_N" >/dev/null ||
        gl_fail "calltree $LAB4_N after 'echo nop > current_tracer':" "$out"
    gl_step "$GL_WORK/boot" end >/dev/null || return 1
}

lab_tests() {
    lab4_boot
    gl_test "traced functions return their values" 20 lab4_results
    gl_test "the trace shows the call tree with durations" 30 lab4_tree
    gl_test "several tasks, preempted and migrating" 20 lab4_tasks
    gl_test "a deep workload computes right when traced" 15 lab4_compute
    gl_test "nop again: the kernel runs on" 15 lab4_off
}
