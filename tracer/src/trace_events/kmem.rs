//! The `kmem` system (Linux: include/trace/events/kmem.h): the kernel heap's
//! allocations and frees.
//!
//! `kmalloc`'s `ptr=%p`: Linux hashes `%p` in `trace` output unless the
//! `hash-ptr` option is off (and prints `(____ptrval____)` until the hash
//! key is ready); we print what Linux prints with `hash-ptr` off, the raw
//! pointer as 16 hex digits (`%px`).

use core::fmt::Write;

use crate::output::config::SymbolResolver;
use crate::output::format::write_sym;
use crate::output::seq::TraceSeq;

// The GFP bits of Linux 6.1 (include/linux/gfp_types.h).
pub const __GFP_DMA: u32 = 0x01;
pub const __GFP_HIGHMEM: u32 = 0x02;
pub const __GFP_DMA32: u32 = 0x04;
pub const __GFP_MOVABLE: u32 = 0x08;
pub const __GFP_RECLAIMABLE: u32 = 0x10;
pub const __GFP_HIGH: u32 = 0x20;
pub const __GFP_IO: u32 = 0x40;
pub const __GFP_FS: u32 = 0x80;
pub const __GFP_ZERO: u32 = 0x100;
pub const __GFP_ATOMIC: u32 = 0x200;
pub const __GFP_DIRECT_RECLAIM: u32 = 0x400;
pub const __GFP_KSWAPD_RECLAIM: u32 = 0x800;
pub const __GFP_WRITE: u32 = 0x1000;
pub const __GFP_NOWARN: u32 = 0x2000;
pub const __GFP_RETRY_MAYFAIL: u32 = 0x4000;
pub const __GFP_NOFAIL: u32 = 0x8000;
pub const __GFP_NORETRY: u32 = 0x10000;
pub const __GFP_MEMALLOC: u32 = 0x20000;
pub const __GFP_COMP: u32 = 0x40000;
pub const __GFP_NOMEMALLOC: u32 = 0x80000;
pub const __GFP_HARDWALL: u32 = 0x100000;
pub const __GFP_THISNODE: u32 = 0x200000;
pub const __GFP_ACCOUNT: u32 = 0x400000;
pub const __GFP_ZEROTAGS: u32 = 0x800000;
pub const __GFP_RECLAIM: u32 = __GFP_DIRECT_RECLAIM | __GFP_KSWAPD_RECLAIM;

pub const GFP_ATOMIC: u32 = __GFP_HIGH | __GFP_ATOMIC | __GFP_KSWAPD_RECLAIM;
pub const GFP_KERNEL: u32 = __GFP_RECLAIM | __GFP_IO | __GFP_FS;
pub const GFP_KERNEL_ACCOUNT: u32 = GFP_KERNEL | __GFP_ACCOUNT;
pub const GFP_NOWAIT: u32 = __GFP_KSWAPD_RECLAIM;
pub const GFP_NOIO: u32 = __GFP_RECLAIM;
pub const GFP_NOFS: u32 = __GFP_RECLAIM | __GFP_IO;
pub const GFP_USER: u32 = __GFP_RECLAIM | __GFP_IO | __GFP_FS | __GFP_HARDWALL;
pub const GFP_DMA: u32 = __GFP_DMA;
pub const GFP_DMA32: u32 = __GFP_DMA32;
pub const GFP_HIGHUSER: u32 = GFP_USER | __GFP_HIGHMEM;
pub const GFP_HIGHUSER_MOVABLE: u32 = GFP_HIGHUSER | __GFP_MOVABLE;
pub const GFP_TRANSHUGE_LIGHT: u32 =
    (GFP_HIGHUSER_MOVABLE | __GFP_COMP | __GFP_NOMEMALLOC | __GFP_NOWARN) & !__GFP_RECLAIM;
pub const GFP_TRANSHUGE: u32 = GFP_TRANSHUGE_LIGHT | __GFP_DIRECT_RECLAIM;

