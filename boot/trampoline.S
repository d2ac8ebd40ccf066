/*
 * The real-mode trampoline for the application processors
 * (Linux: arch/x86/realmode/rm/trampoline_64.S).
 *
 * An AP starts in 16-bit real mode at the page named by the STARTUP IPI's
 * vector (0x8000 here). The kernel copies this code there and fills in the
 * parameters at the end (page table, stack, entry, cpu number). It goes
 * real mode -> protected mode -> long mode, exactly as the boot CPU did.
 * All addresses are computed as 0x8000 + (label - ap_trampoline).
 * Written in AT&T syntax (included with options(att_syntax)): the assembler
 * accepts label arithmetic in memory operands there.
 */
.set TRAMP, 0x8000

.pushsection .rodata.ap_trampoline, "a"
.global ap_trampoline
.global ap_trampoline_end
.code16
ap_trampoline:
    cli
    cld
    xorw %ax, %ax
    movw %ax, %ds
    lgdtl TRAMP + (tramp_gdt_ptr - ap_trampoline)
    movl %cr0, %eax
    orl $1, %eax
    movl %eax, %cr0
    /* ljmpl $0x08, $(TRAMP + tramp_pm32 - ap_trampoline) */
    .byte 0x66, 0xea
    .long TRAMP + (tramp_pm32 - ap_trampoline)
    .word 0x08

.code32
tramp_pm32:
    movw $0x10, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movl %cr4, %eax
    orl $((1 << 5) | (1 << 7)), %eax        /* PAE, PGE */
    movl %eax, %cr4
    movl TRAMP + (tramp_cr3 - ap_trampoline), %eax
    movl %eax, %cr3
    movl $0xc0000080, %ecx
    rdmsr
    orl $((1 << 8) | (1 << 11)), %eax       /* LME, NXE */
    wrmsr
    movl %cr0, %eax
    orl $((1 << 31) | (1 << 16)), %eax      /* PG, WP */
    movl %eax, %cr0
    .byte 0xea
    .long TRAMP + (tramp_lm64 - ap_trampoline)
    .word 0x18

.code64
tramp_lm64:
    movw $0x10, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movq TRAMP + (tramp_stack - ap_trampoline), %rsp
    movq TRAMP + (tramp_cpu - ap_trampoline), %rdi
    movq TRAMP + (tramp_entry - ap_trampoline), %rax
    xorl %ebp, %ebp
    jmpq *%rax

.balign 16
tramp_gdt:
    .quad 0
    .quad 0x00cf9a000000ffff            /* 0x08: 32-bit code */
    .quad 0x00cf92000000ffff            /* 0x10: data */
    .quad 0x00af9a000000ffff            /* 0x18: 64-bit code */
tramp_gdt_ptr:
    .word tramp_gdt_ptr - tramp_gdt - 1
    .long TRAMP + (tramp_gdt - ap_trampoline)

/* Parameters, written by the kernel before each STARTUP IPI. */
.balign 8
.global ap_trampoline_params
ap_trampoline_params:
tramp_cr3:   .quad 0
tramp_stack: .quad 0
tramp_entry: .quad 0
tramp_cpu:   .quad 0
ap_trampoline_end:
.popsection
