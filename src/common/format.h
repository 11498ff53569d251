/* SPDX-License-Identifier: MIT */
/* The wallprof profile file, version 1: its layout, shared by the agent's writer and the
 * CLI's reader (and read by test/e2e/wpformat.py, the Python tools' reader). The layout is
 * documented for humans in docs/profile-format.md; keep the two in step and bump
 * WP_FORMAT_VERSION on any incompatible change.
 *
 * A file is a header (struct wp_file_header) followed by records. Every integer is
 * little-endian. A record is a struct wp_rec_header (type, reserved 0, payload length) and its
 * payload, so a reader can skip record types it does not know. A payload starts with the fixed
 * fields of its type (struct wp_rec_*, packed: exactly as in the file) and may go on with
 * variable-length parts. A complete file ends with WP_REC_END; a file without it was cut short
 * and is rejected. */
#ifndef WP_FORMAT_H
#define WP_FORMAT_H

#include <stdint.h>

#define WP_MAGIC "WALLPROF"
#define WP_MAGIC_LEN 8
#define WP_FORMAT_VERSION 1u

struct wp_file_header {
	char magic[WP_MAGIC_LEN];
	uint32_t version;
	uint32_t header_size; /* of this header */
} __attribute__((packed));

struct wp_rec_header {
	uint32_t type; /* enum wp_record_type */
	uint32_t reserved;
	uint64_t len; /* of the payload that follows */
} __attribute__((packed));

#define WP_HEADER_SIZE ((uint32_t)sizeof(struct wp_file_header))
#define WP_RECORD_HEADER_SIZE ((uint32_t)sizeof(struct wp_rec_header))
_Static_assert(sizeof(struct wp_file_header) == 16 && sizeof(struct wp_rec_header) == 16,
	       "the file and record headers are 16 bytes");

/* Upper bounds the reader enforces on untrusted input. */
#define WP_MAX_FRAMES 512u
#define WP_MAX_NAME 4096u
#define WP_MAX_BUILD_ID 64u

enum wp_record_type {
	/* "key=value\n" lines, UTF-8: mode, hz, command, pid, times and sampler statistics, and
	 * how the process ended: exec=1, died_of_signal=N, exit_status=N (0-255; newer agents),
	 * or checkpoint=1 alone (no final word: killed by SIGKILL, or still running). New keys
	 * need no new version: readers ignore keys they do not know. */
	WP_REC_META = 1,
	WP_REC_MODULE = 2,   /* struct wp_rec_module */
	WP_REC_THREAD = 3,   /* struct wp_rec_thread */
	WP_REC_STACK = 4,    /* struct wp_rec_stack */
	WP_REC_TIMELINE = 5, /* struct wp_rec_timeline */
	/* Empty: the file is complete. */
	WP_REC_END = 6,
	WP_REC_WAIT = 7,     /* struct wp_rec_wait (added in 0.2; older readers skip it) */
	WP_REC_LAST = 8,     /* struct wp_rec_last (newer agents; older readers skip it) */
};

/* One executable mapping [start, end); file_offset is the file offset that `start` maps.
 * Followed by build_id_len bytes of build-id, then path_len bytes of path. */
struct wp_rec_module {
	uint32_t id, flags;
	uint64_t start, end, file_offset;
	uint32_t build_id_len, path_len;
} __attribute__((packed));
_Static_assert(sizeof(struct wp_rec_module) == 40, "MODULE's fixed fields are 40 bytes");

/* One thread. first_ns/last_ns: when it was first/last seen, relative to the run's start.
 * Followed by name_len bytes of name. After the name (appended later): a u64 unseen_ns, the
 * time it ran with the sampling signal blocked that no sample saw (CPU time in cpu mode, wall
 * time in wall mode), then a u32 why_len and why_len bytes saying why it could not be seen
 * (the perf clock that samples such threads was refused: docs/design.md), empty when nothing
 * failed. Older files end at the name (read as 0 and ""); older readers ignore the bytes. */
struct wp_rec_thread {
	uint32_t tid, flags;
	uint64_t samples, running, waiting, first_ns, last_ns;
	uint32_t name_len;
} __attribute__((packed));
_Static_assert(sizeof(struct wp_rec_thread) == 52, "THREAD's fixed fields are 52 bytes");

/* One distinct stack of one thread. Followed by nframes u64 pcs, leaf first: pcs[0] is the
 * exact interrupted PC, the others are return addresses (symbolize pc-1 for them). */
struct wp_rec_stack {
	uint32_t id, tid, flags, nframes;
	uint64_t count, weight_ns;
} __attribute__((packed));
_Static_assert(sizeof(struct wp_rec_stack) == 32, "STACK's fixed fields are 32 bytes");

/* A stretch of one thread's samples in time order. Followed by `count` entries of two LEB128
 * varints: microseconds since the previous entry of this record (the first: since the run's
 * start), and the stack id. One record per thread and flush; records of one thread follow
 * each other in time order. */
struct wp_rec_timeline {
	uint32_t tid, reserved;
	uint64_t count;
} __attribute__((packed));
_Static_assert(sizeof(struct wp_rec_timeline) == 16, "TIMELINE's fixed fields are 16 bytes");

