/* SPDX-License-Identifier: MIT */
/* Unwinding a copied thread state with libunwind's remote API.
 *
 * libunwind's local address space calls dl_iterate_phdr and malloc on cache misses, which
 * deadlocks against a suspended thread that holds the loader or malloc lock (reproduced, see
 * docs/design.md). The remote API with our own accessors reads only:
 *   - the registers the signal handler copied,
 *   - the stack bytes the sampler copied while the thread was held,
 *   - the private copies of unwind tables in the module table.
 * So unwinding needs no lock, no /proc and no host memory, and can run after the thread has
 * been resumed. Sampler thread only. */
#ifndef WP_UNWIND_H
#define WP_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/ucontext.h>

struct wp_unwind_input {
	const greg_t *gregs;
	uintptr_t stack_lo;       /* address of stack[0] in the thread */
	const uint8_t *stack;
	size_t stack_len;
};

struct wp_unwind_result {
	uint32_t n;
	int truncated;            /* stopped on an error or the depth limit, not at the root */
	uintptr_t max_sp;         /* highest stack pointer reached, to size later copies */
};

/* Loads libunwind (once) and makes an address space (again in a fork child). */
int wp_unwind_init(void);
/* A fork child: the parent's address space (its caches) is not trusted, nor freed. */
void wp_unwind_abandon(void);
/* Unwinds into pcs[0..max), leaf first. libunwind takes locks of its own (its memory pools,
 * the cache): the caller holds the fork guard (forkguard.h). */
void wp_unwind(const struct wp_unwind_input *in, uint64_t *pcs, uint32_t max,
	       struct wp_unwind_result *res);

#endif
