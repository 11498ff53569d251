/* SPDX-License-Identifier: MIT */
/* Unit tests for the SVG flame graph writer (src/cli/reports/flame.c). Every produced document is
 * also checked with `xmllint --noout` (Debian: libxml2-utils). */
#include "cli/reports/flame.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define GW 1180.0 /* graph width at the default 1200 px */

/* ---- building inputs ---- */

#define MAXF 64

struct stk {
	struct wp_flame_frame fr[MAXF];
	struct wp_flame_stack s;
};

static char *copies[256];
static int ncopies;

/* "a;b;c" -> frames (the names point into a copy that stays alive until the test ends). */
static void mk(struct stk *k, const char *folded, uint64_t count, uint64_t base,
	       enum wp_frame_kind kind)
{
	char *copy = strdup(folded), *save = NULL, *tok;
	int n = 0;

	if (ncopies < 256)
		copies[ncopies++] = copy;

	for (tok = strtok_r(copy, ";", &save); tok && n < MAXF; tok = strtok_r(NULL, ";", &save)) {
		k->fr[n].name = tok;
		k->fr[n].kind = kind;
		k->fr[n].state = WP_FLAME_RUNNING; /* k is on the caller's stack: uninitialised */
		n++;
	}
	k->s.frames = k->fr;
	k->s.nframes = n;
	k->s.count = count;
	k->s.base = base;
}

static struct wp_flame_stack *flat(struct stk *k, size_t n)
{
	struct wp_flame_stack *s = calloc(n ? n : 1, sizeof(*s));
	size_t i;

	for (i = 0; i < n; i++) {
		s[i] = k[i].s;
		s[i].frames = k[i].fr;
	}
	return s;
}

/* ---- rendering and parsing ---- */

static char tmpdir[] = "/tmp/test_flame.XXXXXX";
static int nfiles;

struct doc {
	char *text;
	char path[256];
	int rc;
};

