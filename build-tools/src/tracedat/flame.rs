//! Flame graphs of a trace: the calls folded into stacks
//! (`task;outer;...;inner WEIGHT`, Brendan Gregg's folded format, which
//! his FlameGraph scripts, `inferno` and speedscope read), and the SVG
//! drawn from them by `inferno` (the Rust port of flamegraph.pl).
//!
//! From a function_graph trace ([`fold_calls`]) each call adds its self
//! time in ns (its duration minus its children's) to its stack, or 1 with
//! [`Weight::Calls`]; the first frame is the task (`comm-pid`), and an
//! interrupt is an `[irq]` frame above the call it came in on, where the
//! graph text prints `==========>`, so its time is not the interrupted
//! function's. A call whose return is not in the trace has no known
//! duration: its stack is kept for its children, with no self time. A
//! call whose entry was overwritten sits under the calls whose exits the
//! trace holds (see [`super::calls`]).
//!
//! A function tracer trace has no returns: [`fold_functions`] counts calls
//! per stack rebuilt from `func <-parent` pairs
//! ([`super::calls::function_stacks`]), and the graph's title says so.

use std::collections::BTreeMap;

use super::calls::{function_stacks, Call, FunctionEvent, Trace};

/// The frame put where an interrupt came in.
pub const IRQ_FRAME: &str = "[irq]";

/// What a folded line's number counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weight {
    /// Self time in ns.
    SelfTime,
    /// Calls.
    Calls,
}

/// Folded stacks: the stack (frames joined by `;`) -> weight.
pub type Folded = BTreeMap<String, u64>;

/// A frame name as the folded format allows it: `;` separates frames, so
/// a `;` inside a name (`<[u8; 4] as T>::f`) becomes `,`.
pub fn frame_name(name: &str) -> String {
    name.replace(';', ",")
}

/// Adds `calls` (one task's, outermost first) under the frame `task`.
pub fn fold_calls(task: &str, calls: &[Call], weight: Weight, out: &mut Folded) {
    fn walk(c: &Call, parent_hardirq: bool, stack: &mut String, weight: Weight, out: &mut Folded) {
        let len = stack.len();
        if c.interrupt(parent_hardirq) {
            stack.push(';');
            stack.push_str(IRQ_FRAME);
        }
        stack.push(';');
        stack.push_str(&frame_name(&c.func));
        let w = match weight {
            Weight::SelfTime => c.self_time().unwrap_or(0),
            Weight::Calls => 1,
        };
        if w > 0 {
            *out.entry(stack.clone()).or_insert(0) += w;
        }
        for child in &c.children {
            walk(child, c.hardirq, stack, weight, out);
        }
        stack.truncate(len);
    }
    let mut stack = frame_name(task);
    for c in calls {
        walk(c, false, &mut stack, weight, out);
    }
}

/// Adds one task's function tracer calls under the frame `task`, one per
/// call (a `func_repeats` record counts its repeats).
pub fn fold_functions(task: &str, events: &[FunctionEvent], out: &mut Folded) {
    for (stack, count) in function_stacks(events) {
        let mut line = frame_name(task);
        for f in stack {
            line.push(';');
            line.push_str(&frame_name(&f));
        }
        *out.entry(line).or_insert(0) += count;
    }
}

/// Which tracer's records a flame graph was drawn from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    FunctionGraph,
    Function,
}

/// The folded stacks of a trace: from its function_graph records if it
/// has any, else from its function records (call counts whatever
/// `weight` asks). An error when it has neither.
pub fn fold_trace(trace: &Trace, weight: Weight) -> Result<(Folded, Source), String> {
    let mut out = Folded::new();
    let graph = trace.graph_calls();
    if !graph.is_empty() {
        for (task, calls) in &graph {
            fold_calls(&trace.task_name(*task), calls, weight, &mut out);
        }
        return Ok((out, Source::FunctionGraph));
    }
    let functions = trace.function_events();
    if !functions.is_empty() {
        for (task, evs) in &functions {
            fold_functions(&trace.task_name(*task), evs, &mut out);
        }
        return Ok((out, Source::Function));
    }
    Err("the trace has no function_graph or function records to draw".into())
}

/// The folded text: one `stack weight` line per stack, sorted.
pub fn folded_text(folded: &Folded) -> String {
    let mut s = String::new();
    for (stack, w) in folded {
        s.push_str(stack);
        s.push(' ');
        s.push_str(&w.to_string());
        s.push('\n');
    }
    s
}

/// Parses folded text back (for tests and for checking input).
pub fn parse_folded(text: &str) -> Result<Folded, String> {
    let mut out = Folded::new();
    for (i, line) in text.lines().enumerate() {
        let (stack, w) = line
            .rsplit_once(' ')
            .ok_or_else(|| format!("line {}: no weight", i + 1))?;
        let w: u64 = w
            .parse()
            .map_err(|_| format!("line {}: bad weight {w:?}", i + 1))?;
        *out.entry(stack.to_string()).or_insert(0) += w;
    }
    Ok(out)
}

