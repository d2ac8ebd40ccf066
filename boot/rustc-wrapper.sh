#!/bin/sh
# RUSTC_WRAPPER used by boot/build.sh: cargo calls it as `rustc-wrapper.sh
# rustc ARGS...`. Only the `kernel` crate gets the instrumentation flags in
# $KTRACE_INSTRUMENT_FLAGS (Linux adds CC_FLAGS_FTRACE per directory the same
# way); dependencies such as `tracer` and `spin` stay uninstrumented.
rustc="$1"
shift
case " $* " in
*" --crate-name kernel "*) exec "$rustc" "$@" $KTRACE_INSTRUMENT_FLAGS ;;
*) exec "$rustc" "$@" ;;
esac
