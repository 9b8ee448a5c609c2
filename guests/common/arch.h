/* System-register, barrier and MMIO helpers for the C guests. */
#ifndef ARCH_H
#define ARCH_H

#include <stdbool.h>
#include <stdint.h>

typedef uint8_t u8;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t s64;

#define MAX_CPUS 8

#define read_sysreg(reg) ({                                     \
	u64 __v;                                                \
	__asm__ volatile("mrs %0, " #reg : "=r"(__v));          \
	__v;                                                    \
})

#define write_sysreg(reg, val) \
	__asm__ volatile("msr " #reg ", %0" : : "r"((u64)(val)) : "memory")

static inline void isb(void) { __asm__ volatile("isb" ::: "memory"); }
static inline void dsb_sy(void) { __asm__ volatile("dsb sy" ::: "memory"); }

/* The isb keeps the counter read from being hoisted above earlier code. */
static inline u64 counter_now(void)
{
	isb();
	return read_sysreg(cntvct_el0);
}

/*
 * Plain single-register loads and stores with no writeback, written in asm so
 * the compiler cannot pick a pair or post-index form: a hypervisor that traps
 * the access (the emulated GIC and UART) can only decode it from the syndrome
 * if ESR.ISV is set, which those forms do not give.
 */
static inline void mmio_write32(u64 addr, u32 val)
{
	__asm__ volatile("str %w0, [%1]" : : "rZ"(val), "r"(addr) : "memory");
}

static inline u32 mmio_read32(u64 addr)
{
	u32 v;

	__asm__ volatile("ldr %w0, [%1]" : "=r"(v) : "r"(addr) : "memory");
	return v;
}

static inline void mmio_write8(u64 addr, u8 val)
{
	__asm__ volatile("strb %w0, [%1]" : : "rZ"(val), "r"(addr) : "memory");
}

static inline u8 mmio_read8(u64 addr)
{
	u32 v;

	__asm__ volatile("ldrb %w0, [%1]" : "=r"(v) : "r"(addr) : "memory");
	return (u8)v;
}

static inline void mmio_write64(u64 addr, u64 val)
{
	__asm__ volatile("str %x0, [%1]" : : "rZ"(val), "r"(addr) : "memory");
}

static inline u64 mmio_read64(u64 addr)
{
	u64 v;

	__asm__ volatile("ldr %x0, [%1]" : "=r"(v) : "r"(addr) : "memory");
	return v;
}

static inline void irq_mask(void) { __asm__ volatile("msr daifset, #2" ::: "memory"); }
static inline void irq_unmask(void) { __asm__ volatile("msr daifclr, #2" ::: "memory"); }
static inline void wfi(void) { __asm__ volatile("wfi" ::: "memory"); }

/* This CPU's index among the /cpus/cpu@ nodes, kept in TPIDR_EL1 at boot. */
static inline u32 this_cpu(void)
{
	return (u32)read_sysreg(tpidr_el1);
}

/* The affinity fields of MPIDR_EL1, laid out as a DT cpu node's reg. */
static inline u64 current_mpidr_affinity(void)
{
	return read_sysreg(mpidr_el1) & 0xff00ffffffULL;
}

/* Each guest's head.S provides it: stop this CPU for good. */
__attribute__((noreturn)) void halt(void);

#endif
