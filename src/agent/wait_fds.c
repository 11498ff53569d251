/* SPDX-License-Identifier: MIT */
/* What a descriptor wait waits for (wait_fds.h): one descriptor, or the set a poll, select or
 * epoll waits on, named from /proc and made readable. Sampler thread only, outside
 * suspension windows; not async-signal-safe. */
#include "wait_fds.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "fds.h"
#include "log.h"
#include "task.h"
#include "ino_slots.h"
#include "peek.h"
#include "pages.h"

/* A descriptor's target is looked up again (one readlink of /proc/self/task/TID/fd/N) at
 * most this often. A descriptor closed and reused meanwhile gives the old name at worst.
 * readlink, not stat: readlink only prints the path the kernel holds, where stat would ask
 * the file's filesystem (a hung NFS server would hang the sampler). */
#define FD_RECHECK_NS (200 * 1000000ull)
#define FD_CACHE 256
#define TARGET_MAX 200
/* A pipe's descriptors: one scan of the thread's fd directory (a readlink per entry) notes
 * every pipe it finds (those waited on first, then any that finds a free slot), so the pipes
 * other threads wait on next are known already; at most PIPE_SCAN_MAX entries, at most every
 * PIPE_GAP_NS, and again for a pipe after PIPE_RECHECK_NS (an inode is one pipe for its
 * whole life: only the descriptors on its ends may change). */
#define PIPE_SLOTS 128
#define PIPE_WAYS 4 /* a pipe lives in one of 4 neighbouring slots: no ping-pong of two */
#define PIPE_FDS 8
#define PIPE_SCAN_MAX 4096
#define PIPE_RECHECK_NS (10000 * 1000000ull)
#define PIPE_GAP_NS (100 * 1000000ull)
/* poll, select, epoll: descriptors read and named per wait. */
#define SET_READ 64
#define SET_NAMED 16
#define SELECT_MAX_FDS 1024
#define EPOLL_SLOTS 32
#define EPOLL_RECHECK_NS (1000 * 1000000ull)
#define DESC_MAX 1024 /* one descriptor's description, in a set */

struct fd_look {
	int fd; /* -1: empty */
	uint64_t id; /* the inode of "pipe:[N]", "socket:[N]"...; else a hash of the path */
	uint64_t checked_ns;
	uint32_t len;
	char target[TARGET_MAX];
};
static struct fd_look fd_cache[FD_CACHE] WP_BIG;
static int fd_cache_ready;

struct pipe_slot {
	struct wp_ino_slot key; /* first: ino_slots.h */
	uint64_t checked_ns; /* 0: not scanned yet */
	uint8_t wanted, truncated;
	uint32_t scan;	  /* the scan that filled it */
	int n;
	int fd[PIPE_FDS];
	uint8_t mode[PIPE_FDS]; /* 1 read, 2 write */
};
static struct pipe_slot pipes[PIPE_SLOTS] WP_BIG;

/* Pipe `ino`'s slot, or NULL; *victim: the slot it would take (an empty one, else the one
 * asked for least recently). */
static struct pipe_slot *pipe_slot(uint64_t ino, struct pipe_slot **victim)
{
	void *v;
	struct pipe_slot *s = wp_ino_slot_find(pipes, sizeof(pipes[0]), PIPE_SLOTS, PIPE_WAYS, ino, &v);
	*victim = v;
	return s;
}
static uint64_t pipe_scanned_ns, pipe_scan_cost_ns;
/* A scan is followed by at least 20 times its cost before the next (5% of the sampler's time
 * at most, on top of the ration): ~12 ms for 2,000 descriptors here. */
#define PIPE_COST_GAP 20
static uint32_t pipe_scans;

/* Keyed by the number alone: every epoll instance shows the same anonymous inode in fdinfo,
 * so a number closed and reused for another epoll within EPOLL_RECHECK_NS is named with the
 * old set (a wrong name at worst, for at most that long). */
struct epoll_slot {
	int epfd; /* -1: empty */
	uint64_t checked_ns;
	int n, total;
	int fds[SET_NAMED];
};
static struct epoll_slot epolls[EPOLL_SLOTS] WP_BIG;

void wp_wait_put(char *buf, uint32_t cap, uint32_t *len, const char *s, size_t n)
{
	if (n > cap - *len)
		n = cap - *len;
	memcpy(buf + *len, s, n);
	*len += (uint32_t)n;
}

