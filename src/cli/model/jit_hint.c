/* SPDX-License-Identifier: MIT */
#include "jit_hint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "common/format.h"

/* Whether stack s has a frame the symbolizer put in no module: code in anonymous memory. (A
 * frame of a known module without a symbol is "module+0xOFF", never "(unknown)".) */
static int in_anonymous_code(const struct wp_resolved *r, const struct wp_rstack *s)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (r->funcs[s->frames[i].func].kind == WP_KIND_UNKNOWN &&
		    !strcmp(r->funcs[s->frames[i].func].module, "(unknown)"))
			return 1;
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : path ? path : "";
}

/* Which runtime process p is, from the modules it mapped and its command's first word. */
static const char *runtime_of(const struct wp_profile *p)
{
	for (size_t i = 0; i < p->nmodules; i++) {
		const char *m = base_name(p->modules[i].path);
		if (!strncmp(m, "libjvm", 6))
			return "java";
		if (!strncmp(m, "libnode", 7))
			return "node";
		if (!strncmp(m, "libpython3", 10))
			return "python";
	}
	const char *cmd = p->info.command ? p->info.command : "";
	char prog[64];
	size_t n = strcspn(cmd, " ");
	snprintf(prog, sizeof(prog), "%.*s", (int)n, cmd);
	const char *b = base_name(prog);
	if (!strcmp(b, "node") || !strcmp(b, "nodejs"))
		return "node";
	if (!strcmp(b, "java"))
		return "java";
	if (!strncmp(b, "python3", 7))
		return "python";
	return NULL;
}

void wp_jit_use(const struct wp_resolved *r, struct wp_jit_use *u)
{
	memset(u, 0, sizeof(*u));
	u->pid = -1;
	uint64_t *per = wp_xcalloc(r->nprocs ? r->nprocs : 1, sizeof(*per));
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (s->flags & WP_STACK_WAITING)
			continue; /* blocked in a call: where it waits, not where code ran */
		u->base += s->count;
		if (in_anonymous_code(r, s)) {
			u->unknown += s->count;
			per[s->proc] += s->count;
		}
	}
	size_t best = 0;
	for (size_t k = 1; k < r->nprocs; k++)
		if (per[k] > per[best])
			best = k;
	if (r->nprocs && per[best]) {
		u->pid = wp_resolved_pid(r, (uint32_t)best);
		u->runtime = runtime_of(r->procs[best]);
	}
	free(per);
}

int wp_jit_hint(const struct wp_jit_use *u, char *buf, size_t cap)
{
	buf[0] = 0;
	if (!u->base || u->unknown < WP_JIT_HINT_MIN ||
	    (double)u->unknown < WP_JIT_HINT_SHARE * (double)u->base)
		return 0;
	const char *how;
	const char *rt = u->runtime;
	if (rt && !strcmp(rt, "node"))
		how = "JIT-compiled JavaScript: run node with --perf-basic-prof";
	else if (rt && !strcmp(rt, "java"))
		how = "JIT-compiled Java: run java with -XX:+UnlockDiagnosticVMOptions "
		      "-XX:+DumpPerfMapAtExit";
	else if (rt && !strcmp(rt, "python"))
		how = "CPython's perf trampolines or a JIT: run CPython 3.12 or later with -X perf "
		      "(3.11 and earlier cannot write one)";
	else
		how = "JIT-compiled code: its runtime may write one when asked (node "
		      "--perf-basic-prof, java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit, "
		      "python3.12 -X perf)";
	snprintf(buf, cap, "%.1f%% of the samples not blocked in a call ran in anonymous "
		 "executable memory, shown as (unknown): likely %s, which writes "
		 "/tmp/perf-PID.map, read by wallprof to name those frames",
		 100.0 * (double)u->unknown / (double)u->base, how);
	return 1;
}
