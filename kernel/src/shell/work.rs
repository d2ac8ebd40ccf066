//! Workloads that keep every CPU busy so that there is something to trace.
//!
//! - `work files N`: one thread per CPU creates, writes, appends to, reads
//!   back (and checks) and deletes N ramfs files.
//! - `work sleep N`: one pair of threads per CPU (ping on CPU c, pong on
//!   CPU c+1) hands a token back and forth N times; each side sleeps a
//!   little and wakes the other through a wait queue. A side that finds the
//!   token out of order, or wakes from a nap too early, counts an error.
//! - `work compute N`: one thread per CPU runs N iterations of a recursive
//!   call tree made of several distinct functions; every iteration is
//!   checked against a loop that computes the same sum without calls, and
//!   every CPU must get the same result, which is printed so a test can
//!   check it.
//! - `work stack N`: on the shell's own task, a recursion N calls deep
//!   below its first call: [`work_stack_recurse`] keeps a local array of
//!   [`STACK_ARRAY`] bytes on the stack. It prints how far apart two
//!   successive calls' frames are (measured from the arrays' addresses, the
//!   same at every level), for a test to compare with the stack tracer's
//!   sizes.
//! - `work all SECONDS`: as many threads of all three as above, but not
//!   bound to a CPU: the scheduler moves them (the summary counts their
//!   migrations), until the time is up or Ctrl-C; then a summary with the
//!   errors of each workload.
//! - `work events SECONDS [MIN_TOGGLES]`: the load of `work all` while every
//!   trace event is switched on and off, then left on (see [`events`]).
//! - `work scale N`: on the shell's task, N rounds of calls to every
//!   generated function of a `qemu.sh --scale` kernel (kernel/scale), each
//!   result checked against the same formula computed without the call.
//!
//! Every function the threads run is `#[inline(never)]` so it has its own
//! `__fentry__` call site and shows up in function traces.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::hint::black_box;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use super::Output;
use crate::fs::{self, vfs, OpenFlags};
use crate::sched::{JoinHandle, WaitQueue};

/// Depth of the `work compute` call tree: 2^(depth+1) node calls per iteration.
pub const COMPUTE_TREE_DEPTH: u32 = 10;

/// Shared by the threads of one `work` command.
#[derive(Default)]
struct WorkState {
    stop: AtomicBool,
    finished: AtomicUsize,
    files: AtomicU64,
    file_errors: AtomicU64,
    compute_iterations: AtomicU64,
    compute_errors: AtomicU64,
    round_trips: AtomicU64,
    wakeups: AtomicU64,
    sleep_errors: AtomicU64,
    /// Migrations of the threads, added up as each one finishes.
    migrations: AtomicU64,
}

impl WorkState {
    fn errors(&self) -> u64 {
        self.file_errors.load(Ordering::SeqCst)
            + self.compute_errors.load(Ordering::SeqCst)
            + self.sleep_errors.load(Ordering::SeqCst)
    }
}

/// The threads of a workload, each with the value its body returned.
type Workers = Vec<(JoinHandle, Arc<AtomicU64>)>;

/// One ping-pong pair's token.
struct PingPong {
    /// 0: ping's turn, 1: pong's turn.
    turn: AtomicUsize,
    /// Turns taken so far: ping takes the even ones, pong the odd ones.
    passes: AtomicU64,
    wq: WaitQueue,
}

