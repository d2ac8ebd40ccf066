#!/usr/bin/env bash
# Makes sure the pinned toolchain has the kernel's target
# (rustup installs them from rust-toolchain.toml on first use, but not when
# the toolchain already existed without them).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-none; then
    rustup target add x86_64-unknown-none >&2
fi
