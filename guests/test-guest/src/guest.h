/* Declarations shared between main.c and the feature files. */
#ifndef GUEST_H
#define GUEST_H

#include "arch.h"
#include "bootargs.h"
#include "counter.h"
#include "dt.h"

void dcache_clean_invalidate_all(void);
void misbehave(const struct dt_info *dt, const struct bootargs *a);

/* Provided by head.S. */
void secondary_entry(void);

/* Provided by marker.S: they keep the marker value in registers only. */
void marker_store(u64 *dst);
u64 marker_scan(u64 base, u64 bytes);

/* Interrupt tests (irqtest.c): each prints its own result lines. */
bool irq_setup_boot_cpu(const struct dt_info *dt, const struct bootargs *a);
bool irq_setup_secondary(const struct bootargs *a);
__attribute__((noreturn)) void irq_secondary_idle(const struct dt_info *dt, const struct bootargs *a);
void mask_spin(u64 ms);
void cpuif_attack(void);
void gicd_attack(u32 intid);
void sgi_test(const struct dt_info *dt, u64 n, u32 peer, bool peer_ready);
void sgi_probe(const struct dt_info *dt, u32 peer);
/* The SGIs a vCPU took, whichever they were (sgi-watch). */
u32 sgis_taken(u32 cpu);
/* A write to ICC_SGI1R_EL1 from register x<rt> (sgiwrite.S). */
u64 sgi1r_write_rt(u64 value, u64 rt);
bool sgi_peer_ready(u32 cpu);
void lr_overflow_test(void);
void spi_test(u32 intid);
/* Sleeps in WFI until an interrupt handler sets *flag (irqtest.c). */
void idle_until(volatile u32 *flag);
bool irq_setup_ping_receiver(void);
/* The SGI sgi_ping sends; sgi_pings counts those each vCPU took. */
#define SGI_PING 1
u32 sgi_pings(u32 cpu);
void sgi_ping(u64 aff);

/* Architecture conformance, arch=... (conformance.c). */
void conformance_test(const struct dt_info *dt, const struct bootargs *a);
/* Its interrupts, from the IRQ handler: true if intid was one of them. */
bool conformance_irq(u32 intid, u64 now);

/* Hypercall tests (control.c). */
void vcpu_ctl_test(const struct dt_info *dt);
__attribute__((noreturn)) void vcpu_ctl_secondary(void);
void part_ctl_test(const struct bootargs *a);
void plan_switch_test(const struct bootargs *a);
void hm_calls_test(const struct bootargs *a);
void delay_ms(u64 ms);

/* Virtual-timer tests (timer.c). */
void timer_setup(u32 intid);
void timer_irq(u64 now);
void timer_periodic_test(u64 hz, u64 n);
void irq_bench(u64 n, bool wait, u64 delay);
void duty_test(u64 busy_us, u64 idle_us, u64 cycles);
void timer_sleep_until(u64 t);

/* Counting partition (count.c). */
void count_test(const struct bootargs *a);

/* FP/SIMD values kept across switches (fp.c). */
void fp_test(const struct dt_info *dt, const struct bootargs *a, const volatile u32 *cpu_up);
void fp_secondary(const struct dt_info *dt, u32 cpu);

/* An SPI counted by the IRQ handler, for tests in other files (irqtest.c). */
void irq_watch_spi(u32 intid);
u32 irq_spi_taken(void);

/* True once partition p has stopped for good: off, halted or stopped (control.c). */
bool partition_ended(u64 p);

/* Channels (ipc.c), health monitor (hm.c), fuzzing (fuzz.c). */
void channel_tests(const struct dt_info *dt, const struct bootargs *a);
void hm_tests(const struct bootargs *a);
void watchdog_test(const struct dt_info *dt, const struct bootargs *a);
void fuzz_test(const struct dt_info *dt, const struct bootargs *a);
void ipc_bench(const struct bootargs *a);

/* Architecture conformance (arch.c); main.c reports what it cannot handle. */
void arch_test(const struct dt_info *dt, const struct bootargs *a);
void exception_report(u64 esr, u64 elr, u64 far);

/* Timed outputs (tio.c). */
void tio_tests(const struct bootargs *a);
/* One 32-bit store under the conformance vectors: the ESR it raised, 0 if none (arch.c). */
u64 arch_try_store(u64 addr, u32 value);

/* Accelerators, the native model (accel.c). */
void accel_test(const struct dt_info *dt, const struct bootargs *a);

#endif