static int xmllint_ok(const char *path)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		execlp("xmllint", "xmllint", "--noout", "--nonet", path, (char *)NULL);
		fprintf(stderr, "cannot run xmllint (%s): install libxml2-utils (./scripts/deps)\n",
			strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return 0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static struct doc render(const struct wp_flame_stack *s, size_t n, const struct wp_flame_opts *o)
{
	struct doc d = { 0 };
	FILE *f;
	long len;

	snprintf(d.path, sizeof(d.path), "%s/g%d.svg", tmpdir, nfiles++);
	f = fopen(d.path, "w+");
	if (!f) {
		d.rc = -errno;
		return d;
	}
	d.rc = wp_flame_write(f, s, n, o);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	d.text = calloc(1, (size_t)len + 1);
	if (fread(d.text, 1, (size_t)len, f) != (size_t)len)
		d.rc = -EIO;
	fclose(f);
	CHECK(d.rc == 0, "wp_flame_write returned %d", d.rc);
	CHECK(xmllint_ok(d.path), "xmllint rejects %s", d.path);
	return d;
}

struct frame {
	char title[512];
	double x, y, w;
	int r, g, b;
	int depth;
};

static int attr(const char *el, const char *end, const char *name, char *out, size_t outsz)
{
	char key[64];
	const char *p, *q;

	snprintf(key, sizeof(key), " %s=\"", name);
	p = strstr(el, key);
	if (!p || p > end)
		return 0;
	p += strlen(key);
	q = strchr(p, '"');
	if (!q || (size_t)(q - p) >= outsz)
		return 0;
	memcpy(out, p, (size_t)(q - p));
	out[q - p] = 0;
	return 1;
}

static double attr_num(const char *el, const char *end, const char *name)
{
	char v[64];

	return attr(el, end, name, v, sizeof(v)) ? atof(v) : NAN;
}

/* All frames of the document. */
static int frames(const struct doc *d, struct frame *out, int max)
{
	const char *p = d->text ? d->text : "";
	int n = 0;

	while ((p = strstr(p, "<g class=\"f\"")) && n < max) {
		const char *end = strstr(p, "</g>"), *t, *te, *rect;
		struct frame *f = &out[n];
		char fill[64];

		if (!end)
			break;
		memset(f, 0, sizeof(*f));
		f->depth = (int)attr_num(p, end, "data-d");
		t = strstr(p, "<title>");
		te = strstr(p, "</title>");
		if (t && te && te < end && (size_t)(te - t - 7) < sizeof(f->title)) {
			memcpy(f->title, t + 7, (size_t)(te - t - 7));
			f->title[te - t - 7] = 0;
		}
		rect = strstr(p, "<rect");
		f->x = attr_num(rect, end, "x");
		f->y = attr_num(rect, end, "y");
		f->w = attr_num(rect, end, "width");
		if (attr(rect, end, "fill", fill, sizeof(fill)))
			sscanf(fill, "rgb(%d,%d,%d)", &f->r, &f->g, &f->b);
		n++;
		p = end;
	}
	return n;
}

/* The frame whose title starts with `name (`. */
static const struct frame *by_name(const struct frame *f, int n, const char *name)
{
	size_t l = strlen(name);
	int i;

	for (i = 0; i < n; i++)
		if (!strncmp(f[i].title, name, l) && !strncmp(f[i].title + l, " (", 2))
			return &f[i];
	return NULL;
}

static const struct frame NOFRAME = { "", NAN, NAN, NAN, -1, -1, -1, -1 };
#define FR(name) (by_name(fr, nf, name) ? by_name(fr, nf, name) : &NOFRAME)
#define NEAR(a, b) (fabs((a) - (b)) < 0.02)

/* ---- tests ---- */

static void test_basic(void)
{
	struct stk k[5];
	struct wp_flame_stack *s;
	struct frame fr[32];
	struct doc d;
	int nf;

	mk(&k[0], "main;a;b", 3, 0, WP_KIND_PROGRAM);
	mk(&k[1], "main;a;c", 1, 0, WP_KIND_PROGRAM);
	mk(&k[2], "main;d", 4, 0, WP_KIND_PROGRAM);
	mk(&k[3], "main;d", 2, 0, WP_KIND_PROGRAM); /* repeats merge */
	mk(&k[4], "", 0, 0, WP_KIND_PROGRAM);       /* zero samples: ignored */
	s = flat(k, 5);
	d = render(s, 5, &(struct wp_flame_opts){ .title = "Basic" });
	nf = frames(&d, fr, 32);
	CHECK(nf == 6, "frames: %d, want 6 (all main a b c d)", nf);
	CHECK(NEAR(FR("all")->w, GW), "all width %f", FR("all")->w);
	CHECK(NEAR(FR("main")->w, GW), "main width %f", FR("main")->w);
	CHECK(NEAR(FR("a")->w, GW * 4 / 10), "a width %f", FR("a")->w);
	CHECK(NEAR(FR("b")->w, GW * 3 / 10), "b width %f", FR("b")->w);
	CHECK(NEAR(FR("c")->w, GW * 1 / 10), "c width %f", FR("c")->w);
	CHECK(NEAR(FR("d")->w, GW * 6 / 10), "d width %f", FR("d")->w);
	/* alphabetical children, laid out left to right without gaps */
	CHECK(NEAR(FR("a")->x, 10) && NEAR(FR("d")->x, 10 + GW * 4 / 10), "a at %f, d at %f",
	      FR("a")->x, FR("d")->x);
	CHECK(FR("b")->x < FR("c")->x, "b at %f, c at %f", FR("b")->x, FR("c")->x);
	/* root at the bottom, 17 px rows */
	CHECK(FR("all")->y > FR("main")->y && NEAR(FR("all")->y - FR("main")->y, 17),
	      "all y %f, main y %f", FR("all")->y, FR("main")->y);
	CHECK(NEAR(FR("main")->y - FR("a")->y, 17), "rows");
	CHECK(strstr(d.text, "<title>a (4 samples, 40.00%)</title>") != NULL, "title of a");
	CHECK(strstr(d.text, "<title>c (1 sample, 10.00%)</title>") != NULL, "title of c");
	CHECK(strstr(d.text, ">Basic</text>") != NULL, "title text");
	CHECK(strstr(d.text, "<script") && strstr(d.text, "<style") &&
		      strstr(d.text, "window.wpFlame"),
	      "inline script and style");
	CHECK(!strstr(d.text, "http://") || !strstr(strstr(d.text, "http://") + 1, "http://"),
	      "no external resources (only the SVG namespace URI)");
	CHECK(strstr(d.text, "width=\"1200\"") != NULL, "default width");
	free(d.text);
	free(s);
}

static void test_width_and_stackless(void)
{
	struct stk k[2];
	struct wp_flame_stack *s;
	struct frame fr[8];
	struct doc d;
	int nf;

	mk(&k[0], "x", 1, 0, WP_KIND_PROGRAM);
	mk(&k[1], "", 3, 0, WP_KIND_PROGRAM); /* no frames: samples stay in the root */
	s = flat(k, 2);
	d = render(s, 2, &(struct wp_flame_opts){ .width = 600 });
	nf = frames(&d, fr, 8);
	CHECK(nf == 2, "frames %d", nf);
	CHECK(strstr(d.text, "width=\"600\"") != NULL, "width option");
	CHECK(NEAR(FR("all")->w, 580) && NEAR(FR("x")->w, 145), "widths %f %f", FR("all")->w,
	      FR("x")->w);
	free(d.text);
	free(s);
}

static void test_escaping(void)
{
	static const struct wp_flame_frame f1[] = {
		{ "std::vector<int, A<\"q\">>::push_back(int const&) 'x'", WP_KIND_PROGRAM },
		{ "bad\xff\xfeutf8\x01 \xc3\xa9t\xc3\xa9 \xed\xa0\x80 \xe2\x82", WP_KIND_LIBRARY },
	};
	static const struct wp_flame_frame f2[] = { { NULL, WP_KIND_PROGRAM } };
	struct wp_flame_stack s[2] = { { f1, 2, 5, 0 }, { f2, 1, 5, 0 } };
	struct frame fr[8];
	struct doc d;
	int nf;

	d = render(s, 2, &(struct wp_flame_opts){ .title = "T<&>", .subtitle = "\"sub\"\x80" });
	nf = frames(&d, fr, 8);
	CHECK(nf == 4, "frames %d", nf);
	CHECK(strstr(d.text, "std::vector&lt;int, A&lt;&quot;q&quot;&gt;&gt;::push_back(int "
			     "const&amp;) &#39;x&#39; (") != NULL,
	      "escaped C++ name");
	CHECK(strstr(d.text, "bad\xef\xbf\xbd\xef\xbf\xbdutf8\xef\xbf\xbd \xc3\xa9t\xc3\xa9 "
			     "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd (") != NULL,
	      "invalid UTF-8 and controls replaced, valid UTF-8 kept");
	CHECK(strstr(d.text, "[unknown] (") != NULL, "NULL name");
	CHECK(strstr(d.text, "T&lt;&amp;&gt;") != NULL, "escaped title");
	CHECK(strstr(d.text, "&quot;sub&quot;\xef\xbf\xbd") != NULL, "escaped subtitle");
	CHECK(!strstr(d.text, "<int"), "no raw <");
	free(d.text);
}

static void test_labels(void)
{
	static const char *longname =
		"a_really_long_function_name_that_cannot_possibly_fit_in_a_narrow_frame";
	struct stk k[2];
	struct wp_flame_stack *s;
	struct doc d;
	const char *p;

	mk(&k[0], "main", 990, 0, WP_KIND_PROGRAM);
	mk(&k[1], longname, 10, 0, WP_KIND_PROGRAM); /* 11.8 px wide */
	s = flat(k, 2);
	d = render(s, 2, NULL);
	p = strstr(d.text, longname);
	CHECK(p && strncmp(p + strlen(longname), " (", 2) == 0, "full name in the title");
	CHECK(strstr(d.text, ">main</text>") != NULL, "label of a wide frame");
	p = p ? strstr(p, "<text") : NULL;
	CHECK(p && strncmp(strchr(p, '>'), "></text>", 8) == 0, "narrow frame has no label");
	free(d.text);
	free(s);

	mk(&k[0], "main", 900, 0, WP_KIND_PROGRAM);
	mk(&k[1], longname, 100, 0, WP_KIND_PROGRAM); /* 118 px: about 16 characters */
	s = flat(k, 2);
	d = render(s, 2, NULL);
	p = strstr(d.text, longname);
	p = p ? strstr(p, "<text") : NULL;
	p = p ? strchr(p, '>') + 1 : NULL;
	CHECK(p && !strncmp(p, "a_really", 8) && strstr(p, "\xe2\x80\xa6</text>") &&
		      strstr(p, "</text>") - p < 40,
	      "clipped label with ellipsis");
	free(d.text);
	free(s);
}

static void test_merge_tiny(void)
{
	struct stk k[12];
	struct wp_flame_stack *s;
	struct frame fr[32];
	struct doc d;
	char name[32];
	int i, nf;

	mk(&k[0], "main;big", 998990, 0, WP_KIND_PROGRAM);
	for (i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "main;tiny%d;deeper", i);
		mk(&k[1 + i], name, 1, 0, WP_KIND_PROGRAM);
	}
	mk(&k[11], "main;medium", 1000, 0, WP_KIND_PROGRAM); /* 1.18 px: kept */
	s = flat(k, 12);
	d = render(s, 12, NULL);
	nf = frames(&d, fr, 32);
	CHECK(nf == 4, "frames %d, want all main big medium", nf);
	CHECK(!strstr(d.text, "tiny"), "tiny frames gone");
	CHECK(FR("medium")->w > 1.17 && FR("medium")->w < 1.19, "medium %f", FR("medium")->w);
	CHECK(strstr(d.text, "1,000,000 samples") != NULL, "total counts the tiny ones");
	CHECK(strstr(d.text, "main (1,000,000 samples, 100.00%)") != NULL, "parent keeps them");
	CHECK(strstr(d.text, "20 frames narrower than 0.1 px merged") != NULL, "footer: %s",
	      strstr(d.text, "frames shown") ? strstr(d.text, "frames shown") : "none");
	free(d.text);

	/* a coarser threshold merges medium too */
	d = render(s, 12, &(struct wp_flame_opts){ .min_width_px = 2 });
	nf = frames(&d, fr, 32);
	CHECK(nf == 3, "frames %d", nf);
	CHECK(strstr(d.text, "21 frames narrower than 2 px merged") != NULL, "footer");
	free(d.text);
	free(s);
}

