# The graders' library (sourced by labs/grade), in the manner of MIT
# 6.1810's gradelib.py: each test has a name and points, runs, and prints
# one line
#
#     == Test NAME (P pts) == NAME: OK (1.2s)
#     == Test NAME (P pts) == NAME: FAIL (1.2s)
#         why it failed (indented)
#
# and the grader ends with `score: X/Y`. A test is a shell function: it
# passes when it returns 0; what it prints is shown only when it fails.
#
# Helpers for QEMU labs: gl_boot runs one boot with a list of shell
# commands, each between markers, and gl_step gives one command's output.

GL_SCORE=0
GL_TOTAL=0
GL_FAILED=()

# gl_test NAME POINTS FUNCTION [ARGS...]
gl_test() {
    local name="$1" points="$2" start end out status
    shift 2
    GL_TOTAL=$((GL_TOTAL + points))
    printf '== Test %s (%s pts) == ' "$name" "$points"
    start=$(date +%s.%N)
    set +e
    out="$("$@" 2>&1)"
    status=$?
    set -e
    end=$(date +%s.%N)
    local secs
    secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    if [ $status = 0 ]; then
        GL_SCORE=$((GL_SCORE + points))
        printf '%s: OK (%ss)\n' "$name" "$secs"
    else
        GL_FAILED+=("$name")
        printf '%s: FAIL (%ss)\n' "$name" "$secs"
        [ -n "$out" ] && printf '%s\n' "$out" | head -n "${GL_FAIL_LINES:-25}" | sed 's/^/    /'
    fi
    return 0
}

# Prints the score; the grader's exit status is 0 only with full marks.
gl_finish() {
    echo "score: $GL_SCORE/$GL_TOTAL"
    [ "$GL_SCORE" = "$GL_TOTAL" ]
}

# gl_fail MESSAGE...: prints the message and fails the test (a test runs
# in a subshell of gl_test: this ends it).
gl_fail() {
    printf '%s\n' "$@"
    exit 1
}

# A seed for this run's hidden variation: GRADE_SEED=N reproduces a run.
gl_seed() {
    GL_SEED="${GRADE_SEED:-$(( $(date +%s%N) % 1000000007 ))}"
    RANDOM=$((GL_SEED % 32768))
    echo "grade: seed $GL_SEED (GRADE_SEED=$GL_SEED reproduces this run)"
}

# gl_rand LO HI: a number in [LO, HI] from the seeded generator.
gl_rand() {
    echo $(($1 + (RANDOM * 32768 + RANDOM) % ($2 - $1 + 1)))
}

# A random identifier of N lower-case letters.
gl_rand_name() {
    local n="$1" s="" letters=abcdefghijklmnopqrstuvwxyz
    for _ in $(seq "$n"); do
        s="$s${letters:$((RANDOM % 26)):1}"
    done
    echo "$s"
}

# gl_boot LOG [QEMU.SH ARGS...] <<< SCRIPT: builds the tree's kernel
# (./qemu.sh --build-only; a build that fails is the reason every step
# fails), boots it and types the script: lines `@ NAME` start a step (the
# grader types `echo @@STEP NAME@@` so that gl_step can cut the log), the
# other lines are the step's commands; `poweroff` ends it. The console goes
# to LOG. The boot may take GL_BOOT_TIMEOUT seconds (default 600).
gl_boot() {
    local log="$1" script kernel
    shift
    script="$(awk '/^@ / { printf "echo @@STEP %s@@\n", substr($0, 3); next } { print }')"
    GL_BOOT_STATUS=0
    : >"$log.build"
    set +e
    kernel="$("$GL_TREE/qemu.sh" --build-only "$@" 2>"$log.build" | tail -n 1)"
    if [ ! -f "$kernel" ]; then
        GL_BOOT_STATUS="no kernel: the build failed"
        : >"$log"
    else
        printf '%s\necho @@STEP end@@\npoweroff\n' "$script" |
            KTRACE_KERNEL="$kernel" timeout "${GL_BOOT_TIMEOUT:-600}" "$GL_TREE/qemu.sh" "$@" >"$log" 2>&1
        GL_BOOT_STATUS=$?
    fi
    set -e
    tr -d '\r' <"$log" >"$log.txt"
}

# gl_step LOG NAME: the console output of step NAME (its commands and their
# output, without the shell prompts' echo of the marker), or fails with the
# reason the step never ran or never finished (the kernel died: its panic
# is shown).
gl_step() {
    local log="$1.txt" name="$2"
    if ! grep -q "^@@STEP $name@@$" "$log"; then
        # To stderr: the test's caller captures stdout, gl_test both.
        gl_died "$1" >&2
        return 1
    fi
    # A step that no other marker follows is one the kernel died in.
    if [ "$name" != end ] && ! awk -v name="$name" '$0 == "@@STEP " name "@@" { on = 1; next } on && /^@@STEP .*@@$/ { found = 1; exit } END { exit !found }' "$log"; then
        gl_died "$1" >&2
        return 1
    fi
    awk -v name="$name" '
        $0 == "@@STEP " name "@@" { on = 1; next }
        on && /^@@STEP .*@@$/ { exit }
        on && /echo @@STEP / { next }
        on { print }' "$log"
}

# gl_died LOG: says why the boot in LOG ended early (a panic's lines, or
# the last lines of the console).
gl_died() {
    local log="$1.txt"
    if [ -s "$1.build" ] && [ ! -s "$log" ]; then
        echo "the kernel does not build:"
        grep -m 6 -A 6 "^error\|lab [0-9]*:" "$1.build" || tail -n 12 "$1.build"
        return 0
    fi
    echo "the kernel did not get this far (qemu.sh status $GL_BOOT_STATUS)."
    if grep -q "Kernel panic\|not yet implemented\|lab [0-9]*:" "$log"; then
        grep -m 3 "Kernel panic\|invalid opcode\|lab [0-9]*:" "$log"
    else
        echo "last lines of the console:"
        tail -n 8 "$log"
    fi
}
