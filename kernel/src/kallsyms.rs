//! Names for kernel addresses (Linux: kernel/kallsyms.c). The build links a
//! `.kallsyms` section (see build-tools' kallsyms) between `__kallsyms_start`
//! and `__kallsyms_end`; `tracer::kallsyms` parses it. Panic backtraces
//! (`arch::traps`) and the tracer's output both name addresses through here.
use alloc::format;
use alloc::string::String;

use spin::Once;
use tracer::kallsyms::KallSyms;

extern "C" {
    static __kallsyms_start: u8;
    static __kallsyms_end: u8;
}

static TABLE: Once<Option<KallSyms<'static>>> = Once::new();

/// The kernel's symbol table (None if the image has none).
pub fn table() -> Option<&'static KallSyms<'static>> {
    TABLE
        .call_once(|| {
            // SAFETY: the linker places the blob between these two symbols, in
            // read-only memory that lives forever.
            let bytes = unsafe {
                let start = &raw const __kallsyms_start;
                let end = &raw const __kallsyms_end;
                core::slice::from_raw_parts(start, end as usize - start as usize)
            };
            KallSyms::parse(bytes).ok()
        })
        .as_ref()
}

/// `name+0xoff/0xsize` for an address, as Linux's %pS prints it.
pub fn describe(addr: u64) -> String {
    match table().and_then(|t| t.lookup(addr)) {
        Some(s) => format!("{}+{:#x}/{:#x}", s.name, s.offset, s.size),
        None => format!("{addr:#x}"),
    }
}

/// The same for a return address in a backtrace (Linux's %pB): the symbol
/// of `addr - 1`, since a call to a function that never returns (a panic)
/// can be the last instruction of its caller, whose return address then
/// lies just past the caller's end.
pub fn describe_return(addr: u64) -> String {
    match table().and_then(|t| t.lookup(addr.wrapping_sub(1))) {
        Some(s) => format!("{}+{:#x}/{:#x}", s.name, s.offset + 1, s.size),
        None => format!("{addr:#x}"),
    }
}
