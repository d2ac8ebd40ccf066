//! The `vfs` system: this kernel's own event for its VFS layer
//! (kernel/src/fs/vfs.rs), where Linux has none.
//!
//! Why `vfs`: Linux names a system after the subsystem that fires its
//! events and prefixes the event names with it (`filemap:filemap_*` from
//! mm/filemap.c, `filelock:*` from fs/locks.c, `writeback:writeback_*`);
//! its systems under fs/ belong to one file system each (`ext4`, `btrfs`),
//! and the generic layer has none (its opens are seen only as system calls,
//! `syscalls:sys_enter_openat`). Ours is the VFS that sits above ramfs and
//! tracefs, so its system is `vfs` and its open is `vfs_open`, after the
//! function in Linux's fs/open.c that an open reaches.
//!
//! `vfs_open`'s format file (ours, in Linux's layout; its tabs shown as
//! spaces):
//!
//! ```text
//! name: vfs_open
//! ID: 360
//! format:
//!     field:unsigned short common_type;    offset:0;    size:2;    signed:0;
//!     field:unsigned char common_flags;    offset:2;    size:1;    signed:0;
//!     field:unsigned char common_preempt_count;    offset:3;    size:1;    signed:0;
//!     field:int common_pid;    offset:4;    size:4;    signed:1;
//!
//!     field:__data_loc char[] filename;    offset:8;    size:4;    signed:1;
//!     field:unsigned int flags;    offset:12;    size:4;    signed:0;
//!     field:int ret;    offset:16;    size:4;    signed:1;
//!
//! print fmt: "filename=%s flags=0x%x ret=%d", __get_str(filename), REC->flags, REC->ret
//! ```
//!
//! The path string follows the fixed 20 bytes (`__data_loc`: length with
//! its NUL in the high 16 bits, offset from the record start in the low).

/// The declarations of the `vfs` system, handed to `$stage`.
#[macro_export]
macro_rules! vfs_events {
    ($stage:ident) => {
        $crate::__event_classes! {
            $stage;
            system: vfs;

            /// A path was opened (`vfs::open`): the path as given, the
            /// open flags (Linux's `O_*` values) and the result, 0 or a
            /// negative errno (`-2` for ENOENT).
            event vfs_open, id 360,
            (filename: &str, flags: u32, ret: i32) {
                struct {
                    filename: u32 = "__data_loc char[]",
                    flags: u32 = "unsigned int",
                    ret: i32 = "int",
                }
                assign {
                    flags: flags,
                    ret: ret,
                }
                strings {
                    filename: filename,
                }
                print_fmt: "\"filename=%s flags=0x%x ret=%d\", __get_str(filename), REC->flags, REC->ret";
                print(e, out, syms) {
                    let _ = write!(
                        out,
                        "filename={} flags=0x{:x} ret={}",
                        e.get_str(e.filename),
                        e.flags,
                        e.ret
                    );
                }
            }
        }
    };
}

use crate::define_event_records;
vfs_events!(define_event_records);
