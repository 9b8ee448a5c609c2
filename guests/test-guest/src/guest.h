/* Declarations shared between main.c and the feature files. */
#ifndef GUEST_H
#define GUEST_H

#include "arch.h"
#include "bootargs.h"
#include "dt.h"

void dcache_clean_invalidate_all(void);
void misbehave(const struct dt_info *dt, const struct bootargs *a);

#endif
