/* SPDX-License-Identifier: MIT */
/* A socket's protocol and addresses by inode (wait_fds.h), from the kernel's socket tables
 * /proc/self/net/{unix,tcp,tcp6,udp,udp6}. readlink of a socket descriptor gives only
 * "socket:[INODE]"; the tables are the one place a process may read the rest without
 * touching the descriptor (it lives in the program's table, not the sampler's). Which table
 * to read comes from the descriptor's xattr system.sockprotoname (a protocol with no table,
 * netlink or packet, is named by it alone).
 *
 * On a busy host the tables are long (~150 bytes and ~7 us a TCP connection here): only the
 * tables the sockets waited on need are read, at most once a second for names already known
 * (every 100 ms for a socket never looked for), at most NET_READ_MAX bytes of each, only when
 * the first-look ration allows, and one read names every socket waited on that it finds. A
 * name is kept NET_RECHECK_NS: an inode is one socket for its whole life (a descriptor reused
 * for another socket shows another inode), and only an unconnected socket's addresses change
 * (bind, connect). Sampler thread only, outside suspension windows; not async-signal-safe. */
#include "wait_fds.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "clock.h"
#include "ino_slots.h"
#include "log.h"
#include "task.h"
#include "pages.h"

#define NET_SLOTS 256 /* sockets named at once */
#define NET_WAYS 4     /* a socket lives in one of 4 neighbouring slots */
#define NET_TEXT 120
#define NET_RESCAN_NS (1000 * 1000000ull) /* names kept: looked for again */
#define NET_NEW_GAP_NS (100 * 1000000ull) /* a socket never looked for yet */
#define NET_RECHECK_NS (30000 * 1000000ull)
#define NET_READ_MAX (1u << 20)
#define NET_MISSES 3

struct net_slot {
	struct wp_ino_slot key; /* first: ino_slots.h */
	uint64_t checked_ns; /* when it was last looked for in the tables */
	uint8_t wanted;	     /* to be looked for at the next read of the tables */
	uint8_t named;	     /* text holds its name */
	uint8_t fresh;	     /* never looked for yet */
	uint8_t noted;	     /* seen in a descriptor scan, not waited on yet */
	uint8_t tables;	     /* the tables it may be in (0: not known yet) */
	uint8_t misses;	     /* reads of its tables that did not list it */
	char text[NET_TEXT];
};
static struct net_slot slots[NET_SLOTS] WP_BIG;
static uint64_t last_read_ns, last_read_cost_ns;
/* A read of the tables is followed by at least 20 times its cost before the next (5% of the
 * sampler's time at most, on top of the ration): a host with thousands of connections makes
 * them ~15 ms each. */
#define NET_COST_GAP 20

/* Socket `ino`'s slot, or NULL; *victim: the slot it would take (an empty one, else the one
 * asked for least recently). */
static struct net_slot *net_slot(uint64_t ino, struct net_slot **victim)
{
	void *v;
	struct net_slot *s = wp_ino_slot_find(slots, sizeof(slots[0]), NET_SLOTS, NET_WAYS, ino, &v);
	*victim = v;
	return s;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 :
	       c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* n hex digits at s into *v; 0 when malformed. */
static int hex_n(const char *s, size_t n, uint32_t *v)
{
	*v = 0;
	for (size_t i = 0; i < n; i++) {
		int h = hexval(s[i]);
		if (h < 0)
			return 0;
		*v = *v << 4 | (uint32_t)h;
	}
	return 1;
}

/* "0100007F:1388" (IPv4) or 32 hex digits ":PORT" (IPv6): the kernel prints each 32-bit word
 * of the address as the host reads it, so copying the word back in host order gives the
 * address's bytes. Writes "127.0.0.1:5000" or "[::1]:5000"; 0 when malformed. The all-zero
 * address and port set *zero. */
static int addr_text(const char *s, size_t n, char *out, size_t cap, int *zero)
{
	uint8_t bytes[16];
	uint32_t w, port;
	size_t words = n == 13 ? 1 : n == 37 ? 4 : 0;
	if (!words || s[8 * words] != ':' || !hex_n(s + 8 * words + 1, 4, &port))
		return 0;
	for (size_t i = 0; i < words; i++) {
		if (!hex_n(s + 8 * i, 8, &w))
			return 0;
		memcpy(bytes + 4 * i, &w, 4);
	}
	*zero = port == 0;
	for (size_t i = 0; i < 4 * words; i++)
		*zero &= bytes[i] == 0;
	char a[INET6_ADDRSTRLEN];
	if (!inet_ntop(words == 1 ? AF_INET : AF_INET6, bytes, a, sizeof(a)))
		return 0;
	wp_format(out, cap, words == 1 ? "%s:%u" : "[%s]:%u", a, (unsigned)port);
	return 1;
}

/* Splits a line into at most `max` space-separated fields; the count. */
static int fields(char *line, char **f, int max)
{
	int n = 0;
	for (char *p = line; *p && n < max;) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		f[n++] = p;
		while (*p && *p != ' ')
			p++;
		if (*p)
			*p++ = 0;
	}
	return n;
}

