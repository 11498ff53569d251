/* The agent's life: the constructor reads the settings and starts the sampler; the destructor
 * stops it and writes the profile. Everything the program can see of wallprof starts here. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wallprof.h"

#include "config.h"
#include "eintr.h"
#include "handshake.h"
#include "log.h"
#include "modules.h"
#include "sampler.h"
#include "stats.h"
#include "threads.h"
#include "writer.h"

static struct wp_config cfg;
static int running;
static pid_t owner_pid;
static char meta_text[8192];

WALLPROF_API const char *wallprof_version(void)
{
	return WALLPROF_VERSION;
}

/* META lines the agent knows from its settings; the writer adds the measurements. */
const char *wp_agent_meta(void);
const char *wp_agent_meta(void)
{
	return meta_text;
}

/* The command line from /proc/self/cmdline, NULs turned into spaces, for the report header. */
static void read_command(char *out, size_t cap)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, out, cap - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		out[0] = 0;
		return;
	}
	for (ssize_t i = 0; i < n; i++)
		if (out[i] == 0 || out[i] == '\n')
			out[i] = ' ';
	while (n > 0 && out[n - 1] == ' ')
		n--;
	out[n] = 0;
}

static void build_meta(void)
{
	char cmd[2048];
	read_command(cmd, sizeof(cmd));
	wp_format(meta_text, sizeof(meta_text),
		  "wallprof_version=%s\nmode=%s\nhz=%d\nthreads_per_tick=%d\npid=%d\ncommand=%s\n"
		  "signal=%d\n",
		  WALLPROF_VERSION, cfg.mode == WP_MODE_CPU ? "cpu" : "wall", cfg.hz, cfg.threads,
		  (int)getpid(), cmd, wp_handshake_signal());
}

/* In a fork child the sampler thread does not exist: never write the parent's samples from
 * here, and never wait for a thread that is not there. */
static void atfork_child(void)
{
	running = 0;
}

__attribute__((constructor)) static void wallprof_agent_init(void)
{
	wp_eintr_init();
	if (wp_config_load(&cfg, getenv) != 0)
		return; /* the complaint is printed; the program runs untouched */
	owner_pid = getpid();
	if (cfg.test_no_retry)
		wp_eintr_disable_retry();
	int e;
	if ((e = wp_handshake_init(SIGPROF)) != 0 || (e = wp_modules_init()) != 0) {
		wp_log("cannot start (%s); profiling is off for this run", strerror(-e));
		return;
	}
	build_meta();
	if ((e = wp_sampler_start(&cfg)) != 0) {
		wp_log("cannot start the sampler thread (%s); profiling is off", strerror(-e));
		return;
	}
	pthread_atfork(NULL, NULL, atfork_child);
	running = 1;
}

__attribute__((destructor)) static void wallprof_agent_fini(void)
{
	if (!running || getpid() != owner_pid)
		return;
	running = 0;
	wp_sampler_stop();
	char path[PATH_MAX];
	if (wp_config_out_path(&cfg, (int)getpid(), path, sizeof(path)) != 0) {
		wp_log("WALLPROF_OUT is too long once expanded; the profile is lost");
		return;
	}
	/* Names can change over a thread's life; take the latest for those still here. */
	size_t n;
	struct wp_athread **live = wp_threads_live(&n);
	for (size_t i = 0; i < n; i++)
		if (live[i]->alive)
			wp_threads_reread_name(live[i]);
	if (wp_writer_write(path, NULL) == 0 && !cfg.quiet)
		wp_log("%llu samples from %llu threads (%llu missed) written to %s",
		       (unsigned long long)wp_stats.samples, (unsigned long long)wp_threads_seen(),
		       (unsigned long long)wp_stats_missed_total(), path);
}
