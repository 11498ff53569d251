/* A profile with every address symbolized: functions interned once, each stack turned into a
 * root-first list of function ids (inlined functions expanded into frames of their own).
 * Every report works from this, so they all agree on names, files and lines. */
#ifndef WP_RESOLVE_H
#define WP_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "common/profile.h"
#include "flame.h"
#include "symbolize.h"

struct wp_func {
	const char *name;    /* demangled, or "module+0xoff" / "(unknown)" */
	const char *module;  /* basename */
	const char *file;    /* hottest source file, NULL when unknown */
	int line;            /* hottest line, 0 when unknown */
	enum wp_frame_kind kind;
	int inlined;         /* seen as an inlined frame */
	uint64_t self;       /* samples with this function as the leaf */
	uint64_t total;      /* samples with this function anywhere (counted once per sample) */
};

struct wp_rframe {
	uint32_t func;
	int line;            /* the line executing in this frame (call site for non-leaves) */
	const char *file;
};

struct wp_rstack {
	const struct wp_stack *src;
	uint32_t tid;
	uint32_t flags;      /* WP_STACK_* */
	uint64_t count;
	uint64_t weight_ns;
	uint32_t n;
	struct wp_rframe *frames; /* ROOT FIRST; frames[n-1] is the leaf */
};

struct wp_resolved {
	struct wp_func *funcs;
	size_t nfuncs;
	struct wp_rstack *stacks; /* same order as the profile's stacks */
	size_t nstacks;
	uint64_t total;           /* samples in all stacks */
	struct wp_symbolizer *sym;
	void *priv;
};

/* Symbolizes every stack of `p`. Returns NULL when out of memory (message printed). */
struct wp_resolved *wp_resolve(const struct wp_profile *p);
void wp_resolved_free(struct wp_resolved *r);

/* Recomputes funcs[].self/.total over the stacks for which keep(stack, arg) is nonzero (all
 * when keep is NULL), and r->total likewise. */
void wp_resolved_count(struct wp_resolved *r, int (*keep)(const struct wp_rstack *, void *),
		       void *arg);

/* qsort_r order of function ids (arg: the funcs array): most self samples first, then most
 * total, then by name, so every report ranks functions the same way. */
int wp_func_by_self(const void *a, const void *b, void *arg);

/* Thread filter shared by reports: matches `sel` (a tid or a thread name) against a stack. */
int wp_thread_matches(const struct wp_profile *p, uint32_t tid, const char *sel);

#endif
