# Lab 2 (a new tracer): sourced by labs/grade with GL_TREE, GL_WORK and
# gradelib.sh loaded.
#
# One boot. The grader knows the shape of the shell's `calltree` workload
# (kernel/src/shell/work.rs documents it): one iteration calls
# calltree_root, calltree_pair and calltree_wide once, calltree_chain 3
# times and calltree_leaf 4 times. It picks the number of iterations and of
# tasks at random and checks the `funccount` file against those numbers.

LAB2_FNS="root pair chain leaf wide"
# Calls per iteration, in LAB2_FNS order.
lab2_per_iter() {
    case "$1" in root | pair | wide) echo 1 ;; chain) echo 3 ;; leaf) echo 4 ;; esac
}

lab2_boot() {
    LAB2_N1=$(gl_rand 2 12)
    LAB2_N2=$(gl_rand 2 12)
    LAB2_TASKS=$(gl_rand 2 4)
    LAB2_N3=$(gl_rand 2 6)
    gl_boot "$GL_WORK/boot" --smp 4 <<EOF
@ tracers
cat /tracing/available_tracers
@ select
echo 'kernel::shell::work::calltree_*' > /tracing/set_ftrace_filter
echo funccount > /tracing/current_tracer
cat /tracing/current_tracer
@ count1
calltree $LAB2_N1
cat /tracing/funccount
@ stopped
echo nop > /tracing/current_tracer
calltree $LAB2_N2
cat /tracing/funccount
@ again
echo funccount > /tracing/current_tracer
cat /tracing/funccount
echo 'kernel::shell::work::calltree_[lw]*' > /tracing/set_ftrace_filter
echo nop > /tracing/current_tracer
echo funccount > /tracing/current_tracer
calltree $LAB2_N3 $LAB2_TASKS
cat /tracing/funccount
EOF
}

# lab2_expect TEXT FNS N: each function of FNS has N * its per-iteration
# count in TEXT (lines `COUNT NAME`), and no other function is listed.
lab2_expect() {
    local text="$1" fns="$2" n="$3" f want got bad=""
    for f in $fns; do
        want=$((n * $(lab2_per_iter "$f")))
        got="$(echo "$text" | awk -v name="kernel::shell::work::calltree_$f" '$2 == name { print $1 }')"
        [ "$got" = "$want" ] || bad="${bad}calltree_$f: expected $want, the file says ${got:-nothing}"$'\n'
    done
    local others
    others="$(echo "$text" | awk 'NF == 2 && $1 ~ /^[0-9]+$/ { print $2 }' |
        grep -v -x -E "kernel::shell::work::calltree_($(echo "$fns" | tr ' ' '|'))" || true)"
    [ -z "$others" ] || bad="${bad}functions that were not selected or not called: $(echo "$others" | tr '\n' ' ')"$'\n'
    [ -z "$bad" ] || { printf '%s' "$bad"; echo "the file was:"; echo "$text" | head -n 12; return 1; }
}

lab2_selects() {
    local out
    out="$(gl_step "$GL_WORK/boot" select)" || return 1
    echo "$out" | grep -c -x funccount >/dev/null || gl_fail "current_tracer is not funccount after selecting it:" "$out"
    out="$(gl_step "$GL_WORK/boot" tracers)" || return 1
    echo "$out" | tr ' ' '\n' | grep -c -x funccount >/dev/null || gl_fail "available_tracers has no funccount: $out"
}

lab2_counts() {
    local out
    out="$(gl_step "$GL_WORK/boot" count1)" || return 1
    echo "$out" | grep -c "^calltree: $LAB2_N1 iterations" >/dev/null || gl_fail "calltree $LAB2_N1 did not run:" "$out"
    lab2_expect "$(echo "$out" | grep -v '^calltree')" "$LAB2_FNS" "$LAB2_N1"
}

lab2_stops() {
    local out
    out="$(gl_step "$GL_WORK/boot" stopped)" || return 1
    # The counts of the first run, unchanged by the run made under nop.
    lab2_expect "$(echo "$out" | grep -v '^calltree')" "$LAB2_FNS" "$LAB2_N1" ||
        { echo "(after 'echo nop > current_tracer', calltree $LAB2_N2 must not count and the counts must stay)"; return 1; }
}

lab2_resets() {
    local out first
    out="$(gl_step "$GL_WORK/boot" again)" || return 1
    first="$(echo "$out" | sed -n '1,/^calltree/p' | grep -v '^calltree')"
    [ -z "$(echo "$first" | awk 'NF == 2 && $1 ~ /^[0-9]+$/')" ] ||
        gl_fail "selecting funccount again must start from zero; the file was:" "$first"
}

lab2_filter_and_cpus() {
    local out last
    out="$(gl_step "$GL_WORK/boot" again)" || return 1
    echo "$out" | grep -c "^calltree: $LAB2_TASKS tasks x $LAB2_N3 iterations" >/dev/null ||
        gl_fail "calltree $LAB2_N3 $LAB2_TASKS did not run:" "$out"
    last="$(echo "$out" | sed -n '/^calltree: /,$p' | grep -v '^calltree')"
    lab2_expect "$last" "leaf wide" $((LAB2_N3 * LAB2_TASKS)) ||
        { echo "(set_ftrace_filter 'calltree_[lw]*', $LAB2_TASKS tasks on 4 CPUs x $LAB2_N3 iterations)"; return 1; }
}

lab_tests() {
    lab2_boot
    gl_test "funccount can be selected" 15 lab2_selects
    gl_test "funccount counts every call" 35 lab2_counts
    gl_test "another tracer stops the counting" 15 lab2_stops
    gl_test "selecting funccount starts from zero" 10 lab2_resets
    gl_test "set_ftrace_filter and several CPUs" 25 lab2_filter_and_cpus
}
