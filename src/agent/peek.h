/* SPDX-License-Identifier: MIT */
/* Fault-proof reads of the process's own memory, for the sampler: a stack, a mutex's owner, a
 * poll set, code bytes around a pc. process_vm_readv on ourselves cannot fault: it stops at
 * the first unmapped byte, so a pointer freed or unmapped under us gives a short read, never a
 * SIGSEGV in someone else's process. No locks, no allocation: usable inside the window. */
#ifndef WP_PEEK_H
#define WP_PEEK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Whose memory is read: the sampler's own tid (the pid names the leader, which may have
 * exited; a thread of ours always works). Set once the sampler runs; 0 (a fork child's
 * start: the parent's sampler is not ours) reads through the calling thread. */
void wp_peek_set_tid(pid_t tid);
/* Up to `len` bytes at `addr`: the count read (stops at the first unmapped byte), -1 on error. */
ssize_t wp_peek_some(uintptr_t addr, void *dst, size_t len);
/* All `len` bytes at `addr`, or 0 (also for addr 0). */
int wp_peek(uint64_t addr, void *dst, size_t len);

/* FNV-1a: what tells two wait objects' descriptions apart in a key. */
#define WP_FNV0 0xcbf29ce484222325ull
static inline uint64_t wp_fnv(uint64_t h, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const uint8_t *)p)[i]) * 0x100000001b3ull;
	return h;
}

#endif
