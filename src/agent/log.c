#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

static int log_fd = 2;

void wp_log_set_fd(int fd)
{
	log_fd = fd;
}

struct out {
	char *buf;
	size_t cap, len;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->cap)
		o->buf[o->len++] = c;
}

static void put_num(struct out *o, unsigned long long v, int neg, unsigned base, int width)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	if (neg)
		tmp[n++] = '-';
	for (int pad = width - n; pad > 0; pad--)
		put(o, ' ');
	while (n)
		put(o, tmp[--n]);
}

static void vformat(struct out *o, const char *fmt, va_list ap)
{
	for (const char *p = fmt; *p; p++) {
		if (*p != '%') {
			put(o, *p);
			continue;
		}
		p++;
		int width = 0;
		while (*p >= '0' && *p <= '9')
			width = width * 10 + (*p++ - '0');
		int lng = 0;
		while (*p == 'l') {
			lng++;
			p++;
		}
		switch (*p) {
		case 's': {
			const char *s = va_arg(ap, const char *);
			for (s = s ? s : "(null)"; *s; s++)
				put(o, *s);
			break;
		}
		case 'd': {
			long long v = lng >= 2 ? va_arg(ap, long long) : lng ? va_arg(ap, long) : va_arg(ap, int);
			put_num(o, v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v, v < 0, 10, width);
			break;
		}
		case 'u':
		case 'x': {
			unsigned long long v = lng >= 2 ? va_arg(ap, unsigned long long)
				: lng ? va_arg(ap, unsigned long) : va_arg(ap, unsigned);
			put_num(o, v, 0, *p == 'x' ? 16 : 10, width);
			break;
		}
		case '%':
			put(o, '%');
			break;
		default: /* unsupported conversion: print it verbatim rather than guess */
			put(o, '%');
			if (*p)
				put(o, *p);
			else
				p--;
		}
	}
	o->buf[o->len] = 0;
}

size_t wp_format(char *buf, size_t cap, const char *fmt, ...)
{
	struct out o = { buf, cap, 0 };
	va_list ap;
	if (!cap)
		return 0;
	va_start(ap, fmt);
	vformat(&o, fmt, ap);
	va_end(ap);
	return o.len;
}

void wp_log(const char *fmt, ...)
{
	char line[512];
	struct out o = { line, sizeof(line) - 1, 0 };
	int saved = errno;
	va_list ap;
	const char *prefix = "wallprof: ";
	while (*prefix)
		put(&o, *prefix++);
	va_start(ap, fmt);
	vformat(&o, fmt, ap);
	va_end(ap);
	line[o.len++] = '\n';
	for (size_t off = 0; off < o.len;) {
		ssize_t n = write(log_fd, line + off, o.len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	errno = saved;
}