/// The graph's title and what its numbers count.
pub fn titles(source: Source, weight: Weight) -> (String, &'static str) {
    match (source, weight) {
        (Source::FunctionGraph, Weight::SelfTime) => (
            "function_graph: self time per call stack".into(),
            "ns",
        ),
        (Source::FunctionGraph, Weight::Calls) => {
            ("function_graph: calls per call stack".into(), "calls")
        }
        (Source::Function, _) => (
            "function tracer: call counts (no return times; stacks rebuilt from func <-parent pairs)"
                .into(),
            "calls",
        ),
    }
}

/// Draws the folded stacks as an interactive SVG with inferno.
pub fn svg(folded: &Folded, source: Source, weight: Weight) -> Result<Vec<u8>, String> {
    if folded.is_empty() {
        return Err("nothing to draw: no call with a known weight".into());
    }
    let (title, unit) = titles(source, weight);
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title;
    opts.count_name = unit.to_string();
    let text = folded_text(folded);
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, text.lines(), &mut out)
        .map_err(|e| format!("drawing the flame graph: {e}"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::calls::{build_calls, GraphEvent};
    use super::*;
    use proptest::prelude::*;

    /// A generated call: function index, own time before each child and
    /// after the last, children, and whether it is an interrupt (its whole
    /// subtree in hard-interrupt context).
    #[derive(Clone, Debug)]
    struct Gen {
        func: u8,
        gaps: Vec<u64>,
        irq: bool,
        children: Vec<Gen>,
    }

    fn gen_tree() -> impl Strategy<Value = Gen> {
        let leaf = (0u8..6, 1u64..50, any::<bool>()).prop_map(|(func, g, irq)| Gen {
            func,
            gaps: vec![g],
            irq: irq && func == 5,
            children: vec![],
        });
        leaf.prop_recursive(4, 40, 4, |inner| {
            (0u8..6, prop::collection::vec(inner, 0..4), any::<bool>())
                .prop_flat_map(|(func, children, irq)| {
                    let n = children.len() + 1;
                    (
                        Just(func),
                        prop::collection::vec(0u64..30, n),
                        Just(children),
                        Just(irq),
                    )
                })
                .prop_map(|(func, gaps, children, irq)| Gen {
                    func,
                    gaps,
                    irq: irq && func == 5,
                    children,
                })
        })
    }

    fn name(f: u8) -> String {
        format!("f{f}")
    }

    /// The records of a generated call at `depth`, from time `*t`; an
    /// interrupt's subtree is in hard-interrupt context.
    fn emit(g: &Gen, depth: i32, in_irq: bool, t: &mut u64, out: &mut Vec<GraphEvent>) {
        let hardirq = in_irq || g.irq;
        let start = *t;
        out.push(GraphEvent::Entry {
            func: name(g.func),
            depth,
            ts: start,
            cpu: 0,
            hardirq,
        });
        for (i, gap) in g.gaps.iter().enumerate() {
            *t += gap;
            if let Some(c) = g.children.get(i) {
                emit(c, depth + 1, hardirq, t, out);
            }
        }
        *t += 1;
        out.push(GraphEvent::Exit {
            func: name(g.func),
            depth,
            calltime: start,
            rettime: *t,
            cpu: 0,
            hardirq,
        });
    }

    /// The reference: each generated call's stack and weight, straight
    /// from the generator's tree. `kept(i)` says whether the call whose
    /// exit is record `i` is in the trace; a call that is not contributes
    /// nothing, and its time counts as its caller's own.
    fn reference(
        g: &Gen,
        in_irq: bool,
        stack: &str,
        pos: &mut (u64, usize),
        cut: usize,
        weight: Weight,
        out: &mut Folded,
    ) -> u64 {
        let hardirq = in_irq || g.irq;
        let mut stack = stack.to_string();
        if g.irq && !in_irq {
            stack.push_str(";[irq]");
        }
        stack.push(';');
        stack.push_str(&name(g.func));
        let start = pos.0;
        pos.1 += 1; // entry
        let mut kept_children = 0;
        for (i, gap) in g.gaps.iter().enumerate() {
            pos.0 += gap;
            if let Some(c) = g.children.get(i) {
                kept_children += reference(c, hardirq, &stack, pos, cut, weight, out);
            }
        }
        pos.0 += 1;
        let exit = pos.1;
        pos.1 += 1;
        if exit < cut {
            return 0;
        }
        let dur = pos.0 - start;
        let w = match weight {
            Weight::SelfTime => dur - kept_children,
            Weight::Calls => 1,
        };
        if w > 0 {
            *out.entry(stack).or_insert(0) += w;
        }
        dur
    }

    proptest! {
        /// Whole trees, and trees whose first `cut` records were
        /// overwritten: the folded stacks equal the generated tree's, and
        /// the self times of each outermost call sum to its duration.
        #[test]
        fn folding_matches_the_generated_calls(
            trees in prop::collection::vec(gen_tree(), 1..4),
            cut_frac in 0.0f64..1.0,
            cut_on in any::<bool>(),
            counts in any::<bool>(),
        ) {
            let weight = if counts { Weight::Calls } else { Weight::SelfTime };
            let mut events = Vec::new();
            let mut t = 100;
            for g in &trees {
                emit(g, 0, false, &mut t, &mut events);
                t += 3;
            }
            let cut = if cut_on { (events.len() as f64 * cut_frac) as usize } else { 0 };
            let kept = events[cut..].to_vec();
            let calls = build_calls(kept.clone());
            let mut got = Folded::new();
            fold_calls("task-1", &calls, weight, &mut got);

            let mut want = Folded::new();
            let mut pos = (100, 0);
            for g in &trees {
                reference(g, false, "task-1", &mut pos, cut, weight, &mut want);
                pos.0 += 3;
            }
            prop_assert_eq!(&got, &want);

            // Every exit in the trace is one call; each outermost call's
            // self times add up to its duration.
            let exits = kept.iter().filter(|e| matches!(e, GraphEvent::Exit { .. })).count();
            prop_assert_eq!(calls.iter().map(Call::count).sum::<usize>(), exits);
            fn self_sum(c: &Call) -> u64 {
                c.self_time().unwrap() + c.children.iter().map(self_sum).sum::<u64>()
            }
            for c in &calls {
                prop_assert_eq!(self_sum(c), c.duration().unwrap());
            }
        }

        /// Trees cut at the end (the trace stopped inside calls): every
        /// recorded call keeps its full stack; the open ones have no self
        /// time but count as calls.
        #[test]
        fn calls_open_at_the_end_keep_their_stacks(
            tree in gen_tree(),
            keep_frac in 0.0f64..1.0,
        ) {
            let mut events = Vec::new();
            let mut t = 0;
            emit(&tree, 0, false, &mut t, &mut events);
            let keep = ((events.len() as f64 * keep_frac) as usize).max(1);
            let kept = &events[..keep];
            let calls = build_calls(kept.to_vec());
            let entries = kept.iter().filter(|e| matches!(e, GraphEvent::Entry { .. })).count();
            prop_assert_eq!(calls.iter().map(Call::count).sum::<usize>(), entries);
            prop_assert_eq!(calls.len(), 1);
            // Stacks: replay the records with a plain stack of frames.
            let mut want = Folded::new();
            let mut stack: Vec<(Vec<String>, bool)> = vec![];
            for e in kept {
                if let GraphEvent::Entry { func, hardirq, .. } = e {
                    let parent_irq = stack.last().is_some_and(|s| s.1);
                    let mut frames = vec![];
                    if *hardirq && !parent_irq {
                        frames.push(IRQ_FRAME.to_string());
                    }
                    frames.push(func.clone());
                    stack.push((frames, *hardirq));
                    let line: Vec<String> = stack.iter().flat_map(|s| s.0.clone()).collect();
                    *want.entry(format!("t;{}", line.join(";"))).or_insert(0) += 1;
                } else {
                    stack.pop();
                }
            }
            let mut got = Folded::new();
            fold_calls("t", &calls, Weight::Calls, &mut got);
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn interrupts_are_their_own_frames() {
        let e = |func: &str, depth, ts, hardirq| GraphEvent::Entry {
            func: func.into(),
            depth,
            ts,
            cpu: 0,
            hardirq,
        };
        let x = |func: &str, depth, calltime, rettime, hardirq| GraphEvent::Exit {
            func: func.into(),
            depth,
            calltime,
            rettime,
            cpu: 0,
            hardirq,
        };
        let calls = build_calls([
            e("work", 0, 0, false),
            e("handle_irq", 1, 10, true),
            e("tick", 2, 11, true),
            x("tick", 2, 11, 14, true),
            x("handle_irq", 1, 10, 16, true),
            x("work", 0, 0, 100, false),
        ]);
        let mut f = Folded::new();
        fold_calls("sh-1", &calls, Weight::SelfTime, &mut f);
        assert_eq!(
            folded_text(&f),
            "sh-1;work 94\nsh-1;work;[irq];handle_irq 3\nsh-1;work;[irq];handle_irq;tick 3\n"
        );
        assert_eq!(parse_folded(&folded_text(&f)).unwrap(), f);
        assert!(parse_folded("a;b x\n").is_err());
    }

    #[test]
    fn draws_an_svg_with_its_title() {
        let mut f = Folded::new();
        f.insert("sh-1;calltree_root".into(), 10);
        f.insert("sh-1;calltree_root;calltree_leaf".into(), 5);
        let s = String::from_utf8(svg(&f, Source::Function, Weight::Calls).unwrap()).unwrap();
        assert!(s.starts_with("<?xml"), "{}", &s[..100]);
        assert!(s.contains("calltree_root") && s.contains("function tracer: call counts"));
        assert!(svg(&Folded::new(), Source::Function, Weight::Calls).is_err());
    }
}
