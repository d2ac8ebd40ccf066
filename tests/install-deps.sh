#!/usr/bin/env bash
# Installs what the build and the tests need when it is missing, on Debian:
#   QEMU (qemu-system-x86_64, or $QEMU), trace-cmd, KernelShark's library
#   (libkshark, with pkg-config and its headers), Chromium (headless: the
#   flame graph test opens ktrace's SVG in it), a C linker (cc: the host
#   crates link with it), binutils (ld, objdump) new enough for boot/build.sh,
#   and flock.
# As root it runs apt-get itself; as another user it runs `sudo -n apt-get`,
# and when sudo is absent or wants a password it prints the exact command to
# run and stops (exit 1). Called by tests/run.sh; tests/tests/install.rs runs
# it against shims of apt-get, sudo and id to check how it calls them.
# `--boot` (qemu.sh) leaves out what only the tests need (trace-cmd,
# KernelShark, Chromium).
set -euo pipefail
BOOT_ONLY=0
[ "${1:-}" = --boot ] && BOOT_ONLY=1

QEMU="${QEMU:-qemu-system-x86_64}"

# The packages of the tools that are missing now.
missing_packages() {
    local need=()
    command -v "$QEMU" >/dev/null 2>&1 || need+=(qemu-system-x86)
    [ "$BOOT_ONLY" = 1 ] || command -v trace-cmd >/dev/null 2>&1 || need+=(trace-cmd)
    # KernelShark's library and plugins, and what building a small program
    # against the library takes (tests/tests/tracecmd.rs checks trace.dat
    # files with KernelShark's sched_events plugin).
    [ "$BOOT_ONLY" = 1 ] || { command -v pkg-config >/dev/null 2>&1 && pkg-config --exists libkshark 2>/dev/null; } ||
        need+=(kernelshark libkshark-dev libjson-c-dev libtracecmd-dev libtraceevent-dev libtracefs-dev pkg-config)
    [ "$BOOT_ONLY" = 1 ] || command -v chromium >/dev/null 2>&1 || need+=(chromium)
    command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
    { command -v ld >/dev/null 2>&1 && command -v objdump >/dev/null 2>&1; } || need+=(binutils)
    command -v flock >/dev/null 2>&1 || need+=(util-linux)
    echo "${need[@]}"
}

# boot/build.sh links with `--no-warn-rwx-segments`, which GNU ld has from 2.39.
check_binutils() {
    local line major minor
    line="$(ld --version 2>/dev/null | head -n 1)"
    if [[ "$line" =~ ([0-9]+)\.([0-9]+) ]]; then
        major="${BASH_REMATCH[1]}"
        minor="${BASH_REMATCH[2]}"
        if [ "$major" -lt 2 ] || { [ "$major" = 2 ] && [ "$minor" -lt 39 ]; }; then
            echo "install-deps: ld is too old ($line): boot/build.sh needs GNU binutils 2.39 or newer (--no-warn-rwx-segments); Debian 12 (bookworm) has 2.40" >&2
            return 1
        fi
    else
        echo "install-deps: cannot read ld's version ('$line'): boot/build.sh needs GNU binutils 2.39 or newer" >&2
        return 1
    fi
}

install_missing() {
    local pkgs
    read -r -a pkgs <<<"$(missing_packages)"
    if [ ${#pkgs[@]} -gt 0 ]; then
        local line="apt-get install -y ${pkgs[*]}"
        if [ "$(id -u)" = 0 ]; then
            echo "install-deps: installing ${pkgs[*]}" >&2
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
        elif command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
            echo "install-deps: installing ${pkgs[*]} (sudo -n)" >&2
            sudo -n apt-get update -qq
            sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
        else
            echo "install-deps: missing ${pkgs[*]}, and sudo is absent or needs a password." >&2
            echo "install-deps: run this as root, then run the tests again:" >&2
            echo "    $line" >&2
            return 1
        fi
        read -r -a pkgs <<<"$(missing_packages)"
        if [ ${#pkgs[@]} -gt 0 ]; then
            echo "install-deps: still missing after apt-get: ${pkgs[*]}" >&2
            return 1
        fi
    fi
    check_binutils
}

install_missing