static void test_colours(void)
{
	struct stk k[5];
	struct wp_flame_stack *s;
	struct frame fr[16], fr2[16];
	struct doc d, d2;
	int nf;

	mk(&k[0], "prog_fn", 10, 0, WP_KIND_PROGRAM);
	mk(&k[1], "lib_fn", 10, 0, WP_KIND_LIBRARY);
	mk(&k[2], "[unknown]", 10, 0, WP_KIND_UNKNOWN);
	mk(&k[3], "[main tid=1]", 10, 0, WP_KIND_THREAD);
	mk(&k[4], "other_prog_fn", 10, 0, WP_KIND_PROGRAM);
	s = flat(k, 5);
	d = render(s, 5, NULL);
	nf = frames(&d, fr, 16);
	{
		const struct frame *p = FR("prog_fn"), *l = FR("lib_fn"), *u = FR("[unknown]");
		const struct frame *t = FR("[main tid=1]");

		CHECK(p->r > 200 && p->r >= p->g && p->r > p->b + 60, "program warm: %d,%d,%d", p->r,
		      p->g, p->b);
		CHECK(l->g > l->r + 40 && l->b < l->g + 10, "library green/aqua: %d,%d,%d", l->r,
		      l->g, l->b);
		CHECK(u->r == u->g && u->g == u->b, "unknown grey: %d,%d,%d", u->r, u->g, u->b);
		CHECK(t->b > t->r + 30 && t->b > t->g + 20, "thread blue-grey: %d,%d,%d", t->r, t->g,
		      t->b);
		CHECK(p->r != FR("other_prog_fn")->r || p->g != FR("other_prog_fn")->g,
		      "names vary the hue");
	}
	/* deterministic: same name, same colour, in another graph */
	d2 = render(s + 0, 1, NULL);
	{
		int nf2 = frames(&d2, fr2, 16);
		const struct frame *a = by_name(fr2, nf2, "prog_fn");

		CHECK(a && a->r == FR("prog_fn")->r && a->g == FR("prog_fn")->g &&
			      a->b == FR("prog_fn")->b,
		      "stable colour");
	}
	free(d2.text);
	d2 = render(s, 5, NULL);
	CHECK(d2.text && d.text && strcmp(d.text, d2.text) == 0,
	      "identical output for identical input");
	free(d.text);
	free(d2.text);
	free(s);
}

