/* SPDX-License-Identifier: MIT */
/* A perf software clock's ring and records: perfring.h says what and for whom. */
#include "perfring.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* The user registers asked for, in perf's x86-64 numbering (asm/perf_regs.h): ax bx cx dx si
 * di bp sp ip (0-8) and r8-r15 (16-23): every general register, as libunwind may need any
 * of them (a DWARF CFA on rbx, a frame pointer). They arrive in that bit order. */
#define REGS_MASK (0x1ffull | (0xffull << 16))
static const int reg_of_bit[] = {
	REG_RAX, REG_RBX, REG_RCX, REG_RDX, REG_RSI, REG_RDI, REG_RBP, REG_RSP, REG_RIP,
	REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15,
};
#define NREGS (sizeof(reg_of_bit) / sizeof(reg_of_bit[0]))

void wp_perf_attr(struct perf_event_attr *a, uint64_t period_ns, uint32_t wakeup_bytes,
		  int with_count)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	/* the thread's own CPU time: the timer runs only while it is on a CPU */
	a->config = PERF_COUNT_SW_TASK_CLOCK;
	a->sample_period = period_ns;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			 PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	if (with_count)
		a->sample_type |= PERF_SAMPLE_READ;
	a->read_format = 0; /* the count alone */
	/* user mode only: what kernel.perf_event_paranoid 2 (the default) allows. A tick that
	 * lands in the kernel is dropped; the next record's count carries its time. */
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->sample_regs_user = REGS_MASK;
	a->sample_stack_user = WP_PCLK_STACK_BYTES;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC; /* the sampler's clock: a record's time is a tick's time */
	/* nobody polls the descriptor: wake nobody before the ring is full */
	a->watermark = 1;
	a->wakeup_watermark = wakeup_bytes;
}

int wp_perf_ring_map(int fd, size_t page, size_t pages, size_t pages_min,
		     struct wp_perf_ring *r)
{
	uint8_t *map = MAP_FAILED;
	size_t len = 0;
	int e = 0;
	for (; pages >= pages_min && map == MAP_FAILED; pages /= 2) {
		len = (pages + 1) * page;
		map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		e = errno;
	}
	if (map == MAP_FAILED)
		return -e;
	struct perf_event_mmap_page *mp = (void *)map;
	uint64_t off = mp->data_offset ? mp->data_offset : page;
	uint64_t size = mp->data_size ? mp->data_size : len - page;
	*r = (struct wp_perf_ring){ .map = map, .map_len = len, .data = map + off, .size = size };
	return 0;
}

void wp_perf_ring_unmap(struct wp_perf_ring *r)
{
	if (r->map)
		munmap(r->map, r->map_len);
	memset(r, 0, sizeof(*r));
}

const uint8_t *wp_perf_ring_at(const struct wp_perf_ring *r, uint64_t pos, size_t len,
			       uint8_t *scratch)
{
	uint64_t off = pos & (r->size - 1);
	if (off + len <= r->size)
		return r->data + off;
	size_t first = (size_t)(r->size - off);
	memcpy(scratch, r->data + off, first);
	memcpy(scratch + first, r->data, len - first);
	return scratch;
}

static uint64_t u64_at(const uint8_t **p)
{
	uint64_t v;
	memcpy(&v, *p, sizeof(v));
	*p += sizeof(v);
	return v;
}

/* Fields in the kernel's order: ip, pid+tid, time, [count], user regs (abi, then each
 * register), user stack (size, bytes, dyn_size). */
int wp_perf_parse(const uint8_t *p, size_t len, int with_count, struct wp_pclk_rec *r,
		  uint64_t *count)
{
	const uint8_t *end = p + len;
	p += sizeof(struct perf_event_header);
	if ((size_t)(end - p) < 4 * 8 + 8)
		return 0;
	u64_at(&p); /* ip: rip again */
	r->tid = (uint32_t)(u64_at(&p) >> 32);
	r->time_ns = u64_at(&p);
	*count = with_count ? u64_at(&p) : 0;
	uint64_t abi = u64_at(&p);
	if (abi == PERF_SAMPLE_REGS_ABI_NONE || (size_t)(end - p) < NREGS * 8 + 8)
		return 0;
	memset(r->gregs, 0, sizeof(r->gregs));
	for (size_t i = 0; i < NREGS; i++)
		r->gregs[reg_of_bit[i]] = (greg_t)u64_at(&p);
	uint64_t size = u64_at(&p);
	if (size > (uint64_t)(end - p) || (size && (uint64_t)(end - p) < size + 8))
		return 0;
	r->stack = p;
	uint64_t dyn = 0;
	if (size) {
		const uint8_t *q = p + size;
		dyn = u64_at(&q);
	}
	r->stack_len = (size_t)(dyn < size ? dyn : size);
	return 1;
}

uint64_t wp_perf_lost(const uint8_t *p, size_t len)
{
	if (len < sizeof(struct perf_event_header) + 16)
		return 0;
	p += sizeof(struct perf_event_header) + 8; /* id */
	return u64_at(&p);
}
