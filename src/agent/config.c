/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/numparse.h"
#include "log.h"
#include "signals.h"

/* Parses a whole decimal number in [lo, hi]; rejects signs, spaces and trailing junk, which a
 * user could not have meant. The command parses its options with the same function. */
static int parse_int(const char *s, long lo, long hi, int *out)
{
	return wp_parse_int(s, lo, hi, out);
}

/* A run id as the command writes it ("<pid>-<ns>"): short, and safe in a META line. */
static int run_id_ok(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (n >= 63 || !(isalnum((unsigned char)s[n]) || strchr("._-", s[n])))
			return 0;
	return n > 0;
}

static int bad(const char *var, const char *value, const char *accepts)
{
	wp_log("%s='%s' is not valid: %s; profiling is off for this run", var, value, accepts);
	return -1;
}

const struct wp_config wp_config_none;

int wp_config_load(struct wp_config *cfg, char *(*getenv_fn)(const char *))
{
	const char *v;
	memset(cfg, 0, sizeof(*cfg));
	cfg->mode = WP_MODE_WALL;
	cfg->hz = WP_DEFAULT_HZ;
	cfg->threads = WP_DEFAULT_THREADS;
	cfg->checkpoint_s = WP_DEFAULT_CHECKPOINT_S;
	cfg->autostart = -1;
	strcpy(cfg->out, WP_DEFAULT_OUT);

	cfg->checkpoint_s = WP_DEFAULT_CHECKPOINT_S;
	cfg->autostart = -1;

	if ((v = getenv_fn("WALLPROF_TEST"))) {
		cfg->test_signal_all = strstr(v, "signal-all") != NULL;
		cfg->test_no_retry = strstr(v, "no-retry") != NULL;
		cfg->test_tight_ration = strstr(v, "tight-ration") != NULL;
		cfg->test_no_unshare = strstr(v, "no-unshare") != NULL;
		cfg->test_exit_on_sampler = strstr(v, "exit-on-sampler") != NULL;
		cfg->test_thread_sampler = strstr(v, "thread-sampler") != NULL;
		cfg->test_slow_holders = strstr(v, "slow-holders") != NULL;
		cfg->test_no_waits = strstr(v, "no-waits") != NULL;
		cfg->test_linger = strstr(v, "linger") != NULL;
		cfg->test_tagless = strstr(v, "tagless") != NULL;
		cfg->test_slow_tick = strstr(v, "slow-tick") != NULL;
		cfg->test_no_perf = strstr(v, "no-perf") != NULL;
		cfg->test_slow_fatal = strstr(v, "slow-fatal") != NULL;
		cfg->test_no_idle = strstr(v, "no-idle") != NULL;
		cfg->test_long_slice = strstr(v, "long-slice") != NULL;
	}

	if ((v = getenv_fn("WALLPROF_MODE"))) {
		if (!strcmp(v, "wall"))
			cfg->mode = WP_MODE_WALL;
		else if (!strcmp(v, "cpu"))
			cfg->mode = WP_MODE_CPU;
		else
			return bad("WALLPROF_MODE", v, "use wall or cpu");
	}
	if ((v = getenv_fn("WALLPROF_HZ")) && parse_int(v, 1, 10000, &cfg->hz))
		return bad("WALLPROF_HZ", v, "use a whole number of ticks per second from 1 to 10000");
	if ((v = getenv_fn("WALLPROF_THREADS")) && parse_int(v, 0, 1000000, &cfg->threads))
		return bad("WALLPROF_THREADS", v,
			   "use a whole number of threads per tick from 1 to 1000000, or 0 for all");
	if ((v = getenv_fn("WALLPROF_OUT"))) {
		if (!*v || strlen(v) >= sizeof(cfg->out) - 32)
			return bad("WALLPROF_OUT", v, "use a file path (%p stands for the pid)");
		strcpy(cfg->out, v);
	}
	if ((v = getenv_fn("WALLPROF_SIGNAL")) && (cfg->signal = wp_signals_parse_env(v)) < 0)
		return -1;
	if ((v = getenv_fn("WALLPROF_CHECKPOINT")) && parse_int(v, 0, 86400, &cfg->checkpoint_s))
		return bad("WALLPROF_CHECKPOINT", v,
			   "use whole seconds between checkpoints from 0 (none) to 86400");
	if ((v = getenv_fn("WALLPROF_ROOT_PID")) && parse_int(v, 1, 1 << 30, &cfg->root_pid))
		cfg->root_pid = 0;
	if ((v = getenv_fn("WALLPROF_RUN")) && run_id_ok(v))
		strcpy(cfg->run, v); /* else ignored like a bad WALLPROF_ROOT_PID: not a user setting */
	if ((v = getenv_fn("WALLPROF_AUTOSTART"))) {
		if (!strcmp(v, "1"))
			cfg->autostart = 1;
		else if (!strcmp(v, "0"))
			cfg->autostart = 0;
		else
			return bad("WALLPROF_AUTOSTART", v,
				   "use 1 (sample from the start) or 0 (wait for wallprof_start)");
	}
	if ((v = getenv_fn("WALLPROF_QUIET"))) {
		if (!strcmp(v, "1"))
			cfg->quiet = 1;
		else if (!strcmp(v, "0") || !*v)
			cfg->quiet = 0;
		else
			return bad("WALLPROF_QUIET", v, "use 1 to keep the agent off the program's stderr, or 0");
	}
	return 0;
}

