/* SPDX-License-Identifier: MIT */
/* Unit tests of the pprof encoder (src/cli/reports/pprof.c): the model of a profile of this
 * program (model_fixture.h) written with --format=pprof, gunzipped and decoded here by a
 * small protobuf reader of its own (varints, length-delimited fields, packed repeated
 * fields), then checked against profile.proto's meaning: the string table, sample and period
 * types, comments, mappings (the main executable first), one Location per address and role
 * (shared between samples, none in the agent), Lines innermost first, Functions, each
 * sample's values and labels, and that only the kept stacks (--thread) are written. The
 * e2e test (test_pprof.py) reads real profiles with `go tool pprof`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "cli.h"
#include "model_fixture.h"

/* ---- a protobuf reader ---- */

struct pb {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t pb_varint(struct pb *b)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (b->p >= b->end) {
			b->bad = 1;
			return 0;
		}
		uint8_t c = *b->p++;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	b->bad = 1;
	return 0;
}

/* The next field: its number, wire type, and its value (varint) or contents (length). */
static int pb_next(struct pb *b, unsigned *field, uint64_t *v, struct pb *sub)
{
	if (b->p >= b->end || b->bad)
		return 0;
	uint64_t key = pb_varint(b);
	*field = (unsigned)(key >> 3);
	switch (key & 7) {
	case 0:
		*v = pb_varint(b);
		sub->p = sub->end = NULL;
		break;
	case 2: {
		uint64_t n = pb_varint(b);
		if (n > (uint64_t)(b->end - b->p)) {
			b->bad = 1;
			return 0;
		}
		sub->p = b->p;
		sub->end = b->p + n;
		sub->bad = 0;
		b->p += n;
		*v = n;
		break;
	}
	default: /* the encoder writes no other wire type */
		b->bad = 1;
		return 0;
	}
	return !b->bad;
}

/* A repeated uint64 field, packed (or not: one value). */
static size_t pb_repeated(uint64_t v, struct pb *sub, uint64_t *out, size_t max)
{
	size_t n = 0;
	if (!sub->p) {
		out[n++] = v;
		return n;
	}
	while (sub->p < sub->end && n < max && !sub->bad)
		out[n++] = pb_varint(sub);
	return n;
}

/* ---- the decoded profile ---- */

#define MAXN 64

struct label {
	uint64_t key, str;
};

struct sample {
	uint64_t loc[MAXN], val[4];
	size_t nloc, nval;
	struct label lab[8];
	size_t nlab;
};

struct line {
	uint64_t func, line;
};

struct location {
	uint64_t id, mapping, address;
	struct line lines[WP_MAX_INLINE];
	size_t nlines;
};

struct function {
	uint64_t id, name, system_name, filename;
};

struct mapping {
	uint64_t id, start, limit, offset, filename, build_id, has[4];
};

struct decoded {
	char *strs[1024];
	size_t nstrs;
	uint64_t sample_type[4][2], period_type[2], default_type, period, time, duration;
	size_t ntypes;
	uint64_t comments[16];
	size_t ncomments;
	struct sample samples[MAXN];
	size_t nsamples;
	struct location locs[MAXN];
	size_t nlocs;
	struct function funcs[MAXN];
	size_t nfuncs;
	struct mapping maps[MAXN];
	size_t nmaps;
	int bad;
};

static void value_type(struct pb *m, uint64_t out[2])
{
	unsigned f;
	uint64_t v;
	struct pb sub;
	while (pb_next(m, &f, &v, &sub))
		if (f == 1 || f == 2)
			out[f - 1] = v;
}

static void decode_sample(struct pb *m, struct sample *s)
{
	unsigned f;
	uint64_t v;
	struct pb sub;
	while (pb_next(m, &f, &v, &sub)) {
		if (f == 1)
			s->nloc += pb_repeated(v, &sub, s->loc + s->nloc, MAXN - s->nloc);
		else if (f == 2)
			s->nval += pb_repeated(v, &sub, s->val + s->nval, 4 - s->nval);
		else if (f == 3 && s->nlab < 8) {
			uint64_t kv[2] = { 0, 0 };
			value_type(&sub, kv); /* Label: key = 1, str = 2, as a ValueType's fields */
			s->lab[s->nlab++] = (struct label){ kv[0], kv[1] };
		}
	}
}

