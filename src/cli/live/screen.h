/* SPDX-License-Identifier: MIT */
/* --live: the screen buffer (screen.c). A frame is built with these, then written at once. */
#ifndef WP_LIVE_SCREEN_H
#define WP_LIVE_SCREEN_H

#include <stddef.h>

struct scr {
	char *b;
	size_t n, cap;
	int col, width; /* the cursor's column on the current row; the screen's width */
};

/* Bytes as they are (escape sequences, or text already counted in s->col). */
void sraw(struct scr *s, const char *str, size_t len);
/* An escape sequence: takes no columns. */
void sesc(struct scr *s, const char *seq);
/* Text within `maxcols` columns and the screen's width; control characters become '?'.
 * Columns are counted per UTF-8 character. */
void sput(struct scr *s, const char *str, int maxcols);
void sputf(struct scr *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* `str` in exactly `w` columns: padded, or cut (a function's name is shortened first with
 * textfmt.h's wp_fit_name, as live/view.c's sname does). */
void sfield(struct scr *s, const char *str, int w);
/* Moves to the start of row `y` (0 = top). */
void srow(struct scr *s, int y);
/* Ends a row: attributes off, the rest of the line cleared. */
void srow_end(struct scr *s);
/* Ends a reverse-video bar: spaces to the screen's edge, attributes off. */
void sbar_end(struct scr *s);
/* Pieces of text on rows from `y`, three spaces apart, a piece that does not fit starting
 * the next row (at most `max_rows`). Returns the next free row. */
int sflow(struct scr *s, int y, char segs[][160], int n, int max_rows);

#endif
