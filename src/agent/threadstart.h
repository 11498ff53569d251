/* SPDX-License-Identifier: MIT */
#ifndef WP_THREADSTART_H
#define WP_THREADSTART_H

#include <pthread.h>

/* The agent's own threads (the lender of the sampler's task, the sampler when it cannot have
 * a task, the module watcher, the exit thread): the C library's pthread_create, past the
 * interposer, which is there for the program's threads only. They publish no mask (they
 * block every signal and are never signalled) and take no start slot. */
int wp_own_thread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			 void *arg);

#endif
