//! Which events `ktrace record -e PATTERN` enables, as `trace-cmd record -e`
//! chooses them (trace-cmd: tracecmd/trace-record.c `expand_event`, and its
//! documentation of `-e`): `SYSTEM:EVENT` names one event; a word without
//! `:` names a whole system or an event of that name in any system; both
//! sides may be globs (`sched:sched_wak*`, `*irq*`); `all` is every event.
//! The kernel's `available_events` lists the candidates; each chosen event
//! is then enabled through its `events/SYSTEM/EVENT/enable` file, as
//! trace-cmd writes the enable files itself.

use tracer::filter::glob_match;

/// The `(system, event)` pairs of `available` (the text of
/// `available_events`, `system:event` per line) that `patterns` select, in
/// `available`'s order, each once. A pattern that selects nothing is an
/// error, with trace-cmd's message.
pub fn select_events(
    patterns: &[String],
    available: &str,
) -> Result<Vec<(String, String)>, String> {
    let events: Vec<(&str, &str)> = available
        .lines()
        .filter_map(|l| l.trim().split_once(':'))
        .collect();
    let mut chosen = vec![false; events.len()];
    for p in patterns {
        let matches = |sys: &str, name: &str| -> bool {
            if p == "all" {
                return true;
            }
            let glob = |pat: &str, s: &str| glob_match(pat.as_bytes(), s.as_bytes());
            match p.split_once(':') {
                Some((s, e)) => glob(s, sys) && glob(e, name),
                None => glob(p, sys) || glob(p, name),
            }
        };
        let mut any = false;
        for (i, (sys, name)) in events.iter().enumerate() {
            if matches(sys, name) {
                chosen[i] = true;
                any = true;
            }
        }
        if !any {
            return Err(format!("No events enabled with {p}"));
        }
    }
    Ok(events
        .iter()
        .zip(chosen)
        .filter(|(_, c)| *c)
        .map(|((s, e), _)| (s.to_string(), e.to_string()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const AVAILABLE: &str = "sched:sched_switch\nsched:sched_wakeup\nsched:sched_wakeup_new\n\
        irq:irq_handler_entry\nirq:irq_handler_exit\nkmem:kmalloc\nkmem:kfree\n";

    fn sel(p: &[&str]) -> Result<Vec<String>, String> {
        let p: Vec<String> = p.iter().map(|s| s.to_string()).collect();
        select_events(&p, AVAILABLE)
            .map(|v| v.into_iter().map(|(s, e)| format!("{s}:{e}")).collect())
    }

    #[test]
    fn systems_events_and_globs() {
        assert_eq!(
            sel(&["sched:sched_switch"]).unwrap(),
            ["sched:sched_switch"]
        );
        assert_eq!(
            sel(&["sched"]).unwrap(),
            [
                "sched:sched_switch",
                "sched:sched_wakeup",
                "sched:sched_wakeup_new"
            ]
        );
        // A bare event name, in any system.
        assert_eq!(sel(&["kfree"]).unwrap(), ["kmem:kfree"]);
        assert_eq!(
            sel(&["sched:sched_wak*", "*handler_exit"]).unwrap(),
            [
                "sched:sched_wakeup",
                "sched:sched_wakeup_new",
                "irq:irq_handler_exit"
            ]
        );
        assert_eq!(sel(&["irq:"]).unwrap_err(), "No events enabled with irq:");
        assert_eq!(sel(&["*:kmalloc"]).unwrap(), ["kmem:kmalloc"]);
        assert_eq!(sel(&["all"]).unwrap().len(), 7);
        // Several patterns: the union, in available_events' order, once.
        assert_eq!(
            sel(&["kmem", "sched:sched_switch", "kmalloc"]).unwrap(),
            ["sched:sched_switch", "kmem:kmalloc", "kmem:kfree"]
        );
    }

    #[test]
    fn a_pattern_that_selects_nothing_is_an_error() {
        assert_eq!(
            sel(&["sched", "nosuch"]).unwrap_err(),
            "No events enabled with nosuch"
        );
        assert_eq!(
            sel(&["sched_switch:sched"]).unwrap_err(),
            "No events enabled with sched_switch:sched"
        );
        assert!(select_events(&["sched".to_string()], "").is_err());
    }
}
