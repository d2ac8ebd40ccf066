#!/usr/bin/env bash
# Runs every test: host unit tests, model checks and the QEMU tests.
# Installs what is missing first (tests/install-deps.sh: QEMU, trace-cmd, Chromium, a C
# linker, binutils; then the Rust target), so it works on a fresh machine:
#   ./tests/run.sh            (QEMU=... picks the QEMU binary, as for qemu.sh)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# QEMU=path/to/qemu-system-x86_64 uses that QEMU, as qemu.sh does.
export QEMU="${QEMU:-qemu-system-x86_64}"
"$ROOT/tests/install-deps.sh"
"$ROOT/boot/setup-toolchain.sh"

echo "== host tests (tracer, build-tools, harness) and QEMU tests"
cargo test --release --no-fail-fast --workspace --exclude kernel
echo "== loom model checks of the ring buffer and the tracing_map"
RUSTFLAGS="--cfg loom" cargo test --release -p tracer --test ring_buffer_loom \
    --test tracing_map_loom --target-dir "$ROOT/target/loom"
echo "== all tests passed"