static struct net_slot *wanted_slot(uint64_t ino)
{
	struct net_slot *v, *s = net_slot(ino, &v);
	return s && s->wanted ? s : NULL;
}

static uint64_t parse_u64(const char *s)
{
	uint64_t v = 0;
	for (; *s >= '0' && *s <= '9'; s++)
		v = v * 10 + (uint64_t)(*s - '0');
	return v;
}

/* One line of tcp, tcp6, udp or udp6: "sl local rem st tx:rx tr:when retrnsmt uid timeout
 * inode ...". */
static void inet_line(char *line, const char *proto, uint64_t now)
{
	char *f[10];
	if (fields(line, f, 10) < 10)
		return;
	struct net_slot *s = wanted_slot(parse_u64(f[9]));
	if (!s)
		return;
	char local[64], peer[64];
	int lz, pz;
	if (!addr_text(f[1], strlen(f[1]), local, sizeof(local), &lz) ||
	    !addr_text(f[2], strlen(f[2]), peer, sizeof(peer), &pz))
		return;
	if (!strncmp(proto, "tcp", 3) && !strcmp(f[3], "0A"))
		wp_format(s->text, sizeof(s->text), "%s %s listening", proto, local);
	else if (pz)
		wp_format(s->text, sizeof(s->text), "%s %s", proto, local);
	else
		wp_format(s->text, sizeof(s->text), "%s %s -> %s", proto, local, peer);
	s->named = 1;
	s->wanted = s->fresh = 0;
	s->misses = 0;
	s->checked_ns = now;
}

/* One line of unix: "Num RefCount Protocol Flags Type St Inode [Path]". */
static void unix_line(char *line, uint64_t now)
{
	char *f[8], *line_end = line + strlen(line);
	int n = fields(line, f, 7);
	if (n < 7)
		return;
	struct net_slot *s = wanted_slot(parse_u64(f[6]));
	if (!s)
		return;
	/* the rest of the line (a path may hold spaces); an unnamed socket has none */
	char *path = f[6] + strlen(f[6]);
	path = path < line_end ? path + 1 : path;
	while (*path == ' ')
		path++;
	const char *type = !strcmp(f[4], "0001") ? "stream" : !strcmp(f[4], "0002") ? "dgram" :
			   !strcmp(f[4], "0005") ? "seqpacket" : "?";
	uint32_t flags = 0;
	hex_n(f[3], strlen(f[3]) <= 8 ? strlen(f[3]) : 8, &flags);
	wp_format(s->text, sizeof(s->text), "unix %s%s%s%s", type, *path ? " " : "", path,
		  flags & 0x10000 /* __SO_ACCEPTCON */ ? " listening" : "");
	s->named = 1;
	s->wanted = s->fresh = 0;
	s->misses = 0;
	s->checked_ns = now;
}

/* Reads one table, at most NET_READ_MAX bytes, a line at a time. */
static void read_table(const char *name, uint64_t now)
{
	static char buf[16384] WP_BIG;
	char path[64];
	wp_format(path, sizeof(path), "/proc/%d/net/%s", (int)wp_task_program_pid(), name);
	int fd = wp_wait_may_open() ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0)
		return;
	size_t have = 0, total = 0;
	int first = 1; /* the header line */
	for (;;) {
		ssize_t got = total < NET_READ_MAX ? read(fd, buf + have, sizeof(buf) - 1 - have) : 0;
		if (got <= 0)
			break;
		total += (size_t)got;
		have += (size_t)got;
		buf[have] = 0;
		char *line = buf, *nl;
		while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
			*nl = 0;
			if (!first && !strcmp(name, "unix"))
				unix_line(line, now);
			else if (!first)
				inet_line(line, name, now);
			first = 0;
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have >= sizeof(buf) - 1)
			have = 0; /* a line longer than the buffer: dropped */
	}
	close(fd);
}

/* The tables, a bit each. */
enum { T_UNIX = 1, T_TCP = 2, T_TCP6 = 4, T_UDP = 8, T_UDP6 = 16, T_ALL = 31 };
static const char *const tables[] = { "unix", "tcp", "tcp6", "udp", "udp6" };

/* Reads the tables that the sockets waited on need (all of them for one whose protocol is
 * unknown); a socket looked for in every table it could be in and found in none stays
 * unnamed (another namespace's, or gone) until its next recheck. */
