/* The wallprof profile file, version 1: constants shared by the agent's writer and the
 * CLI's reader. The layout is documented for humans in docs/profile-format.md; keep the two
 * in step and bump WP_FORMAT_VERSION on any incompatible change.
 *
 * A file is a 16-byte header followed by records. Every integer is little-endian. A record is
 *   u32 type, u32 reserved (0), u64 payload length, payload
 * so a reader can skip record types it does not know. A complete file ends with WP_REC_END;
 * a file without it was cut short and is rejected. */
#ifndef WP_FORMAT_H
#define WP_FORMAT_H

#include <stdint.h>

#define WP_MAGIC "WALLPROF"
#define WP_MAGIC_LEN 8
#define WP_FORMAT_VERSION 1u
#define WP_HEADER_SIZE 16u
#define WP_RECORD_HEADER_SIZE 16u

/* Upper bounds the reader enforces on untrusted input. */
#define WP_MAX_FRAMES 512u
#define WP_MAX_NAME 4096u
#define WP_MAX_BUILD_ID 64u

enum wp_record_type {
	/* "key=value\n" lines, UTF-8: mode, hz, command, pid, times and sampler statistics. */
	WP_REC_META = 1,
	/* u32 id, u32 flags, u64 start, u64 end, u64 file_offset, u32 build_id_len,
	 * u32 path_len, build_id bytes, path bytes. [start,end) is one executable mapping;
	 * file_offset is the file offset that `start` maps. */
	WP_REC_MODULE = 2,
	/* u32 tid, u32 flags, u64 samples, u64 running, u64 waiting, u64 first_ns, u64 last_ns,
	 * u32 name_len, name bytes. first_ns/last_ns: when the thread was first/last seen,
	 * relative to the run's start. */
	WP_REC_THREAD = 3,
	/* u32 id, u32 tid, u32 flags, u32 nframes, u64 count, u64 weight_ns, u64 pcs[nframes].
	 * pcs are leaf first. pcs[0] is the exact interrupted PC; the others are return
	 * addresses (symbolize pc-1 for them). */
	WP_REC_STACK = 4,
	/* u32 tid, u32 reserved, u64 count, then `count` entries of two LEB128 varints:
	 * microseconds since the previous entry of this record (the first: since the run's
	 * start), and the stack id. One record per thread and flush; records of one thread
	 * follow each other in time order. */
	WP_REC_TIMELINE = 5,
	/* Empty: the file is complete. */
	WP_REC_END = 6,
};

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
