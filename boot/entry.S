/*
 * The first instructions the kernel runs (Linux: arch/x86/platform/pvh/head.S).
 *
 * QEMU's `-kernel` loader reads the PVH ELF note below, loads our segments at
 * their physical addresses and jumps to `pvh_start32` in 32-bit protected mode
 * with paging off and %ebx pointing at the `hvm_start_info` structure.
 * We build minimal page tables (the first 1 GiB mapped twice: identity, and at
 * KERNEL_VMA where the kernel is linked), enable long mode, and call
 * `kernel_main(start_info_paddr)` on the boot stack.
 * Everything in .boot.* is linked at its physical address.
 */
.set KERNEL_VMA, 0xffffffff80000000

/* XEN_ELFNOTE_PHYS32_ENTRY (18): the 32-bit physical entry point. */
.pushsection .note.Xen, "a", @note
    .balign 4
    .long 4                 /* name size: "Xen\0" */
    .long 8                 /* descriptor size */
    .long 18                /* XEN_ELFNOTE_PHYS32_ENTRY */
    .asciz "Xen"
    .balign 4
    .quad pvh_start32
    .balign 4
.popsection

.pushsection .boot.text, "ax"
.code32
.global pvh_start32
pvh_start32:
    cli
    cld
    mov esi, ebx                        /* keep the start_info pointer */
    mov esp, offset boot_stack32_top

    /* CR4.PAE, CR4.PGE */
    mov eax, cr4
    or eax, (1 << 5) | (1 << 7)
    mov cr4, eax
    mov eax, offset boot_pml4
    mov cr3, eax
    /* EFER.LME (long mode) and EFER.NXE (no-execute bit) */
    mov ecx, 0xc0000080
    rdmsr
    or eax, (1 << 8) | (1 << 11)
    wrmsr
    /* CR0.PG | CR0.WP | CR0.PE */
    mov eax, cr0
    or eax, (1 << 31) | (1 << 16) | 1
    mov cr0, eax

    lgdt [boot_gdt_ptr]
    /* ljmp $0x08, $start64 (far jump into the 64-bit code segment) */
    .byte 0xea
    .long start64
    .word 0x08

.code64
start64:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    xor ax, ax
    mov fs, ax
    mov gs, ax
    /* Jump to the kernel's own (high) addresses. */
    movabs rax, offset high64
    jmp rax
.popsection

.pushsection .text.boot_high, "ax"
high64:
    movabs rsp, offset boot_stack_top
    xor ebp, ebp                        /* end of the frame-pointer chain */
    mov edi, esi                        /* kernel_main(start_info_paddr) */
    call kernel_main
1:  hlt
    jmp 1b
.popsection

.pushsection .boot.data, "aw"
.balign 4096
boot_pml4:
    .quad boot_pdpt + 0x3               /* [0]: identity */
    .fill 510, 8, 0
    .quad boot_pdpt_high + 0x3          /* [511]: KERNEL_VMA */
boot_pdpt:
    .quad boot_pd + 0x3
    .fill 511, 8, 0
boot_pdpt_high:
    .fill 510, 8, 0
    .quad boot_pd + 0x3                 /* [510]: 0xffffffff80000000 */
    .quad 0
boot_pd:                                /* 512 x 2 MiB pages = 1 GiB */
    .set i, 0
    .rept 512
    .quad (i << 21) | 0x83              /* present, writable, huge */
    .set i, i + 1
    .endr

.balign 16
boot_gdt:
    .quad 0
    .quad 0x00af9a000000ffff            /* 0x08: 64-bit code */
    .quad 0x00cf92000000ffff            /* 0x10: data */
boot_gdt_ptr:
    .word boot_gdt_ptr - boot_gdt - 1
    .long boot_gdt

.balign 16
    .fill 256, 1, 0
boot_stack32_top:
.popsection

.pushsection .bss.boot_stack, "aw", @nobits
.balign 4096
    .fill 65536, 1, 0
.global boot_stack_top
boot_stack_top:
.popsection