/// `show_gfp_flags()`'s table (include/trace/events/mmflags.h), in its
/// order: composite names first, so `GFP_KERNEL` wins over its bits.
pub const GFP_NAMES: [(u64, &str); 37] = [
    (GFP_TRANSHUGE as u64, "GFP_TRANSHUGE"),
    (GFP_TRANSHUGE_LIGHT as u64, "GFP_TRANSHUGE_LIGHT"),
    (GFP_HIGHUSER_MOVABLE as u64, "GFP_HIGHUSER_MOVABLE"),
    (GFP_HIGHUSER as u64, "GFP_HIGHUSER"),
    (GFP_USER as u64, "GFP_USER"),
    (GFP_KERNEL_ACCOUNT as u64, "GFP_KERNEL_ACCOUNT"),
    (GFP_KERNEL as u64, "GFP_KERNEL"),
    (GFP_NOFS as u64, "GFP_NOFS"),
    (GFP_ATOMIC as u64, "GFP_ATOMIC"),
    (GFP_NOIO as u64, "GFP_NOIO"),
    (GFP_NOWAIT as u64, "GFP_NOWAIT"),
    (GFP_DMA as u64, "GFP_DMA"),
    (__GFP_HIGHMEM as u64, "__GFP_HIGHMEM"),
    (GFP_DMA32 as u64, "GFP_DMA32"),
    (__GFP_HIGH as u64, "__GFP_HIGH"),
    (__GFP_ATOMIC as u64, "__GFP_ATOMIC"),
    (__GFP_IO as u64, "__GFP_IO"),
    (__GFP_FS as u64, "__GFP_FS"),
    (__GFP_NOWARN as u64, "__GFP_NOWARN"),
    (__GFP_RETRY_MAYFAIL as u64, "__GFP_RETRY_MAYFAIL"),
    (__GFP_NOFAIL as u64, "__GFP_NOFAIL"),
    (__GFP_NORETRY as u64, "__GFP_NORETRY"),
    (__GFP_COMP as u64, "__GFP_COMP"),
    (__GFP_ZERO as u64, "__GFP_ZERO"),
    (__GFP_NOMEMALLOC as u64, "__GFP_NOMEMALLOC"),
    (__GFP_MEMALLOC as u64, "__GFP_MEMALLOC"),
    (__GFP_HARDWALL as u64, "__GFP_HARDWALL"),
    (__GFP_THISNODE as u64, "__GFP_THISNODE"),
    (__GFP_RECLAIMABLE as u64, "__GFP_RECLAIMABLE"),
    (__GFP_MOVABLE as u64, "__GFP_MOVABLE"),
    (__GFP_ACCOUNT as u64, "__GFP_ACCOUNT"),
    (__GFP_WRITE as u64, "__GFP_WRITE"),
    (__GFP_RECLAIM as u64, "__GFP_RECLAIM"),
    (__GFP_DIRECT_RECLAIM as u64, "__GFP_DIRECT_RECLAIM"),
    (__GFP_KSWAPD_RECLAIM as u64, "__GFP_KSWAPD_RECLAIM"),
    (__GFP_ZEROTAGS as u64, "__GFP_ZEROTAGS"),
    (0, ""),
];

/// `show_gfp_flags(flags)`: the names joined by `|`, or `none` for 0.
pub fn write_gfp_flags(out: &mut TraceSeq, flags: u64) {
    if flags == 0 {
        out.push_str("none");
    } else {
        crate::trace_events::print_flags(out, flags, "|", &GFP_NAMES);
    }
}

/// `call_site=%pS ptr=%p`, the start of both events' text: the call site
/// as `symbol+0xoff/0xsize` (`0x<hex>` when unknown), the pointer raw.
pub fn write_call_site_ptr(
    out: &mut TraceSeq,
    syms: &dyn SymbolResolver,
    call_site: u64,
    ptr: u64,
) {
    out.push_str("call_site=");
    write_sym(out, syms, call_site, true);
    let _ = write!(out, " ptr={:016x}", ptr);
}

