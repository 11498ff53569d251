/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fds.h"
#include "pages.h"
#include "task.h"

/* ---- where lines may go (decided once, in the constructor) ---- */

static int under_command;   /* started by `wallprof` (WALLPROF_ROOT_PID is set) */
static int quiet;           /* WALLPROF_QUIET=1: nothing on the program's stderr */
/* the process the user started, not one it ran or forked. Decided at the start: by the time
 * a line is printed (its end) the parent may be gone, and the process reparented to one that
 * was never profiled (multiprocessing's resource tracker printed its summary so, found by
 * CPython's test_multiprocessing_forkserver) */
static int user_process;
static struct wp_fd_id stderr_id; /* fd 2 as the process started */
static int chan_fd = -1;    /* the command's channel, in the root process only */
static struct wp_fd_id chan_id;
static _Atomic int chan_private; /* 1 once it lives in the agent's own table only */

static long small_number(const char *s)
{
	long v = 0;
	if (!s || !*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (1L << 30))
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

/* Whether one NAME=VALUE entry (or its first part, for a longer one) is LD_PRELOAD naming
 * libwallprof. */
static int entry_preloads_us(const char *e)
{
	return !strncmp(e, "LD_PRELOAD=", 11) && strstr(e, "libwallprof");
}

/* A process whose parent was started with the agent preloaded is one the user's program ran
 * (a shell's commands, a build's compilers): it keeps quiet. Unreadable: assume the user's.
 * Read in pieces on the stack: a static buffer for the whole environment was two page faults
 * more for every process's start (issue 19). An entry longer than a piece is judged by its
 * start. */
static int parent_is_profiled(void)
{
	char path[40];
	wp_format(path, sizeof(path), "/proc/%d/environ", (int)getppid());
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[2048];
	size_t have = 0;
	int found = 0, skipping = 0; /* skipping: the rest of an entry longer than buf */
	ssize_t n;
	while (!found && (n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0) {
		have += (size_t)n;
		buf[have] = 0;
		size_t i = 0;
		for (char *z; !found && (z = memchr(buf + i, 0, have - i)) != NULL;
		     i = (size_t)(z - buf) + 1) {
			found = !skipping && entry_preloads_us(buf + i);
			skipping = 0;
		}
		if (i == 0 && have == sizeof(buf) - 1) { /* one entry fills buf: its start */
			found = !skipping && entry_preloads_us(buf);
			skipping = 1;
			i = have;
		}
		memmove(buf, buf + i, have - i);
		have -= i;
	}
	close(fd);
	return found;
}

void wp_log_init(char *(*getenv_fn)(const char *))
{
	wp_fds_identify(2, &stderr_id);
	long root = small_number(getenv_fn("WALLPROF_ROOT_PID"));
	under_command = root > 0;
	/* Read here, not with the other settings: a complaint about one of those is a line
	 * too, and QUIET silences it as well. */
	const char *q = getenv_fn("WALLPROF_QUIET");
	quiet = q && !strcmp(q, "1");
	/* under the command, WALLPROF_ROOT_PID says which process is the user's: no /proc read */
	user_process = !under_command && !parent_is_profiled();
	long fd = small_number(getenv_fn("WALLPROF_PROGRESS_FD"));
	struct stat st;
	/* Only in the process the command ran, and only a pipe: in any other process that number
	 * may be one of the program's own descriptors. */
	if (under_command && root == (long)getpid() && fd > 2 && fstat((int)fd, &st) == 0 &&
	    S_ISFIFO(st.st_mode)) {
		chan_fd = (int)fd;
		int fl = fcntl(chan_fd, F_GETFL);
		if (fl >= 0)
			fcntl(chan_fd, F_SETFL, fl | O_NONBLOCK); /* a reader that stops never stalls us */
		fcntl(chan_fd, F_SETFD, FD_CLOEXEC);
		wp_fds_identify(chan_fd, &chan_id);
	}
}

static void forget_kept(void);

void wp_log_quiet(void)
{
	quiet = 1;
}

void wp_log_forked(void)
{
	user_process = 0;
	chan_fd = -1;
	atomic_store(&chan_private, 0);
	forget_kept(); /* the parent's warnings are in the parent's profile */
}

int wp_log_channel_fd(void)
{
	return chan_fd;
}

void wp_log_channel_handover(int private_table)
{
	if (chan_fd < 0 || !private_table)
		return;
	wp_log_forward(); /* what the constructor said so far, while both copies exist */
	close(chan_fd); /* the program's copy; the agent's table keeps its own */
	atomic_store(&chan_private, 1);
}

/* Whether this thread can write to the channel: the program's copy before the hand-over,
 * the agent's own after it. */
static int channel_reachable(void)
{
	if (chan_fd < 0)
		return 0;
	if (atomic_load(&chan_private))
		return wp_fds_on_private_table();
	/* in the program's table: only while that number still names our pipe */
	return wp_fds_still_ours(chan_fd, &chan_id);
}

static void write_all(int fd, const char *s, size_t n)
{
	int saved = errno;
	for (size_t off = 0; off < n;) {
		ssize_t k = write(fd, s + off, n - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		off += (size_t)k;
	}
	errno = saved;
}

void wp_log_channel_write(const char *line, size_t n)
{
	if (channel_reachable())
		write_all(chan_fd, line, n);
}

/* The program's fd 2, seen from the agent's own table (the sampler's task has a pid of its
 * own: /proc/self would be its table). */
static int stat_program_fd2(struct stat *st)
{
	char path[40];
	wp_format(path, sizeof(path), "/proc/%d/fd/2", (int)wp_task_program_pid());
	return stat(path, st);
}

/* Whether fd 2 (in the program's table) is still the stderr the process started with. From
 * the agent's own table, ask /proc: its fd 2 is a copy taken when it was made. */
static int stderr_unchanged(void)
{
	struct stat st;
	int r = wp_fds_on_private_table() ? stat_program_fd2(&st) : fstat(2, &st);
	return stderr_id.valid && r == 0 && st.st_dev == stderr_id.dev &&
	       st.st_ino == stderr_id.ino;
}

static void to_stderr(const char *line, size_t n)
{
	if (!quiet && !under_command && user_process && stderr_unchanged())
		write_all(2, line, n);
}

/* ---- formatting ---- */

struct out {
	char *buf;
	size_t cap, len;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->cap)
		o->buf[o->len++] = c;
}

static void put_num(struct out *o, unsigned long long v, int neg, unsigned base, int width)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	if (neg)
		tmp[n++] = '-';
	for (int pad = width - n; pad > 0; pad--)
		put(o, ' ');
	while (n)
		put(o, tmp[--n]);
}

static void vformat(struct out *o, const char *fmt, va_list ap)
{
	for (const char *p = fmt; *p; p++) {
		if (*p != '%') {
			put(o, *p);
			continue;
		}
		p++;
		int width = 0;
		while (*p >= '0' && *p <= '9')
			width = width * 10 + (*p++ - '0');
		int lng = 0;
		while (*p == 'l') {
			lng++;
			p++;
		}
		switch (*p) {
		case 's': {
			const char *s = va_arg(ap, const char *);
			for (s = s ? s : "(null)"; *s; s++)
				put(o, *s);
			break;
		}
		case 'd': {
			long long v = lng >= 2 ? va_arg(ap, long long) : lng ? va_arg(ap, long) : va_arg(ap, int);
			put_num(o, v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v, v < 0, 10, width);
			break;
		}
		case 'u':
		case 'x': {
			unsigned long long v = lng >= 2 ? va_arg(ap, unsigned long long)
				: lng ? va_arg(ap, unsigned long) : va_arg(ap, unsigned);
			put_num(o, v, 0, *p == 'x' ? 16 : 10, width);
			break;
		}
		case '%':
			put(o, '%');
			break;
		default: /* unsupported conversion: print it verbatim rather than guess */
			put(o, '%');
			if (*p)
				put(o, *p);
			else
				p--;
		}
	}
	o->buf[o->len] = 0;
}

size_t wp_format(char *buf, size_t cap, const char *fmt, ...)
{
	struct out o = { buf, cap, 0 };
	va_list ap;
	if (!cap)
		return 0;
	va_start(ap, fmt);
	vformat(&o, fmt, ap);
	va_end(ap);
	return o.len;
}


/* ---- warnings kept for the profile and the command ---- */

#define NMSG 16
#define MSG_LEN 400
static struct {
	_Atomic int ready; /* 1 once text is complete */
	_Atomic int sent;  /* 1 once the command has it */
	char text[MSG_LEN];
} msgs[NMSG] WP_BIG;
static _Atomic unsigned nmsgs;

/* In a fork child, before its sampler starts: no other thread of ours runs. */
static void forget_kept(void)
{
	for (unsigned i = 0; i < NMSG; i++) {
		atomic_store(&msgs[i].ready, 0);
		atomic_store(&msgs[i].sent, 0);
	}
	atomic_store(&nmsgs, 0);
}

static void keep(const char *line, size_t n)
{
	unsigned i = atomic_fetch_add(&nmsgs, 1);
	if (i >= NMSG)
		return; /* counted: META messages_dropped */
	if (n >= MSG_LEN)
		n = MSG_LEN - 1;
	memcpy(msgs[i].text, line, n);
	msgs[i].text[n] = 0;
	atomic_store(&msgs[i].ready, 1);
}

void wp_log_forward(void)
{
	if (!channel_reachable())
		return;
	unsigned n = atomic_load(&nmsgs);
	for (unsigned i = 0; i < n && i < NMSG; i++) {
		if (!atomic_load(&msgs[i].ready) || atomic_exchange(&msgs[i].sent, 1))
			continue;
		char line[MSG_LEN + 16];
		size_t len = wp_format(line, sizeof(line), "message=%s\n", msgs[i].text);
		write_all(chan_fd, line, len);
	}
}

size_t wp_log_meta(char *buf, size_t cap)
{
	size_t len = 0;
	unsigned n = atomic_load(&nmsgs);
	for (unsigned i = 0; i < n && i < NMSG && cap; i++)
		if (atomic_load(&msgs[i].ready))
			len += wp_format(buf + len, cap - len, "message_%u=%s\n", i + 1, msgs[i].text);
	if (n > NMSG && cap > len)
		len += wp_format(buf + len, cap - len, "messages_dropped=%u\n", n - NMSG);
	return len;
}

/* "wallprof: " + the formatted text, without the newline. */
static size_t line_of(char *line, size_t cap, const char *fmt, va_list ap)
{
	struct out o = { line, cap - 1, 0 };
	for (const char *prefix = "wallprof: "; *prefix; prefix++)
		put(&o, *prefix);
	vformat(&o, fmt, ap);
	return o.len;
}

/* Formats, keeps and sends a warning (`warning`), or not (the summary), then prints it where
 * allowed. */
static void say(int warning, const char *fmt, va_list ap)
{
	char line[512];
	int saved = errno;
	size_t n = line_of(line, sizeof(line) - 1, fmt, ap);
	if (warning) {
		keep(line + 10, n - 10);
		wp_log_forward();
	}
	line[n++] = '\n';
	to_stderr(line, n);
	errno = saved;
}

void wp_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say(1, fmt, ap);
	va_end(ap);
}

void wp_log_summary(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say(0, fmt, ap);
	va_end(ap);
}