pub fn run(args: &[String], out: &mut Output) {
    let usage =
        "Usage: work files|sleep|compute|stack|scale N  or  work all SECONDS  or  work events SECONDS [MIN_TOGGLES]";
    let (Some(kind), Some(arg)) = (args.first(), args.get(1)) else {
        println!("{}", usage);
        return;
    };
    let state = Arc::new(WorkState::default());
    let cpus = crate::arch::nr_cpus();
    match kind.as_str() {
        "files" | "sleep" | "compute" => {
            let Ok(n) = arg.parse::<u64>() else {
                println!("work: invalid number '{}'", arg);
                return;
            };
            let (handles, pairs) = match kind.as_str() {
                "files" => (spawn_files(&state, cpus, Some(n), true), Vec::new()),
                "sleep" => spawn_sleep(&state, cpus, Some(n), true),
                _ => (spawn_compute(&state, cpus, Some(n), true), Vec::new()),
            };
            let results = wait(&state, handles, &pairs, None);
            let interrupted = if state.stop.load(Ordering::SeqCst) {
                " (interrupted)"
            } else {
                ""
            };
            let text = match kind.as_str() {
                "files" => format!(
                    "work files: {} cpus x {} files, {} verified, {} errors{}\n",
                    cpus,
                    n,
                    state.files.load(Ordering::SeqCst),
                    state.file_errors.load(Ordering::SeqCst),
                    interrupted
                ),
                "sleep" => format!(
                    "work sleep: {} pairs x {} round trips, {} done, {} wake-ups, {} errors{}\n",
                    pairs.len(),
                    n,
                    state.round_trips.load(Ordering::SeqCst),
                    state.wakeups.load(Ordering::SeqCst),
                    state.sleep_errors.load(Ordering::SeqCst),
                    interrupted
                ),
                _ => compute_summary(&state, cpus, n, &results, interrupted),
            };
            out.emit_str("work", &text);
        }
        "all" => {
            let Some(ns) = super::parse::parse_seconds(arg) else {
                println!("work: invalid number '{}'", arg);
                return;
            };
            let start = crate::time::now_ns();
            let mut handles = spawn_files(&state, cpus, None, false);
            handles.extend(spawn_compute(&state, cpus, None, false));
            let (sleepers, pairs) = spawn_sleep(&state, cpus, None, false);
            handles.extend(sleepers);
            wait(&state, handles, &pairs, Some(start.saturating_add(ns)));
            let elapsed = crate::time::now_ns() - start;
            let interrupted = if crate::sched::signal_pending() {
                " (interrupted)"
            } else {
                ""
            };
            let text = format!(
                "work all: {}.{:03} s on {} cpus: {} files ({} bad), {} compute iterations ({} wrong), {} round trips ({} bad), {} migrations, {} errors{}\n",
                elapsed / 1_000_000_000,
                elapsed / 1_000_000 % 1000,
                cpus,
                state.files.load(Ordering::SeqCst),
                state.file_errors.load(Ordering::SeqCst),
                state.compute_iterations.load(Ordering::SeqCst),
                state.compute_errors.load(Ordering::SeqCst),
                state.round_trips.load(Ordering::SeqCst),
                state.sleep_errors.load(Ordering::SeqCst),
                state.migrations.load(Ordering::SeqCst),
                state.errors(),
                interrupted
            );
            out.emit_str("work", &text);
        }
        "events" => events(&state, cpus, arg, args.get(2), out),
        "stack" => stack(arg, out),
        "scale" => scale(arg, out),
        _ => println!("{}", usage),
    }
}

/// The generated functions of a `--scale` build (none otherwise).
#[cfg(feature = "scale")]
fn scale_funcs() -> &'static [extern "C" fn(u64) -> u64] {
    &ktrace_scale::FUNCS
}
#[cfg(not(feature = "scale"))]
fn scale_funcs() -> &'static [extern "C" fn(u64) -> u64] {
    &[]
}

/// What generated function `i` returns for `x`.
#[cfg(feature = "scale")]
fn scale_expected(i: usize, x: u64) -> u64 {
    ktrace_scale::expected(i, x)
}
#[cfg(not(feature = "scale"))]
fn scale_expected(_i: usize, _x: u64) -> u64 {
    0
}

/// `work scale N`: N rounds over every generated function, each result
/// checked; prints the count, a checksum of the results and the errors.
fn scale(arg: &str, out: &mut Output) {
    let Ok(rounds) = arg.parse::<u64>() else {
        println!("work: invalid number '{}'", arg);
        return;
    };
    let funcs = scale_funcs();
    if funcs.is_empty() {
        println!(
            "work scale: this kernel has no generated functions (build it with qemu.sh --scale N)"
        );
        return;
    }
    let (mut sum, mut errors) = (0u64, 0u64);
    for r in 0..rounds {
        for (i, f) in funcs.iter().enumerate() {
            let got = f(black_box(r));
            errors += (got != scale_expected(i, r)) as u64;
            sum = sum.wrapping_add(got);
        }
    }
    let text = format!(
        "work scale: {} functions x {} rounds, sum {:#x}, {} errors\n",
        funcs.len(),
        rounds,
        sum,
        errors
    );
    out.emit_str("work", &text);
}

