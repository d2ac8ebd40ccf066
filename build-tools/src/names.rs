//! Function names as the tracer shows them.
//!
//! Rust symbols are mangled (`_RNvNtCs..._6kernel2fs4read` or the legacy
//! `_ZN6kernel2fs4read17h0123456789abcdefE`). We demangle them with
//! `rustc-demangle` in its alternate form, which leaves out the hash and crate
//! disambiguators, and replace each space with `_` so that a name is one token in
//! `available_filter_functions` and in the trace output:
//! `<kernel::fs::X as core::fmt::Display>::fmt` becomes
//! `<kernel::fs::X_as_core::fmt::Display>::fmt`. Names that are not Rust symbols
//! (`#[no_mangle]` functions, assembly labels) are kept as they are.

/// The one-token display name of the raw (mangled) symbol name `raw`.
pub fn display_name(raw: &str) -> String {
    let name = match rustc_demangle::try_demangle(raw) {
        Ok(d) => format!("{d:#}"),
        Err(_) => raw.to_string(),
    };
    name.replace(' ', "_")
}

#[cfg(test)]
mod tests {
    use super::display_name;

    #[test]
    fn legacy_hash_is_dropped() {
        assert_eq!(
            display_name("_ZN6kernel2fs4read17h0123456789abcdefE"),
            "kernel::fs::read"
        );
    }

    #[test]
    fn plain_names_are_kept() {
        assert_eq!(display_name("entry_syscall"), "entry_syscall");
    }
}
