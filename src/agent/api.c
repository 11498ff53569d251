/* SPDX-License-Identifier: MIT */
/* The public C API (include/wallprof.h) for programs that link libwallprof. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wallprof.h"

#include "api.h"
#include "log.h"
#include "threads.h"

/* start/stop/flush from several threads at once take turns. */
static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;

/* The environment's settings, overridden by the non-zero fields of `o`. */
static int settings(const struct wallprof_options *o, struct wp_config *c)
{
	if (o && o->quiet)
		wp_log_quiet(); /* before anything can be said: its complaints too */
	if (wp_config_load(c, getenv) != 0)
		return -EINVAL;
	if (!o)
		return 0;
	if (o->version != WALLPROF_OPTIONS_VERSION) {
		wp_log("wallprof_start: options version %d is not %d (rebuild against this "
		       "wallprof.h)", o->version, WALLPROF_OPTIONS_VERSION);
		return -EINVAL;
	}
	if (o->mode) {
		if (!strcmp(o->mode, "wall"))
			c->mode = WP_MODE_WALL;
		else if (!strcmp(o->mode, "cpu"))
			c->mode = WP_MODE_CPU;
		else {
			wp_log("wallprof_start: mode '%s' is not valid: use \"wall\" or \"cpu\"", o->mode);
			return -EINVAL;
		}
	}
	if (o->hz) {
		if (o->hz < 1 || o->hz > 10000) {
			wp_log("wallprof_start: hz %d is not valid: use 1 to 10000", o->hz);
			return -EINVAL;
		}
		c->hz = o->hz;
	}
	if (o->threads) {
		if (o->threads < -1) {
			wp_log("wallprof_start: threads %d is not valid: use a count, or -1 for all",
			       o->threads);
			return -EINVAL;
		}
		c->threads = o->threads == -1 ? 0 : o->threads;
	}
	if (o->out) {
		if (!*o->out || strlen(o->out) >= sizeof(c->out) - 32) {
			wp_log("wallprof_start: out must be a file path (%%p = pid)");
			return -EINVAL;
		}
		strcpy(c->out, o->out);
	}
	if (o->quiet)
		c->quiet = 1;
	return 0;
}

WALLPROF_API int wallprof_start(const struct wallprof_options *opts)
{
	struct wp_config c;
	int r = settings(opts, &c);
	if (r)
		return r;
	pthread_mutex_lock(&api_lock);
	r = wp_agent_begin(&c);
	pthread_mutex_unlock(&api_lock);
	return r;
}

WALLPROF_API int wallprof_stop(void)
{
	pthread_mutex_lock(&api_lock);
	int r = wp_agent_end();
	pthread_mutex_unlock(&api_lock);
	return r;
}

WALLPROF_API int wallprof_flush(const char *path)
{
	if (path && !*path)
		return -EINVAL;
	pthread_mutex_lock(&api_lock);
	int r = wp_agent_flush(path);
	pthread_mutex_unlock(&api_lock);
	return r;
}

WALLPROF_API int wallprof_thread_name(const char *name)
{
	if (name && !*name)
		return -EINVAL;
	return wp_threads_set_name((pid_t)syscall(SYS_gettid), name);
}

WALLPROF_API int wallprof_thread_exclude(int exclude)
{
	return wp_threads_exclude((pid_t)syscall(SYS_gettid), exclude);
}
