#!/usr/bin/env bash
# Builds the kernel if needed and boots it under QEMU with the serial console
# on this terminal (or on stdin/stdout when they are pipes).
#
#   ./qemu.sh [--smp N] [--mem SIZE] [--cmdline "..."] [--gdb] [--icount]
#             [--fentry] [--scale N] [--build-only] [-- QEMU ARGS...]
#
# --scale N adds N generated traceable functions (kernel/scale), so that
# the kernel has as many ftrace call sites as Linux; `work scale` calls them.
#
# Exit status: the kernel's (`poweroff` gives 0, `exit N` gives N, a panic
# gives 101); 99 if QEMU stopped without the kernel asking (triple fault).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SMP=4
MEM=512M
CMDLINE=""
GDB=0
ICOUNT=0
BUILD_ONLY=0
EXTRA=()
usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
    --smp) SMP="$2"; shift 2 ;;
    --mem) MEM="$2"; shift 2 ;;
    --cmdline) CMDLINE="$2"; shift 2 ;;
    --gdb) GDB=1; shift ;;
    --icount) ICOUNT=1; shift ;;
    --fentry) export KTRACE_MODE=fentry; shift ;;
    --scale) export KTRACE_SCALE="$2"; shift 2 ;;
    --build-only) BUILD_ONLY=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) echo "qemu.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
done

# What the build and QEMU need (cc, binutils, QEMU), installed when missing.
QEMU="${QEMU:-qemu-system-x86_64}" "$ROOT/tests/install-deps.sh" --boot
# KTRACE_KERNEL=path boots an already built ELF (the test harness builds once).
if [ -n "${KTRACE_KERNEL:-}" ]; then
    KERNEL="$KTRACE_KERNEL"
else
    # One build at a time (the test harness and other shells share target/).
    mkdir -p "$ROOT/target"
    KERNEL="$(flock "$ROOT/target/build.lock" "$ROOT/boot/build.sh" | tail -n 1)"
fi
if [ "$BUILD_ONLY" = 1 ]; then
    echo "$KERNEL"
    exit 0
fi

QEMU="${QEMU:-qemu-system-x86_64}"

ARGS=(-kernel "$KERNEL" -smp "$SMP" -m "$MEM" -display none -no-reboot -monitor none
      -chardev stdio,id=console,signal=off -serial chardev:console
      -device isa-debug-exit,iobase=0xf4,iosize=0x04)
[ -n "$CMDLINE" ] && ARGS+=(-append "$CMDLINE")
[ "$ICOUNT" = 1 ] && ARGS+=(-icount shift=0,sleep=off)
[ "$GDB" = 1 ] && ARGS+=(-s -S) && echo "qemu.sh: waiting for gdb on :1234 (gdb $KERNEL -ex 'target remote :1234')" >&2

set +e
"$QEMU" "${ARGS[@]}" "${EXTRA[@]}"
STATUS=$?
set -e
# isa-debug-exit turns the kernel's code N into QEMU status 2N+1.
if [ $((STATUS % 2)) = 1 ]; then
    exit $(((STATUS - 1) / 2))
fi
echo "qemu.sh: QEMU stopped with status $STATUS without the kernel's exit (triple fault or reset?)" >&2
exit 99
