# Lab 1 (call sites): sourced by labs/grade with GL_TREE (the tree graded),
# GL_WORK (a scratch directory) and gradelib.sh loaded.
#
# The grader writes a small Rust library with a random number of functions
# with random names and bodies, compiles it as the kernel is compiled
# (`-Z instrument-mcount`, static relocations), and finds the `call mcount`
# sites itself, from objdump's disassembly and relocations. It then runs
# the tree's recordmcount on the object and reads the `__mcount_loc` table
# back with readelf: every site of a traced function must be in it, nothing
# else, and the notrace functions' calls must have become NOPs.

lab1_build() {
    (cd "$GL_TREE" && cargo build --quiet --release -p build-tools --bin recordmcount) >"$GL_WORK/build.log" 2>&1
}

# Writes lib.rs with $1 functions; the names of the notrace ones go to
# notrace.list, one per line.
lab1_generate() {
    local n="$1" prefix i name body callee
    prefix="$(gl_rand_name 5)"
    LAB1_NAMES=()
    {
        echo '#![no_std]'
        echo 'extern "C" { fn lab_helper(x: u64) -> u64; }'
        for i in $(seq 0 $((n - 1))); do
            name="${prefix}_$(gl_rand_name "$(gl_rand 3 12)")_$i"
            LAB1_NAMES+=("$name")
            # A random body: a loop of random length and constants, then a
            # call to the previous function or to an external helper.
            body="let mut s = x ^ $(gl_rand 1 30000);"
            for _ in $(seq "$(gl_rand 1 6)"); do
                body="$body for i in 0..(x & $(gl_rand 1 255)) { s = s.wrapping_mul($(gl_rand 3 999)) ^ i; }"
            done
            if [ "$i" -gt 0 ] && [ $((RANDOM % 2)) = 0 ]; then
                callee="${LAB1_NAMES[$((i - 1))]}(s)"
            else
                callee="unsafe { lab_helper(s) }"
            fi
            echo "#[no_mangle] #[inline(never)] pub extern \"C\" fn $name(x: u64) -> u64 { $body $callee.wrapping_add(s) }"
        done
    } >"$GL_WORK/lib.rs"
    # One or two notrace functions, by their exact name or by a glob.
    : >"$GL_WORK/notrace.list"
    LAB1_NOTRACE=()
    local k
    for k in $(seq "$(gl_rand 1 2)"); do
        i=$(gl_rand 0 $((n - 1)))
        name="${LAB1_NAMES[$i]}"
        case " ${LAB1_NOTRACE[*]} " in *" $name "*) continue ;; esac
        LAB1_NOTRACE+=("$name")
        if [ "$k" = 1 ]; then
            echo "$name" >>"$GL_WORK/notrace.list"
        else
            echo "*${name#*_}" >>"$GL_WORK/notrace.list"
        fi
    done
}

lab1_compile() {
    (cd "$GL_TREE" && RUSTC_BOOTSTRAP=1 rustc --edition 2021 --crate-type lib --emit obj \
        -C opt-level=2 -C panic=abort -C code-model=kernel -C relocation-model=static \
        -C force-frame-pointers=yes -Z instrument-mcount --target x86_64-unknown-none \
        -o "$GL_WORK/lib.o" "$GL_WORK/lib.rs") >"$GL_WORK/rustc.log" 2>&1
}

# The grader's own list of sites: "SECTION OFFSET FUNCTION" per `call mcount`.
lab1_expected_sites() {
    objdump -dr "$1" | awk '
        function hex(s,   i, c, v) { v = 0; s = tolower(s); for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; v = v * 16 + c } return v }
        /^Disassembly of section / { sec = $4; sub(/:$/, "", sec); next }
        /^[0-9a-f]+ <.*>:$/ { fn = $2; gsub(/[<>:]/, "", fn); next }
        /R_X86_64_(PLT32|PC32)[ \t]+mcount-0x4$/ {
            off = $1; sub(/:$/, "", off)
            printf "%s %x %s\n", sec, hex(off) - 1, fn
        }'
}