/// Bytes of the local array each `work stack` level keeps on the stack.
pub const STACK_ARRAY: usize = 480;
/// The deepest `work stack` accepts (64 levels of about half a KiB fit in
/// a task's 64 KiB stack with room to spare).
pub const STACK_MAX_DEPTH: usize = 64;

/// `work stack N`: N + 1 nested calls of [`work_stack_recurse`], then
/// the distance between successive frames (`frame`), which must be the
/// same at every level (else `errors` counts the odd ones).
fn stack(arg: &str, out: &mut Output) {
    let n = match arg.parse::<usize>() {
        Ok(n) if n <= STACK_MAX_DEPTH => n,
        _ => {
            println!("work: invalid number '{}'", arg);
            return;
        }
    };
    let mut addrs = [0u64; STACK_MAX_DEPTH + 1];
    let sum = work_stack_recurse(n, 0, &mut addrs);
    let frame = if n > 0 { addrs[0] - addrs[1] } else { 0 };
    let errors = addrs[..=n]
        .windows(2)
        .filter(|w| w[0] - w[1] != frame)
        .count();
    let text = format!(
        "work stack: {} calls, frame {} bytes, {} errors, sum {}\n",
        n + 1,
        frame,
        errors,
        sum
    );
    out.emit_str("work", &text);
}

/// One level of `work stack`: fills a local array, records where it is,
/// recurses `left` more times and adds up the arrays on the way back (so
/// the array is live across the call and the call is not a tail call).
#[inline(never)]
fn work_stack_recurse(left: usize, level: usize, addrs: &mut [u64]) -> u64 {
    let mut buf = [0u8; STACK_ARRAY];
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i + level) as u8;
    }
    let buf = black_box(buf);
    addrs[level] = buf.as_ptr() as u64;
    let below = if left > 0 {
        work_stack_recurse(left - 1, level + 1, addrs)
    } else {
        0
    };
    below + black_box(&buf).iter().map(|&b| u64::from(b)).sum::<u64>()
}

/// `work events SECONDS [MIN_TOGGLES]`: the load of `work all`, first with
/// every trace event switched on and off through `/tracing/events/enable`
/// as fast as the patching goes (every switch rewrites every tracepoint site
/// while the workers run through them), for half the time and at least
/// MIN_TOGGLES times; then with every event on and the buffer cleared, for
/// the other half, so that what the buffer holds afterwards was all recorded
/// with the events steadily on (a test checks it lost nothing: each CPU's
/// sched_switch records chain, next to prev, and its interrupt entry and
/// exit events alternate).
fn events(state: &Arc<WorkState>, cpus: usize, arg: &str, min: Option<&String>, out: &mut Output) {
    let (Some(ns), Some(min_toggles)) = (
        super::parse::parse_seconds(arg),
        min.map_or(Some(0), |m| m.parse::<u64>().ok()),
    ) else {
        println!("work: invalid number '{}'", min.map_or(arg, |m| m.as_str()));
        return;
    };
    let start = crate::time::now_ns();
    let mut handles = spawn_files(state, cpus, None, false);
    handles.extend(spawn_compute(state, cpus, None, false));
    let (sleepers, pairs) = spawn_sleep(state, cpus, None, false);
    handles.extend(sleepers);

    let enable = "/tracing/events/enable";
    let mut toggles = 0u64;
    let mut toggle_errors = 0u64;
    let half = start.saturating_add(ns / 2);
    while (crate::time::now_ns() < half || toggles < min_toggles) && !crate::sched::signal_pending()
    {
        for v in [b"1\n", b"0\n"] {
            if fs::vfs::write_file(enable, v).is_err() {
                toggle_errors += 1;
            }
        }
        toggles += 1;
    }
    let steady = fs::vfs::write_file(enable, b"1\n")
        .and_then(|_| fs::vfs::open("/tracing/trace", OpenFlags::O_WRONLY | OpenFlags::O_TRUNC))
        .is_ok();
    if !steady {
        toggle_errors += 1;
    }
    let steady_start = crate::time::now_ns();
    wait(
        state,
        handles,
        &pairs,
        Some(steady_start.saturating_add(ns / 2)),
    );
    let elapsed = crate::time::now_ns() - start;
    let text = format!(
        "work events: {}.{:03} s on {} cpus: {} toggles ({} failed), {} files, {} compute iterations, {} round trips, {} errors{}\n",
        elapsed / 1_000_000_000,
        elapsed / 1_000_000 % 1000,
        cpus,
        toggles,
        toggle_errors,
        state.files.load(Ordering::SeqCst),
        state.compute_iterations.load(Ordering::SeqCst),
        state.round_trips.load(Ordering::SeqCst),
        state.errors() + toggle_errors,
        if crate::sched::signal_pending() { " (interrupted)" } else { "" }
    );
    out.emit_str("work", &text);
}