void wp_wait_puts(char *buf, uint32_t cap, uint32_t *len, const char *s)
{
	wp_wait_put(buf, cap, len, s, strlen(s));
}

int wp_wait_may_open(void)
{
	return wp_fds_private();
}

long wp_wait_read_small(const char *path, char *buf, size_t cap, struct wp_look *look)
{
	uint64_t c0 = wp_self_cpu_ns();
	long n = -1;
	int fd = wp_wait_may_open() ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0) {
		n = 0;
		for (ssize_t got; (size_t)n < cap - 1 &&
				  (got = read(fd, buf + n, cap - 1 - (size_t)n)) > 0;)
			n += got;
		close(fd);
	}
	buf[n > 0 ? n : 0] = 0;
	look->cpu_ns += wp_self_cpu_ns() - c0;
	return n;
}

/* What tells two targets apart: the inode printed in "pipe:[N]" and the like, else a hash of
 * the path. */

static uint64_t bracket_number(const char *s, uint32_t len, int *ok)
{
	*ok = 0;
	if (len <= 3 || s[len - 1] != ']')
		return 0;
	const char *open = memchr(s, '[', len);
	uint64_t v = 0;
	int digits = 0;
	for (const char *p = open ? open + 1 : s + len; p < s + len - 1 && *p >= '0' && *p <= '9';
	     p++, digits++)
		v = v * 10 + (uint64_t)(*p - '0');
	*ok = open && digits && open + 1 + digits == s + len - 1;
	return v;
}

static uint64_t target_id(const char *s, uint32_t len)
{
	int ok;
	uint64_t v = bracket_number(s, len, &ok);
	return ok ? v : wp_fnv(WP_FNV0, s, len);
}

static int starts(const char *s, uint32_t len, const char *prefix)
{
	size_t n = strlen(prefix);
	return len >= n && !memcmp(s, prefix, n);
}

/* The cached look at descriptor `fd` (of thread `tid`'s table), or NULL when unknown (not
 * allowed to look, or unreadable). */
static const struct fd_look *look_fd(pid_t tid, int fd, struct wp_look *look)
{
	if (!fd_cache_ready) {
		for (int i = 0; i < FD_CACHE; i++)
			fd_cache[i].fd = -1;
		fd_cache_ready = 1;
	}
	struct fd_look *c = &fd_cache[(unsigned)fd % FD_CACHE];
	uint64_t now = wp_now_ns();
	if (c->fd == fd && now - c->checked_ns < FD_RECHECK_NS)
		return c;
	if (!look->may) {
		look->partial = 1;
		return c->fd == fd ? c : NULL;
	}
	uint64_t c0 = wp_self_cpu_ns();
	char path[64];
	const struct fd_look *res = NULL;
	wp_format(path, sizeof(path), "/proc/%d/task/%d/fd/%d", (int)wp_task_program_pid(), (int)tid, fd);
	ssize_t n = readlink(path, c->target, sizeof(c->target));
	if (n > 0) {
		c->len = (uint32_t)n;
		c->id = target_id(c->target, c->len);
		c->fd = fd;
		c->checked_ns = now;
		res = c;
	} else if (c->fd == fd) {
		c->fd = -1; /* closed meanwhile */
	}
	look->cpu_ns += wp_self_cpu_ns() - c0;
	return res;
}

/* Scans thread `tid`'s descriptors for every wanted pipe: each one's descriptors and their
 * access mode (the mode of the /proc link itself, lstat: r-x for a read end, -wx for a write
 * end; procfs answers without asking the file). Bounded to PIPE_SCAN_MAX entries. */