/* The frame of class "f CLS" (CLS "": plain "f") titled `name (...)`, with its fill; 0 when
 * there is none. */
static int cls_frame(const struct doc *d, const char *cls, const char *name, int *r, int *g,
		     int *b)
{
	char key[64];
	const char *p = d->text ? d->text : "";
	size_t l = strlen(name);

	snprintf(key, sizeof(key), "<g class=\"f%s%s\"", *cls ? " " : "", cls);
	while ((p = strstr(p, key))) {
		const char *t = strstr(p, "<title>"), *end = strstr(p, "</g>");

		if (t && end && t < end && !strncmp(t + 7, name, l) && !strncmp(t + 7 + l, " (", 2)) {
			const char *fill = strstr(t, "fill=\"rgb(");

			return fill && fill < end && sscanf(fill, "fill=\"rgb(%d,%d,%d)", r, g, b) == 3;
		}
		p += strlen(key);
	}
	return 0;
}

/* Hot/cold: a function running and waiting makes two frames (warm and cool); the wait leaf,
 * the "held by" frame and the holder's stack above it have classes and colours of their own;
 * without hotcold the same stacks make one plain frame per function. */
static void test_hotcold(void)
{
	static const struct wp_flame_frame run[] = {
		{ "main", WP_KIND_PROGRAM, WP_FLAME_RUNNING },
		{ "work", WP_KIND_PROGRAM, WP_FLAME_RUNNING },
	};
	static const struct wp_flame_frame waiting[] = {
		{ "main", WP_KIND_PROGRAM, WP_FLAME_WAITING },
		{ "work", WP_KIND_PROGRAM, WP_FLAME_WAITING },
		{ "futex_wait", WP_KIND_LIBRARY, WP_FLAME_WAITING },
		{ "[wait lock big_lock]", WP_KIND_UNKNOWN, WP_FLAME_WAIT },
		{ "[held by holder tid=7]", WP_KIND_UNKNOWN, WP_FLAME_HELD_BY },
		{ "holder_fn", WP_KIND_PROGRAM, WP_FLAME_HOLDER },
		{ "work", WP_KIND_PROGRAM, WP_FLAME_HOLDER },
	};
	struct wp_flame_stack s[] = { { run, 2, 30, 0 }, { waiting, 7, 70, 0 } };
	struct doc d = render(s, 2, &(struct wp_flame_opts){ .hotcold = 1 });
	int r, g, b, r2, g2, b2;

	CHECK(cls_frame(&d, "warm", "work", &r, &g, &b) && r > b + 60,
	      "running work is warm: %d,%d,%d", r, g, b);
	CHECK(cls_frame(&d, "cool", "work", &r2, &g2, &b2) && b2 > r2 + 60,
	      "waiting work is cool, a frame of its own: %d,%d,%d", r2, g2, b2);
	CHECK(cls_frame(&d, "cool", "futex_wait", &r, &g, &b) && b > r + 60,
	      "a waiting library frame is cool: %d,%d,%d", r, g, b);
	CHECK(cls_frame(&d, "wait", "[wait lock big_lock]", &r, &g, &b) && b > r,
	      "the wait leaf: %d,%d,%d", r, g, b);
	CHECK(cls_frame(&d, "held", "[held by holder tid=7]", &r, &g, &b), "the held-by frame");
	CHECK(cls_frame(&d, "holder", "holder_fn", &r, &g, &b) &&
		      cls_frame(&d, "holder", "work", &r2, &g2, &b2),
	      "the holder's stack above it, its own class");
	CHECK(d.text && strstr(d.text, "<g class=\"f\" id=\"f0\""), "the root has no state class");
	CHECK(d.text && strstr(d.text, ">holder&#39;s stack</text>"), "the legend names the holder's stack");
	free(d.text);

	d = render(s, 2, NULL);
	CHECK(cls_frame(&d, "", "work", &r, &g, &b) && !cls_frame(&d, "cool", "work", &r, &g, &b) &&
		      !cls_frame(&d, "warm", "work", &r, &g, &b),
	      "without hotcold: plain frames");
	free(d.text);
}

