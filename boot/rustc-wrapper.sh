#!/bin/sh
# RUSTC_WRAPPER used by boot/build.sh: cargo calls it as `rustc-wrapper.sh
# rustc ARGS...`. Only the `kernel` crate gets the instrumentation flags in
# $KTRACE_INSTRUMENT_FLAGS (Linux adds CC_FLAGS_FTRACE per directory the same
# way); dependencies such as `tracer` and `spin` stay uninstrumented. The
# generated functions of a `--scale` build (`ktrace_scale`) are instrumented
# too: they are there to be call sites.
rustc="$1"
shift
case " $* " in
*" --crate-name kernel "*|*" --crate-name ktrace_scale "*) exec "$rustc" "$@" $KTRACE_INSTRUMENT_FLAGS ;;
*) exec "$rustc" "$@" ;;
esac
