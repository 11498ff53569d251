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

uint64_t wp_reconcile_blocked(struct wp_athread *t, struct wp_stack_entry *e, long nr,
			      const uint64_t args[6], uint32_t units, uint64_t weight_ns,
			      uint64_t unran_ns, int may_look, uint64_t *looked_ns)
{
	*looked_ns = 0;
	if (!unran_ns || !weight_ns)
		return 0;
	uint64_t blocked = unran_ns;
	struct wp_stack_entry *w = wp_stacks_intern(t, e->pcs, e->nframes,
						    e->flags | WP_STACK_WAITING);
	if (!w)
		return 0; /* out of memory: counted running, as before */
	uint32_t whole = whole_units(&t->cw_moved_fx, units, blocked, weight_ns);
	uint64_t before = e->weight_ns;
	wp_stacks_move(t, e, w, whole, blocked);
	blocked = before - e->weight_ns;
	wp_waits_add(t, w->id, nr, args, whole, blocked, may_look, looked_ns);
	t->last_wait = NULL; /* running now: not blocked in it */
	return blocked;
}

void wp_reconcile_note_blocked(struct wp_athread *t, struct wp_stack_entry *e,
			       struct wp_wait_entry *w, struct wp_cpuwait_entry *d)
{
	t->cw_block_stack = e;
	t->cw_block_wait = w;
	t->cw_block_disk = w ? NULL : d;
	t->cw_since_block = 0;
}

/* What `t`'s CPU clock (at its latest new sample) leaves for running samples: no sample can
 * be on a CPU longer than its thread was. */
static uint64_t run_budget(const struct wp_athread *t)
{
	uint64_t cpu = t->cw_cpu_ns > 0 ? (uint64_t)t->cw_cpu_ns : 0;
	return cpu > t->cw_run_given_ns ? cpu - t->cw_run_given_ns : 0;
}

/* Moves `ns` of running sample `e` (worth `units`, `weight_ns`) to the wait `t` was last
 * found blocked in. Returns what it moved: 0 when it never was. */
static uint64_t to_last_block(struct wp_athread *t, struct wp_stack_entry *e, uint32_t units,
			      uint64_t weight_ns, uint64_t ns)
{
	struct wp_stack_entry *to = t->cw_block_stack;
	struct wp_wait_entry *w = t->cw_block_wait;
	struct wp_cpuwait_entry *d = t->cw_block_disk;
	if (!to || (!w && !d) || !ns || !weight_ns)
		return 0;
	uint32_t whole = whole_units(&t->cw_moved_fx, units, ns, weight_ns);
	uint64_t before = e->weight_ns;
	wp_stacks_move(t, e, to, whole, ns);
	ns = before - e->weight_ns;
	if (w) {
		w->count += whole;
		w->weight_ns += ns;
	} else {
		d->units_fx += (uint64_t)whole * UNIT_FX;
		d->weight_ns += ns;
	}
	return ns;
}

uint64_t wp_reconcile_unseen(struct wp_athread *t, struct wp_stack_entry *e, uint32_t units,
			     uint64_t weight_ns, uint64_t unran_ns)
{
	return to_last_block(t, e, units, weight_ns, unran_ns);
}

void wp_reconcile_cap(struct wp_athread *t, struct wp_stack_entry *e, uint32_t units,
		      uint64_t weight_ns, uint64_t running_ns)
{
	uint64_t budget = run_budget(t);
	uint64_t excess = running_ns > budget ? running_ns - budget : 0;
	t->cw_run_given_ns += running_ns - to_last_block(t, e, units, weight_ns, excess);
}

uint32_t wp_reconcile_ran(struct wp_athread *t, struct wp_stack_entry *e, uint32_t units,
			  uint64_t weight_ns, uint64_t *ran_ns)
{
	struct wp_stack_entry *r = t->cw_run_stack;
	*ran_ns = 0;
	if (!r || r == e || t->cw_ran_ns <= 0 || !weight_ns)
		return 0;
	uint64_t ran = (uint64_t)t->cw_ran_ns < weight_ns ? (uint64_t)t->cw_ran_ns : weight_ns;
	uint64_t budget = run_budget(t);
	ran = ran < budget ? ran : budget;
	if (!ran)
		return 0;
	uint32_t whole = whole_units(&t->cw_ran_fx, units, ran, weight_ns);
	wp_stacks_move(t, e, r, whole, ran);
	t->cw_run_given_ns += ran;
	*ran_ns = ran;
	return whole;
}
