//! The serial console: output to COM1 and an input queue filled by the serial
//! interrupt, with the wait queue its readers sleep on. `print!`/`println!`
//! write here (Linux: kernel/printk, drivers/tty). Ctrl-C typed here sends
//! SIGINT (`sched::send_sigint`), as a tty's line discipline does.
use core::fmt::{self, Write};

use spin::Mutex;

use crate::arch::serial::SerialPort;
use crate::sched::WaitQueue;

static COM1: Mutex<SerialPort> = Mutex::new(SerialPort::new(0x3f8));

/// Bytes received but not yet read by the shell. When it is full, bytes
/// wait in the UART, which makes QEMU stop taking input (flow control), and
/// the reader moves them over as it makes room: nothing typed or pasted is
/// dropped.
static INPUT: Mutex<InputRing> = Mutex::new(InputRing::new());
/// Held while bytes move from the UART to [`INPUT`] (by the interrupt or a
/// reader), so that the room seen is still there when the byte is queued.
static PULL: Mutex<()> = Mutex::new(());
/// Readers waiting for input (Linux: the tty's read_wait).
static INPUT_WAIT: WaitQueue = WaitQueue::new();

const INPUT_SIZE: usize = 4096;

struct InputRing {
    buf: [u8; INPUT_SIZE],
    head: usize,
    len: usize,
}

impl InputRing {
    const fn new() -> Self {
        InputRing {
            buf: [0; INPUT_SIZE],
            head: 0,
            len: 0,
        }
    }
    fn is_full(&self) -> bool {
        self.len == INPUT_SIZE
    }
    fn push(&mut self, b: u8) {
        if !self.is_full() {
            self.buf[(self.head + self.len) % INPUT_SIZE] = b;
            self.len += 1;
        }
    }
    fn pop(&mut self) -> Option<u8> {
        if self.len == 0 {
            return None;
        }
        let b = self.buf[self.head];
        self.head = (self.head + 1) % INPUT_SIZE;
        self.len -= 1;
        Some(b)
    }
}

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

/// Writes raw bytes to the console, turning `\n` into `\r\n`.
pub fn write_bytes(bytes: &[u8]) {
    crate::arch::without_interrupts(|| send_all(&mut COM1.lock(), bytes));
}

#[doc(hidden)]
pub fn _print(args: fmt::Arguments) {
    crate::arch::without_interrupts(|| {
        let _ = Writer(&mut COM1.lock()).write_fmt(args);
    });
}

/// Moves received bytes from the UART to the input queue while it has
/// room, and wakes the readers.
fn pull_input() {
    crate::arch::without_interrupts(|| {
        let _pull = PULL.lock();
        let mut moved = false;
        while !INPUT.lock().is_full() {
            let Some(byte) = COM1.lock().receive() else {
                break;
            };
            if byte == 0x03 {
                // Pending before the byte is queued: a reader that gets the
                // byte sees the signal.
                crate::sched::send_sigint();
            }
            INPUT.lock().push(byte);
            moved = true;
        }
        if moved {
            INPUT_WAIT.wake_all();
        }
    });
}

/// Returns the next input byte without blocking.
pub fn try_read_byte() -> Option<u8> {
    pull_input();
    crate::arch::without_interrupts(|| INPUT.lock().pop())
}

/// Blocks until an input byte arrives.
pub fn read_byte() -> u8 {
    loop {
        if let Some(b) = try_read_byte() {
            return b;
        }
        INPUT_WAIT.wait_until(input_available);
    }
}

/// True if input is waiting, in the queue or still in the UART.
pub fn input_available() -> bool {
    crate::arch::without_interrupts(|| INPUT.lock().len > 0 || COM1.lock().data_ready())
}

/// The serial interrupt: move the received bytes to the input queue.
pub fn serial_interrupt() {
    pull_input();
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
