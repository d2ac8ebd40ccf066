//! The `shell` system: this kernel's own events for its serial shell
//! (kernel/src/shell), where Linux has none (its shells are user
//! programs). The pair brackets one command line, named like Linux's
//! entry/exit pairs (`irq_handler_entry`/`irq_handler_exit`), so that
//! everything a command caused lies between its two lines in `trace`.
//!
//! The format files (ours, in Linux's layout, tabs shown as spaces; the
//! common fields as in every event):
//!
//! ```text
//! name: shell_command_entry
//! ID: 370
//! format:
//!     (common fields)
//!
//!     field:__data_loc char[] line;    offset:8;    size:4;    signed:1;
//!
//! print fmt: "line=%s", __get_str(line)
//!
//! name: shell_command_exit
//! ID: 371
//! format:
//!     (common fields)
//!
//!     field:int ret;    offset:8;    size:4;    signed:1;
//!
//! print fmt: "ret=%d", REC->ret
//! ```
//!
//! The line's bytes follow the fixed 12 bytes of `shell_command_entry`
//! (`__data_loc`: length with its NUL in the high 16 bits, offset from the
//! record start in the low).

/// The declarations of the `shell` system, handed to `$stage`.
#[macro_export]
macro_rules! shell_events {
    ($stage:ident) => {
        $crate::__event_classes! {
            $stage;
            system: shell;

            /// The shell starts running a command line (as typed).
            event shell_command_entry, id 370,
            (line: &str) {
                struct {
                    line: u32 = "__data_loc char[]",
                }
                assign {}
                strings {
                    line: line,
                }
                print_fmt: "\"line=%s\", __get_str(line)";
                print(e, out, syms) {
                    let _ = write!(out, "line={}", e.get_str(e.line));
                }
            }

            /// The shell finished the command line: `ret` is 0, or the
            /// negative errno of the error that ended it (the one the shell
            /// printed, e.g. `-22` after `sh: write error: Invalid
            /// argument`).
            event shell_command_exit, id 371,
            (ret: i32) {
                struct {
                    ret: i32 = "int",
                }
                assign {
                    ret: ret,
                }
                print_fmt: "\"ret=%d\", REC->ret";
                print(e, out, syms) {
                    let _ = write!(out, "ret={}", e.ret);
                }
            }
        }
    };
}

use crate::define_event_records;
shell_events!(define_event_records);
