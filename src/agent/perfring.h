/* SPDX-License-Identifier: MIT */
/* A perf software clock's ring buffer, shared by the agent's perf clocks (perfclock.c: threads
 * of its own process that block the sampling signal) and the outside sampler (src/outside/:
 * every thread of another process). Both open the same event (user registers and a copy of
 * the top of the user stack at every period of the thread's CPU time, user mode only), map
 * its ring, and parse PERF_RECORD_SAMPLE records the same way.
 *
 * No locks, no allocation but the mapping itself; the caller owns the ring. */
#ifndef WP_PERFRING_H
#define WP_PERFRING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/ucontext.h>

struct perf_event_attr;

/* One record: what the kernel copied when the thread's clock ticked in user mode. */
struct wp_pclk_rec {
	greg_t gregs[NGREG];   /* in ucontext order (unwind.h's input); only the integer
				* registers, rip and rsp are set */
	const uint8_t *stack;  /* the copy of its stack from rsp up (valid until the next call) */
	size_t stack_len;
	uint64_t time_ns;      /* CLOCK_MONOTONIC */
	uint64_t weight_ns;    /* its CPU time since the record before (or since the clock
				* opened): one interval, more when records were lost */
	uint32_t tid;          /* the thread the record is of */
};

/* Bytes of user stack each record copies: see perfclock.c. */
#define WP_PCLK_STACK_BYTES (32u << 10)

/* Fills `a` for a task clock of period `period_ns` that samples user registers and
 * WP_PCLK_STACK_BYTES of user stack, timestamps on CLOCK_MONOTONIC, waking nobody before
 * `wakeup_bytes` are in the ring. With `with_count`, each record carries the clock's count
 * (PERF_SAMPLE_READ: the kernel refuses it together with `inherit`). */
void wp_perf_attr(struct perf_event_attr *a, uint64_t period_ns, uint32_t wakeup_bytes,
		  int with_count);

struct wp_perf_ring {
	uint8_t *map;   /* the header page, then the data area (NULL: none) */
	size_t map_len;
	uint8_t *data;
	uint64_t size;  /* of the data area: a power of two */
};

/* Maps event `fd`'s ring, `pages` data pages, halving down to `pages_min` while refused (the
 * locked-memory limit). Read and write: the reader moves data_tail, so the kernel never
 * overwrites what it has not read. Returns 0 or -errno. */
int wp_perf_ring_map(int fd, size_t page, size_t pages, size_t pages_min,
		     struct wp_perf_ring *r);
void wp_perf_ring_unmap(struct wp_perf_ring *r);

/* `len` bytes of the ring from stream position `pos`, in one piece: in place, or copied into
 * `scratch` (64 KiB: a record's size is a u16) when they wrap around the end. */
const uint8_t *wp_perf_ring_at(const struct wp_perf_ring *r, uint64_t pos, size_t len,
			       uint8_t *scratch);

/* A PERF_RECORD_SAMPLE of an event set up by wp_perf_attr into `r`; its count in `*count`
 * (0 without `with_count`). Returns 0 when it cannot be used (too short, or no user state to
 * unwind: a later record's count then carries its time). */
int wp_perf_parse(const uint8_t *p, size_t len, int with_count, struct wp_pclk_rec *r,
		  uint64_t *count);

/* Records lost to a full ring that a PERF_RECORD_LOST record reports. */
uint64_t wp_perf_lost(const uint8_t *p, size_t len);

#endif