int wp_config_out_path(const struct wp_config *cfg, int pid, char *buf, unsigned long cap)
{
	unsigned long n = 0;
	int has_pid = strstr(cfg->out, "%p") != NULL;
	for (const char *p = cfg->out; *p; p++) {
		char num[16];
		const char *ins = NULL;
		if (p[0] == '%' && p[1] == 'p') {
			wp_format(num, sizeof(num), "%d", pid);
			ins = num;
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			ins = "%";
			p++;
		}
		if (ins) {
			size_t l = strlen(ins);
			if (n + l >= cap)
				return -ENAMETOOLONG;
			memcpy(buf + n, ins, l);
			n += l;
		} else {
			if (n + 1 >= cap)
				return -ENAMETOOLONG;
			buf[n++] = *p;
		}
	}
	buf[n] = 0;
	if (!has_pid && cfg->root_pid && cfg->root_pid != pid) {
		char suffix[24];
		size_t sl = wp_format(suffix, sizeof(suffix), ".%d", pid);
		char *dot = strrchr(buf, '.'), *slash = strrchr(buf, '/');
		size_t at = dot && dot > buf && (!slash || dot > slash + 1) ? (size_t)(dot - buf) : n;
		if (n + sl >= cap)
			return -ENAMETOOLONG;
		memmove(buf + at + sl, buf + at, n - at + 1);
		memcpy(buf + at, suffix, sl);
	}
	return 0;
}

int wp_config_unsampled_path(const struct wp_config *cfg, char *buf, unsigned long cap)
{
	static const char suffix[] = ".unsampled";
	unsigned long n = 0;
	int cut = 0;
	for (const char *p = cfg->out; *p && !cut; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			cut = 1;
			break;
		}
		if (p[0] == '%' && p[1] == '%')
			p++;
		if (n + 1 >= cap)
			return -ENAMETOOLONG;
		buf[n++] = *p;
	}
	buf[n] = 0;
	char *slash = strrchr(buf, '/');
	char *base = slash ? slash + 1 : buf;
	if (cut) {
		while (n > (unsigned long)(base - buf) && strchr(".-_", buf[n - 1]))
			buf[--n] = 0;
	} else {
		char *dot = strrchr(base, '.');
		if (dot && dot > base)
			n = (unsigned long)(dot - buf);
	}
	if (n == (unsigned long)(base - buf)) { /* nothing left of the name: "%p.prof" */
		if (n + 8 >= cap)
			return -ENAMETOOLONG;
		memcpy(buf + n, "wallprof", 8);
		n += 8;
	}
	if (n + sizeof(suffix) > cap)
		return -ENAMETOOLONG;
	memcpy(buf + n, suffix, sizeof(suffix));
	return 0;
}
