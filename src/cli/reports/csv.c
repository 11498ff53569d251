/* CSV for spreadsheets and scripts (RFC 4180 quoting, \n line ends): one row per function that
 * has samples, the hottest (self) first, after a header row:
 *   function,module,file,line,self_samples,self_percent,total_samples,total_percent
 * file is the full source path and line its hottest line (both empty when unknown); percents
 * are of all samples kept (--thread filters), with four decimals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* A field, quoted when it holds a comma, a quote, a line break or edge spaces; quotes doubled. */
static void field(FILE *out, const char *s)
{
	size_t n = strlen(s);
	if (!strpbrk(s, ",\"\r\n") && !(n && (s[0] == ' ' || s[n - 1] == ' '))) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

struct sel {
	const struct wp_profile *p;
	const char *thread;
};

static int keep(const struct wp_rstack *s, void *arg)
{
	const struct sel *k = arg;
	return wp_thread_matches(k->p, s->tid, k->thread);
}

int wp_report_csv(const struct wp_opts *o, const struct wp_resolved *cr, FILE *out)
{
	/* wp_resolved_count recounts in place; the resolved profile is the caller's, made for
	 * this report. It is left counted over every sample, as wp_resolve made it. */
	struct wp_resolved *r = (struct wp_resolved *)cr;
	struct sel k = { o->profile_for_filters, o->thread };
	if (o->thread)
		wp_resolved_count(r, keep, &k);
	uint32_t *ids = malloc((r->nfuncs + 1) * sizeof(*ids));
	size_t n = 0;
	if (!ids) {
		fprintf(stderr, "wallprof: out of memory\n");
		return -1;
	}
	for (size_t i = 0; i < r->nfuncs; i++)
		if (r->funcs[i].total)
			ids[n++] = (uint32_t)i;
	qsort_r(ids, n, sizeof(*ids), wp_func_by_self, r->funcs);
	fputs("function,module,file,line,self_samples,self_percent,total_samples,total_percent\n",
	      out);
	double whole = r->total ? (double)r->total : 1.0;
	for (size_t i = 0; i < n; i++) {
		const struct wp_func *f = &r->funcs[ids[i]];
		field(out, f->name);
		fputc(',', out);
		field(out, f->module);
		fputc(',', out);
		field(out, f->file ? f->file : "");
		if (f->line > 0)
			fprintf(out, ",%d", f->line);
		else
			fputc(',', out);
		fprintf(out, ",%llu,%.4f,%llu,%.4f\n", (unsigned long long)f->self,
			100.0 * (double)f->self / whole, (unsigned long long)f->total,
			100.0 * (double)f->total / whole);
	}
	free(ids);
	if (o->thread)
		wp_resolved_count(r, NULL, NULL);
	return ferror(out) ? -1 : 0;
}
