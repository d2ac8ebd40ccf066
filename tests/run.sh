#!/usr/bin/env bash
# Runs every test: host unit tests, model checks and the QEMU tests.
# Installs what is missing first (QEMU, trace-cmd, the Rust target), so it
# works on a fresh machine:  ./tests/run.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

need_apt=()
command -v qemu-system-x86_64 >/dev/null 2>&1 || need_apt+=(qemu-system-x86)
command -v trace-cmd >/dev/null 2>&1 || need_apt+=(trace-cmd)
command -v objdump >/dev/null 2>&1 || need_apt+=(binutils)
command -v flock >/dev/null 2>&1 || need_apt+=(util-linux)
if [ ${#need_apt[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    $SUDO DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
"$ROOT/boot/setup-toolchain.sh"

echo "== host tests (tracer, build-tools, harness) and QEMU tests"
cargo test --release --no-fail-fast --workspace --exclude kernel
echo "== loom model checks of the ring buffer"
RUSTFLAGS="--cfg loom" cargo test --release -p tracer --test ring_buffer_loom \
    --target-dir "$ROOT/target/loom"
echo "== all tests passed"
