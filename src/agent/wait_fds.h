/* SPDX-License-Identifier: MIT */
/* What an io or child wait waits FOR, in words (issue 13): the descriptor's target as
 * /proc names it, made readable and completed:
 *   a socket    its protocol and addresses, from /proc/self/net/{unix,tcp,tcp6,udp,udp6}
 *               by inode (wait_net.c)
 *   a pipe      which end the thread waits on and this process's descriptors on the other
 *               end, from one scan of the thread's /proc fd directory
 *   eventfd, timerfd, signalfd, inotify, epoll: their names and descriptor
 *   poll, ppoll, select, pselect6, epoll_wait, epoll_pwait, epoll_pwait2: each descriptor
 *               waited on
 *               (the pollfd array and fd_set bitmaps read with process_vm_readv; an epoll's
 *               list from /proc/self/fdinfo)
 *   wait4, waitid: the child's pid and command, from /proc/PID/comm (wait_child.c)
 * The exact forms are in docs/profile-format.md (WAIT's target).
 *
 * Sampler thread only, outside every suspension window (the waiting thread is blocked, not
 * held): these read /proc and the program's memory. Every read is bounded (bytes, entries)
 * and fault-proof (process_vm_readv stops at an unmapped byte; a descriptor, thread or
 * process gone meanwhile makes a read fail, which leaves that part unnamed). Everything read
 * from /proc is cached, and read only when the first-look ration allows (`may_look`), its CPU
 * time added to *looked_ns. A descriptor closed and reused, a thread or child gone, may give
 * a wrong or stale name at worst. Not async-signal-safe. */
#ifndef WP_WAIT_FDS_H
#define WP_WAIT_FDS_H

#include <stdint.h>
#include <sys/types.h>

/* What the descriptions cost and whether /proc may be read now. */
struct wp_look {
	int may;	  /* the first-look ration allows /proc reads */
	uint64_t cpu_ns; /* the sampler CPU time spent reading /proc (added to) */
	int partial;	  /* set when a part was left unread (ration, pacing): ask again */
};

/* Whether call `nr`'s object is described here: descriptor calls, poll/select/epoll,
 * wait4/waitid. */
int wp_wait_fds_handles(long nr);
/* Whether call `nr` waits on an epoll instance: epoll_wait, epoll_pwait, epoll_pwait2. */
int wp_wait_is_epoll(long nr);

/* Describes the object of thread `tid`'s call `nr` with arguments `args` (/proc's syscall
 * line) into buf (at most cap bytes, not NUL-terminated); returns its length (0: nothing
 * known). *id tells objects apart where the description may be unknown: a descriptor's inode
 * (or a hash of its path), a hash of the descriptors a poll waits on; 0 when none. */
uint32_t wp_wait_fds_describe(pid_t tid, long nr, const uint64_t args[6], struct wp_look *look,
			      uint64_t *id, char *buf, uint32_t cap);

/* Whose memory is read (the sampler's tid). */
/* Forgets every cached look (a fork child, a new profile). */
void wp_wait_fds_reset(void);

/* Internal to wait_fds.c, wait_net.c and wait_child.c. */
/* A socket's protocol and addresses ("tcp 127.0.0.1:5000 -> 127.0.0.1:43210"), NULL when
 * unknown (not looked up yet, or in none of the tables); `fd` of thread `tid` is one of its
 * descriptors (for its protocol). */
const char *wp_wait_net_name(uint64_t ino, pid_t tid, int fd, struct wp_look *look);
/* A socket of this process seen in a scan of its descriptors: named at the next read of the
 * tables if its slot is free (so that one read names the sockets waited on next). */
void wp_wait_net_note(uint64_t ino);
void wp_wait_net_reset(void);
uint32_t wp_wait_child_describe(pid_t tid, long nr, const uint64_t args[6],
				struct wp_look *look, char *buf, uint32_t cap);
void wp_wait_child_reset(void);
/* Whether a /proc file may be opened: only on the agent's private descriptor table. In the
 * fallback (unshare refused), an open takes the lowest free number in the program's table
 * for a moment, which a program that closes fd 2 and opens its data file expects to get;
 * there descriptions stick to what needs no descriptor (readlink, lstat, getxattr, memory). */
int wp_wait_may_open(void);
/* Reads at most cap-1 bytes of a small /proc file into buf (NUL-terminated); the length, or
 * -1. The CPU time goes to look->cpu_ns. */
long wp_wait_read_small(const char *path, char *buf, size_t cap, struct wp_look *look);
/* Appends s (n bytes) to buf at *len, bounded by cap. */
void wp_wait_put(char *buf, uint32_t cap, uint32_t *len, const char *s, size_t n);
void wp_wait_puts(char *buf, uint32_t cap, uint32_t *len, const char *s);

#endif