static void test_differential(void)
{
	struct stk k[4];
	struct wp_flame_stack *s;
	struct frame fr[16];
	struct doc d;
	int nf;

	mk(&k[0], "main;grow", 30, 10, WP_KIND_PROGRAM);
	mk(&k[1], "main;shrink", 5, 20, WP_KIND_PROGRAM);
	mk(&k[2], "main;same", 15, 15, WP_KIND_PROGRAM);
	mk(&k[3], "main;gone", 0, 10, WP_KIND_PROGRAM);
	s = flat(k, 4);
	d = render(s, 4, &(struct wp_flame_opts){ .differential = 1 });
	nf = frames(&d, fr, 16);
	CHECK(nf == 5, "frames %d (gone is not drawn)", nf);
	{
		const struct frame *g = FR("grow"), *sh = FR("shrink"), *sa = FR("same");

		CHECK(g->r > 200 && g->g < g->r - 80 && g->b < g->r - 80, "grow red: %d,%d,%d", g->r,
		      g->g, g->b);
		CHECK(sh->b > 200 && sh->r < sh->b - 40 && sh->g < sh->b - 40,
		      "shrink blue: %d,%d,%d", sh->r, sh->g, sh->b);
		CHECK(sa->r == sa->g && sa->g == sa->b && sa->r > 200, "same grey: %d,%d,%d", sa->r,
		      sa->g, sa->b);
		CHECK(g->r - g->g > sh->b - sh->r, "intensity follows the delta");
		CHECK(NEAR(g->w, GW * 30 / 50) && NEAR(sh->w, GW * 5 / 50),
		      "widths by AFTER: %f %f", g->w, sh->w);
	}
	CHECK(strstr(d.text, "grow (30 samples, 60.00%; before 10, after 30, delta +40.00%)") !=
		      NULL,
	      "grow title");
	CHECK(strstr(d.text, "shrink (5 samples, 10.00%; before 20, after 5, delta -30.00%)") !=
		      NULL,
	      "shrink title");
	CHECK(strstr(d.text, "1 frame only in BEFORE not drawn") != NULL, "legend");
	CHECK(strstr(d.text, "Widths are AFTER samples") != NULL, "legend notes the widths");
	free(d.text);
	free(s);
}

