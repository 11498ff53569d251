/* SPDX-License-Identifier: MIT */
/* One look at a thread of another process: snapshot.h says what and why. */
#include "snapshot.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

ssize_t wp_snap_read(pid_t pid, pid_t tid, const char *name, char *buf, size_t cap)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)pid, (int)tid, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

int wp_snap_state(pid_t pid, pid_t tid, struct wp_snap *s)
{
	char buf[512];
	s->state = 0;
	if (wp_snap_read(pid, tid, "stat", buf, sizeof(buf)) < 0)
		return -1;
	/* after the command's closing parenthesis (a name may hold one) */
	const char *p = strrchr(buf, ')');
	if (p && p[1] == ' ')
		s->state = p[2];
	if (wp_snap_read(pid, tid, "schedstat", buf, sizeof(buf)) < 0)
		return -1;
	unsigned long long run = 0, delay = 0;
	sscanf(buf, "%llu %llu", &run, &delay);
	s->run_ns = run;
	s->delay_ns = delay;
	return 0;
}

/* "nr a0 ... a5 sp pc" (blocked in a call), "-1 sp pc" (blocked, not in a call) or
 * "running". */
static void parse_syscall(const char *buf, struct wp_snap *s)
{
	uint64_t v[9] = { 0 };
	s->nr = -2;
	if (!strncmp(buf, "running", 7))
		return;
	char *end;
	long nr = strtol(buf, &end, 10);
	if (end == buf)
		return;
	int n = 0;
	for (const char *p = end; n < 8; n++) {
		while (*p == ' ')
			p++;
		if (!*p || *p == '\n')
			break;
		v[n] = strtoull(p, &end, 16);
		p = end;
	}
	s->nr = nr;
	if (nr >= 0 && n == 8) {
		memcpy(s->args, v, sizeof(s->args));
		s->gregs[REG_RSP] = (greg_t)v[6];
		s->gregs[REG_RIP] = (greg_t)v[7];
	} else if (nr < 0 && n == 2) {
		s->gregs[REG_RSP] = (greg_t)v[0];
		s->gregs[REG_RIP] = (greg_t)v[1];
	}
}

int wp_snap_thread(pid_t pid, pid_t tid, uint8_t *stack, size_t cap, struct wp_snap *s)
{
	char buf[256];
	memset(s, 0, sizeof(*s));
	s->stack = stack;
	if (wp_snap_state(pid, tid, s) < 0 || wp_snap_read(pid, tid, "syscall", buf, sizeof(buf)) < 0)
		return -1;
	parse_syscall(buf, s);
	uint64_t sp = (uint64_t)s->gregs[REG_RSP];
	if (s->nr == -2 || !sp || !cap)
		return 0;
	/* A stack may end less than `cap` bytes above sp: the read stops at the first unmapped
	 * byte (a partial read is what remains) */
	struct iovec local = { stack, cap }, remote = { (void *)(uintptr_t)sp, cap };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0) {
		/* the copy may cross into a guard page: retry up to the end of sp's page range */
		size_t first = 4096 - (sp & 4095);
		local.iov_len = remote.iov_len = first < cap ? first : cap;
		n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	}
	s->stack_len = n > 0 ? (size_t)n : 0;
	struct wp_snap after;
	if (wp_snap_state(pid, tid, &after) < 0)
		return -1;
	s->moved = after.run_ns != s->run_ns;
	if (s->moved)
		s->stack_len = 0;
	return 0;
}
