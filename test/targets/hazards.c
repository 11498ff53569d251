/* SPDX-License-Identifier: MIT */
/* hazards: threads that spend their time where a sampling profiler is most likely to deadlock
 * or crash, all running at once:
 *
 *   dlopener    dlopen/dlsym/call/dlclose of libhazard_lib.so in a loop (the loader lock,
 *               a module appearing and disappearing under the profiler)
 *   phdr        dl_iterate_phdr with a callback that spins ~50 us or sleeps 1 ms (holding the
 *               loader lock while it does)
 *   malloc1/2   malloc/realloc/free storms (the malloc arena locks)
 *   sigframe    spins inside its own SIGUSR1 handler (sigframe_fn -> pthread_kill ->
 *               [signal frame] -> usr1_handler -> handler_spin), so the profiler's stacks must
 *               continue through the kernel's signal frame to sigframe_fn and start_thread
 *
 * Usage: hazards [SECONDS] (default 4). The library is found next to the executable (or at
 * $HAZARD_LIB). HAZARDS_ONLY=name,name... runs only those threads (to tell which hazard does
 * what). WP_TRUTH=FILE receives loops.NAME and tid.NAME per thread. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

static uint64_t deadline;
static char lib_path[PATH_MAX];
static volatile uint64_t sink;

static int done(void)
{
	return mono_ns() >= deadline;
}

struct thr {
	const char *name;
	void *(*fn)(void *);
	pthread_t handle;
	pid_t tid;
	uint64_t loops;
	int failed;
};

static void begin(struct thr *t)
{
	t->tid = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), t->name);
}

static void spin_us(unsigned us)
{
	uint64_t end = mono_ns() + us * 1000ull;
	while (mono_ns() < end)
		;
}

KEEP static void *dlopen_fn(void *arg)
{
	struct thr *t = arg;
	begin(t);
	while (!done()) {
		void *h = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "hazards: dlopen %s: %s\n", lib_path, dlerror());
			t->failed = 1;
			break;
		}
		uint64_t (*f)(uint64_t) = (uint64_t (*)(uint64_t))dlsym(h, "hazard_work");
		if (!f) {
			fprintf(stderr, "hazards: dlsym: %s\n", dlerror());
			t->failed = 1;
			dlclose(h);
			break;
		}
		sink += f(t->loops);
		if (dlclose(h) != 0) {
			fprintf(stderr, "hazards: dlclose: %s\n", dlerror());
			t->failed = 1;
			break;
		}
		t->loops++;
	}
	return NULL;
}

KEEP static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct thr *t = arg;
	(void)size;
	sink += info->dlpi_phnum;
	/* mostly spin a little; every 16th walk sleeps on the loader lock for a millisecond */
	if ((t->loops & 15) == 0)
		sleep_ns(1000000);
	else
		spin_us(50);
	return 0;
}

KEEP static void *phdr_fn(void *arg)
{
	struct thr *t = arg;
	begin(t);
	while (!done()) {
		dl_iterate_phdr(phdr_cb, t);
		BARRIER();
		t->loops++;
	}
	return NULL;
}

KEEP static void *malloc_fn(void *arg)
{
	struct thr *t = arg;
	enum { SLOTS = 512 };
	static __thread void *slot[SLOTS];
	begin(t);
	uint64_t r = (uint64_t)t->tid * 2654435761u + 1;
	while (!done()) {
		for (int i = 0; i < 4096; i++) {
			r ^= r << 13;
			r ^= r >> 7;
			r ^= r << 17;
			unsigned k = (unsigned)(r % SLOTS);
			size_t sz = (r >> 20) % 8 == 0 ? (size_t)((r >> 24) % 200000) : (size_t)((r >> 24) % 512);
			if (slot[k] && (r & 0x100)) {
				void *p = realloc(slot[k], sz + 1);
				if (p)
					slot[k] = p;
			} else {
				free(slot[k]);
				slot[k] = malloc(sz + 1);
			}
			if (slot[k])
				((char *)slot[k])[0] = (char)i;
		}
		t->loops++;
	}
	for (int k = 0; k < SLOTS; k++) {
		free(slot[k]);
		slot[k] = NULL;
	}
	return NULL;
}

static volatile sig_atomic_t in_handler;

KEEP static void handler_spin(void)
{
	/* 2 ms inside the handler */
	spin_us(2000);
	BARRIER();
}

KEEP static void usr1_handler(int sig)
{
	(void)sig;
	in_handler = 1;
	handler_spin();
	BARRIER();
	in_handler = 0;
}

KEEP static void *sigframe_fn(void *arg)
{
	struct thr *t = arg;
	begin(t);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = usr1_handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGUSR1, &sa, NULL) != 0) {
		perror("sigaction");
		t->failed = 1;
		return NULL;
	}
	while (!done()) {
		/* the handler runs on this thread before pthread_kill returns */
		pthread_kill(pthread_self(), SIGUSR1);
		BARRIER();
		spin_us(100);
		t->loops++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = run_seconds(argc, argv, 4.0);
	const char *env_lib = getenv("HAZARD_LIB");
	if (env_lib && *env_lib) {
		snprintf(lib_path, sizeof(lib_path), "%s", env_lib);
	} else {
		char exe[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0) {
			perror("readlink /proc/self/exe");
			return 1;
		}
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		static const char lib_name[] = "/libhazard_lib.so";
		if (!slash || (size_t)(slash - exe) + sizeof(lib_name) > sizeof(lib_path)) {
			fprintf(stderr, "hazards: cannot place the library next to %s\n", exe);
			return 1;
		}
		memcpy(lib_path, exe, (size_t)(slash - exe));
		memcpy(lib_path + (slash - exe), lib_name, sizeof(lib_name));
	}
	truth_open();

	struct thr th[] = {
		{ .name = "dlopener", .fn = dlopen_fn },
		{ .name = "phdr", .fn = phdr_fn },
		{ .name = "malloc1", .fn = malloc_fn },
		{ .name = "malloc2", .fn = malloc_fn },
		{ .name = "sigframe", .fn = sigframe_fn },
	};
	enum { N = sizeof(th) / sizeof(th[0]) };
	const char *only = getenv("HAZARDS_ONLY");
	int skip[N];
	for (int i = 0; i < N; i++) {
		skip[i] = 0;
		if (only && *only) {
			size_t l = strlen(th[i].name);
			const char *p = only;
			skip[i] = 1;
			while ((p = strstr(p, th[i].name))) {
				if ((p == only || p[-1] == ',') && (p[l] == ',' || p[l] == 0))
					skip[i] = 0;
				p += l;
			}
		}
	}
	deadline = mono_ns() + (uint64_t)(seconds * 1e9);
	for (int i = 0; i < N; i++) {
		if (skip[i])
			continue;
		int e = pthread_create(&th[i].handle, NULL, th[i].fn, &th[i]);
		if (e) {
			fprintf(stderr, "pthread_create: %s\n", strerror(e));
			return 1;
		}
	}
	int failed = 0;
	for (int i = 0; i < N; i++) {
		if (skip[i])
			continue;
		pthread_join(th[i].handle, NULL);
		failed |= th[i].failed;
	}
	for (int i = 0; i < N; i++) {
		if (skip[i])
			continue;
		truth("tid.%s %d", th[i].name, (int)th[i].tid);
		truth("loops.%s %llu", th[i].name, (unsigned long long)th[i].loops);
	}
	truth_close();
	printf("hazards: %s\n", failed ? "FAILED" : "done");
	return failed ? 1 : 0;
}