static void test_empty(void)
{
	struct stk k[1];
	struct wp_flame_stack *s;
	struct frame fr[4];
	struct doc d;

	d = render(NULL, 0, NULL);
	CHECK(d.text && strstr(d.text, "No samples") && strstr(d.text, "</svg>"), "no samples");
	CHECK(frames(&d, fr, 4) == 0, "no frames");
	free(d.text);

	mk(&k[0], "main;x", 0, 0, WP_KIND_PROGRAM);
	s = flat(k, 1);
	d = render(s, 1, &(struct wp_flame_opts){ .differential = 1 });
	CHECK(d.text && strstr(d.text, "No samples"), "zero counts");
	free(d.text);
	k[0].s.base = 7;
	free(s);
	s = flat(k, 1);
	d = render(s, 1, &(struct wp_flame_opts){ .differential = 1 });
	CHECK(d.text && strstr(d.text, "No samples in the AFTER profile"), "only BEFORE");
	free(d.text);
	free(s);
}

static void test_errors(void)
{
	static const struct wp_flame_frame f1[] = { { "a", WP_KIND_PROGRAM } };
	struct wp_flame_stack s = { f1, 1, 1, 0 };
	struct wp_flame_stack bad = { NULL, 3, 1, 0 };
	FILE *f;
	int r;

	CHECK(wp_flame_write(NULL, &s, 1, NULL) == -EINVAL, "NULL out");
	f = fopen("/dev/null", "w");
	CHECK(wp_flame_write(f, NULL, 1, NULL) == -EINVAL, "NULL stacks");
	CHECK(wp_flame_write(f, &bad, 1, NULL) == -EINVAL, "NULL frames");
	bad.frames = f1;
	bad.nframes = -1;
	CHECK(wp_flame_write(f, &bad, 1, NULL) == -EINVAL, "negative depth");
	fclose(f);
	f = fopen("/dev/full", "w");
	if (f) {
		r = wp_flame_write(f, &s, 1, NULL);
		CHECK(r == -ENOSPC, "write error: %d", r);
		fclose(f);
	}
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ULL;
	x ^= x >> 27;
	return x;
}