/// Waits for the threads, polling for Ctrl-C and the deadline every 10 ms;
/// then stops them, wakes any sleeper and joins. Returns each thread's
/// result value (for compute).
fn wait(
    state: &Arc<WorkState>,
    handles: Workers,
    pairs: &[Arc<PingPong>],
    deadline: Option<u64>,
) -> Vec<u64> {
    let total = handles.len();
    while state.finished.load(Ordering::SeqCst) < total {
        let expired = deadline.is_some_and(|d| crate::time::now_ns() >= d);
        if expired || crate::sched::signal_pending() {
            state.stop.store(true, Ordering::SeqCst);
            for p in pairs {
                p.wq.wake_all();
            }
        }
        crate::sched::sleep_ns(10_000_000);
    }
    let mut results = Vec::new();
    for (h, result) in handles {
        h.join();
        results.push(result.load(Ordering::SeqCst));
    }
    results
}

/// Starts one worker: bound to `cpu` if `pinned`, otherwise free to move
/// (it starts on the least loaded CPU). Its migrations are added to the
/// state when its body returns.
fn spawn_worker(
    state: &Arc<WorkState>,
    cpu: usize,
    pinned: bool,
    name: String,
    body: impl FnOnce(&WorkState) -> u64 + Send + 'static,
) -> (JoinHandle, Arc<AtomicU64>) {
    let result = Arc::new(AtomicU64::new(0));
    let (st, res) = (state.clone(), result.clone());
    let f = move || {
        res.store(body(&st), Ordering::SeqCst);
        let moved = crate::sched::current().map_or(0, |t| t.nr_migrations.load(Ordering::Relaxed));
        st.migrations.fetch_add(moved, Ordering::SeqCst);
        st.finished.fetch_add(1, Ordering::SeqCst);
    };
    let handle = if pinned {
        crate::sched::spawn_on(cpu, &name, f)
    } else {
        crate::sched::spawn(&name, f)
    };
    (handle, result)
}

// ---------------------------------------------------------------- files

fn spawn_files(state: &Arc<WorkState>, cpus: usize, n: Option<u64>, pinned: bool) -> Workers {
    (0..cpus)
        .map(|cpu| {
            let name = format!("work-files/{}", cpu);
            spawn_worker(state, cpu, pinned, name, move |st| {
                let mut i = 0;
                while n.is_none_or(|n| i < n) && !st.stop.load(Ordering::Relaxed) {
                    if files_one(cpu, i) {
                        st.files.fetch_add(1, Ordering::Relaxed);
                    } else {
                        st.file_errors.fetch_add(1, Ordering::Relaxed);
                    }
                    i += 1;
                }
                0
            })
        })
        .collect()
}

/// The content written to file `i` of `cpu` (then a line is appended).
#[inline(never)]
fn files_content(cpu: usize, i: u64) -> String {
    let mut s = String::new();
    for line in 0..8 {
        s.push_str(&format!("cpu {} file {} line {}\n", cpu, i, line));
    }
    s
}

/// Creates, writes, appends to, reads back and deletes one file; true if
/// everything worked and the content read back is right.
#[inline(never)]
fn files_one(cpu: usize, i: u64) -> bool {
    let path = format!("/tmp/work-{}-{}", cpu, i);
    let content = files_content(cpu, i);
    if files_write(&path, content.as_bytes(), false).is_err() {
        return false;
    }
    if files_write(&path, b"appended\n", true).is_err() {
        return false;
    }
    let ok = match vfs::read_file(&path) {
        Ok(data) => files_check(&data, content.as_bytes()),
        Err(_) => false,
    };
    vfs::unlink(&path).is_ok() && ok
}

