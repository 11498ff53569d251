/* SPDX-License-Identifier: MIT */
#include "reconcile.h"

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

int wp_reconcile_call(const greg_t *g, int interrupted, long *nr, uint64_t args[6])
{
	/* the 9 bytes before pc, and the 2 at it */
	uint8_t c[11];
	uint64_t pc = (uint64_t)g[REG_RIP];
	if (pc < 9 || !wp_peek(pc - 9, c, sizeof(c)))
		return 0;
	long call = -1;
	if (interrupted && c[9] == 0x0f && c[10] == 0x05) {
		call = (long)g[REG_RAX]; /* rewound to restart it: the kernel put the number back */
	} else if (c[7] == 0x0f && c[8] == 0x05) {
		uint32_t imm;
		if (c[2] == 0xb8) /* b8 imm32: mov $imm32, %eax */
			memcpy(&imm, c + 3, 4);
		else if (c[0] == 0x48 && c[1] == 0xc7 && c[2] == 0xc0) /* mov $imm32, %rax */
			memcpy(&imm, c + 3, 4);
		else
			return 0;
		call = (long)imm;
	}
	if (call < 0 || !names_a_wait(call))
		return 0;
	*nr = call;
	const int regs[6] = { REG_RDI, REG_RSI, REG_RDX, REG_R10, REG_R8, REG_R9 };
	for (int i = 0; i < 6; i++)
		args[i] = (uint64_t)g[regs[i]];
	return 1;
}

/* How many whole samples of a sample worth `units` a share `part_ns` of its `weight_ns`
 * makes, with what earlier shares left over (*carry_fx, 1/1024ths): whole samples move as
 * their shares add up, so that counts and weights agree over a run (one share is most often
 * less than half a sample, and rounding each would move none). */
static uint32_t whole_units(uint32_t *carry_fx, uint32_t units, uint64_t part_ns,
			    uint64_t weight_ns)
{
	uint64_t fx = *carry_fx + (uint64_t)((double)UNIT_FX * (double)units * (double)part_ns /
					     (double)weight_ns);
	uint64_t whole = fx / UNIT_FX;
	if (whole > units)
		whole = units;
	uint64_t left = fx - whole * UNIT_FX;
	*carry_fx = (uint32_t)(left < UNIT_FX ? left : 0);
	return (uint32_t)whole;
}

void wp_reconcile_blocked(struct wp_athread *t, struct wp_stack_entry *e, long nr,
			  const uint64_t args[6], uint32_t units, uint64_t weight_ns,
			  uint64_t unran_ns, int may_look, uint64_t *looked_ns)
{
	*looked_ns = 0;
	if (!unran_ns || !weight_ns)
		return;
	uint64_t blocked = unran_ns;
	struct wp_stack_entry *w = wp_stacks_intern(t, e->pcs, e->nframes,
						    e->flags | WP_STACK_WAITING);
	if (!w)
		return; /* out of memory: counted running, as before */
	uint32_t whole = whole_units(&t->cw_moved_fx, units, blocked, weight_ns);
	wp_stacks_move(t, e, w, whole, blocked);
	wp_waits_add(t, w->id, nr, args, whole, blocked, may_look, looked_ns);
	t->last_wait = NULL; /* running now: not blocked in it */
}

void wp_reconcile_note_blocked(struct wp_athread *t, struct wp_stack_entry *e,
			       struct wp_wait_entry *w, struct wp_cpuwait_entry *d)
{
	t->cw_block_stack = e;
	t->cw_block_wait = w;
	t->cw_block_disk = w ? NULL : d;
	t->cw_since_block = 0;
}

void wp_reconcile_unseen(struct wp_athread *t, struct wp_stack_entry *e, uint32_t units,
			 uint64_t weight_ns, uint64_t unran_ns)
{
	struct wp_stack_entry *to = t->cw_block_stack;
	struct wp_wait_entry *w = t->cw_block_wait;
	struct wp_cpuwait_entry *d = t->cw_block_disk;
	if (!to || (!w && !d) || !unran_ns || !weight_ns)
		return;
	uint64_t blocked = unran_ns;
	uint32_t whole = whole_units(&t->cw_moved_fx, units, blocked, weight_ns);
	wp_stacks_move(t, e, to, whole, blocked);
	if (w) {
		w->count += whole;
		w->weight_ns += blocked;
	} else {
		d->units_fx += (uint64_t)whole * UNIT_FX;
		d->weight_ns += blocked;
	}
}

uint32_t wp_reconcile_ran(struct wp_athread *t, struct wp_stack_entry *e, uint32_t units,
			  uint64_t weight_ns, uint64_t *ran_ns)
{
	struct wp_stack_entry *r = t->cw_run_stack;
	*ran_ns = 0;
	if (!r || r == e || t->cw_ran_ns <= 0 || !weight_ns)
		return 0;
	uint64_t ran = (uint64_t)t->cw_ran_ns < weight_ns ? (uint64_t)t->cw_ran_ns : weight_ns;
	uint32_t whole = whole_units(&t->cw_ran_fx, units, ran, weight_ns);
	wp_stacks_move(t, e, r, whole, ran);
	*ran_ns = ran;
	return whole;
}
