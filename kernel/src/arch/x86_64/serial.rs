//! The 16550 UART behind COM1 (the console) and COM2 (trace export)
//! (Linux: drivers/tty/serial/8250).
use ::x86_64::instructions::port::Port;

pub struct SerialPort {
    base: u16,
}

impl SerialPort {
    pub const fn new(base: u16) -> Self {
        SerialPort { base }
    }

    fn port(&self, offset: u16) -> Port<u8> {
        Port::new(self.base + offset)
    }

    /// 115200 baud, 8N1, FIFOs on, interrupt on received data.
    pub fn init(&mut self) {
        // SAFETY: this UART's registers are I/O ports owned by this driver.
        unsafe {
            self.port(1).write(0x00); // interrupts off while configuring
            self.port(3).write(0x80); // DLAB on: divisor follows
            self.port(0).write(0x01); // divisor 1 = 115200 baud
            self.port(1).write(0x00);
            self.port(3).write(0x03); // 8 bits, no parity, one stop bit
                                      // FIFOs stay off: switching them on discards what has already
                                      // arrived, and QEMU hands us one byte at a time anyway.
            self.port(2).write(0x00);
            self.port(4).write(0x0b); // DTR, RTS, OUT2 (IRQ line enabled)
            self.port(1).write(0x01); // interrupt when data arrives
        }
    }

    /// True if a UART answers at this address: its scratch register (offset
    /// 7) keeps what was written. Without a second `-serial`, QEMU has no
    /// COM2 and the port reads 0xff.
    pub fn probe(&mut self) -> bool {
        // SAFETY: as in init; the scratch register has no side effects.
        unsafe {
            self.port(7).write(0x5a);
            let a = self.port(7).read();
            self.port(7).write(0xa5);
            a == 0x5a && self.port(7).read() == 0xa5
        }
    }

    /// Waits until the transmitter can take a byte, then sends it.
    pub fn send(&mut self, byte: u8) {
        // SAFETY: as in init.
        unsafe {
            while self.port(5).read() & 0x20 == 0 {
                core::hint::spin_loop();
            }
            self.port(0).write(byte);
        }
    }

    /// A received byte, if any.
    pub fn receive(&mut self) -> Option<u8> {
        if !self.data_ready() {
            return None;
        }
        // SAFETY: as in init.
        Some(unsafe { self.port(0).read() })
    }

    /// True if a received byte waits in the UART (LSR bit 0, data ready).
    pub fn data_ready(&mut self) -> bool {
        // SAFETY: as in init.
        unsafe { self.port(5).read() & 0x01 != 0 }
    }
}