#[inline(never)]
fn files_write(path: &str, data: &[u8], append: bool) -> Result<(), fs::Errno> {
    let mode = if append {
        OpenFlags::O_APPEND
    } else {
        OpenFlags::O_TRUNC
    };
    let mut f = vfs::open(path, OpenFlags::O_WRONLY | OpenFlags::O_CREAT | mode)?;
    f.write_all(data)
}

#[inline(never)]
fn files_check(data: &[u8], content: &[u8]) -> bool {
    data.len() == content.len() + 9 && data.starts_with(content) && data.ends_with(b"appended\n")
}

// ---------------------------------------------------------------- sleep

fn spawn_sleep(
    state: &Arc<WorkState>,
    cpus: usize,
    n: Option<u64>,
    pinned: bool,
) -> (Workers, Vec<Arc<PingPong>>) {
    let mut handles = Vec::new();
    let mut pairs = Vec::new();
    for cpu in 0..cpus {
        let pair = Arc::new(PingPong {
            turn: AtomicUsize::new(0),
            passes: AtomicU64::new(0),
            wq: WaitQueue::new(),
        });
        pairs.push(pair.clone());
        let p = pair.clone();
        handles.push(spawn_worker(
            state,
            cpu,
            pinned,
            format!("work-ping/{}", cpu),
            move |st| ping_pong(st, &p, 0, n),
        ));
        let p = pair.clone();
        let other = (cpu + 1) % cpus;
        handles.push(spawn_worker(
            state,
            other,
            pinned,
            format!("work-pong/{}", cpu),
            move |st| ping_pong(st, &p, 1, n),
        ));
    }
    (handles, pairs)
}

/// One side of a ping-pong pair: waits for its turn, sleeps a little,
/// passes the turn and wakes the other side. Errors: a turn taken out of
/// order (the wait queue let both sides run, or lost a turn) and a nap that
/// ended early without Ctrl-C.
#[inline(never)]
fn ping_pong(st: &WorkState, pair: &PingPong, me: usize, n: Option<u64>) -> u64 {
    let mut rounds = 0;
    while n.is_none_or(|n| rounds < n) {
        let my_turn = || pair.turn.load(Ordering::SeqCst) == me;
        let stopped = || st.stop.load(Ordering::SeqCst);
        // Until it is our turn or the shell says stop.
        pair.wq.wait_until(|| my_turn() || stopped());
        if stopped() {
            break;
        }
        if pair.passes.fetch_add(1, Ordering::SeqCst) != 2 * rounds + me as u64 {
            st.sleep_errors.fetch_add(1, Ordering::Relaxed);
        }
        if !ping_pong_nap(me) {
            st.sleep_errors.fetch_add(1, Ordering::Relaxed);
        }
        pair.turn.store(1 - me, Ordering::SeqCst);
        pair.wq.wake_all();
        st.wakeups.fetch_add(1, Ordering::Relaxed);
        if me == 1 {
            st.round_trips.fetch_add(1, Ordering::Relaxed);
        }
        rounds += 1;
    }
    rounds
}

/// Sleeps 50 µs (ping) or 100 µs (pong); false if it woke up early
/// without a Ctrl-C to explain it.
#[inline(never)]
fn ping_pong_nap(me: usize) -> bool {
    let ns = 50_000 * (me as u64 + 1);
    let start = crate::time::now_ns();
    crate::sched::sleep_ns(ns);
    crate::time::now_ns() - start >= ns || crate::sched::signal_pending()
}

// ---------------------------------------------------------------- compute

