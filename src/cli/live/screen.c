/* SPDX-License-Identifier: MIT */
/* --live: the screen, drawn into one buffer and written at once (no flicker, no torn
 * frames). The s* functions append to it, counting columns, so that nothing runs past the
 * screen's width (the terminal's line wrap is off while the view is up). */
#include "screen.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "term.h"
#include "textfmt.h"

void sraw(struct scr *s, const char *str, size_t len)
{
	if (wp_grow(&s->b, &s->cap, s->n + len + 1, 1))
		term_oom();
	memcpy(s->b + s->n, str, len);
	s->n += len;
}

void sesc(struct scr *s, const char *seq)
{
	sraw(s, seq, strlen(seq));
}

/* Appends `str` within `maxcols` columns and the screen's width; control characters become
 * '?'. Columns are counted per UTF-8 character. */
void sput(struct scr *s, const char *str, int maxcols)
{
	int room = s->width - s->col;
	if (maxcols < room)
		room = maxcols;
	for (const unsigned char *c = (const unsigned char *)str; *c; c++) {
		int lead = (*c & 0xc0) != 0x80;
		if (lead && room <= 0)
			break;
		char ch = *c < 0x20 || *c == 0x7f ? '?' : (char)*c;
		sraw(s, &ch, 1);
		if (lead) {
			room--;
			s->col++;
		}
	}
}

void sputf(struct scr *s, const char *fmt, ...)
{
	char b[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
	sput(s, b, INT_MAX);
}

/* `str` in exactly `w` columns: padded, or cut at `w`. */
void sfield(struct scr *s, const char *str, int w)
{
	if (w <= 0)
		return;
	int len = 0;
	for (const unsigned char *c = (const unsigned char *)str; *c; c++)
		len += (*c & 0xc0) != 0x80;
	sput(s, str, w);
	if (len > w)
		len = w;
	for (; len < w && s->col < s->width; len++) {
		sraw(s, " ", 1);
		s->col++;
	}
}

void srow(struct scr *s, int y)
{
	char b[32];
	snprintf(b, sizeof(b), "\033[%d;1H", y + 1);
	sesc(s, b);
	s->col = 0;
}

/* Ends a row: attributes off, the rest of the line cleared. Not on a full row: without line
 * wrap the cursor stays on the last column, and clearing would take its character. */
void srow_end(struct scr *s)
{
	sesc(s, s->col < s->width ? "\033[0m\033[K" : "\033[0m");
}

/* A reverse-video bar across the screen. */
void sbar_end(struct scr *s)
{
	while (s->col < s->width) {
		sraw(s, " ", 1);
		s->col++;
	}
	sesc(s, "\033[0m");
}

/* Pieces of text on rows from `y`, three spaces apart, a piece that does not fit starting
 * the next row (at most `max_rows`). Returns the next free row. */
int sflow(struct scr *s, int y, char segs[][160], int n, int max_rows)
{
	int used = 1;
	srow(s, y);
	for (int i = 0; i < n; i++) {
		int len = (int)strlen(segs[i]);
		if (s->col && s->col + 3 + len > s->width && used < max_rows) {
			srow_end(s);
			srow(s, y + used++);
		}
		if (s->col)
			sput(s, "   ", 3);
		sput(s, segs[i], INT_MAX);
	}
	srow_end(s);
	return y + used;
}