/* 1M stacks of depth 30 shaped like a program's call tree (shared prefixes, skewed
 * branching), names from a pool; then a worst case where every stack ends in its own
 * random 10-frame tail (some 10M distinct frames). Timings are printed; the bounds are loose
 * so a busy CI machine does not flake. */
static void test_perf(void)
{
	/* Under valgrind the million-stack runs take minutes and say nothing memcheck does not
	 * already learn from the smaller tests. */
	if (getenv("WP_UNDER_VALGRIND"))
		return;
	enum { N = 1000000, DEPTH = 30, POOL = 2000 };
	static char names[POOL][24];
	struct wp_flame_frame *fr = malloc(sizeof(*fr) * (size_t)N * DEPTH);
	struct wp_flame_stack *s = malloc(sizeof(*s) * N);
	struct timespec t0, t1;
	uint64_t rng = 42;
	double secs;
	FILE *f;
	int i, j, r;

	for (i = 0; i < POOL; i++)
		snprintf(names[i], sizeof(names[i]), "function_%04d", i);
	for (i = 0; i < N; i++) {
		uint64_t path = 0;

		for (j = 0; j < DEPTH; j++) {
			rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
			/* a program's call tree: branch points every third level, where most
			 * samples go one way (at most 3^10 distinct paths) */
			uint64_t roll = (rng >> 33) % 100;

			path = path * 31 + (j % 3 ? 0 : roll < 80 ? 0 : roll < 95 ? 1 : 2);
			fr[(size_t)i * DEPTH + j].name = names[mix(path) % POOL];
			fr[(size_t)i * DEPTH + j].kind = j % 3 ? WP_KIND_PROGRAM : WP_KIND_LIBRARY;
		}
		s[i] = (struct wp_flame_stack){ &fr[(size_t)i * DEPTH], DEPTH, 1 + i % 3, 0 };
	}
	f = fopen("/dev/null", "w");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = wp_flame_write(f, s, N, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fclose(f);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("perf: 1M stacks x %d frames: %.2f s\n", DEPTH, secs);
	CHECK(r == 0, "rc %d", r);
	CHECK(secs < 10.0, "1M stacks took %.2f s", secs);

	/* every stack with a unique random 10-frame tail: 10M more distinct frames */
	for (i = 0; i < N; i++) {
		for (j = 20; j < DEPTH; j++) {
			rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
			fr[(size_t)i * DEPTH + j].name = names[(rng >> 33) % POOL];
		}
	}
	f = fopen("/dev/null", "w");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = wp_flame_write(f, s, N, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fclose(f);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("perf: 1M stacks with unique tails: %.2f s\n", secs);
	CHECK(r == 0, "rc %d", r);
	CHECK(secs < 30.0, "1M unique stacks took %.2f s", secs);
	free(fr);
	free(s);
}

static void cleanup(void)
{
	char path[300];
	int i;

	for (i = 0; i < nfiles; i++) {
		snprintf(path, sizeof(path), "%s/g%d.svg", tmpdir, i);
		unlink(path);
	}
	rmdir(tmpdir);
	for (i = 0; i < ncopies; i++)
		free(copies[i]);
}

int main(int argc, char **argv)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_basic();
	test_width_and_stackless();
	test_escaping();
	test_labels();
	test_merge_tiny();
	test_colours();
	test_hotcold();
	test_differential();
	test_empty();
	test_errors();
	if (!(argc > 1 && !strcmp(argv[1], "--quick")))
		test_perf();
	if (failed)
		fprintf(stderr, "SVGs kept in %s\n", tmpdir);
	else
		cleanup();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