fn spawn_compute(state: &Arc<WorkState>, cpus: usize, n: Option<u64>, pinned: bool) -> Workers {
    (0..cpus)
        .map(|cpu| {
            let name = format!("work-compute/{}", cpu);
            spawn_worker(state, cpu, pinned, name, move |st| {
                let mut sum: u64 = 0;
                let mut i = 0;
                while n.is_none_or(|n| i < n) && !st.stop.load(Ordering::Relaxed) {
                    let value = compute_iteration(i);
                    if value != compute_expected(i) {
                        st.compute_errors.fetch_add(1, Ordering::Relaxed);
                    }
                    sum = sum.wrapping_add(value);
                    st.compute_iterations.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
                sum
            })
        })
        .collect()
}

fn compute_summary(
    state: &WorkState,
    cpus: usize,
    n: u64,
    results: &[u64],
    interrupted: &str,
) -> String {
    let first = results.first().copied().unwrap_or(0);
    let wrong = state.compute_errors.load(Ordering::SeqCst);
    if wrong != 0 {
        return format!(
            "work compute: {} cpus x {} iterations, {} wrong results{}\n",
            cpus, n, wrong, interrupted
        );
    }
    if !interrupted.is_empty() {
        return format!(
            "work compute: {} cpus x {} iterations{}\n",
            cpus, n, interrupted
        );
    }
    match results.iter().position(|&r| r != first) {
        None => format!(
            "work compute: {} cpus x {} iterations, result {}\n",
            cpus, n, first
        ),
        Some(cpu) => format!(
            "work compute: MISMATCH: cpu 0 got {}, cpu {} got {}\n",
            first, cpu, results[cpu]
        ),
    }
}

/// One iteration: the whole tree for seed `i`.
#[inline(never)]
pub fn compute_iteration(i: u64) -> u64 {
    compute_node(COMPUTE_TREE_DEPTH, black_box(i))
}

#[inline(never)]
fn compute_node(depth: u32, x: u64) -> u64 {
    if depth == 0 {
        compute_leaf(x)
    } else {
        compute_left(depth - 1, x).wrapping_add(compute_right(depth - 1, x))
    }
}

#[inline(never)]
fn compute_left(depth: u32, x: u64) -> u64 {
    compute_node(depth, black_box(x.wrapping_mul(3).wrapping_add(1)))
}

#[inline(never)]
fn compute_right(depth: u32, x: u64) -> u64 {
    compute_node(depth, black_box(x ^ 0x5a5a))
}

/// A leaf: the top 5 bits of a multiplicative hash (0..=31).
#[inline(never)]
fn compute_leaf(x: u64) -> u64 {
    black_box(leaf_hash(x))
}

#[inline(always)]
fn leaf_hash(x: u64) -> u64 {
    x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 59
}

/// What [`compute_iteration`] must return, computed without the call tree:
/// one loop over the 2^depth paths from the root to a leaf, bit k of the
/// path choosing left or right at level k. A tracer that corrupted a return
/// value or a register in the tree makes the two differ.
#[inline(never)]
fn compute_expected(i: u64) -> u64 {
    let mut sum = 0u64;
    for path in 0..1u64 << COMPUTE_TREE_DEPTH {
        let mut x = i;
        for level in 0..COMPUTE_TREE_DEPTH {
            x = if path >> level & 1 == 0 {
                x.wrapping_mul(3).wrapping_add(1)
            } else {
                x ^ 0x5a5a
            };
        }
        sum = sum.wrapping_add(leaf_hash(x));
    }
    black_box(sum)
}

// ---------------------------------------------------------------- calltree

/// `calltree [N [TASKS]]`: runs a small fixed call tree N times (default 1)
/// and prints the result. Without TASKS it runs on the shell's own task;
/// with TASKS it runs on that many new threads that may migrate between
/// CPUs (more threads than CPUs also means preemption in the middle of the
/// tree), and checks that they all got the same result. function_graph
/// tests expect its exact shape:
///
/// ```text
/// calltree_root() {
///   calltree_leaf();
///   calltree_pair() {
///     calltree_leaf();
///     calltree_leaf();
///   }
///   calltree_chain() {
///     calltree_chain() {
///       calltree_chain() {
///         calltree_leaf();
///       }
///     }
///   }
///   calltree_wide();
/// }
/// ```
///
/// `calltree_wide` returns a 128-bit value (rax and rdx), so a tracer that
/// loses either register changes the result.
pub fn calltree(args: &[String], out: &mut Output) {
    let mut nums = [1u64, 0];
    for (slot, a) in nums.iter_mut().zip(args) {
        match a.parse::<u64>() {
            Ok(v) => *slot = v,
            Err(_) => {
                println!("calltree: invalid number '{}'", a);
                return;
            }
        }
    }
    let [n, tasks] = nums;
    let run = move || (0..n).fold(0u64, |sum, i| sum.wrapping_add(calltree_root(black_box(i))));
    if tasks == 0 {
        out.emit_str(
            "calltree",
            &format!("calltree: {} iterations, result {}\n", n, run()),
        );
        return;
    }
    let results: Vec<(JoinHandle, Arc<AtomicU64>)> = (0..tasks)
        .map(|t| {
            let result = Arc::new(AtomicU64::new(0));
            let r = result.clone();
            let h = crate::sched::spawn(&format!("calltree/{}", t), move || {
                r.store(run(), Ordering::SeqCst)
            });
            (h, result)
        })
        .collect();
    let values: Vec<u64> = results
        .into_iter()
        .map(|(h, r)| {
            h.join();
            r.load(Ordering::SeqCst)
        })
        .collect();
    let text = match values.iter().position(|&v| v != values[0]) {
        None => format!(
            "calltree: {} tasks x {} iterations, result {}\n",
            tasks, n, values[0]
        ),
        Some(t) => format!(
            "calltree: MISMATCH: task 0 got {}, task {} got {}\n",
            values[0], t, values[t]
        ),
    };
    out.emit_str("calltree", &text);
}

#[inline(never)]
fn calltree_root(x: u64) -> u64 {
    let a = calltree_leaf(x);
    let b = calltree_pair(x);
    let c = calltree_chain(2, x);
    let w = calltree_wide(x);
    a ^ b.rotate_left(7) ^ c.rotate_left(13) ^ (w as u64) ^ ((w >> 64) as u64).rotate_left(29)
}

#[inline(never)]
fn calltree_pair(x: u64) -> u64 {
    calltree_leaf(x.wrapping_add(1))
        .wrapping_mul(31)
        .wrapping_add(calltree_leaf(x.wrapping_add(2)))
}

#[inline(never)]
fn calltree_chain(n: u32, x: u64) -> u64 {
    if n == 0 {
        calltree_leaf(x)
    } else {
        calltree_chain(n - 1, black_box(x.wrapping_mul(5).wrapping_add(3))).wrapping_add(1)
    }
}

/// A leaf with some untraced work, so that a tree lasts long enough to be
/// preempted in the middle.
#[inline(never)]
fn calltree_leaf(x: u64) -> u64 {
    let mut h = x;
    for _ in 0..black_box(50_000) {
        h = black_box(h ^ (h >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    }
    black_box(h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40)
}

#[inline(never)]
fn calltree_wide(x: u64) -> u128 {
    black_box((x as u128).wrapping_mul(0x1234_5678_9abc_def1_0fed_cba9_8765_4321))
}

// ---------------------------------------------------------------- profnest

/// `profnest [N]`: runs [`pf_outer`] N times (default 1) on the shell's
/// task and prints the result. One call of `pf_outer` spins one unit of
/// work itself and calls [`pf_inner`] twice, for one unit and for two, so
/// the function profiler's times have known ratios: `pf_outer` lasts about
/// 4 units with its callees (the `graph-time` option) and 1 without;
/// `pf_inner` 3 units per `pf_outer` in all, 1.5 on average, with a
/// sample variance of about (1.5 units)² / 9. The names fit in the
/// profiler's 30-character column.
pub fn profnest(args: &[String], out: &mut Output) {
    let n = match args.first().map(|a| a.parse::<u64>()) {
        None => 1,
        Some(Ok(v)) => v,
        Some(Err(_)) => {
            println!("profnest: invalid number '{}'", args[0]);
            return;
        }
    };
    let r = (0..n).fold(0u64, |acc, i| acc ^ pf_outer(black_box(i)));
    out.emit_str(
        "profnest",
        &format!("profnest: {} iterations, result {}\n", n, r),
    );
}

/// One unit of untraced work per `units`.
#[inline(always)]
fn pf_spin(x: u64, units: u64) -> u64 {
    let mut h = x;
    for _ in 0..black_box(20_000 * units) {
        h = black_box(h ^ (h >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    }
    h
}

#[inline(never)]
fn pf_outer(x: u64) -> u64 {
    let a = pf_spin(x, 1);
    let b = pf_inner(a, 1);
    let c = pf_inner(b, 2);
    black_box(a ^ b.rotate_left(7) ^ c.rotate_left(13))
}

#[inline(never)]
fn pf_inner(x: u64, units: u64) -> u64 {
    black_box(pf_spin(x, units))
}
