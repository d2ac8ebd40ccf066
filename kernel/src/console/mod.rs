//! The serial console: output to COM1, which `print!`/`println!` write
//! (Linux: kernel/printk), and its input side, [`tty`] (Linux:
//! drivers/tty). Printing depends on nothing but the port, so that any
//! module, the scheduler's own dependencies included, can print.
use core::fmt::{self, Write};

use spin::Mutex;

use crate::arch::serial::SerialPort;

mod tty;
pub use tty::{input_available, read_byte, serial_interrupt, try_read_byte};

static COM1: Mutex<SerialPort> = Mutex::new(SerialPort::new(0x3f8));

/// Initialises COM1 (115200 8N1, receive interrupt on).
pub fn init() {
    COM1.lock().init();
}

/// Formats straight into the port while holding its lock, so that a line
/// printed by one CPU is never interleaved with another CPU's.
struct Writer<'a>(&'a mut SerialPort);

impl Write for Writer<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        send_all(self.0, s.as_bytes());
        Ok(())
    }
}

fn send_all(port: &mut SerialPort, bytes: &[u8]) {
    for &b in bytes {
        if b == b'\n' {
            port.send(b'\r');
        }
        port.send(b);
    }
}

/// Runs `f` with interrupts off, without telling tracing (the raw
/// operations): the console sits below everything that prints, the code
/// patcher and the static keys included, which the irq-flag reports
/// (crate::irqflags) use.
#[inline(always)]
fn without_interrupts_raw<R>(f: impl FnOnce() -> R) -> R {
    use crate::arch::irqflags::{arch_local_irq_restore, arch_local_irq_save};
    let flags = arch_local_irq_save();
    let r = f();
    arch_local_irq_restore(flags);
    r
}

/// Writes raw bytes to the console, turning `\n` into `\r\n`.
pub fn write_bytes(bytes: &[u8]) {
    without_interrupts_raw(|| send_all(&mut COM1.lock(), bytes));
}

/// Never inlined, as Linux's printk: a crash dump shows `_print <-` the
/// function that printed (tests/tests/ftrace_dump.rs looks for `die`'s),
/// whatever the compiler decides for the caller.
#[doc(hidden)]
#[inline(never)]
pub fn _print(args: fmt::Arguments) {
    without_interrupts_raw(|| {
        let _ = Writer(&mut COM1.lock()).write_fmt(args);
    });
}

/// Breaks the console lock so a dying CPU can print even if it died holding it.
pub fn force_unlock() {
    // SAFETY: only called on the way to stopping the machine.
    unsafe { COM1.force_unlock() };
}

#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => ($crate::console::_print(format_args!($($arg)*)));
}

#[macro_export]
macro_rules! println {
    () => ($crate::print!("\n"));
    ($($arg:tt)*) => ($crate::console::_print(format_args!("{}\n", format_args!($($arg)*))));
}
