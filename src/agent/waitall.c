/* SPDX-License-Identifier: MIT */
/* waitpid, wait4 and waitid with __WALL or __WCLONE, interposed. The sampler's task is a child
 * of the program's (task.h) with no exit signal: a plain wait never sees it, but one with
 * __WALL or __WCLONE for any child does (tracers wait so: strace -f, gdb), and would wait for
 * it for good, as it ends only with the program. So before such a wait the agent stops: the
 * profile so far is written, the task ends and is reaped (sampler.c), and the program is not
 * profiled from there on. A wait for one given child is left alone. */
#include <dlfcn.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "agent.h"

#define EXPORT __attribute__((visibility("default")))

typedef pid_t (*waitpid_fn)(pid_t, int *, int);
typedef pid_t (*wait4_fn)(pid_t, int *, int, struct rusage *);
typedef int (*waitid_fn)(idtype_t, id_t, siginfo_t *, int);

static waitpid_fn real_waitpid;
static wait4_fn real_wait4;
static waitid_fn real_waitid;

__attribute__((constructor)) static void waitall_init(void)
{
	real_waitpid = (waitpid_fn)dlsym(RTLD_NEXT, "waitpid");
	real_wait4 = (wait4_fn)dlsym(RTLD_NEXT, "wait4");
	real_waitid = (waitid_fn)dlsym(RTLD_NEXT, "waitid");
}

/* A wait that could return the sampler's task: any child (or a process group's), with the
 * flags that include children without an exit signal. */
static void before(int any_child, int options)
{
	if (any_child && (options & (__WALL | __WCLONE)))
		wp_agent_before_wall_wait();
}

EXPORT pid_t waitpid(pid_t pid, int *status, int options)
{
	before(pid <= 0, options);
	if (!real_waitpid)
		real_waitpid = (waitpid_fn)dlsym(RTLD_NEXT, "waitpid");
	return real_waitpid(pid, status, options);
}

EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	before(pid <= 0, options);
	if (!real_wait4)
		real_wait4 = (wait4_fn)dlsym(RTLD_NEXT, "wait4");
	return real_wait4(pid, status, options, ru);
}

EXPORT int waitid(idtype_t idtype, id_t id, siginfo_t *info, int options)
{
	before(idtype == P_ALL || idtype == P_PGID, options);
	if (!real_waitid)
		real_waitid = (waitid_fn)dlsym(RTLD_NEXT, "waitid");
	return real_waitid(idtype, id, info, options);
}
