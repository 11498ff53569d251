/* SPDX-License-Identifier: MIT */
#include "title.h"

#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "fds.h"
#include "log.h"
#include "pages.h"

/* Titles kept per profile: a process that retitles itself at every request (PostgreSQL's
 * "postgres: ... SELECT", then "idle") would otherwise grow without end; past this, the title
 * with the fewest samples gives its slot to the new one. */
#define NTITLES 8
/* Bytes of a title kept: enough for any worker's title and the start of a long command line
 * (META holds 8 of them). */
#define TITLE_LEN 256
#define READ_EVERY_NS (20 * 1000000ull)

struct title {
	char cmdline[TITLE_LEN]; /* NULs as spaces, trailing ones cut */
	char comm[16];
	int retitled;            /* RETITLED_* */
	uint64_t samples;
};
enum { RETITLED_NO, RETITLED_ARGV, RETITLED_COMM };

static char exec_argv0[TITLE_LEN];
static char exec_comm[16];
static int exec_known;

static struct title titles[NTITLES] WP_BIG;
static int ntitles;
static int cur = -1;            /* the title found at the last read */
static uint64_t samples_at_read;
static uint64_t next_read_ns;
static pid_t program_pid;

/* /proc/PID/cmdline and /proc/PID/comm, opened once on the sampler and read with pread (each
 * read at offset 0 is made afresh): one system call a file per read, and no descriptor taken
 * and given back at every read, which fds.h's fallback (the agent on the program's table)
 * would make a race for the program's next open(). */
static struct proc_file {
	const char *name;
	int fd;             /* -1: not opened yet */
	int shared;         /* opened on the program's table (fds.h's fallback) */
	struct wp_fd_id id;
} files[2] = { { "cmdline", -1, 0, { 0 } }, { "comm", -1, 0, { 0 } } };
static int given_up;    /* a file could not be opened, or the program took its number */

void wp_title_exec(int argc, char **argv)
{
	if (argc < 1 || !argv || !argv[0])
		return;
	wp_format(exec_argv0, sizeof(exec_argv0), "%s", argv[0]);
	char comm[17] = { 0 };
	if (prctl(PR_GET_NAME, comm, 0, 0, 0) == 0)
		memcpy(exec_comm, comm, sizeof(exec_comm) - 1);
	exec_known = 1;
}

void wp_title_reset(pid_t pid)
{
	for (int i = 0; i < 2; i++) {
		/* a fork child: another pid's files. On the program's table they are copies of
		 * ours, closed while the number still names them; a private table's did not come
		 * along, and the number is the program's. */
		if (files[i].fd >= 0 && files[i].shared && wp_fds_still_ours(files[i].fd, &files[i].id))
			close(files[i].fd);
		files[i].fd = -1;
	}
	given_up = 0;
	program_pid = pid;
	ntitles = 0;
	cur = -1;
	samples_at_read = 0;
	next_read_ns = 0;
}

static int open_files(void)
{
	for (int i = 0; i < 2; i++) {
		char path[48];
		wp_format(path, sizeof(path), "/proc/%d/%s", (int)program_pid, files[i].name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		files[i].shared = !wp_fds_on_private_table();
		files[i].fd = wp_fds_hide(fd);
		wp_fds_identify(files[i].fd, &files[i].id);
	}
	return 0;
}

/* File i into buf (NUL-terminated); the bytes read, 0 when none. */
static size_t read_proc(int i, char *buf, size_t cap)
{
	if (files[i].shared && !wp_fds_still_ours(files[i].fd, &files[i].id)) {
		given_up = 1; /* the program closed or reused it: never reopened */
		return 0;
	}
	ssize_t n = pread(files[i].fd, buf, cap - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	return (size_t)n;
}

static int same(const struct title *a, const struct title *b)
{
	return !strcmp(a->cmdline, b->cmdline) && !strcmp(a->comm, b->comm);
}

static void read_title(void)
{
	struct title t = { 0 };
	size_t n = read_proc(0, t.cmdline, sizeof(t.cmdline));
	if (!n) /* the leader has ended (pthread_exit): its memory is gone from /proc */
		return;
	/* argv[0] as the process shows it now: the bytes before the first NUL */
	int argv0_changed = exec_known && strncmp(t.cmdline, exec_argv0, sizeof(exec_argv0) - 1);
	for (size_t i = 0; i < n; i++)
		if (t.cmdline[i] == 0 || t.cmdline[i] == '\n' || t.cmdline[i] == '\r')
			t.cmdline[i] = ' ';
	while (n > 0 && t.cmdline[n - 1] == ' ')
		n--;
	t.cmdline[n] = 0;
	size_t c = read_proc(1, t.comm, sizeof(t.comm));
	while (c > 0 && t.comm[c - 1] == '\n')
		t.comm[--c] = 0;
	t.retitled = argv0_changed			       ? RETITLED_ARGV
		     : exec_known && strcmp(t.comm, exec_comm) ? RETITLED_COMM
							       : RETITLED_NO;
	if (cur >= 0 && same(&titles[cur], &t))
		return;
	for (int i = 0; i < ntitles; i++)
		if (same(&titles[i], &t)) {
			cur = i;
			return;
		}
	int slot = ntitles;
	if (ntitles == NTITLES) {
		slot = cur == 0 ? 1 : 0;
		for (int i = 0; i < NTITLES; i++)
			if (i != cur && titles[i].samples < titles[slot].samples)
				slot = i;
	} else {
		ntitles++;
	}
	titles[slot] = t;
	cur = slot;
}

void wp_title_tick(uint64_t now_ns, uint64_t samples)
{
	if (now_ns < next_read_ns || program_pid <= 0 || given_up)
		return;
	next_read_ns = now_ns + READ_EVERY_NS;
	if (files[0].fd < 0 && open_files() != 0) {
		given_up = 1;
		return;
	}
	int before = cur;
	read_title();
	/* the samples since the last read: under the title found then (the first read's: under
	 * this one) */
	int to = before >= 0 ? before : cur;
	if (to >= 0) {
		titles[to].samples += samples - samples_at_read;
		samples_at_read = samples;
	}
}

size_t wp_title_meta(char *buf, size_t cap, uint64_t samples)
{
	size_t len = 0;
	static const char *const word[] = { "no", "argv", "comm" };
	for (int i = 0; i < ntitles && i < NTITLES && len + 1 < cap; i++) {
		uint64_t s = titles[i].samples + (i == cur ? samples - samples_at_read : 0);
		len += wp_format(buf + len, cap - len,
				 "title_%d=%s\ntitle_%d_comm=%s\ntitle_%d_samples=%llu\n"
				 "title_%d_retitled=%s\n",
				 i + 1, titles[i].cmdline, i + 1, titles[i].comm, i + 1,
				 (unsigned long long)s, i + 1, word[titles[i].retitled]);
	}
	return len;
}
