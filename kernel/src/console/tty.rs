//! The console's input side (Linux: drivers/tty): an input queue filled
//! by the serial interrupt, with the wait queue its readers sleep on.
//! Ctrl-C typed here sends SIGINT (`sched::send_sigint`), as a tty's line
//! discipline does.
use spin::Mutex;

use super::COM1;
use crate::sched::WaitQueue;

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

/// Moves received bytes from the UART to the input queue while it has
/// room, and wakes the readers.
fn pull_input() {
    crate::irqflags::without_interrupts(|| {
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
    crate::irqflags::without_interrupts(|| INPUT.lock().pop())
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
    crate::irqflags::without_interrupts(|| INPUT.lock().len > 0 || COM1.lock().data_ready())
}

/// The serial interrupt: move the received bytes to the input queue.
pub fn serial_interrupt() {
    pull_input();
}