static void scan_pipes(pid_t tid, uint64_t now, struct wp_look *look)
{
	uint64_t c0 = wp_self_cpu_ns();
	char dir[48], path[80], target[TARGET_MAX];
	wp_format(dir, sizeof(dir), "/proc/%d/task/%d/fd", (int)wp_task_program_pid(), (int)tid);
	int dfd = wp_wait_may_open() ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	int seen = 0, truncated = 0;
	pipe_scans++;
	/* every pipe asked for lately is looked at again with the one that needs it: their
	 * rechecks come due together rather than one scan each */
	for (int i = 0; i < PIPE_SLOTS; i++)
		if (pipes[i].key.ino && now - pipes[i].key.used_ns < PIPE_RECHECK_NS)
			pipes[i].wanted = 1;
	for (int i = 0; i < PIPE_SLOTS; i++)
		if (pipes[i].wanted) {
			pipes[i].n = 0;
			pipes[i].scan = pipe_scans;
		}
	static char dents[4096] WP_BIG;
	while (dfd >= 0 && !truncated) {
		long got = syscall(SYS_getdents64, dfd, dents, sizeof(dents));
		if (got <= 0)
			break;
		for (long off = 0; off < got;) {
			struct dirent64 *d = (struct dirent64 *)(dents + off);
			off += d->d_reclen;
			if (d->d_name[0] < '0' || d->d_name[0] > '9')
				continue;
			if (++seen > PIPE_SCAN_MAX) {
				truncated = 1;
				break;
			}
			wp_format(path, sizeof(path), "%s/%s", dir, d->d_name);
			ssize_t n = readlink(path, target, sizeof(target));
			int ok;
			uint64_t ino = n > 6 ? bracket_number(target, (uint32_t)n, &ok) : 0;
			if (n > 8 && ok && starts(target, (uint32_t)n, "socket:["))
				wp_wait_net_note(ino); /* named at the next read of the tables */
			if (n <= 6 || !starts(target, (uint32_t)n, "pipe:["))
				continue;
			struct pipe_slot *v, *s = ok ? pipe_slot(ino, &v) : NULL;
			struct stat st;
			if (!ok || lstat(path, &st) != 0)
				continue;
			if (!s && !v->wanted && v->scan != pipe_scans &&
			    (!v->key.ino || now - v->key.used_ns >= PIPE_RECHECK_NS)) {
				s = v;
				/* a pipe nobody waits on yet, in a slot nobody needs now */
				memset(s, 0, sizeof(*s));
				s->key.ino = ino;
				s->wanted = 1;
			}
			if (!s || !s->wanted)
				continue;
			if (s->scan != pipe_scans) {
				s->scan = pipe_scans;
				s->n = 0;
			}
			if (s->n >= PIPE_FDS)
				continue;
			int fd = 0;
			for (const char *p = d->d_name; *p >= '0' && *p <= '9'; p++)
				fd = fd * 10 + (*p - '0');
			s->fd[s->n] = fd;
			s->mode[s->n++] = (uint8_t)((st.st_mode & S_IRUSR ? 1 : 0) |
						    (st.st_mode & S_IWUSR ? 2 : 0));
		}
	}
	if (dfd >= 0)
		close(dfd);
	for (int i = 0; i < PIPE_SLOTS; i++)
		if (pipes[i].wanted) {
			pipes[i].wanted = 0;
			pipes[i].truncated = (uint8_t)truncated;
			pipes[i].checked_ns = dfd >= 0 ? now : 0;
		}
	pipe_scanned_ns = now;
	pipe_scan_cost_ns = wp_self_cpu_ns() - c0;
	look->cpu_ns += pipe_scan_cost_ns;
}

static const struct pipe_slot *pipe_look(pid_t tid, uint64_t ino, struct wp_look *look)
{
	struct pipe_slot *v, *s = pipe_slot(ino, &v);
	uint64_t now = wp_now_ns();
	if (!s) {
		s = v;
		memset(s, 0, sizeof(*s));
		s->key.ino = ino;
	}
	s->key.used_ns = now;
	if (!s->checked_ns || now - s->checked_ns >= PIPE_RECHECK_NS)
		s->wanted = 1;
	uint64_t gap = PIPE_GAP_NS > PIPE_COST_GAP * pipe_scan_cost_ns ?
			       PIPE_GAP_NS : PIPE_COST_GAP * pipe_scan_cost_ns;
	if (s->wanted && look->may && now - pipe_scanned_ns >= gap)
		scan_pipes(tid, now, look);
	if (!s->checked_ns)
		look->partial = 1;
	return s->checked_ns ? s : NULL;
}

/* Whether call `nr` reads (1) or writes (2) its descriptor; 0 when it says nothing. */
static int call_direction(long nr)
{
	switch (nr) {
	case SYS_read: case SYS_pread64: case SYS_readv: case SYS_preadv: case SYS_recvfrom:
	case SYS_recvmsg: case SYS_recvmmsg: case SYS_preadv2: case SYS_tee:
		return 1;
	case SYS_write: case SYS_pwrite64: case SYS_writev: case SYS_pwritev: case SYS_sendto:
	case SYS_sendmsg: case SYS_sendmmsg: case SYS_pwritev2: case SYS_vmsplice:
		return 2;
	default:
		return 0;
	}
}

