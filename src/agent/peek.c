/* SPDX-License-Identifier: MIT */
/* Fault-proof reads of our own memory (peek.h). */
#include "peek.h"

#include <sys/uio.h>

static pid_t mem_tid;

void wp_peek_set_tid(pid_t tid)
{
	mem_tid = tid;
}

ssize_t wp_peek_some(uintptr_t addr, void *dst, size_t len)
{
	struct iovec local = { dst, len }, remote = { (void *)addr, len };
	return process_vm_readv(mem_tid, &local, 1, &remote, 1, 0);
}

int wp_peek(uint64_t addr, void *dst, size_t len)
{
	return addr && wp_peek_some((uintptr_t)addr, dst, len) == (ssize_t)len;
}
