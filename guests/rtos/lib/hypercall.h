/*
 * What the library's files share to reach Partita: the hypercall (which
 * the host tests answer in the hypervisor's place) and the range of
 * interrupts a partition's device tree may name for it.
 */
#ifndef RTOS_LIB_HYPERCALL_H
#define RTOS_LIB_HYPERCALL_H

#include "partita.h"

#ifdef HOST_TEST
struct partita_result test_hypercall(unsigned long fn, unsigned long a1, unsigned long a2,
				     unsigned long a3, unsigned long a4);
#define hypercall	test_hypercall
#else
#define hypercall	partita_call4
#endif

#define FIRST_SPI	32
#define LAST_SPI	1019

#endif
