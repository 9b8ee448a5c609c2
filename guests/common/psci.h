#ifndef PSCI_H
#define PSCI_H

#include "arch.h"
#include "dt.h"

#define PSCI_VERSION 0x84000000u
#define PSCI_SYSTEM_OFF 0x84000008u
#define PSCI_SYSTEM_RESET 0x84000009u
#define PSCI_CPU_ON_64 0xC4000003u
#define PSCI_CPU_OFF 0x84000002u
#define PSCI_AFFINITY_INFO_64 0xC4000004u
#define PSCI_MIGRATE 0x84000005u
#define PSCI_FEATURES 0x8400000Au
#define PSCI_AFFINITY_OFF 1
#define PSCI_ALREADY_ON (-4)
#define PSCI_ON_PENDING (-5)

/* An SMC Calling Convention call through hvc #0 or smc #0. */
s64 smccc_call(enum psci_method m, u64 fn, u64 a1, u64 a2, u64 a3);

/* Powers the partition (or machine) off; if that fails, halts. */
__attribute__((noreturn)) void power_off(enum psci_method m);

/* Restarts the partition (or machine); if that fails, halts. */
__attribute__((noreturn)) void reset(enum psci_method m);

#endif
