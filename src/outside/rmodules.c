/* SPDX-License-Identifier: MIT */
/* Another process's module table, read from outside: rmodules.h says what and why. */
#include "rmodules.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agent/peek.h"
#include "ehtable.h"

#define MAX_MODULES 1024
#define MAX_REGIONS 2048
/* An unwind table segment larger than this is not copied (its module unwinds by frame
 * pointers only): a bound on what one image can cost us. */
#define MAX_SEGMENT (256u << 20)

struct mapping {
	uintptr_t lo, hi;
	uint64_t off;
	char perms[5];
	char path[512];
};

/* Where tables built for images without .eh_frame_hdr are kept: addresses no user-space
 * pointer can have (the kernel's half), one 4 GiB slot per table, read by the unwinder like
 * any copied region. */
#define SYNTHETIC_BASE 0xffff900000000000ull

static pid_t target;
static unsigned synthetic;
static struct wp_rt_module mods[MAX_MODULES];
static size_t nmods;
static struct wp_region regions[MAX_REGIONS];
static size_t nregions;
static unsigned generation;
static uint64_t maps_hash;
static size_t copied;
static struct wp_module_rec *history;
static size_t nhistory, cap_history;

static ssize_t rread(uintptr_t addr, void *dst, size_t len)
{
	struct iovec local = { dst, len }, remote = { (void *)addr, len };
	return process_vm_readv(target, &local, 1, &remote, 1, 0);
}

static int rread_all(uintptr_t addr, void *dst, size_t len)
{
	return rread(addr, dst, len) == (ssize_t)len;
}

/* A copy of [addr, addr+len) of the target, kept as a region (one per segment). */
static void copy_region(uintptr_t addr, size_t len)
{
	for (size_t i = 0; i < nregions; i++)
		if (regions[i].addr == addr && regions[i].len == len)
			return;
	if (nregions == MAX_REGIONS || !len || len > MAX_SEGMENT)
		return;
	uint8_t *p = malloc(len);
	if (!p)
		return;
	ssize_t n = rread(addr, p, len);
	if (n <= 0) {
		free(p);
		return;
	}
	regions[nregions++] = (struct wp_region){ addr, (size_t)n, p, NULL };
	copied += (size_t)n;
}

/* The load segment holding runtime address `a` (bias applied), copied. */
static void copy_segment_of(uintptr_t bias, const Elf64_Phdr *ph, int n, uintptr_t a)
{
	for (int i = 0; i < n; i++)
		if (ph[i].p_type == PT_LOAD && a >= bias + ph[i].p_vaddr &&
		    a < bias + ph[i].p_vaddr + ph[i].p_filesz)
			copy_region(bias + ph[i].p_vaddr, ph[i].p_filesz);
}

static int u32_at(uintptr_t a, uint32_t *v)
{
	const uint8_t *p = wp_modules_read(a, 4);
	if (p)
		memcpy(v, p, 4);
	return p != NULL;
}

/* .eh_frame_hdr at `hdr` (in a copied region): its table when it has the encodings every
 * linker writes (eh_frame_ptr pcrel|sdata4, fde_count udata4, table datarel|sdata4). */
static void read_eh_hdr(struct wp_rt_module *m, uintptr_t hdr, uintptr_t bias,
			const Elf64_Phdr *ph, int n)
{
	const uint8_t *h = wp_modules_read(hdr, 4);
	uint32_t ptr, count;
	if (!h || h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b ||
	    !u32_at(hdr + 4, &ptr) || !u32_at(hdr + 8, &count))
		return;
	uintptr_t eh_frame = hdr + 4 + (uintptr_t)(int64_t)(int32_t)ptr;
	copy_segment_of(bias, ph, n, eh_frame);
	m->eh_hdr = hdr;
	m->table = hdr + 12;
	m->fde_count = count;
}

/* The GNU build-id among the image's notes, into `r`. */
static void read_build_id(struct wp_module_rec *r, uintptr_t bias, const Elf64_Phdr *ph, int n)
{
	for (int i = 0; i < n; i++) {
		if (ph[i].p_type != PT_NOTE || ph[i].p_filesz > 4096)
			continue;
		uint8_t buf[4096];
		size_t len = ph[i].p_filesz;
		if (!rread_all(bias + ph[i].p_vaddr, buf, len))
			continue;
		for (size_t o = 0; o + sizeof(Elf64_Nhdr) <= len;) {
			Elf64_Nhdr nh;
			memcpy(&nh, buf + o, sizeof(nh));
			size_t name = o + sizeof(nh), desc = name + ((nh.n_namesz + 3) & ~3u);
			if (desc + nh.n_descsz > len)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(buf + name, "GNU", 4) && nh.n_descsz <= WP_MAX_BUILD_ID) {
				memcpy(r->build_id, buf + desc, nh.n_descsz);
				r->build_id_len = nh.n_descsz;
				return;
			}
			o = desc + ((nh.n_descsz + 3) & ~3u);
		}
	}
}