static void decode_location(struct pb *m, struct location *l)
{
	unsigned f;
	uint64_t v;
	struct pb sub;
	while (pb_next(m, &f, &v, &sub)) {
		if (f == 1)
			l->id = v;
		else if (f == 2)
			l->mapping = v;
		else if (f == 3)
			l->address = v;
		else if (f == 4 && l->nlines < WP_MAX_INLINE) {
			uint64_t fl[2] = { 0, 0 };
			value_type(&sub, fl); /* Line: function_id = 1, line = 2 */
			l->lines[l->nlines++] = (struct line){ fl[0], fl[1] };
		}
	}
}

static void decode_function(struct pb *m, struct function *fn)
{
	unsigned f;
	uint64_t v;
	struct pb sub;
	while (pb_next(m, &f, &v, &sub)) {
		if (f == 1)
			fn->id = v;
		else if (f == 2)
			fn->name = v;
		else if (f == 3)
			fn->system_name = v;
		else if (f == 4)
			fn->filename = v;
	}
}

static void decode_mapping(struct pb *m, struct mapping *mp)
{
	unsigned f;
	uint64_t v;
	struct pb sub;
	while (pb_next(m, &f, &v, &sub)) {
		uint64_t *at[] = { NULL, &mp->id, &mp->start, &mp->limit, &mp->offset, &mp->filename,
				   &mp->build_id, &mp->has[0], &mp->has[1], &mp->has[2], &mp->has[3] };
		if (f >= 1 && f <= 10)
			*at[f] = v;
	}
}

static void decode(const uint8_t *d, size_t n, struct decoded *out)
{
	struct pb b = { d, d + n, 0 }, sub;
	unsigned f;
	uint64_t v;
	memset(out, 0, sizeof(*out));
	while (pb_next(&b, &f, &v, &sub)) {
		switch (f) {
		case 1:
			if (out->ntypes < 4)
				value_type(&sub, out->sample_type[out->ntypes++]);
			break;
		case 2:
			if (out->nsamples < MAXN)
				decode_sample(&sub, &out->samples[out->nsamples++]);
			break;
		case 3:
			if (out->nmaps < MAXN)
				decode_mapping(&sub, &out->maps[out->nmaps++]);
			break;
		case 4:
			if (out->nlocs < MAXN)
				decode_location(&sub, &out->locs[out->nlocs++]);
			break;
		case 5:
			if (out->nfuncs < MAXN)
				decode_function(&sub, &out->funcs[out->nfuncs++]);
			break;
		case 6:
			if (out->nstrs < 1024)
				out->strs[out->nstrs++] = strndup((const char *)sub.p, (size_t)v);
			break;
		case 9: out->time = v; break;
		case 10: out->duration = v; break;
		case 11: value_type(&sub, out->period_type); break;
		case 12: out->period = v; break;
		case 13:
			if (out->ncomments < 16)
				out->comments[out->ncomments++] = v;
			break;
		case 14: out->default_type = v; break;
		}
	}
	out->bad = b.bad;
}

static void decoded_free(struct decoded *d)
{
	for (size_t i = 0; i < d->nstrs; i++)
		free(d->strs[i]);
}

static const char *str(const struct decoded *d, uint64_t i)
{
	return i < d->nstrs ? d->strs[i] : "(bad string index)";
}

static const struct location *loc_by_id(const struct decoded *d, uint64_t id)
{
	for (size_t i = 0; i < d->nlocs; i++)
		if (d->locs[i].id == id)
			return &d->locs[i];
	return NULL;
}

static const struct function *func_by_id(const struct decoded *d, uint64_t id)
{
	for (size_t i = 0; i < d->nfuncs; i++)
		if (d->funcs[i].id == id)
			return &d->funcs[i];
	return NULL;
}

static const struct mapping *map_by_id(const struct decoded *d, uint64_t id)
{
	for (size_t i = 0; i < d->nmaps; i++)
		if (d->maps[i].id == id)
			return &d->maps[i];
	return NULL;
}

static const char *label(const struct decoded *d, const struct sample *s, const char *key)
{
	for (size_t i = 0; i < s->nlab; i++)
		if (!strcmp(str(d, s->lab[i].key), key))
			return str(d, s->lab[i].str);
	return NULL;
}

static int has_comment(const struct decoded *d, const char *text)
{
	for (size_t i = 0; i < d->ncomments; i++)
		if (!strcmp(str(d, d->comments[i]), text))
			return 1;
	return 0;
}

