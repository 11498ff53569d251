/* SPDX-License-Identifier: MIT */
/* Self-contained interactive SVG flame graphs; see flame.h.
 *
 * Stacks are merged into a prefix tree (flame_tree.c), laid out breadth first with children in
 * alphabetical order, frames narrower than min_width_px dropped (their samples stay in the
 * parent's width), and written as one SVG with an inline style sheet and script (flame.css,
 * flame.js, built in by scripts/embed_text.py): hover details, click to zoom, regex search with
 * the matched share, and window.wpFlame for tests and automation. */
#include "flame.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "flame_assets.h" /* wp_flame_css, wp_flame_js: flame.css and flame.js, built in */
#include "flame_tree.h"
#include "idmap.h"
#include "textfmt.h"

#define ROW_H 17    /* pixels from one frame row to the next */
#define FRAME_H 16  /* frame rectangle height */
#define XPAD 10     /* left and right margin */
#define CHAR_W 7.0  /* estimated average glyph width of the 12px label font */

/* ---------------------------------------------------------------------------------------- */
/* Layout */

struct item {
	uint32_t node, depth;
	uint64_t start; /* sample offset of the left edge */
};

struct layout {
	struct item *items;
	size_t nitems;
	uint32_t maxdepth;
	size_t merged;      /* frames dropped as too narrow (whole subtrees) */
	size_t before_only; /* differential: frames with no AFTER samples */
};

static int cmp_rank(const void *a, const void *b, void *arg)
{
	const struct wp_ftree *t = arg;
	uint32_t ra = t->names[wp_fnode_at(t, *(const uint32_t *)a)->name].rank;
	uint32_t rb = t->names[wp_fnode_at(t, *(const uint32_t *)b)->name].rank;

	return ra < rb ? -1 : ra > rb;
}

static int layout_build(const struct wp_ftree *t, double min_samples, struct layout *L)
{
	size_t cap = 0, tmp_cap = 0, k;
	uint32_t *tmp = NULL;

	memset(L, 0, sizeof(*L));
	if (wp_grow(&L->items, &cap, 1024, sizeof(*L->items)))
		return -ENOMEM;
	L->items[0] = (struct item){ 0, 0, 0 };
	L->nitems = 1;
	for (k = 0; k < L->nitems; k++) {
		struct item it = L->items[k];
		uint64_t off = it.start;
		size_t nc = 0, i;
		uint32_t c;

		for (c = wp_fnode_at(t, it.node)->first_child; c; c = wp_fnode_at(t, c)->next_sibling) {
			if (wp_grow(&tmp, &tmp_cap, nc + 1, sizeof(*tmp)))
				goto oom;
			tmp[nc++] = c;
		}
		if (nc > 1)
			qsort_r(tmp, nc, sizeof(*tmp), cmp_rank, (void *)t);
		for (i = 0; i < nc; i++) {
			const struct wp_fnode *n = wp_fnode_at(t, tmp[i]);

			if (n->count && (double)n->count >= min_samples) {
				if (wp_grow(&L->items, &cap, L->nitems + 1, sizeof(*L->items)))
					goto oom;
				L->items[L->nitems++] =
					(struct item){ tmp[i], it.depth + 1, off };
				if (it.depth + 1 > L->maxdepth)
					L->maxdepth = it.depth + 1;
			}
			off += n->count;
		}
	}
	free(tmp);
	for (k = 1; k < t->nnodes; k++)
		if (!wp_fnode_at(t, (uint32_t)k)->count)
			L->before_only++;
	L->merged = t->nnodes - L->nitems - L->before_only;
	return 0;
oom:
	free(tmp);
	free(L->items);
	L->items = NULL;
	return -ENOMEM;
}

/* ---------------------------------------------------------------------------------------- */
/* Output */

struct out {
	FILE *f;
	char *buf;
	size_t len, cap;
	int err; /* positive errno once a write failed */
};

static void o_flush(struct out *o)
{
	if (o->len && !o->err) {
		errno = 0;
		if (fwrite(o->buf, 1, o->len, o->f) != o->len)
			o->err = errno ? errno : EIO;
	}
	o->len = 0;
}