/* An image without PT_GNU_EH_FRAME (a static program): its .eh_frame found from the file's
 * section headers, copied, and a search table built for it (ehtable.h). */
static void table_from_sections(const char *path, uintptr_t bias, const Elf64_Ehdr *eh,
				const Elf64_Phdr *ph, int n, struct wp_rt_module *m)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	Elf64_Shdr sh[256], strs;
	char names[4096];
	size_t k = eh->e_shnum;
	uintptr_t at = 0;
	size_t len = 0;
	if (k && k <= 256 && eh->e_shstrndx < k &&
	    pread(fd, sh, k * sizeof(*sh), (off_t)eh->e_shoff) == (ssize_t)(k * sizeof(*sh))) {
		strs = sh[eh->e_shstrndx];
		ssize_t got = pread(fd, names, sizeof(names) - 1,
				    (off_t)strs.sh_offset);
		names[got > 0 ? got : 0] = 0;
		for (size_t i = 0; i < k && got > 0; i++)
			if (sh[i].sh_name < (size_t)got && !strcmp(names + sh[i].sh_name, ".eh_frame")) {
				at = bias + sh[i].sh_addr;
				len = sh[i].sh_size;
			}
	}
	close(fd);
	if (!at)
		return;
	copy_segment_of(bias, ph, n, at);
	const uint8_t *frame = wp_modules_read(at, len);
	int32_t *table;
	size_t count = frame ? wp_ehtable_build(frame, at, len, at, &table) : 0;
	if (!count || nregions == MAX_REGIONS)
		return;
	uintptr_t where = SYNTHETIC_BASE + ((uint64_t)synthetic++ << 32);
	regions[nregions++] = (struct wp_region){ where, count * 8, (const uint8_t *)table, NULL };
	m->eh_hdr = at; /* the base the table's offsets are relative to */
	m->table = where;
	m->fde_count = count;
}

/* The image mapped from `base` (its offset-0 mapping): its unwind tables for module `m`
 * (the executable mapping [m->lo, m->hi)) and its build-id for `r`. */
static void read_image(const char *path, uintptr_t base, struct wp_rt_module *m,
		       struct wp_module_rec *r)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[64];
	if (!rread_all(base, &eh, sizeof(eh)) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    eh.e_phnum == 0 || eh.e_phnum > 64 ||
	    !rread_all(base + eh.e_phoff, ph, eh.e_phnum * sizeof(Elf64_Phdr)))
		return;
	int n = eh.e_phnum;
	uintptr_t bias = 0;
	for (int i = 0; i < n; i++)
		if (ph[i].p_type == PT_LOAD) {
			/* the first load segment is the one mapped at base (its page) */
			bias = base - (ph[i].p_vaddr & ~(uintptr_t)0xfff);
			break;
		}
	for (int i = 0; i < n; i++)
		if (ph[i].p_type == PT_GNU_EH_FRAME) {
			uintptr_t hdr = bias + ph[i].p_vaddr;
			copy_segment_of(bias, ph, n, hdr);
			read_eh_hdr(m, hdr, bias, ph, n);
		}
	if (!m->eh_hdr && path[0] == '/')
		table_from_sections(path, bias, &eh, ph, n, m);
	if (r)
		read_build_id(r, bias, ph, n);
}

static int parse_line(const char *line, struct mapping *m)
{
	unsigned long lo, hi, off;
	int pos = 0;
	m->path[0] = 0;
	if (sscanf(line, "%lx-%lx %4s %lx %*s %*s%n", &lo, &hi, m->perms, &off, &pos) < 4)
		return 0;
	const char *p = line + pos;
	while (*p == ' ')
		p++;
	snprintf(m->path, sizeof(m->path), "%.*s", (int)strcspn(p, "\n"), p);
	m->lo = lo;
	m->hi = hi;
	m->off = off;
	return 1;
}

