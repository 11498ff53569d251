/* SPDX-License-Identifier: MIT */
#ifndef LIB_WAITS_LIB_H
#define LIB_WAITS_LIB_H
#include <sys/types.h>
struct pool;
struct pool *pool_start(void);
pid_t pool_tid(struct pool *p);
void pool_stop(struct pool *p);
#endif