static void read_tables(uint64_t now, struct wp_look *look)
{
	unsigned need = 0;
	for (size_t i = 0; i < NET_SLOTS; i++)
		if (slots[i].wanted && !slots[i].noted)
			need |= slots[i].tables ? slots[i].tables : T_ALL;
	/* every socket of those tables asked for lately is looked for again in this read: their
	 * rechecks come due together rather than one read each */
	for (size_t i = 0; i < NET_SLOTS; i++)
		if (slots[i].named && slots[i].tables && !(slots[i].tables & ~need) &&
		    now - slots[i].key.used_ns < NET_RECHECK_NS)
			slots[i].wanted = 1;
	uint64_t c0 = wp_self_cpu_ns();
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		if (need & (1u << i))
			read_table(tables[i], now);
	for (size_t i = 0; i < NET_SLOTS; i++) {
		struct net_slot *s = &slots[i];
		/* A table read while sockets come and go may skip lines (its position is a count
		 * of entries): one that was not listed is looked for again, twice, before it is
		 * left unnamed until its next recheck. */
		if (s->wanted && ((s->tables ? s->tables : T_ALL) & ~need) == 0 &&
		    ++s->misses >= NET_MISSES) {
			s->wanted = s->fresh = 0;
			s->named = 0;
			s->misses = 0;
			s->checked_ns = now;
		}
	}
	last_read_ns = now;
	last_read_cost_ns = wp_self_cpu_ns() - c0;
	look->cpu_ns += last_read_cost_ns;
}

/* Which table holds socket `s` (the descriptor's xattr system.sockprotoname: "TCP",
 * "TCPv6", "UDP", "UNIX-STREAM"..., answered by the socket layer itself, no file system
 * asked); a protocol no table lists (netlink, packet...) is the name itself. */
static void protocol(struct net_slot *s, pid_t tid, int fd, uint64_t now, struct wp_look *look)
{
	static const struct {
		const char *prefix;
		unsigned table;
	} map[] = { { "TCPv6", T_TCP6 }, { "TCP", T_TCP }, { "UDPv6", T_UDP6 }, { "UDP", T_UDP },
		    { "UNIX", T_UNIX } };
	char path[64], proto[32];
	uint64_t c0 = wp_self_cpu_ns();
	wp_format(path, sizeof(path), "/proc/%d/task/%d/fd/%d", (int)wp_task_program_pid(), (int)tid, fd);
	ssize_t n = getxattr(path, "system.sockprotoname", proto, sizeof(proto) - 1);
	look->cpu_ns += wp_self_cpu_ns() - c0;
	s->tables = T_ALL;
	if (n <= 0)
		return;
	proto[n] = 0;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strncmp(proto, map[i].prefix, strlen(map[i].prefix)) &&
		    (strcmp(map[i].prefix, "UDP") || strncmp(proto, "UDPLITE", 7))) {
			s->tables = map[i].table;
			return;
		}
	size_t k = 0;
	for (; proto[k] && k < sizeof(s->text) - 1; k++)
		s->text[k] = proto[k] >= 'A' && proto[k] <= 'Z' ? (char)(proto[k] - 'A' + 'a') :
								 proto[k];
	s->text[k] = 0;
	s->named = 1;
	s->wanted = s->fresh = 0;
	s->misses = 0;
	s->checked_ns = now;
}

void wp_wait_net_note(uint64_t ino)
{
	struct net_slot *v, *s = net_slot(ino, &v);
	if (!s && !v->key.ino) {
		v->key.ino = ino;
		v->wanted = v->fresh = v->noted = 1;
	}
}

const char *wp_wait_net_name(uint64_t ino, pid_t tid, int fd, struct wp_look *look)
{
	struct net_slot *v, *s = net_slot(ino, &v);
	uint64_t now = wp_now_ns();
	if (!s) {
		s = v;
		memset(s, 0, sizeof(*s));
		s->key.ino = ino;
		s->wanted = s->fresh = 1;
	} else if (!s->wanted && now - s->checked_ns >= NET_RECHECK_NS) {
		s->wanted = 1; /* an old name is kept until the tables say otherwise */
	}
	s->noted = 0;
	s->key.used_ns = now;
	if (s->wanted && !s->tables && look->may)
		protocol(s, tid, fd, now, look);
	uint64_t gap = s->fresh ? NET_NEW_GAP_NS : NET_RESCAN_NS;
	if (gap < NET_COST_GAP * last_read_cost_ns)
		gap = NET_COST_GAP * last_read_cost_ns;
	if (s->wanted && look->may && (!last_read_ns || now - last_read_ns >= gap))
		read_tables(now, look);
	if (s->wanted && s->fresh)
		look->partial = 1;
	return s->named ? s->text : NULL;
}

void wp_wait_net_reset(void)
{
	wp_pages_zero(slots, sizeof(slots)); /* a fork child: pages.h */
	last_read_ns = last_read_cost_ns = 0;
}
