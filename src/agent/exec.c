/* SPDX-License-Identifier: MIT */
/* The exec family, interposed: the profile so far is written before the image is replaced
 * (the next image starts afresh and keeps this one's file as NAME.exec1.prof), and no late
 * signal of ours can reach the new image, where it would meet SIG_DFL ("Profiling timer
 * expired"). When the exec fails, this image goes on being profiled. agent.c does the work;
 * these only bracket libc's call. */
#include <alloca.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <unistd.h>

#include "agent.h"

#define EXPORT __attribute__((visibility("default")))

static void *next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

#define EXEC_WRAP(call)                         \
	do {                                    \
		wp_agent_before_exec();                  \
		int r_ = (call);                \
		wp_agent_after_failed_exec();            \
		return r_;                      \
	} while (0)

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	static int (*real)(const char *, char *const[], char *const[]);
	if (!real)
		real = next("execve");
	EXEC_WRAP(real(path, argv, envp));
}

EXPORT int execv(const char *path, char *const argv[])
{
	static int (*real)(const char *, char *const[]);
	if (!real)
		real = next("execv");
	EXEC_WRAP(real(path, argv));
}

EXPORT int execvp(const char *file, char *const argv[])
{
	static int (*real)(const char *, char *const[]);
	if (!real)
		real = next("execvp");
	EXEC_WRAP(real(file, argv));
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	static int (*real)(const char *, char *const[], char *const[]);
	if (!real)
		real = next("execvpe");
	EXEC_WRAP(real(file, argv, envp));
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	static int (*real)(int, char *const[], char *const[]);
	if (!real)
		real = next("fexecve");
	EXEC_WRAP(real(fd, argv, envp));
}

/* execl, execlp, execle: collect the variadic arguments, then the vector forms above. */
#define COLLECT_ARGS(first, ap, argv, extra)                                  \
	size_t n_ = 1;                                                        \
	va_start(ap, first);                                                  \
	while (va_arg(ap, char *))                                            \
		n_++;                                                         \
	va_end(ap);                                                           \
	char **argv = alloca((n_ + 1) * sizeof(char *));                      \
	va_start(ap, first);                                                  \
	argv[0] = (char *)first;                                              \
	for (size_t i_ = 1; i_ <= n_; i_++)                                   \
		argv[i_] = va_arg(ap, char *);                                \
	extra;                                                                \
	va_end(ap)

EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	COLLECT_ARGS(arg, ap, argv, (void)0);
	return execv(path, argv);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	COLLECT_ARGS(arg, ap, argv, (void)0);
	return execvp(file, argv);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	char **envp;
	COLLECT_ARGS(arg, ap, argv, envp = va_arg(ap, char **));
	return execve(path, argv, envp);
}