/* The sample's functions, leaf first (each location's lines innermost first), as
 * "a;b;c". */
static const char *names(const struct decoded *d, const struct sample *s)
{
	static char b[1024];
	size_t n = 0;
	b[0] = 0;
	for (size_t i = 0; i < s->nloc; i++) {
		const struct location *l = loc_by_id(d, s->loc[i]);
		for (size_t j = 0; l && j < l->nlines; j++) {
			const struct function *f = func_by_id(d, l->lines[j].func);
			n += (size_t)snprintf(b + n, sizeof(b) - n, "%s%s", n ? ";" : "",
					      f ? str(d, f->name) : "(no function)");
		}
		if (!l)
			n += (size_t)snprintf(b + n, sizeof(b) - n, "%s(no location)", n ? ";" : "");
	}
	return b;
}

/* ---- running the encoder ---- */

/* Encodes model r; returns the decompressed protobuf (malloc'ed, *n bytes) or NULL. */
static uint8_t *encode(const struct wp_resolved *r, size_t *n)
{
	struct wp_opts o;
	memset(&o, 0, sizeof(o));
	o.format = WP_FMT_PPROF;
	struct wp_summary s;
	wp_summarize(r->p, r, &s);
	FILE *f = tmpfile();
	if (!f || wp_report_pprof(&o, r, &s, f) != 0)
		return NULL;
	long len = ftell(f);
	rewind(f);
	uint8_t *gz = malloc((size_t)len + 1);
	if (!gz || fread(gz, 1, (size_t)len, f) != (size_t)len)
		return NULL;
	fclose(f);
	CHECK(len > 2 && gz[0] == 0x1f && gz[1] == 0x8b, "gzip magic");
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (!out || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return NULL;
	z.next_in = gz;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	int zr = inflate(&z, Z_FINISH);
	CHECK_INT(zr, Z_STREAM_END);
	*n = z.total_out;
	inflateEnd(&z);
	free(gz);
	return out;
}

static void test_profile(void)
{
	struct wp_profile *p = fx_profile("");
	struct wp_resolved *r = wp_resolve(p, NULL);
	size_t n = 0;
	uint8_t *pb = r ? encode(r, &n) : NULL;
	CHECK(pb != NULL);
	if (!pb)
		return;
	struct decoded *d = calloc(1, sizeof(*d));
	decode(pb, n, d);
	CHECK(!d->bad, "the protobuf decodes to its end");

	CHECK(d->nstrs > 0 && !strcmp(d->strs[0], ""), "string_table[0] is \"\"");
	for (size_t i = 1; i < d->nstrs; i++)
		for (size_t j = i + 1; j < d->nstrs; j++)
			CHECK(strcmp(d->strs[i], d->strs[j]), "string \"%s\" once", d->strs[i]);
	CHECK_EQ_U(d->ntypes, 2);
	CHECK_STR(str(d, d->sample_type[0][0]), "samples");
	CHECK_STR(str(d, d->sample_type[0][1]), "count");
	CHECK_STR(str(d, d->sample_type[1][0]), "wall");
	CHECK_STR(str(d, d->sample_type[1][1]), "nanoseconds");
	CHECK_STR(str(d, d->default_type), "wall");
	CHECK_STR(str(d, d->period_type[0]), "wall");
	CHECK_EQ_U(d->period, 10000000); /* 100 Hz */
	CHECK_EQ_U(d->duration, 1000000000);
	CHECK_EQ_U(d->time, 1700000000000000000ull);
	CHECK(has_comment(d, "mode: wall"));
	CHECK(has_comment(d, "command: fixture"));

	/* mappings: every module, the main executable first */
	CHECK(d->nmaps >= 2);
	CHECK_STR(str(d, d->maps[0].filename), fx_exe);
	CHECK(d->maps[0].has[0] && d->maps[0].has[1] && d->maps[0].has[2] && d->maps[0].has[3]);
	uint64_t agent_map = 0;
	for (size_t i = 0; i < d->nmaps; i++)
		if (!strcmp(str(d, d->maps[i].filename), "/nonexistent/libwallprof.so"))
			agent_map = d->maps[i].id;
	CHECK(agent_map != 0);

	/* the samples: stack 3 (only the agent's frames) and stack 6 (no samples) left out */
	CHECK_EQ_U(d->nsamples, 4);
	static const char *const want[] = { "t_leaf;t_mid;t_root", "t_mid;t_root",
					    "t_mid;t_mid;t_root", "t_leaf;t_leaf;t_root" };
	static const uint64_t counts[][2] = { { 5, 50000000 }, { 3, 30000000 }, { 4, 40000000 },
					      { 1, 10000000 } };
	for (size_t i = 0; i < d->nsamples && i < 4; i++) {
		const struct sample *s = &d->samples[i];
		CHECK_STR(names(d, s), want[i]);
		CHECK_EQ_U(s->nval, 2);
		CHECK_EQ_U(s->val[0], counts[i][0]);
		CHECK_EQ_U(s->val[1], counts[i][1]);
	}
	if (d->nsamples == 4) {
		const struct sample *s1 = &d->samples[0], *s2 = &d->samples[1], *s4 = &d->samples[2];
		CHECK_STR(label(d, s1, "thread"), "main");
		CHECK_STR(label(d, s1, "thread_id"), "10");
		CHECK_STR(label(d, s1, "state"), "running");
		CHECK(!label(d, s1, "truncated"));
		CHECK_STR(label(d, s2, "thread"), "worker");
		CHECK_STR(label(d, s2, "state"), "waiting");
		CHECK_STR(label(d, &d->samples[3], "truncated"), "yes");
		/* locations: shared between samples; one pc in two roles is two */
		CHECK_EQ_U(s1->loc[2], s2->loc[1]); /* t_root's return address */
		CHECK_EQ_U(s1->loc[1], s2->loc[0]); /* t_mid's */
		const struct location *a = loc_by_id(d, s4->loc[0]), *b = loc_by_id(d, s4->loc[1]);
		CHECK(a && b && a != b && a->address == b->address &&
		      a->address == fx_ret(t_mid));
		const struct location *leaf = loc_by_id(d, s1->loc[0]);
		CHECK(leaf && leaf->address == fx_addr(t_leaf) && leaf->nlines == 1 &&
		      leaf->lines[0].line > 0);
		const struct function *fn = leaf ? func_by_id(d, leaf->lines[0].func) : NULL;
		CHECK(fn && fn->name == fn->system_name);
		CHECK(fn && strstr(str(d, fn->filename), "model_fixture.h"));
		const struct mapping *m = leaf ? map_by_id(d, leaf->mapping) : NULL;
		CHECK(m && m == &d->maps[0]);
	}
	for (size_t i = 0; i < d->nlocs; i++) {
		CHECK_EQ_U(d->locs[i].id, i + 1);
		CHECK(d->locs[i].mapping != agent_map, "no location in the agent");
		CHECK(d->locs[i].nlines >= 1);
		for (size_t j = 0; j < d->locs[i].nlines; j++)
			CHECK(func_by_id(d, d->locs[i].lines[j].func) != NULL);
	}
	/* t_leaf, t_mid, t_root, and the unknown address's function is in no sample */
	CHECK_EQ_U(d->nfuncs, 3);
	CHECK_EQ_U(d->nlocs, 5); /* t_leaf, t_mid+1 in two roles, t_root+1, t_leaf+1 */

	decoded_free(d);
	free(d);
	free(pb);
	wp_resolved_free(r);
	wp_profile_free(p);
}

/* Only what the model kept is written. */
static void test_filtered(void)
{
	struct wp_profile *p = fx_profile("");
	struct wp_filter f = { .thread = "worker" };
	struct wp_resolved *r = wp_resolve(p, &f);
	size_t n = 0;
	uint8_t *pb = r ? encode(r, &n) : NULL;
	CHECK(pb != NULL);
	if (!pb)
		return;
	struct decoded *d = calloc(1, sizeof(*d));
	decode(pb, n, d);
	CHECK(!d->bad);
	CHECK(has_comment(d, "only thread: worker"));
	CHECK_EQ_U(d->nsamples, 1);
	if (d->nsamples == 1) {
		CHECK_STR(names(d, &d->samples[0]), "t_mid;t_root");
		CHECK_STR(label(d, &d->samples[0], "thread"), "worker");
	}
	CHECK_EQ_U(d->nlocs, 2);
	CHECK_EQ_U(d->locs[0].id, 1);
	decoded_free(d);
	free(d);
	free(pb);
	wp_resolved_free(r);
	wp_profile_free(p);
}

int main(void)
{
	test_profile();
	test_filtered();
	printf("pprof_encode: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
