# Lab 3 (the ring buffer): sourced by labs/grade with GL_TREE, GL_WORK and
# gradelib.sh loaded. Host only: the tree's ring-buffer tests, each with
# its own expectations (Linux's bytes written out by hand, a model of the
# buffer, checksummed payloads), the property test with a seed drawn for
# this run, the multi-threaded stress tests, and the loom model checks of
# nested and concurrent writers.

# lab3_cargo LOG ARGS...: one cargo test run of the tracer crate, every
# test reported (no fail-fast); its output goes to LOG.
lab3_cargo() {
    local log="$1"
    shift
    (cd "$GL_TREE" && cargo test --release -p tracer --no-fail-fast "$@" -- --test-threads 2) >"$log" 2>&1 || true
}

lab3_run_all() {
    lab3_cargo "$GL_WORK/lib.log" --lib ring_buffer::
    lab3_cargo "$GL_WORK/format.log" --test ring_buffer_format
    PROPTEST_RNG_SEED="$GL_SEED" PROPTEST_CASES=200 lab3_cargo "$GL_WORK/prop.log" --test ring_buffer_proptest
    lab3_cargo "$GL_WORK/stress.log" --test ring_buffer_stress
    # loom builds in its own target directory (the one tests/run.sh uses).
    (cd "$GL_TREE" && RUSTFLAGS="--cfg loom" cargo test --release -p tracer --test ring_buffer_loom \
        --target-dir "$GL_TREE/target/loom" --no-fail-fast loom_ -- --test-threads 2) >"$GL_WORK/loom.log" 2>&1 || true
}

# lab3_passed LOG TEST...: every named test ran and passed; else says which
# did not and why (the first lines of each failure).
lab3_passed() {
    local log="$GL_WORK/$1.log" t bad=""
    shift
    if grep -q "^error\[E[0-9]*\]\|^error: could not compile" "$log"; then
        echo "the tests do not build:"
        grep -m 5 -A 5 "^error" "$log"
        return 1
    fi
    for t in "$@"; do
        if grep -q "^test .*\b$t \.\.\. ok$" "$log"; then
            continue
        fi
        bad=1
        if grep -q "^test .*\b$t \.\.\. " "$log"; then
            echo "$t failed:"
            # The panic message of that test (cargo prints "---- NAME stdout ----").
            awk -v t="$t" '$0 ~ "^---- .*" t " stdout ----" { on = 1; next } on && /^(---- |$)/ && n > 2 { exit } on { print "  " $0; n++ }' "$log" | head -n 6
        else
            echo "$t did not run (the test binary crashed or was not built):"
            grep -m 3 "lab 3:\|panicked\|error" "$log" | sed 's/^/  /'
        fi
    done
    [ -z "$bad" ]
}

lab3_one_writer() {
    lab3_passed format ring_buffer_writes_linux_bytes time_extend_for_long_gaps \
        padding_and_lost_events_in_read_page producer_consumer_mode_drops_new_events \
        consume_reports_lost_events_and_padding_is_skipped resize_keeps_events
}

lab3_nested() {
    lab3_passed format nested_write_is_kept_and_ordered &&
        lab3_passed lib interrupt_after_reserve_gets_absolute_time_stamp interrupt_before_reserve_goes_first \
            interrupt_during_commit_is_published fast_path_nesting_matches_general_path
}

lab3_model() {
    lab3_passed prop ops_match_model || { echo "(seed PROPTEST_RNG_SEED=$GL_SEED)"; return 1; }
}

lab3_stress() {
    lab3_passed stress stress_overwrite_consume stress_producer_consumer_consume stress_overwrite_read_page \
        stress_overwrite_with_resize_and_iter stress_producer_consumer_with_resize
}

lab3_loom() {
    lab3_passed loom loom_nested_writer_vs_reader loom_overwrite_writer_vs_reader \
        loom_producer_consumer_writer_vs_reader loom_resize_vs_writer
}

lab_tests() {
    lab3_run_all
    gl_test "one writer: Linux's page format, time extends, full pages" 25 lab3_one_writer
    gl_test "nested writers: interrupts at every step" 25 lab3_nested
    gl_test "random operations against a model (proptest)" 15 lab3_model
    gl_test "stress: writers and readers on several threads" 15 lab3_stress
    gl_test "loom: every interleaving of writer and reader" 20 lab3_loom
}