static void o_write(struct out *o, const char *s, size_t n)
{
	if (o->len + n > o->cap) {
		o_flush(o);
		if (n > o->cap) {
			if (!o->err) {
				errno = 0;
				if (fwrite(s, 1, n, o->f) != n)
					o->err = errno ? errno : EIO;
			}
			return;
		}
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void o_puts(struct out *o, const char *s)
{
	o_write(o, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void o_printf(struct out *o, const char *fmt, ...)
{
	char small[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		o_write(o, small, (size_t)n);
	} else {
		char *big = malloc((size_t)n + 1);

		if (!big) {
			if (!o->err)
				o->err = ENOMEM;
			return;
		}
		va_start(ap, fmt);
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		va_end(ap);
		o_write(o, big, (size_t)n);
		free(big);
	}
}

/* Length of the valid XML character encoded in UTF-8 at s, or 0 if s[0] starts an invalid
 * sequence or a character XML forbids (C0 controls, U+FFFE, U+FFFF). */
static size_t xml_char(const unsigned char *s)
{
	size_t l = wp_utf8_seq(s);

	if (l == 1 && s[0] < 0x20)
		return 0;
	if (l == 3 && s[0] == 0xef && s[1] == 0xbf && s[2] >= 0xbe)
		return 0;
	return l;
}

/* Characters in s after sanitizing (each bad byte becomes one U+FFFD). */
static size_t utf8_chars(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = 0;

	while (*s) {
		size_t l = xml_char(s);

		s += l ? l : 1;
		n++;
	}
	return n;
}

/* Writes s XML-escaped and sanitized; at most `max` characters (SIZE_MAX: all). */
static void o_esc(struct out *o, const char *str, size_t max)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	size_t n = 0;

	while (*s && n < max) {
		size_t l = xml_char(s);

		n++;
		if (!l) {
			o_write(o, "\xef\xbf\xbd", 3);
			s++;
			continue;
		}
		switch (*s) {
		case '&': o_write(o, "&amp;", 5); break;
		case '<': o_write(o, "&lt;", 4); break;
		case '>': o_write(o, "&gt;", 4); break;
		case '"': o_write(o, "&quot;", 6); break;
		case '\'': o_write(o, "&#39;", 5); break;
		default: o_write(o, (const char *)s, l);
		}
		s += l;
	}
}

/* A label that fits `w` pixels by the estimate; the script refines it with real metrics. */
static void o_label(struct out *o, const char *name, double w)
{
	double avail = w - 6;
	size_t max, len;

	if (avail < CHAR_W * 2.5)
		return;
	max = (size_t)(avail / CHAR_W);
	len = utf8_chars(name);
	if (len <= max) {
		o_esc(o, name, SIZE_MAX);
	} else if (max >= 3) {
		o_esc(o, name, max - 1);
		o_puts(o, "\xe2\x80\xa6");
	}
}

/* A count with thousands separators: "14,293". */
static void o_count(struct out *o, uint64_t v)
{
	o_puts(o, wp_num(v));
}

/* ---------------------------------------------------------------------------------------- */
/* Colours */

struct rgb {
	int r, g, b;
};

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return (uint32_t)wp_mix64(h);
}

static struct rgb kind_colour(const char *name, int kind, int is_root)
{
	uint32_t h = name_hash(name ? name : "");
	double v1 = (h & 0xff) / 255.0, v2 = ((h >> 8) & 0xff) / 255.0;
	double v3 = ((h >> 16) & 0xff) / 255.0;

	if (is_root)
		return (struct rgb){ 190, 195, 205 };
	switch (kind) {
	case WP_KIND_PROGRAM: /* warm: red through orange to yellow */
		return (struct rgb){ 215 + (int)(40 * v3), 70 + (int)(160 * v1), 30 + (int)(50 * v2) };
	case WP_KIND_LIBRARY: /* green through aqua */
		return (struct rgb){ 70 + (int)(60 * v2), 175 + (int)(50 * v1), 110 + (int)(100 * v3) };
	case WP_KIND_KERNEL: /* khaki */
		return (struct rgb){ 200 + (int)(30 * v1), 185 + (int)(30 * v1), 90 + (int)(40 * v2) };
	case WP_KIND_THREAD: /* blue-grey */
		return (struct rgb){ 125 + (int)(30 * v1), 145 + (int)(30 * v1), 185 + (int)(30 * v1) };
	default: /* unknown: grey */
		return (struct rgb){ 165 + (int)(35 * v1), 165 + (int)(35 * v1), 165 + (int)(35 * v1) };
	}
}

/* Hot/cold graphs: a running sample's frames in warm colours (program red to yellow, libraries
 * orange, unknown tan), a waiting sample's in cool ones (program blue, libraries aqua,
 * unknown slate), the wait leaf indigo, a lock's "held by" violet and its holder's stack
 * pink. Thread roots keep their blue-grey. */
static struct rgb state_colour(const char *name, int kind, int state, int is_root)
{
	uint32_t h = name_hash(name ? name : "");
	double v1 = (h & 0xff) / 255.0, v2 = ((h >> 8) & 0xff) / 255.0;

	if (is_root || kind == WP_KIND_THREAD)
		return kind_colour(name, kind, is_root);
	switch (state) {
	case WP_FLAME_WAITING:
		if (kind == WP_KIND_PROGRAM)
			return (struct rgb){ 70 + (int)(40 * v2), 120 + (int)(50 * v1), 215 + (int)(35 * v2) };
		if (kind == WP_KIND_LIBRARY)
			return (struct rgb){ 80 + (int)(40 * v2), 185 + (int)(40 * v1), 205 + (int)(35 * v1) };
		return (struct rgb){ 140 + (int)(30 * v1), 160 + (int)(30 * v1), 190 + (int)(30 * v1) };
	case WP_FLAME_WAIT:
		return (struct rgb){ 120 + (int)(30 * v1), 120 + (int)(30 * v1), 235 };
	case WP_FLAME_HELD_BY:
		return (struct rgb){ 185 + (int)(20 * v1), 130 + (int)(20 * v1), 235 };
	case WP_FLAME_HOLDER:
		return (struct rgb){ 230 + (int)(25 * v2), 130 + (int)(50 * v1), 200 + (int)(35 * v2) };
	default:
		if (kind == WP_KIND_PROGRAM)
			return kind_colour(name, kind, 0);
		if (kind == WP_KIND_LIBRARY)
			return (struct rgb){ 235 + (int)(20 * v2), 150 + (int)(60 * v1), 40 + (int)(40 * v2) };
		return (struct rgb){ 210 + (int)(30 * v1), 180 + (int)(30 * v1), 140 + (int)(30 * v1) };
	}
}

/* The class of a hot/cold frame's <g> besides "f" (NULL: none). */
static const char *state_class(int kind, int state, int is_root)
{
	static const char *const cls[WP_FLAME__N] = { "warm", "cool", "wait", "held", "holder" };

	if (is_root || kind == WP_KIND_THREAD || state < 0 || state >= WP_FLAME__N)
		return NULL;
	return cls[state];
}

/* Red: more samples in AFTER, blue: fewer, grey: the same; the more the change, the more
 * the colour (and never so dark that the black label gets hard to read). */
static struct rgb diff_colour(uint64_t after, uint64_t before, double maxdelta)
{
	static const struct rgb same = { 212, 212, 212 }, red = { 255, 90, 90 },
				blue = { 100, 130, 255 };
	double d = (double)after - (double)before, i;
	struct rgb to;

	if (d == 0 || maxdelta <= 0)
		return same;
	i = fabs(d) / maxdelta;
	if (i > 1)
		i = 1;
	i = 0.15 + 0.85 * i; /* any change is visible */
	to = d > 0 ? red : blue;
	return (struct rgb){ same.r + (int)lround((to.r - same.r) * i),
			     same.g + (int)lround((to.g - same.g) * i),
			     same.b + (int)lround((to.b - same.b) * i) };
}

/* ---------------------------------------------------------------------------------------- */

static void o_swatch(struct out *o, double *x, double y, struct rgb c, const char *label)
{
	o_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" rx=\"2\" "
		    "fill=\"rgb(%d,%d,%d)\"/>",
		 *x, y - 10, c.r, c.g, c.b);
	o_printf(o, "<text x=\"%.1f\" y=\"%.1f\">", *x + 16, y);
	o_esc(o, label, SIZE_MAX);
	o_puts(o, "</text>\n");
	*x += 16 + CHAR_W * (double)strlen(label) + 18;
}

static void write_svg(struct out *o, const struct wp_ftree *t, const struct layout *L,
		      const struct wp_flame_opts *opts, int width, double minw)
{
	const int diff = opts->differential;
	const uint64_t total = wp_fnode_at(t, 0)->count, btotal = wp_fnode_at(t, 0)->base;
	const double gw = width - 2.0 * XPAD, scale = total ? gw / (double)total : 0;
	const char *title = opts->title ? opts->title
				       : diff ? "Differential Flame Graph" : "Flame Graph";
	const int has_sub = opts->subtitle && *opts->subtitle;
	const int top = has_sub ? 62 : 46;
	const int rows = total ? (int)L->maxdepth + 1 : 4;
	const int gbottom = top + rows * ROW_H;
	const int height = gbottom + 70;
	double maxdelta = 0, lx;
	int seen[5] = { 0 }, seen_state[WP_FLAME__N] = { 0 };
	size_t k;

	if (diff) {
		for (k = 1; k < L->nitems; k++) {
			const struct wp_fnode *n = wp_fnode_at(t, L->items[k].node);
			double d = fabs((double)n->count - (double)n->base);

			if (d > maxdelta)
				maxdelta = d;
		}
		if (maxdelta == 0)
			maxdelta = fabs((double)total - (double)btotal);
	}

	o_puts(o, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n");
	o_printf(o,
		 "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		 "height=\"%d\" viewBox=\"0 0 %d %d\" data-total=\"%llu\" data-btotal=\"%llu\" "
		 "data-diff=\"%d\" data-xpad=\"%d\" data-gw=\"%d\" data-row=\"%d\">\n",
		 width, height, width, height, (unsigned long long)total,
		 (unsigned long long)btotal, diff ? 1 : 0, XPAD, width - 2 * XPAD, ROW_H);
	o_puts(o, "<style type=\"text/css\"><![CDATA[\n");
	o_write(o, wp_flame_css, sizeof(wp_flame_css) - 1);
	o_puts(o, "]]></style>\n");
	o_puts(o, "<defs><linearGradient id=\"wp-bg\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">"
		  "<stop offset=\"5%\" stop-color=\"#f4f4f4\"/>");
	o_puts(o, diff ? "<stop offset=\"95%\" stop-color=\"#e4e6ee\"/>"
		       : "<stop offset=\"95%\" stop-color=\"#f0efd6\"/>");
	o_puts(o, "</linearGradient></defs>\n");
	o_printf(o, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"url(#wp-bg)\"/>\n",
		 width, height);
	o_printf(o, "<text id=\"wp-title\" x=\"%.1f\" y=\"26\" text-anchor=\"middle\">",
		 width / 2.0);
	o_esc(o, title, SIZE_MAX);
	o_puts(o, "</text>\n");
	if (has_sub) {
		o_printf(o, "<text id=\"wp-subtitle\" x=\"%.1f\" y=\"45\" text-anchor=\"middle\">",
			 width / 2.0);
		o_esc(o, opts->subtitle, SIZE_MAX);
		o_puts(o, "</text>\n");
	}
	o_printf(o, "<text id=\"wp-reset\" class=\"btn hidden\" x=\"%d\" y=\"26\">Reset zoom</text>\n",
		 XPAD);
	o_printf(o, "<text id=\"wp-search\" class=\"btn\" x=\"%d\" y=\"26\" text-anchor=\"end\">"
		    "Search</text>\n",
		 width - XPAD);
	o_printf(o, "<text id=\"wp-clear\" class=\"btn hidden\" x=\"%d\" y=\"26\" "
		    "text-anchor=\"end\">Clear</text>\n",
		 width - XPAD - 70);

	o_puts(o, "<g id=\"wp-frames\">\n");
	for (k = 0; total && k < L->nitems; k++) {
		const struct item *it = &L->items[k];
		const struct wp_fnode *n = wp_fnode_at(t, it->node);
		const char *name = it->node ? t->names[n->name].str : "all";
		int kind = it->node ? t->names[n->name].kind : -1;
		int state = it->node ? t->names[n->name].state : 0;
		double x = XPAD + (double)it->start * scale, w = (double)n->count * scale;
		int y = gbottom - (int)(it->depth + 1) * ROW_H;
		struct rgb c = diff ? diff_colour(n->count, n->base, maxdelta)
			     : opts->hotcold ? state_colour(name, kind, state, it->node == 0)
					     : kind_colour(name, kind, it->node == 0);
		const char *cls = opts->hotcold && !diff ? state_class(kind, state, it->node == 0)
							 : NULL;

		if (kind >= 0 && kind < 5)
			seen[kind] = 1;
		if (state > 0 && state < WP_FLAME__N)
			seen_state[state] = 1;
		o_printf(o, "<g class=\"f%s%s\" id=\"f%zu\" data-s=\"%llu\" data-n=\"%llu\" "
			    "data-d=\"%u\"", cls ? " " : "", cls ? cls : "",
			 k, (unsigned long long)it->start, (unsigned long long)n->count,
			 it->depth);
		if (diff)
			o_printf(o, " data-b=\"%llu\"", (unsigned long long)n->base);
		o_puts(o, "><title>");
		o_esc(o, name, SIZE_MAX);
		o_puts(o, " (");
		o_count(o, n->count);
		o_printf(o, n->count == 1 ? " sample, %.2f%%" : " samples, %.2f%%",
			 (double)n->count * 100.0 / (double)total);
		if (diff) {
			o_puts(o, "; before ");
			o_count(o, n->base);
			o_puts(o, ", after ");
			o_count(o, n->count);
			o_printf(o, ", delta %+.2f%%",
				 ((double)n->count - (double)n->base) * 100.0 / (double)total);
		}
		o_printf(o, ")</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" rx=\"2\" "
			    "fill=\"rgb(%d,%d,%d)\"/><text x=\"%.2f\" y=\"%d\">",
			 x, y, w, FRAME_H, c.r, c.g, c.b, x + 3, y + 12);
		o_label(o, name, w);
		o_puts(o, "</text></g>\n");
	}
	o_puts(o, "</g>\n");
	if (!total) {
		o_printf(o, "<text id=\"wp-nosamples\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">"
			    "No samples%s</text>\n",
			 width / 2.0, top + 2 * ROW_H + 4,
			 diff && btotal ? " in the AFTER profile" : "");
	}

	/* details line and search result */
	o_printf(o, "<text id=\"wp-details\" x=\"%d\" y=\"%d\">%s</text>\n", XPAD, gbottom + 20,
		 total ? "Hover a frame for details; click to zoom; Ctrl-F or / to search" : " ");
	o_printf(o, "<text id=\"wp-matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"></text>\n",
		 width - XPAD, gbottom + 20);

	/* legend */
	o_puts(o, "<g id=\"wp-legend\">\n");
	lx = XPAD;
	if (diff) {
		o_swatch(o, &lx, gbottom + 42, diff_colour(2, 1, 1), "more samples in AFTER");
		o_swatch(o, &lx, gbottom + 42, diff_colour(1, 2, 1), "fewer samples in AFTER");
		o_swatch(o, &lx, gbottom + 42, diff_colour(1, 1, 1), "unchanged");
		o_printf(o, "<text x=\"%.1f\" y=\"%d\">Widths are AFTER samples (",
			 lx, gbottom + 42);
		o_count(o, total);
		o_puts(o, " after, ");
		o_count(o, btotal);
		o_puts(o, " before); ");
		o_count(o, L->before_only);
		o_puts(o, L->before_only == 1 ? " frame only in BEFORE not drawn</text>\n"
					      : " frames only in BEFORE not drawn</text>\n");
	} else if (opts->hotcold) {
		static const char *const labels[WP_FLAME__N] = {
			"running", "waiting", "wait [KIND OBJECT]", "lock held by", "holder's stack"
		};
		int st;

		for (st = 0; st < WP_FLAME__N; st++)
			if (st == WP_FLAME_RUNNING || seen_state[st])
				o_swatch(o, &lx, gbottom + 42,
					 state_colour(labels[st], WP_KIND_PROGRAM, st, 0), labels[st]);
		if (seen[WP_KIND_LIBRARY])
			o_swatch(o, &lx, gbottom + 42,
				 state_colour("memcpy", WP_KIND_LIBRARY, WP_FLAME_RUNNING, 0),
				 "running, library");
	} else {
		static const char *const labels[5] = { "program", "library", "kernel", "unknown",
						       "thread" };
		static const char *const sample_names[5] = { "main", "memcpy", "k", "?", "[t]" };
		int order[5] = { WP_KIND_PROGRAM, WP_KIND_LIBRARY, WP_KIND_KERNEL,
				 WP_KIND_UNKNOWN, WP_KIND_THREAD };
		int i;

		for (i = 0; i < 5; i++) {
			int kd = order[i];

			if (kd == WP_KIND_KERNEL && !seen[kd])
				continue;
			o_swatch(o, &lx, gbottom + 42, kind_colour(sample_names[kd], kd, 0),
				 labels[kd]);
		}
	}
	o_puts(o, "</g>\n");

	/* footer */
	o_printf(o, "<text id=\"wp-footer\" x=\"%d\" y=\"%d\">", XPAD, gbottom + 62);
	o_count(o, total);
	o_puts(o, total == 1 ? " sample; " : " samples; ");
	o_count(o, total ? L->nitems : 0);
	o_puts(o, total && L->nitems == 1 ? " frame shown; " : " frames shown; ");
	o_count(o, L->merged);
	o_printf(o, " frame%s narrower than %g px merged into their parents; children sorted "
		    "alphabetically</text>\n",
		 L->merged == 1 ? "" : "s", minw);

	o_puts(o, "<script type=\"text/ecmascript\"><![CDATA[\n");
	o_write(o, wp_flame_js, sizeof(wp_flame_js) - 1);
	o_puts(o, "]]></script>\n</svg>\n");
}

int wp_flame_write(FILE *out, const struct wp_flame_stack *stacks, size_t nstacks,
		   const struct wp_flame_opts *opts)
{
	static const struct wp_flame_opts defaults = { 0 };
	struct wp_ftree t;
	struct layout L = { 0 };
	struct out o = { 0 };
	double minw, min_samples;
	int width, r;
	size_t s;

	if (!out || (!stacks && nstacks))
		return -EINVAL;
	if (!opts)
		opts = &defaults;
	for (s = 0; s < nstacks; s++)
		if (stacks[s].nframes < 0 || (stacks[s].nframes > 0 && !stacks[s].frames))
			return -EINVAL;
	width = opts->width > 0 ? opts->width : 1200;
	if (width < 200)
		width = 200;
	minw = opts->min_width_px > 0 ? opts->min_width_px : 0.1;

	r = wp_ftree_init(&t);
	if (!r)
		r = wp_ftree_build(&t, stacks, nstacks, opts->differential);
	if (!r)
		r = wp_ftree_rank(&t);
	if (r)
		goto done;
	min_samples = wp_fnode_at(&t, 0)->count
			      ? minw * (double)wp_fnode_at(&t, 0)->count / (width - 2.0 * XPAD)
			      : 0;
	r = layout_build(&t, min_samples, &L);
	if (r)
		goto done;

	o.f = out;
	o.cap = 1 << 16;
	o.buf = malloc(o.cap);
	if (!o.buf) {
		r = -ENOMEM;
		goto done;
	}
	write_svg(&o, &t, &L, opts, width, minw);
	o_flush(&o);
	if (!o.err) {
		errno = 0;
		if (fflush(out) == EOF || ferror(out))
			o.err = errno ? errno : EIO;
	}
	r = o.err ? -o.err : 0;
done:
	free(o.buf);
	free(L.items);
	wp_ftree_free(&t);
	return r;
}
