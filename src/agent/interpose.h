/* SPDX-License-Identifier: MIT */
/* What every interposer file needs: a pointer to the function it stands in for, the
 * definition the program would have called without us (dlsym RTLD_NEXT). A file lists its
 * functions once, X(name, return type, (argument types)), and expands the list with
 * WP_DECLARE_REAL (the pointers) and WP_RESOLVE_REAL (in its init, from the constructor);
 * WP_REAL(name) at the top of an interposer resolves on demand when another library's
 * constructor calls us before ours ran, and fails the call with ENOSYS when there is none.
 * Async-signal-safe once resolved (dlsym itself is not: the constructor resolves early). */
#ifndef WP_INTERPOSE_H
#define WP_INTERPOSE_H

#include <dlfcn.h>
#include <errno.h>

#define WP_DECLARE_REAL(name, ret, args) static ret(*real_##name) args;
#define WP_RESOLVE_REAL(name, ret, args) real_##name = (ret(*) args)dlsym(RTLD_NEXT, #name);

#define WP_REAL(name)                                                              \
	do {                                                                       \
		if (__builtin_expect(!real_##name, 0))                             \
			real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name); \
		if (!real_##name) {                                                \
			errno = ENOSYS;                                            \
			return -1;                                                 \
		}                                                                  \
	} while (0)

#endif
