/* SPDX-License-Identifier: MIT */
/* _exit and _Exit, interposed: they end the process without destructors or exit handlers
 * (shells end so, and fork children, and programs after a fatal error), so the agent writes
 * the profile here, with the status, before libc's call. exit() and a return from main come
 * through agent.c's on_exit handler instead; glibc's own internal calls of _exit (exit's
 * last step, posix_spawn's child) do not come here. Async-signal-safe: _exit may be called
 * from a signal handler (agent.c's wp_agent_before__exit is). */
#include <dlfcn.h>
#include <unistd.h>
#include <stdlib.h>
#include <sys/syscall.h>

#include "agent.h"

#define EXPORT __attribute__((visibility("default")))

typedef void (*exit_fn)(int) __attribute__((noreturn));

/* libc's _exit; looked up before the first call could need it (our constructor runs first
 * in practice; dlsym is not async-signal-safe, so a call before it falls back to the system
 * call). */
static exit_fn real_exit_, real_Exit;

__attribute__((constructor)) static void exit_init(void)
{
	real_exit_ = (exit_fn)dlsym(RTLD_NEXT, "_exit");
	real_Exit = (exit_fn)dlsym(RTLD_NEXT, "_Exit");
}

static __attribute__((noreturn)) void leave(exit_fn real, int status)
{
	if (real)
		real(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

EXPORT void _exit(int status)
{
	wp_agent_before__exit(status);
	leave(real_exit_, status);
}

EXPORT void _Exit(int status)
{
	wp_agent_before__exit(status);
	leave(real_Exit, status);
}