# The records of the __mcount_loc table as "SECTION OFFSET", from readelf.
lab1_records() {
    readelf -rW "$1" | awk '
        function hex(s,   i, c, v) { v = 0; s = tolower(s); for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; if (c < 0) return -1; v = v * 16 + c } return v }
        /^Relocation section / { on = ($3 == "'"'"'.rela__mcount_loc'"'"'") ; next }
        on && $3 == "R_X86_64_64" {
            name = $5; add = $7
            sec = (name ~ /^\./) ? name : ".text." name
            printf "%s %x\n", sec, hex($4) + hex(add)
        }'
}

# Builds recordmcount, makes the object and runs recordmcount on it, once
# for all the tests; a failure's reason goes to $GL_WORK/prepare.err.
lab1_prepare() {
    lab1_prepare_steps >"$GL_WORK/prepare.err" 2>&1 && : >"$GL_WORK/prepare.err"
}

# Fails with the preparation's error, if it had one.
lab1_ready() {
    if [ -s "$GL_WORK/prepare.err" ]; then
        cat "$GL_WORK/prepare.err"
        return 1
    fi
}

lab1_prepare_steps() {
    if ! lab1_build; then
        echo "recordmcount does not build:"; tail -n 15 "$GL_WORK/build.log"; return 1
    fi
    lab1_generate "$(gl_rand 4 14)"
    if ! lab1_compile; then
        echo "the grader's object does not compile (grader bug?):"; tail -n 15 "$GL_WORK/rustc.log"; return 1
    fi
    lab1_expected_sites "$GL_WORK/lib.o" >"$GL_WORK/sites.all"
    : >"$GL_WORK/sites.traced"
    : >"$GL_WORK/sites.notrace"
    local sec off fn
    while read -r sec off fn; do
        case " ${LAB1_NOTRACE[*]} " in
        *" $fn "*) echo "$sec $off" >>"$GL_WORK/sites.notrace" ;;
        *) echo "$sec $off" >>"$GL_WORK/sites.traced" ;;
        esac
    done <"$GL_WORK/sites.all"
    if [ "$(wc -l <"$GL_WORK/sites.all")" -lt "${#LAB1_NAMES[@]}" ]; then
        echo "grader: found only $(wc -l <"$GL_WORK/sites.all") call mcount in ${#LAB1_NAMES[@]} functions (grader bug?)"; return 1
    fi
    # (In a subshell whose stderr is dropped: a panic aborts, and bash's
    # "Aborted" notice is not the tool's output.)
    if ! ("$GL_TREE/target/release/recordmcount" --mode mcount --notrace "$GL_WORK/notrace.list" \
        -o "$GL_WORK/out.o" "$GL_WORK/lib.o" >"$GL_WORK/recordmcount.log" 2>&1) 2>/dev/null; then
        echo "recordmcount failed on the grader's object ($(wc -l <"$GL_WORK/sites.all") sites in ${#LAB1_NAMES[@]} functions):"
        grep -m 3 "lab 1:\|error\|panicked" "$GL_WORK/recordmcount.log" || tail -n 5 "$GL_WORK/recordmcount.log"
        return 1
    fi
    lab1_records "$GL_WORK/out.o" | sort >"$GL_WORK/records"
}

lab1_all_recorded() {
    lab1_ready || return 1
    local missing
    missing="$(sort "$GL_WORK/sites.traced" | comm -23 - "$GL_WORK/records")"
    [ -z "$missing" ] || gl_fail "call sites missing from __mcount_loc (section offset):" "$missing"
}

lab1_nothing_else() {
    lab1_ready || return 1
    local extra
    extra="$(sort "$GL_WORK/sites.traced" | comm -13 - "$GL_WORK/records")"
    [ -z "$extra" ] || gl_fail "__mcount_loc records that are not call sites of traced functions (section offset):" "$extra"
    local n
    n="$(readelf -rW "$GL_WORK/out.o" | awk '/^Relocation section .*__mcount_loc/ { print $8 }')"
    [ "${n:-0}" = "$(wc -l <"$GL_WORK/sites.traced")" ] ||
        gl_fail "__mcount_loc has ${n:-0} relocations for $(wc -l <"$GL_WORK/sites.traced") sites (a site recorded twice?)"
}