/* What some of one stack's waiting samples were blocked in: a system call (x86-64 number
 * `nr`) with the arguments that name its object (the others are 0) and one fact read by the
 * agent (`aux`). Followed by target_len bytes: a descriptor's target (readlink of
 * /proc/self/fd/N), or nothing. Per call:
 *   futex (202):         a0 address, a1 op, a2 value expected; aux the int at a0+8 (a glibc
 *                        mutex's owner TID) when the wait looks like a contended mutex's
 *                        (FUTEX_WAIT or FUTEX_WAIT_BITSET expecting 2), else 0
 *   nanosleep (35):      aux the requested duration in ns
 *   clock_nanosleep(230): a0 clock, a1 flags (1: absolute); aux the requested time in ns
 *   wait4 (61), waitid (247): a0, a1 as passed (wait4: the pid)
 *   poll, ppoll, select, pselect6: a1 the number of descriptors
 *   descriptor calls (read, write, recv*, send*, accept, connect, epoll_wait, ...): a0 the
 *                        descriptor; aux the inode in a "pipe:[N]"-like target, else a hash
 *                        of the target's path (0: not looked up)
 *   anything else:       only nr.
 * A futex expecting 3 (1 | PTHREAD_RWLOCK_FUTEX_USED, a glibc rwlock's write phase): aux the
 * writer's TID (__cur_writer, read as waits.c explains), 0 when none.
 * After the target (appended after WAIT's first version): a u32 holder_stack, the id of the
 * STACK record of the holder (the thread `aux` names) sampled in the same tick after `aux`
 * was read, or WP_WAIT_NO_HOLDER_STACK. Older files end at the target (read as no holder stack); older
 * readers ignore the 4 bytes. Its STACK record may have count 0 (sampled only as a holder).
 * After holder_stack (appended later still): a u64 cond_mutex, for a futex wait inside a
 * pthread_cond_t (its waiter published the condition and the mutex it passed to
 * pthread_cond_wait, timedwait or clockwait): the mutex's address; 0 otherwise. Files without
 * it read as 0; older readers ignore the 8 bytes. Pseudo-call records (below) carry neither.
 * Two pseudo calls (numbers no system call has) carry waits without a call to show for them:
 *   WP_WAIT_NR_CPU:      the share of the stack's samples of a runnable thread (state R:
 *                        signalled, or not run since its last sample) that it spent on a
 *                        runqueue, waiting for a CPU (from /proc/self/task/TID/schedstat);
 *                        a0..aux 0; count rounded to whole samples, weight_ns exact. The
 *                        stack need not be flagged WP_STACK_WAITING.
 *   WP_WAIT_NR_DISK:     samples of a thread in uninterruptible sleep (state D: a page fault,
 *                        a swap-in, a file read): a0 the call it was in (~0: none, e.g. a
 *                        page fault), a1 that call's first argument (a descriptor), aux 0;
 *                        target: the descriptor's target when known.
 * Readers older than these see calls they do not know (kind "other").
 * A stack's WAIT records' counts add up to at most its count (samples taken otherwise, e.g.
 * signalled inside a call, carry none). */
struct wp_rec_wait {
	uint32_t stack_id, nr;
	uint64_t a0, a1, a2, aux;
	uint64_t count, weight_ns;
	uint32_t target_len;
} __attribute__((packed));
_Static_assert(sizeof(struct wp_rec_wait) == 60, "WAIT's fixed fields are 60 bytes");
#define WP_WAIT_NO_HOLDER_STACK 0xffffffffu

/* One thread's state at its last sample, as of this write: one record for each thread alive
 * at the write that was sampled. A final write made while the program is stuck (it is killed,
 * or ends with threads still blocked) so says what each thread was blocked in at the end: the
 * command looks there for a cycle of waits, a deadlock (docs/design.md). stack_id: the STACK
 * record of that sample (a reader ignores a LAST whose stack it does not have). With
 * WP_LAST_IN_CALL, it was blocked in system call `nr` and a0..aux and cond_mutex say on what,
 * as in the WAIT record of that sample, but a futex's aux (a mutex's owner, an rwlock's
 * writer) is read again at the write: a thread that holds that lock by then (and did not
 * when sampled) is written without WP_LAST_IN_CALL. Without it, those are 0.
 * at_ns: when that sample was taken, since the run's start. */
struct wp_rec_last {
	uint32_t tid, flags;
	uint32_t stack_id, nr;
	uint64_t a0, a1, a2, aux;
	uint64_t cond_mutex, at_ns;
} __attribute__((packed));
_Static_assert(sizeof(struct wp_rec_last) == 64, "LAST's fixed fields are 64 bytes");

/* WP_REC_LAST flags */
#define WP_LAST_IN_CALL 0x1u  /* blocked in a system call: nr and its arguments are set */
#define WP_LAST_WAITING 0x2u  /* its stack was flagged WP_STACK_WAITING (blocked, or not running) */

#define WP_WAIT_NR_CPU 0x10000u  /* WAIT pseudo call: runnable, waiting for a CPU */
#define WP_WAIT_NR_DISK 0x10001u /* WAIT pseudo call: uninterruptible sleep (state D) */

/* WP_REC_STACK flags */
#define WP_STACK_WAITING 0x1u   /* the thread was blocked (in a system call or not running) */
#define WP_STACK_TRUNCATED 0x2u /* the unwind stopped before reaching the thread's root */
#define WP_STACK_REUSED 0x4u    /* stack reused from the thread's previous sample (it had not run) */

/* WP_REC_THREAD flags */
#define WP_THREAD_EXITED 0x1u
#define WP_THREAD_UNSAMPLEABLE 0x2u /* e.g. blocks the sampling signal */

/* WP_REC_MODULE flags */
#define WP_MODULE_MAIN 0x1u   /* the main executable */
#define WP_MODULE_VDSO 0x2u
#define WP_MODULE_UNLOADED 0x4u /* dlclose'd during the run */

#endif