/* "pipe:[N] read end (write end fd 4)", "(write end fds 4 7)", "(write end not open in this
 * process)". */
static void describe_pipe(pid_t tid, int fd, long nr, const struct fd_look *c,
			  struct wp_look *look, char *buf, uint32_t cap, uint32_t *len)
{
	wp_wait_put(buf, cap, len, c->target, c->len);
	const struct pipe_slot *s = pipe_look(tid, c->id, look);
	int mine = call_direction(nr);
	for (int i = 0; s && i < s->n; i++)
		if (s->fd[i] == fd && (s->mode[i] == 1 || s->mode[i] == 2))
			mine = s->mode[i];
	if (!mine)
		return;
	const char *end = mine == 1 ? "read" : "write", *other = mine == 1 ? "write" : "read";
	char t[48];
	wp_format(t, sizeof(t), " %s end", end);
	wp_wait_puts(buf, cap, len, t);
	if (!s)
		return;
	int others = 0;
	for (int i = 0; i < s->n; i++)
		others += (s->mode[i] & (3 - mine)) != 0;
	if (!others) {
		wp_format(t, sizeof(t), s->truncated ? " (%s end not among the first %d fds)" :
					 " (%s end not open in this process)", other, PIPE_SCAN_MAX);
		wp_wait_puts(buf, cap, len, t);
		return;
	}
	wp_format(t, sizeof(t), " (%s end fd%s", other, others > 1 ? "s" : "");
	wp_wait_puts(buf, cap, len, t);
	for (int i = 0; i < s->n; i++)
		if (s->mode[i] & (3 - mine)) {
			wp_format(t, sizeof(t), " %d", s->fd[i]);
			wp_wait_puts(buf, cap, len, t);
		}
	wp_wait_puts(buf, cap, len, ")");
}

/* "anon_inode:[eventfd]" -> "eventfd", "anon_inode:inotify" -> "inotify",
 * "anon_inode:[eventpoll]" -> "epoll"; with the descriptor, as they carry no inode. */
static int describe_anon(int fd, const struct fd_look *c, char *buf, uint32_t cap,
			 uint32_t *len)
{
	if (!starts(c->target, c->len, "anon_inode:"))
		return 0;
	char name[64];
	uint32_t n = 0, from = (uint32_t)strlen("anon_inode:");
	for (uint32_t i = from; i < c->len && n < sizeof(name) - 1; i++)
		if (c->target[i] != '[' && c->target[i] != ']')
			name[n++] = c->target[i];
	name[n] = 0;
	char t[96];
	wp_format(t, sizeof(t), "%s fd %d", !strcmp(name, "eventpoll") ? "epoll" : name, fd);
	wp_wait_puts(buf, cap, len, t);
	return 1;
}

/* One descriptor: its target, completed for pipes, sockets and anonymous inodes; "fd N" when
 * unknown. Sets *id (the fd cache's id, 0 when unknown). */
static void describe_fd(pid_t tid, int fd, long nr, struct wp_look *look, char *buf,
			uint32_t cap, uint32_t *len, uint64_t *id)
{
	const struct fd_look *c = fd >= 0 ? look_fd(tid, fd, look) : NULL;
	*id = c ? c->id : 0;
	if (!c) {
		char t[32];
		wp_format(t, sizeof(t), "fd %d", fd);
		wp_wait_puts(buf, cap, len, t);
		return;
	}
	if (starts(c->target, c->len, "pipe:[")) {
		describe_pipe(tid, fd, nr, c, look, buf, cap, len);
		return;
	}
	if (describe_anon(fd, c, buf, cap, len))
		return;
	wp_wait_put(buf, cap, len, c->target, c->len);
	if (starts(c->target, c->len, "socket:[")) {
		const char *net = wp_wait_net_name(c->id, tid, fd, look);
		if (net) {
			wp_wait_puts(buf, cap, len, " ");
			wp_wait_puts(buf, cap, len, net);
		}
	}
}

/* The descriptors a poll or ppoll waits on: its pollfd array (8 bytes each: int fd, short
 * events, short revents), at most SET_READ of them, read fault-proof. Negative fds are
 * ignored, as poll does. Returns how many went to fds (at most SET_NAMED); *total all. */