lab1_notrace_nops() {
    lab1_ready || return 1
    [ -s "$GL_WORK/sites.notrace" ] || gl_fail "grader: no notrace site (grader bug?)"
    local sec off line bad=""
    while read -r sec off; do
        line="$(objdump -dr -j "$sec" "$GL_WORK/out.o" | awk -v off="$off" '$1 == off ":" { getline nx; print $0 " | " nx; exit }')"
        case "$line" in
        *"nopl "*"0x0(%rax,%rax,1)"*) ;;
        *) bad="$bad$sec+0x$off is not the 5-byte NOP: $line"$'\n' ;;
        esac
        if objdump -dr -j "$sec" "$GL_WORK/out.o" | grep -c "R_X86_64_PLT32.*mcount" >/dev/null; then
            bad="$bad$sec: still has a relocation against mcount (the linker would write the call back)"$'\n'
        fi
    done <"$GL_WORK/sites.notrace"
    [ -z "$bad" ] || gl_fail "notrace functions (${LAB1_NOTRACE[*]}):" "$bad"
}

lab1_traced_untouched() {
    lab1_ready || return 1
    local sec off bad=""
    while read -r sec off; do
        objdump -dr -j "$sec" "$GL_WORK/out.o" | grep -c "R_X86_64_PLT32[[:space:]]*mcount-0x4" >/dev/null ||
            bad="$bad$sec+0x$off: the call to mcount of a traced function is gone"$'\n'
    done <"$GL_WORK/sites.traced"
    [ -z "$bad" ] || gl_fail "$bad"
}

lab1_unit_tests() {
    (cd "$GL_TREE" && cargo test --quiet --release -p build-tools --test recordmcount) >"$GL_WORK/unit.log" 2>&1 ||
        { grep -m 2 "lab 1:" "$GL_WORK/unit.log"; grep -m 4 "FAILED\|^error" "$GL_WORK/unit.log"; tail -n 2 "$GL_WORK/unit.log"; return 1; }
}

# The real thing: the kernel linked with the table this recordmcount
# writes boots, and the function tracer sees every call of one function.
lab1_kernel() {
    if [ -n "${GL_FAILED[*]}" ]; then
        echo "not run: the tests above failed (${GL_FAILED[*]}); the first reason:"
        grep -m 1 "lab 1:" "$GL_WORK/prepare.err" || head -n 3 "$GL_WORK/prepare.err"
        return 1
    fi
    local n
    n=$(gl_rand 2 9)
    gl_boot "$GL_WORK/boot" --smp 2 <<EOF
@ setup
echo kernel::shell::work::calltree_leaf > /tracing/set_ftrace_filter
echo function > /tracing/current_tracer
@ run
calltree $n
@ count
echo 0 > /tracing/tracing_on
cat /tracing/trace | grep -c 'calltree_leaf <-'
EOF
    local got
    got="$(gl_step "$GL_WORK/boot" count)" || return 1
    got="$(echo "$got" | grep -x '[0-9]*' | tail -n 1)"
    [ "$got" = $((4 * n)) ] ||
        gl_fail "calltree $n calls calltree_leaf $((4 * n)) times; the function tracer saw ${got:-none}"
}

lab_tests() {
    lab1_prepare || true
    gl_test "recordmcount: every call mcount is recorded" 30 lab1_all_recorded
    gl_test "recordmcount: nothing else is recorded" 15 lab1_nothing_else
    gl_test "recordmcount: notrace calls become NOPs" 15 lab1_notrace_nops
    gl_test "recordmcount: traced calls stay calls" 5 lab1_traced_untouched
    gl_test "recordmcount: the tree's tests (build-tools/tests/recordmcount.rs)" 15 lab1_unit_tests
    gl_test "kernel: the function tracer sees every call" 20 lab1_kernel
}
