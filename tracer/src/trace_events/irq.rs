//! The `irq` system (Linux: include/trace/events/irq.h): a device
//! interrupt's handler starting and ending.

/// The declarations of the `irq` system, handed to `$stage`.
#[macro_export]
macro_rules! irq_events {
    ($stage:ident) => {
        $crate::__event_classes! {
            $stage;
            system: irq;

            /// An interrupt handler is about to run (`__handle_irq_event_percpu`).
            /// `name` is the handler's name (Linux: `action->name`).
            event irq_handler_entry, id 320,
            (irq: i32, name: &str) {
                struct {
                    irq: i32 = "int",
                    name: u32 = "__data_loc char[]",
                }
                assign {
                    irq: irq,
                }
                strings {
                    name: name,
                }
                print_fmt: "\"irq=%d name=%s\", REC->irq, __get_str(name)";
                print(e, out, syms) {
                    let _ = write!(out, "irq={} name={}", e.irq, e.get_str(e.name));
                }
            }

            /// An interrupt handler returned `ret` (Linux's `irqreturn_t`:
            /// 0 `IRQ_NONE`, 1 `IRQ_HANDLED`, 2 `IRQ_WAKE_THREAD`).
            event irq_handler_exit, id 321,
            (irq: i32, ret: i32) {
                struct {
                    irq: i32 = "int",
                    ret: i32 = "int",
                }
                assign {
                    irq: irq,
                    ret: ret,
                }
                print_fmt: "\"irq=%d ret=%s\", REC->irq, REC->ret ? \"handled\" : \"unhandled\"";
                print(e, out, syms) {
                    let _ = write!(
                        out,
                        "irq={} ret={}",
                        e.irq,
                        if e.ret != 0 { "handled" } else { "unhandled" }
                    );
                }
            }
        }
    };
}

use crate::define_event_records;
irq_events!(define_event_records);