/* The history entry of this mapping, added when new. */
static struct wp_module_rec *remember(const struct mapping *mp, const char *exe)
{
	for (size_t i = 0; i < nhistory; i++) {
		struct wp_module_rec *r = &history[i];
		if (r->start == mp->lo && r->end == mp->hi && r->file_offset == mp->off &&
		    !strcmp(r->path, mp->path))
			return NULL; /* known: its build-id was read then */
	}
	if (nhistory == cap_history) {
		size_t c = cap_history ? cap_history * 2 : 64;
		struct wp_module_rec *h = realloc(history, c * sizeof(*h));
		if (!h)
			return NULL;
		history = h;
		cap_history = c;
	}
	struct wp_module_rec *r = &history[nhistory];
	memset(r, 0, sizeof(*r));
	r->path = strdup(mp->path);
	if (!r->path)
		return NULL;
	r->start = mp->lo;
	r->end = mp->hi;
	r->file_offset = mp->off;
	if (!strcmp(mp->path, "[vdso]"))
		r->flags |= WP_MODULE_VDSO;
	else if (exe && !strcmp(mp->path, exe))
		r->flags |= WP_MODULE_MAIN;
	nhistory++;
	return r;
}

static void clear_table(void)
{
	for (size_t i = 0; i < nregions; i++)
		free((void *)regions[i].data);
	nregions = 0;
	nmods = 0;
	synthetic = 0;
	copied = 0;
}

/* One executable mapping: a module, its image read from the offset-0 mapping of its path. */
static void add_module(const struct mapping *all, size_t n, size_t k, const char *exe)
{
	const struct mapping *mp = &all[k];
	if (nmods == MAX_MODULES)
		return;
	uintptr_t base = 0;
	for (size_t i = 0; i < n && !base; i++)
		if (all[i].off == 0 && !strcmp(all[i].path, mp->path))
			base = all[i].lo;
	struct wp_rt_module *m = &mods[nmods++];
	memset(m, 0, sizeof(*m));
	m->lo = mp->lo;
	m->hi = mp->hi;
	struct wp_module_rec *r = remember(mp, exe);
	m->history_id = (uint32_t)(nhistory - 1);
	if (base)
		read_image(mp->path, base, m, r);
}

int wp_rmodules_load(pid_t pid)
{
	char path[64], exe[512] = "";
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	size_t cap = 256, n = 0;
	struct mapping *all = malloc(cap * sizeof(*all));
	char line[1024];
	uint64_t h = WP_FNV0;
	while (all && fgets(line, sizeof(line), f)) {
		h = wp_fnv(h, line, strlen(line));
		if (n == cap) {
			struct mapping *a = realloc(all, 2 * cap * sizeof(*all));
			if (!a)
				break;
			all = a;
			cap *= 2;
		}
		if (parse_line(line, &all[n]))
			n++;
	}
	fclose(f);
	if (!all)
		return -ENOMEM;
	if (h == maps_hash && target == pid) {
		free(all);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	ssize_t k = readlink(path, exe, sizeof(exe) - 1);
	exe[k > 0 ? k : 0] = 0;
	target = pid;
	maps_hash = h;
	clear_table();
	for (size_t i = 0; i < n; i++)
		if (all[i].perms[2] == 'x' && (all[i].path[0] == '/' || !strcmp(all[i].path, "[vdso]")))
			add_module(all, n, i, exe);
	free(all);
	generation++;
	return 1;
}

void wp_rmodules_free(void)
{
	clear_table();
	for (size_t i = 0; i < nhistory; i++)
		free(history[i].path);
	free(history);
	history = NULL;
	nhistory = cap_history = 0;
	maps_hash = 0;
}

/* The agent's modules.h interface, over this table. */

const struct wp_rt_module *wp_modules_find(uintptr_t pc)
{
	for (size_t i = 0; i < nmods; i++)
		if (pc >= mods[i].lo && pc < mods[i].hi)
			return &mods[i];
	return NULL;
}

const uint8_t *wp_modules_read(uintptr_t addr, size_t len)
{
	for (size_t i = 0; i < nregions; i++) {
		const struct wp_region *r = &regions[i];
		if (addr >= r->addr && len <= r->len && addr - r->addr <= r->len - len)
			return r->data + (addr - r->addr);
	}
	return NULL;
}

int wp_modules_contains(uintptr_t addr)
{
	return wp_modules_find(addr) != NULL || wp_modules_read(addr, 1) != NULL;
}

unsigned wp_modules_generation(void)
{
	return generation;
}

size_t wp_modules_history_count(void)
{
	return nhistory;
}

const struct wp_module_rec *wp_modules_history_at(size_t i)
{
	return i < nhistory ? &history[i] : NULL;
}

size_t wp_modules_copied_bytes(void)
{
	return copied;
}
