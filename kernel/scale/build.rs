//! Writes `$OUT_DIR/scale.rs`: `KTRACE_SCALE` (a count, set by
//! `boot/build.sh` for `qemu.sh --scale N`) small functions, each with its
//! own constants so that no two have the same body (LLVM's MergeFunctions
//! would fold identical ones into one symbol, and one call site), and the
//! table the workload calls them through. Nothing is generated into the
//! source tree.
//!
//! Function `I` is named `ktrace_scale::...::scale_fn_I`: a path of words
//! from the kernel's own function names, cut so that every name has
//! [`NAME_LEN`] characters, about the mean length of the default kernel's
//! names (Rust paths, 124 characters on average in its
//! available_filter_functions). The per-site costs that read every name
//! (available_filter_functions, glob filters) then compare the same work
//! per name at both sizes: with short names they would look cheaper per
//! site at 35,000 sites whatever else grew, and a glob's substring search
//! costs what it costs on the kernel's names (`::` separators included).
use std::fmt::Write as _;
use std::path::PathBuf;

/// The length of every generated name.
const NAME_LEN: usize = 120;
/// The start of every name: words of the kernel's own names (none of them
/// matches a kernel/notrace.list pattern).
const PATH: &str = "ktrace_scale::shell::latency::latency_spin_irqsoff::alloc::string::String_as_core::fmt::Write::write_char::fs::tracefs::SeqFile::read_to_end::sched::wake_up_process";

/// How every name ends: `::scale_fn_I`.
fn tail_of(i: usize) -> String {
    format!("::scale_fn_{i}")
}

fn main() {
    println!("cargo:rerun-if-env-changed=KTRACE_SCALE");
    println!("cargo:rerun-if-changed=build.rs");
    let n: usize = match std::env::var("KTRACE_SCALE") {
        Ok(s) => s
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("KTRACE_SCALE must be a count, not '{s}'")),
        Err(_) => 0,
    };
    let mut src = String::with_capacity(n * 160 + 256);
    writeln!(src, "/// How many functions this build generated.").unwrap();
    writeln!(src, "pub const COUNT: usize = {n};").unwrap();
    let name = |i: usize| {
        let tail = tail_of(i);
        let keep = NAME_LEN.saturating_sub(tail.len()).min(PATH.len());
        // Never `:::` where the cut meets the tail.
        format!("{}{tail}", PATH[..keep].trim_end_matches(':'))
    };
    for i in 0..n {
        // `export_name`: the symbol is the name available_filter_functions
        // shows (kallsyms keeps a name that is not a mangled one as it is).
        writeln!(
            src,
            "#[export_name = \"{name}\"]\n#[inline(never)]\npub extern \"C\" fn scale_fn_{i}(x: u64) -> u64 {{ (x ^ {i}).wrapping_mul({m}) }}",
            m = 2 * i as u64 + 1,
            name = name(i)
        )
        .unwrap();
    }
    writeln!(src, "/// Every generated function, in order.").unwrap();
    write!(
        src,
        "pub static FUNCS: [extern \"C\" fn(u64) -> u64; {n}] = ["
    )
    .unwrap();
    for i in 0..n {
        write!(src, "scale_fn_{i},").unwrap();
    }
    writeln!(src, "];").unwrap();
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(out.join("scale.rs"), src).expect("cannot write scale.rs");
}
