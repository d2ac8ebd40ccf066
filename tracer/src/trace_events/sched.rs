//! The `sched` system (Linux: include/trace/events/sched.h).

/// `TASK_REPORT_MAX`: the bit Linux sets in `prev_state` for a task that
/// was preempted while runnable (printed as a `+`).
pub const TASK_REPORT_MAX: i64 = 0x100;

/// The state letters of `sched_switch`'s `prev_state`
/// (`__print_flags(..., "|", { 0x01, "S" }, ...)`).
pub const TASK_STATE_NAMES: [(i64, &str); 8] = [
    (0x01, "S"),
    (0x02, "D"),
    (0x04, "T"),
    (0x08, "t"),
    (0x10, "X"),
    (0x20, "Z"),
    (0x40, "P"),
    (0x80, "I"),
];

/// `prev_state=%s%s` of sched_switch.
pub fn write_prev_state(out: &mut crate::output::seq::TraceSeq, state: i64) {
    let bits = state & (TASK_REPORT_MAX - 1);
    if bits == 0 {
        out.push('R');
    } else {
        crate::trace_events::print_flags(out, bits as u64, "|", &TASK_STATE_NAMES_U64);
    }
    if state & TASK_REPORT_MAX != 0 {
        out.push('+');
    }
}

const TASK_STATE_NAMES_U64: [(u64, &str); 8] = {
    let mut t = [(0u64, ""); 8];
    let mut i = 0;
    while i < 8 {
        t[i] = (TASK_STATE_NAMES[i].0 as u64, TASK_STATE_NAMES[i].1);
        i += 1;
    }
    t
};

/// The declarations of the `sched` system, handed to `$stage`.
#[macro_export]
macro_rules! sched_events {
    ($stage:ident) => {
        $crate::__event_classes! {
            $stage;
            system: sched;

            /// A task is switched out and another in (`__schedule`).
            event sched_switch, id 300,
            (preempt: bool, prev: &$crate::trace_events::TaskInfo, next: &$crate::trace_events::TaskInfo, prev_state: u32) {
                struct {
                    prev_comm: [u8; 16] = "char",
                    prev_pid: i32 = "pid_t",
                    prev_prio: i32 = "int",
                    prev_state: i64 = "long",
                    next_comm: [u8; 16] = "char",
                    next_pid: i32 = "pid_t",
                    next_prio: i32 = "int",
                }
                assign {
                    prev_comm: prev.comm,
                    prev_pid: prev.pid,
                    prev_prio: prev.prio,
                    prev_state: if preempt {
                        $crate::trace_events::sched::TASK_REPORT_MAX
                    } else {
                        prev_state as i64
                    },
                    next_comm: next.comm,
                    next_pid: next.pid,
                    next_prio: next.prio,
                }
                print_fmt: "\"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d\", REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), \"|\", { 0x00000001, \"S\" }, { 0x00000002, \"D\" }, { 0x00000004, \"T\" }, { 0x00000008, \"t\" }, { 0x00000010, \"X\" }, { 0x00000020, \"Z\" }, { 0x00000040, \"P\" }, { 0x00000080, \"I\" }) : \"R\", REC->prev_state & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? \"+\" : \"\", REC->next_comm, REC->next_pid, REC->next_prio";
                print(e, out, syms) {
                    let _ = write!(
                        out,
                        "prev_comm={} prev_pid={} prev_prio={} prev_state=",
                        $crate::trace_events::comm_str(&e.prev_comm),
                        e.prev_pid,
                        e.prev_prio
                    );
                    $crate::trace_events::sched::write_prev_state(out, e.prev_state);
                    let _ = write!(
                        out,
                        " ==> next_comm={} next_pid={} next_prio={}",
                        $crate::trace_events::comm_str(&e.next_comm),
                        e.next_pid,
                        e.next_prio
                    );
                }
            }

            // The three wakeups share one layout and text (Linux:
            // `DECLARE_EVENT_CLASS(sched_wakeup_template, ...)`).
            class sched_wakeup_template,
            (p: &$crate::trace_events::TaskInfo, target_cpu: i32) {
                struct {
                    comm: [u8; 16] = "char",
                    pid: i32 = "pid_t",
                    prio: i32 = "int",
                    target_cpu: i32 = "int",
                }
                assign {
                    comm: p.comm,
                    pid: p.pid,
                    prio: p.prio,
                    target_cpu: target_cpu,
                }
                print_fmt: "\"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, REC->target_cpu";
                print(e, out, syms) {
                    let _ = write!(
                        out,
                        "comm={} pid={} prio={} target_cpu={:03}",
                        $crate::trace_events::comm_str(&e.comm),
                        e.pid,
                        e.prio,
                        e.target_cpu
                    );
                }
            }
            events {
                /// A task was woken (`ttwu_do_wakeup`).
                event sched_wakeup, id 301;

                /// A newly created task is woken for the first time (`wake_up_new_task`).
                event sched_wakeup_new, id 302;

                /// A wakeup starts, on the waker's CPU (`try_to_wake_up`); `sched_wakeup` follows when the task is queued.
                event sched_waking, id 303;
            }

            /// A task created another (`kernel_clone`).
            event sched_process_fork, id 304,
            (parent: &$crate::trace_events::TaskInfo, child: &$crate::trace_events::TaskInfo) {
                struct {
                    parent_comm: [u8; 16] = "char",
                    parent_pid: i32 = "pid_t",
                    child_comm: [u8; 16] = "char",
                    child_pid: i32 = "pid_t",
                }
                assign {
                    parent_comm: parent.comm,
                    parent_pid: parent.pid,
                    child_comm: child.comm,
                    child_pid: child.pid,
                }
                print_fmt: "\"comm=%s pid=%d child_comm=%s child_pid=%d\", REC->parent_comm, REC->parent_pid, REC->child_comm, REC->child_pid";
                print(e, out, syms) {
                    let _ = write!(
                        out,
                        "comm={} pid={} child_comm={} child_pid={}",
                        $crate::trace_events::comm_str(&e.parent_comm),
                        e.parent_pid,
                        $crate::trace_events::comm_str(&e.child_comm),
                        e.child_pid
                    );
                }
            }

            /// A task exits (`do_exit`).
            event sched_process_exit, id 305,
            (p: &$crate::trace_events::TaskInfo) {
                // LAB 5 BEGIN: sched_process_exit (the record, its assignment, its format and its printer)
                // LAB 5 STUB: struct {}
                // LAB 5 STUB: assign {}
                // LAB 5 STUB: print_fmt: "\"lab 5: sched_process_exit is not declared yet\"";
                // LAB 5 STUB: print(e, out, syms) {
                // LAB 5 STUB:     let _ = (e, out, syms);
                // LAB 5 STUB:     unimplemented!("lab 5: sched_process_exit: declare the record and its printer");
                // LAB 5 STUB: }
                struct {
                    comm: [u8; 16] = "char",
                    pid: i32 = "pid_t",
                    prio: i32 = "int",
                }
                assign {
                    comm: p.comm,
                    pid: p.pid,
                    prio: p.prio,
                }
                print_fmt: "\"comm=%s pid=%d prio=%d\", REC->comm, REC->pid, REC->prio";
                print(e, out, syms) {
                    let _ = write!(
                        out,
                        "comm={} pid={} prio={}",
                        $crate::trace_events::comm_str(&e.comm),
                        e.pid,
                        e.prio
                    );
                }
                // LAB 5 END
            }

            /// A task moves to another CPU's run queue (`set_task_cpu`).
            /// Linux reads `orig_cpu` from the task (`task_cpu(p)`); the
            /// caller passes it here.
            event sched_migrate_task, id 306,
            (p: &$crate::trace_events::TaskInfo, orig_cpu: i32, dest_cpu: i32) {
                struct {
                    comm: [u8; 16] = "char",
                    pid: i32 = "pid_t",
                    prio: i32 = "int",
                    orig_cpu: i32 = "int",
                    dest_cpu: i32 = "int",
                }
                assign {
                    comm: p.comm,
                    pid: p.pid,
                    prio: p.prio,
                    orig_cpu: orig_cpu,
                    dest_cpu: dest_cpu,
                }
                print_fmt: "\"comm=%s pid=%d prio=%d orig_cpu=%d dest_cpu=%d\", REC->comm, REC->pid, REC->prio, REC->orig_cpu, REC->dest_cpu";
                print(e, out, syms) {
                    let _ = write!(
                        out,
                        "comm={} pid={} prio={} orig_cpu={} dest_cpu={}",
                        $crate::trace_events::comm_str(&e.comm),
                        e.pid,
                        e.prio,
                        e.orig_cpu,
                        e.dest_cpu
                    );
                }
            }
        }
    };
}