/// The declarations of the `kmem` system, handed to `$stage`.
#[macro_export]
macro_rules! kmem_events {
    ($stage:ident) => {
        $crate::__event_classes! {
            $stage;
            system: kmem;

            /// The heap handed out `bytes_alloc` bytes at `ptr` for a
            /// request of `bytes_req` (Linux: `__kmalloc`, `kmalloc_trace`).
            /// `call_site` is the caller's return address (`_RET_IP_`),
            /// `node` the NUMA node asked for (-1: any).
            event kmalloc, id 340,
            (call_site: u64, ptr: u64, bytes_req: u64, bytes_alloc: u64, gfp_flags: u32, node: i32) {
                struct {
                    call_site: u64 = "unsigned long",
                    ptr: u64 = "const void *",
                    bytes_req: u64 = "size_t",
                    bytes_alloc: u64 = "size_t",
                    gfp_flags: u64 = "unsigned long",
                    node: i32 = "int",
                }
                assign {
                    call_site: call_site,
                    ptr: ptr,
                    bytes_req: bytes_req,
                    bytes_alloc: bytes_alloc,
                    gfp_flags: gfp_flags as u64,
                    node: node,
                }
                print_fmt: "\"call_site=%pS ptr=%p bytes_req=%zu bytes_alloc=%zu gfp_flags=%s node=%d accounted=%s\", (void *)REC->call_site, REC->ptr, REC->bytes_req, REC->bytes_alloc, (REC->gfp_flags) ? __print_flags(REC->gfp_flags, \"|\", {( unsigned long)(((((((( gfp_t)(0x400u|0x800u)) | (( gfp_t)0x40u) | (( gfp_t)0x80u) | (( gfp_t)0x100000u)) | (( gfp_t)0x02u)) | (( gfp_t)0x08u) | (( gfp_t)0) | (( gfp_t)0)) | (( gfp_t)0x40000u) | (( gfp_t)0x80000u) | (( gfp_t)0x2000u)) & ~(( gfp_t)(0x400u|0x800u))) | (( gfp_t)0x400u)), \"GFP_TRANSHUGE\"}, {( unsigned long)((((((( gfp_t)(0x400u|0x800u)) | (( gfp_t)0x40u) | (( gfp_t)0x80u) | (( gfp_t)0x100000u)) | (( gfp_t)0x02u)) | (( gfp_t)0x08u) | (( gfp_t)0) | (( gfp_t)0)) | (( gfp_t)0x40000u) | (( gfp_t)0x80000u) | (( gfp_t)0x2000u)) & ~(( gfp_t)(0x400u|0x800u))), \"GFP_TRANSHUGE_LIGHT\"}, {( unsigned long)((((( gfp_t)(0x400u|0x800u)) | (( gfp_t)0x40u) | (( gfp_t)0x80u) | (( gfp_t)0x100000u)) | (( gfp_t)0x02u)) | (( gfp_t)0x08u) | (( gfp_t)0) | (( gfp_t)0)), \"GFP_HIGHUSER_MOVABLE\"}, {( unsigned long)(((( gfp_t)(0x400u|0x800u)) | (( gfp_t)0x40u) | (( gfp_t)0x80u) | (( gfp_t)0x100000u)) | (( gfp_t)0x02u)), \"GFP_HIGHUSER\"}, {( unsigned long)((( gfp_t)(0x400u|0x800u)) | (( gfp_t)0x40u) | (( gfp_t)0x80u) | (( gfp_t)0x100000u)), \"GFP_USER\"}, {( unsigned long)(((( gfp_t)(0x400u|0x800u)) | (( gfp_t)0x40u) | (( gfp_t)0x80u)) | (( gfp_t)0x400000u)), \"GFP_KERNEL_ACCOUNT\"}, {( unsigned long)((( gfp_t)(0x400u|0x800u)) | (( gfp_t)0x40u) | (( gfp_t)0x80u)), \"GFP_KERNEL\"}, {( unsigned long)((( gfp_t)(0x400u|0x800u)) | (( gfp_t)0x40u)), \"GFP_NOFS\"}, {( unsigned long)((( gfp_t)0x20u)|(( gfp_t)0x200u)|(( gfp_t)0x800u)), \"GFP_ATOMIC\"}, {( unsigned long)((( gfp_t)(0x400u|0x800u))), \"GFP_NOIO\"}, {( unsigned long)((( gfp_t)0x800u)), \"GFP_NOWAIT\"}, {( unsigned long)(( gfp_t)0x01u), \"GFP_DMA\"}, {( unsigned long)(( gfp_t)0x02u), \"__GFP_HIGHMEM\"}, {( unsigned long)(( gfp_t)0x04u), \"GFP_DMA32\"}, {( unsigned long)(( gfp_t)0x20u), \"__GFP_HIGH\"}, {( unsigned long)(( gfp_t)0x200u), \"__GFP_ATOMIC\"}, {( unsigned long)(( gfp_t)0x40u), \"__GFP_IO\"}, {( unsigned long)(( gfp_t)0x80u), \"__GFP_FS\"}, {( unsigned long)(( gfp_t)0x2000u), \"__GFP_NOWARN\"}, {( unsigned long)(( gfp_t)0x4000u), \"__GFP_RETRY_MAYFAIL\"}, {( unsigned long)(( gfp_t)0x8000u), \"__GFP_NOFAIL\"}, {( unsigned long)(( gfp_t)0x10000u), \"__GFP_NORETRY\"}, {( unsigned long)(( gfp_t)0x40000u), \"__GFP_COMP\"}, {( unsigned long)(( gfp_t)0x100u), \"__GFP_ZERO\"}, {( unsigned long)(( gfp_t)0x80000u), \"__GFP_NOMEMALLOC\"}, {( unsigned long)(( gfp_t)0x20000u), \"__GFP_MEMALLOC\"}, {( unsigned long)(( gfp_t)0x100000u), \"__GFP_HARDWALL\"}, {( unsigned long)(( gfp_t)0x200000u), \"__GFP_THISNODE\"}, {( unsigned long)(( gfp_t)0x10u), \"__GFP_RECLAIMABLE\"}, {( unsigned long)(( gfp_t)0x08u), \"__GFP_MOVABLE\"}, {( unsigned long)(( gfp_t)0x400000u), \"__GFP_ACCOUNT\"}, {( unsigned long)(( gfp_t)0x1000u), \"__GFP_WRITE\"}, {( unsigned long)(( gfp_t)(0x400u|0x800u)), \"__GFP_RECLAIM\"}, {( unsigned long)(( gfp_t)0x400u), \"__GFP_DIRECT_RECLAIM\"}, {( unsigned long)(( gfp_t)0x800u), \"__GFP_KSWAPD_RECLAIM\"}, {( unsigned long)(( gfp_t)0x800000u), \"__GFP_ZEROTAGS\"} ) : \"none\", REC->node, (1 && (REC->gfp_flags & ( unsigned long)(( gfp_t)0x400000u))) ? \"true\" : \"false\"";
                print(e, out, syms) {
                    $crate::trace_events::kmem::write_call_site_ptr(out, syms, e.call_site, e.ptr);
                    let _ = write!(out, " bytes_req={} bytes_alloc={} gfp_flags=", e.bytes_req, e.bytes_alloc);
                    $crate::trace_events::kmem::write_gfp_flags(out, e.gfp_flags);
                    let accounted = e.gfp_flags & $crate::trace_events::kmem::__GFP_ACCOUNT as u64 != 0;
                    let _ = write!(out, " node={} accounted={}", e.node, accounted);
                }
            }

            /// The heap took back `ptr` (Linux: `kfree`; a free of NULL is
            /// recorded too).
            event kfree, id 341,
            (call_site: u64, ptr: u64) {
                struct {
                    call_site: u64 = "unsigned long",
                    ptr: u64 = "const void *",
                }
                assign {
                    call_site: call_site,
                    ptr: ptr,
                }
                print_fmt: "\"call_site=%pS ptr=%p\", (void *)REC->call_site, REC->ptr";
                print(e, out, syms) {
                    $crate::trace_events::kmem::write_call_site_ptr(out, syms, e.call_site, e.ptr);
                }
            }
        }
    };
}

use crate::define_event_records;
kmem_events!(define_event_records);
