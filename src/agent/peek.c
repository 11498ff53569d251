/* SPDX-License-Identifier: MIT */
/* Fault-proof reads of our own memory (peek.h). */
#include "peek.h"

#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static pid_t mem_tid;

void wp_peek_set_tid(pid_t tid)
{
	mem_tid = tid;
}

ssize_t wp_peek_some(uintptr_t addr, void *dst, size_t len)
{
	struct iovec local = { dst, len }, remote = { (void *)addr, len };
	/* before the sampler runs (a process that ends before its first tick): the caller's own
	 * thread, alive as it reads */
	pid_t who = mem_tid ? mem_tid : (pid_t)syscall(SYS_gettid);
	return process_vm_readv(who, &local, 1, &remote, 1, 0);
}

int wp_peek(uint64_t addr, void *dst, size_t len)
{
	return addr && wp_peek_some((uintptr_t)addr, dst, len) == (ssize_t)len;
}
