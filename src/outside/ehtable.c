/* SPDX-License-Identifier: MIT */
/* A search table built from .eh_frame alone: ehtable.h says why. */
#include "ehtable.h"

#include <stdlib.h>
#include <string.h>

#define DW_EH_PE_omit 0xff
#define DW_EH_PE_pcrel 0x10

static uint64_t uleb(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	int shift = 0;
	while (*p < end && shift < 64) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	return v;
}

/* A pointer of encoding `enc` at *p (runtime address `at`); 0 when unsupported. */
static int read_ptr(const uint8_t **p, const uint8_t *end, uint8_t enc, uintptr_t at,
		    uint64_t *out)
{
	uint64_t v = 0;
	size_t n;
	switch (enc & 0x0f) {
	case 0x00: /* absptr */
	case 0x04: /* udata8 */
	case 0x0c: /* sdata8 */
		n = 8;
		break;
	case 0x03: /* udata4 */
	case 0x0b: /* sdata4 */
		n = 4;
		break;
	default:
		return 0;
	}
	if ((size_t)(end - *p) < n)
		return 0;
	if (n == 4) {
		uint32_t u;
		memcpy(&u, *p, 4);
		v = (enc & 0x0f) == 0x0b ? (uint64_t)(int64_t)(int32_t)u : u;
	} else {
		memcpy(&v, *p, 8);
	}
	*p += n;
	if ((enc & 0x70) == DW_EH_PE_pcrel)
		v += at;
	else if (enc & 0x70)
		return 0;
	*out = v;
	return 1;
}

/* The FDE pointer encoding a CIE's augmentation gives ('R'), absptr when none. */
static uint8_t cie_encoding(const uint8_t *p, const uint8_t *end)
{
	uint8_t version = *p++;
	const char *aug = (const char *)p;
	size_t alen = strnlen(aug, (size_t)(end - p));
	p += alen + 1;
	uleb(&p, end); /* code alignment */
	uleb(&p, end); /* data alignment (sleb: only skipped) */
	if (version == 1)
		p++;
	else
		uleb(&p, end);
	if (aug[0] != 'z')
		return 0;
	uleb(&p, end); /* augmentation length */
	for (size_t i = 1; i < alen && p < end; i++) {
		if (aug[i] == 'R')
			return *p;
		if (aug[i] == 'L')
			p++;
		else if (aug[i] == 'P') {
			uint8_t penc = *p++;
			uint64_t skip;
			if (!read_ptr(&p, end, penc & 0x0f, 0, &skip))
				return DW_EH_PE_omit;
		} else if (aug[i] != 'S' && aug[i] != 'B')
			return DW_EH_PE_omit;
	}
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const int32_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

size_t wp_ehtable_build(const uint8_t *frame, uintptr_t addr, size_t len, uintptr_t base,
			int32_t **table)
{
	size_t n = 0, cap = 0;
	int32_t *t = NULL;
	*table = NULL;
	for (size_t off = 0; off + 8 <= len;) {
		uint32_t rlen, id;
		memcpy(&rlen, frame + off, 4);
		if (rlen == 0 || rlen == 0xffffffffu || rlen > len - off - 4)
			break; /* the terminator (or a 64-bit record: not written by gcc's x86-64) */
		memcpy(&id, frame + off + 4, 4);
		const uint8_t *rec_end = frame + off + 4 + rlen;
		if (id != 0 && id <= off + 4) {
			size_t cie = off + 4 - id;
			uint32_t clen;
			memcpy(&clen, frame + cie, 4);
			uint8_t enc = cie + 4 + clen <= len ? cie_encoding(frame + cie + 8,
									   frame + cie + 4 + clen)
							     : DW_EH_PE_omit;
			const uint8_t *p = frame + off + 8;
			uint64_t start;
			if (enc != DW_EH_PE_omit &&
			    read_ptr(&p, rec_end, enc, addr + (uintptr_t)(p - frame), &start)) {
				if (n == cap) {
					cap = cap ? 2 * cap : 1024;
					int32_t *g = realloc(t, cap * 2 * sizeof(*t));
					if (!g)
						break;
					t = g;
				}
				t[2 * n] = (int32_t)(int64_t)(start - base);
				t[2 * n + 1] = (int32_t)(int64_t)(addr + off - base);
				n++;
			}
		}
		off += 4 + (size_t)rlen;
	}
	if (!n) {
		free(t);
		return 0;
	}
	qsort(t, n, 2 * sizeof(*t), by_start);
	*table = t;
	return n;
}
