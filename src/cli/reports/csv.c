/* SPDX-License-Identifier: MIT */
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

int wp_report_csv(const struct wp_opts *o, const struct wp_resolved *r,
		  const struct wp_summary *s, FILE *out)
{
	(void)o;
	size_t n;
	uint32_t *ids = wp_funcs_ranked(r, NULL, WP_RANK_ANY_SELF, &n);
	if (!ids) {
		fprintf(stderr, "wallprof: out of memory\n");
		return -1;
	}
	fputs("function,module,file,line,self_samples,self_percent,total_samples,total_percent\n",
	      out);
	double whole = s->samples ? (double)s->samples : 1.0;
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
	return ferror(out) ? -1 : 0;
}