static int poll_fds(uint64_t addr, uint64_t nfds, int *fds, int *total)
{
	int32_t raw[2 * SET_READ];
	uint64_t n = nfds < SET_READ ? nfds : SET_READ;
	*total = 0;
	if (!n || !wp_peek(addr, raw, (size_t)n * 8))
		return -1;
	int k = 0;
	for (uint64_t i = 0; i < n; i++)
		if (raw[2 * i] >= 0) {
			if (k < SET_NAMED)
				fds[k++] = raw[2 * i];
			++*total;
		}
	if (nfds > n)
		*total += (int)(nfds - n > 1000000 ? 1000000 : nfds - n);
	return k;
}

/* The descriptors a select or pselect6 waits on: the union of its three fd_set bitmaps
 * (each may be NULL), nfds bounded to SELECT_MAX_FDS. */
static int select_fds(const uint64_t args[6], int *fds, int *total)
{
	uint64_t bits[3][SELECT_MAX_FDS / 64];
	uint64_t nfds = args[0] < SELECT_MAX_FDS ? args[0] : SELECT_MAX_FDS;
	size_t words = (size_t)(nfds + 63) / 64;
	int have = 0;
	*total = 0;
	for (int s = 0; s < 3; s++) {
		memset(bits[s], 0, sizeof(bits[s]));
		if (args[1 + s] && words && wp_peek(args[1 + s], bits[s], words * 8))
			have = 1;
	}
	if (!have)
		return -1;
	int k = 0;
	for (uint64_t fd = 0; fd < nfds; fd++) {
		uint64_t m = 1ull << (fd % 64);
		if ((bits[0][fd / 64] | bits[1][fd / 64] | bits[2][fd / 64]) & m) {
			if (k < SET_NAMED)
				fds[k++] = (int)fd;
			++*total;
		}
	}
	return k;
}

/* The descriptors an epoll instance watches: /proc/self/task/TID/fdinfo/EPFD lists one
 * "tfd: N events: ..." line per registered descriptor (bounded read: the first SET_NAMED are
 * named, the others counted as far as the read goes), cached a second per epoll. */
static int epoll_fds(pid_t tid, int epfd, struct wp_look *look, int *fds, int *total)
{
	struct epoll_slot *s = &epolls[(unsigned)epfd % EPOLL_SLOTS];
	uint64_t now = wp_now_ns();
	if (!(s->epfd == epfd && s->checked_ns && now - s->checked_ns < EPOLL_RECHECK_NS)) {
		if (!look->may) {
			look->partial = 1;
			if (s->epfd != epfd || !s->checked_ns)
				return -1;
			memcpy(fds, s->fds, sizeof(int) * (size_t)s->n);
			*total = s->total;
			return s->n;
		}
		static char info[16384] WP_BIG;
		char path[64];
		wp_format(path, sizeof(path), "/proc/%d/task/%d/fdinfo/%d", (int)wp_task_program_pid(), (int)tid, epfd);
		long n = wp_wait_read_small(path, info, sizeof(info), look);
		s->epfd = epfd;
		s->checked_ns = now;
		s->n = s->total = 0;
		for (char *p = n > 0 ? info : NULL; p && *p;) {
			char *nl = strchr(p, '\n');
			if (!strncmp(p, "tfd:", 4)) {
				int fd = (int)strtol(p + 4, NULL, 10);
				if (s->n < SET_NAMED)
					s->fds[s->n++] = fd;
				s->total++;
			}
			p = nl ? nl + 1 : NULL;
		}
		if (n < 0) {
			s->epfd = -1;
			return -1;
		}
	}
	memcpy(fds, s->fds, sizeof(int) * (size_t)s->n);
	*total = s->total;
	return s->n;
}

/* "poll pipe:[12] read end (write end fd 4), socket:[34] tcp ..., and 3 more". */
static uint32_t describe_set(pid_t tid, long nr, const char *call, const int *fds, int n,
			     int total, struct wp_look *look, uint64_t *id, char *buf,
			     uint32_t cap)
{
	uint32_t len = 0;
	wp_wait_puts(buf, cap, &len, call);
	*id = wp_fnv(WP_FNV0, &total, sizeof(total));
	for (int i = 0; i < n; i++) {
		uint64_t one;
		wp_wait_puts(buf, cap, &len, i ? ", " : " ");
		uint32_t room = cap - len < DESC_MAX ? cap - len : DESC_MAX;
		uint32_t at = len, l = 0;
		describe_fd(tid, fds[i], nr, look, buf + at, room, &l, &one);
		len += l;
		*id = wp_fnv(*id, &fds[i], sizeof(fds[i]));
	}
	if (total > n) {
		char t[48];
		wp_format(t, sizeof(t), ", and %d more", total - n);
		wp_wait_puts(buf, cap, &len, t);
	}
	return len;
}

