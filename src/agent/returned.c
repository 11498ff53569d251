/* SPDX-License-Identifier: MIT */
#include "returned.h"

#include <string.h>
#include <sys/syscall.h>

#include "../common/format.h"
#include "cpuwait.h"
#include "peek.h"
#include "stacks.h"
#include "threads.h"
#include "wait_fds.h"
#include "waits.h"

#define UNIT_FX 1024u

/* The calls a thread blocks in and waits.h names from their arguments alone. */
static int names_a_wait(long nr)
{
	return wp_wait_fds_handles(nr) || nr == SYS_nanosleep || nr == SYS_clock_nanosleep ||
	       nr == SYS_fsync || nr == SYS_fdatasync || nr == SYS_sync_file_range;
}

int wp_returned_call(const greg_t *g, long *nr, uint64_t args[6])
{
	uint8_t c[9];
	uint64_t pc = (uint64_t)g[REG_RIP];
	if (pc < sizeof(c) || !wp_peek(pc - sizeof(c), c, sizeof(c)))
		return 0;
	if (c[7] != 0x0f || c[8] != 0x05)
		return 0;
	uint32_t imm;
	if (c[2] == 0xb8) /* mov $imm32, %eax */
		memcpy(&imm, c + 3, 4);
	else if (c[0] == 0x48 && c[1] == 0xc7 && c[2] == 0xc0) /* mov $imm32, %rax */
		memcpy(&imm, c + 3, 4);
	else
		return 0;
	if (!names_a_wait((long)imm))
		return 0;
	*nr = (long)imm;
	const int regs[6] = { REG_RDI, REG_RSI, REG_RDX, REG_R10, REG_R8, REG_R9 };
	for (int i = 0; i < 6; i++)
		args[i] = (uint64_t)g[regs[i]];
	return 1;
}

void wp_returned_count(struct wp_athread *t, struct wp_stack_entry *e, long nr,
		       const uint64_t args[6], uint32_t units, uint64_t weight_ns, uint64_t unran_ns,
		       int may_look, uint64_t *looked_ns)
{
	*looked_ns = 0;
	if (!unran_ns || !weight_ns)
		return;
	uint64_t blocked = wp_cpuwait_unseen_block(t, unran_ns);
	if (!blocked)
		return;
	struct wp_stack_entry *w = wp_stacks_intern(t, e->pcs, e->nframes,
						    e->flags | WP_STACK_WAITING);
	if (!w) {
		t->cw_unseen_block_ns += (int64_t)blocked; /* out of memory: kept for later */
		return;
	}
	/* whole samples move as their shares add up, so that counts and weights agree over a
	 * run (a share of one sample is most often less than half of it) */
	uint64_t fx = t->cw_moved_fx + (uint64_t)((double)UNIT_FX * (double)units *
						  (double)blocked / (double)weight_ns);
	uint64_t whole = fx / UNIT_FX;
	if (whole > units)
		whole = units;
	t->cw_moved_fx = (uint32_t)(fx - whole * UNIT_FX < UNIT_FX ? fx - whole * UNIT_FX : 0);
	wp_stacks_move(t, e, w, (uint32_t)whole, blocked);
	wp_waits_add(t, w->id, nr, args, (uint32_t)whole, blocked, may_look, looked_ns);
	t->last_wait = NULL; /* running now: not blocked in it */
}
