#!/usr/bin/env bash
# Builds the kernel ELF and prints its path as the last line.
#
#   boot/build.sh            mcount mode (`-Z instrument-mcount`, the default)
#   KTRACE_MODE=fentry boot/build.sh
#                            fentry-style mode (`-Z patchable-function-entry=5`)
#   KTRACE_SCALE=N boot/build.sh
#                            either mode with N generated traceable functions
#                            (kernel/scale: the `scale` feature), in its own
#                            build directory; the default build is unchanged
#
# The steps mirror Linux's build of vmlinux:
#   1. cargo builds the host tools (build-tools: recordmcount, kallsyms,
#      sorttable);
#   2. cargo builds the kernel crate as a static library, instrumented;
#   3. recordmcount finds every call site and adds the __mcount_loc table;
#   4. ld links it with boot/linker.ld;
#   5. kallsyms turns the symbol table into a .kallsyms section, and ld links
#      again with it (the section is last, so no address moves: checked);
#   6. sorttable sorts the __mcount_loc table of the final ELF in place
#      (Linux: scripts/sorttable, BUILDTIME_MCOUNT_SORT), so ftrace_init only
#      checks the order instead of sorting at every boot.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODE="${KTRACE_MODE:-mcount}"
case "$MODE" in
mcount) FLAGS="-Z instrument-mcount" ;;
fentry) FLAGS="-Z patchable-function-entry=5" ;;
*) echo "build.sh: unknown KTRACE_MODE '$MODE' (mcount or fentry)" >&2; exit 2 ;;
esac
SCALE="${KTRACE_SCALE:-}"
FEATURES=()
BUILD="$MODE"
if [ -n "$SCALE" ]; then
    case "$SCALE" in
    *[!0-9]*) echo "build.sh: KTRACE_SCALE must be a count, not '$SCALE'" >&2; exit 2 ;;
    esac
    # Its own build directory (the feature and the generated crate would
    # otherwise rebuild the default kernel's objects), one for every count.
    FEATURES=(--features scale)
    BUILD="$MODE-scale$SCALE"
    export KTRACE_SCALE="$SCALE"
fi
TARGET_DIR="$ROOT/target"
OUT="$TARGET_DIR/kernel/$BUILD"
mkdir -p "$OUT"
LD="${LD:-ld}"

cd "$ROOT"
"$ROOT/boot/setup-toolchain.sh"
cargo build --quiet --release -p build-tools --bin recordmcount --bin kallsyms --bin sorttable
TOOLS="$TARGET_DIR/release"

RUSTC_BOOTSTRAP=1 \
RUSTC_WRAPPER="$ROOT/boot/rustc-wrapper.sh" \
KTRACE_INSTRUMENT_FLAGS="$FLAGS" \
RUSTFLAGS="-C code-model=kernel -C relocation-model=static -C force-frame-pointers=yes --cfg ktrace_$MODE" \
cargo build --quiet --release -p kernel ${FEATURES[@]+"${FEATURES[@]}"} --target x86_64-unknown-none \
    --target-dir "$TARGET_DIR/kernel-build/$BUILD"
LIB="$TARGET_DIR/kernel-build/$BUILD/x86_64-unknown-none/release/libkernel.a"

"$TOOLS/recordmcount" --mode "$MODE" --notrace "$ROOT/kernel/notrace.list" \
    -o "$OUT/libkernel.mc.a" "$LIB" >&2

LDFLAGS=(-n -static --gc-sections -z max-page-size=4096 -z noexecstack --no-warn-rwx-segments -T "$ROOT/boot/linker.ld")
"$LD" "${LDFLAGS[@]}" -o "$OUT/kernel.pass1.elf" "$OUT/libkernel.mc.a"
"$TOOLS/kallsyms" -o "$OUT/kallsyms.o" "$OUT/kernel.pass1.elf" >&2
"$LD" "${LDFLAGS[@]}" -o "$OUT/kernel.elf" "$OUT/libkernel.mc.a" "$OUT/kallsyms.o"
"$TOOLS/sorttable" "$OUT/kernel.elf" >&2
"$TOOLS/kallsyms" --compare "$OUT/kernel.pass1.elf" "$OUT/kernel.elf" >&2
echo "$OUT/kernel.elf"