/* Calls whose first argument is the descriptor waited on. */
static int waits_on_fd(long nr)
{
	switch (nr) {
	case SYS_read: case SYS_write: case SYS_pread64: case SYS_pwrite64: case SYS_readv:
	case SYS_writev: case SYS_preadv: case SYS_pwritev: case SYS_accept: case SYS_accept4:
	case SYS_connect: case SYS_recvfrom: case SYS_sendto: case SYS_recvmsg: case SYS_sendmsg:
	case SYS_recvmmsg: case SYS_sendmmsg: case SYS_flock: case SYS_fcntl: case SYS_ioctl:
	case SYS_fsync: case SYS_fdatasync: case SYS_splice: case SYS_sendfile:
	/* glibc's preadv2/pwritev2, sync_file_range, syncfs, mq_timedsend/receive (an mqd_t
	 * is a descriptor), tee, vmsplice and copy_file_range (their first descriptor) */
	case SYS_preadv2: case SYS_pwritev2: case SYS_sync_file_range: case SYS_syncfs:
	case SYS_mq_timedsend: case SYS_mq_timedreceive: case SYS_tee: case SYS_vmsplice:
	case SYS_copy_file_range:
	/* the file system's calls on a descriptor */
	case SYS_ftruncate: case SYS_fallocate: case SYS_getdents64:
		return 1;
	default:
		return 0;
	}
}

int wp_wait_fds_handles(long nr)
{
	return waits_on_fd(nr) || nr == SYS_poll || nr == SYS_ppoll || nr == SYS_select ||
	       nr == SYS_pselect6 || wp_wait_is_epoll(nr) || nr == SYS_wait4 || nr == SYS_waitid;
}

int wp_wait_is_epoll(long nr)
{
	return nr == SYS_epoll_wait || nr == SYS_epoll_pwait || nr == SYS_epoll_pwait2;
}

uint32_t wp_wait_fds_describe(pid_t tid, long nr, const uint64_t args[6], struct wp_look *look,
			      uint64_t *id, char *buf, uint32_t cap)
{
	int fds[SET_NAMED], total = 0, n = -1;
	const char *call = NULL;
	*id = 0;
	if (nr == SYS_wait4 || nr == SYS_waitid)
		return wp_wait_child_describe(tid, nr, args, look, buf, cap);
	/* named as programs call them: glibc's select() is the pselect6 system call */
	if (nr == SYS_poll || nr == SYS_ppoll) {
		call = "poll";
		n = poll_fds(args[0], args[1], fds, &total);
	} else if (nr == SYS_select || nr == SYS_pselect6) {
		call = "select";
		n = select_fds(args, fds, &total);
	} else if (wp_wait_is_epoll(nr) && args[0] < (1u << 30)) {
		call = "epoll";
		n = epoll_fds(tid, (int)args[0], look, fds, &total);
	}
	if (call)
		return n < 0 ? 0 : describe_set(tid, nr, call, fds, n, total, look, id, buf, cap);
	if (!waits_on_fd(nr) || args[0] >= (1u << 30))
		return 0;
	/* unknown: nothing, so the record keeps no text (the command then says "fd N") */
	const struct fd_look *c = look_fd(tid, (int)args[0], look);
	if (!c)
		return 0;
	uint32_t len = 0;
	describe_fd(tid, (int)args[0], nr, look, buf, cap, &len, id);
	return len;
}

void wp_wait_fds_reset(void)
{
	fd_cache_ready = 0;
	wp_pages_zero(pipes, sizeof(pipes)); /* a fork child: pages.h */
	pipe_scanned_ns = pipe_scan_cost_ns = 0;
	for (int i = 0; i < EPOLL_SLOTS; i++)
		epolls[i].epfd = -1;
	wp_wait_net_reset();
	wp_wait_child_reset();
}