use crate::define_event_records;
sched_events!(define_event_records);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace_events::{comm_bytes, comm_str, TaskInfo};
    use alloc::vec;

    #[test]
    fn prev_state_text() {
        let mut s = crate::output::seq::TraceSeq::new();
        write_prev_state(&mut s, 0);
        write_prev_state(&mut s, 1);
        write_prev_state(&mut s, 0x100);
        write_prev_state(&mut s, 0x3);
        assert_eq!(s.as_str().unwrap(), "RSR+S|D");
        let _ = comm_str(&comm_bytes("sh"));
    }

    #[test]
    fn the_wakeup_class_gives_each_event_its_layout() {
        let names: alloc::vec::Vec<_> = [
            &sched_wakeup::CALL,
            &sched_wakeup_new::CALL,
            &sched_waking::CALL,
        ]
        .iter()
        .map(|c| (c.name, c.id))
        .collect();
        assert_eq!(
            names,
            [
                ("sched_wakeup", 301),
                ("sched_wakeup_new", 302),
                ("sched_waking", 303)
            ]
        );
        for call in [&sched_wakeup_new::CALL, &sched_waking::CALL] {
            assert_eq!(call.fields, sched_wakeup::CALL.fields);
            assert_eq!(call.size, sched_wakeup::CALL.size);
            assert_eq!(call.print_fmt, sched_wakeup::CALL.print_fmt);
        }
    }

    #[test]
    fn write_then_print_is_linuxs_text() {
        let prev = TaskInfo {
            comm: comm_bytes("sh"),
            pid: 1,
            prio: 120,
        };
        let next = TaskInfo {
            comm: comm_bytes("swapper/1"),
            pid: 0,
            prio: 120,
        };
        let mut buf = vec![0u8; sched_switch::size(false, &prev, &next, 1)];
        sched_switch::write(&mut buf, 300 | (1 << 32), false, &prev, &next, 1);
        assert_eq!(u16::from_le_bytes([buf[0], buf[1]]), 300);
        let mut out = crate::output::seq::TraceSeq::new();
        struct NoSyms;
        impl crate::output::config::SymbolResolver for NoSyms {
            fn lookup(&self, _: u64) -> Option<(&str, u64, u64)> {
                None
            }
        }
        (sched_switch::CALL.print)(&buf, &mut out, &NoSyms);
        assert_eq!(
            out.as_str().unwrap(),
            "prev_comm=sh prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120"
        );
    }
}
