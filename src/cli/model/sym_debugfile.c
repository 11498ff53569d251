/* SPDX-License-Identifier: MIT */
/* Opening a module's file for symbols: one Dwfl per distinct file (path + build-id), reported
 * at bias 0 so every address inside it is an ELF virtual address; each module record keeps
 * its own load bias, computed from the ELF program headers and the record's file_offset.
 * Keeping the files apart (rather than one Dwfl laid out like the process) means overlapping
 * records (a library dlclose'd and another loaded at the same place) can't conflict.
 *
 * libdwfl finds the separate debug info (build-id under /usr/lib/debug/.build-id, then
 * .gnu_debuglink next to the file, in .debug/ and under /usr/lib/debug/<dir>), the dwz
 * alternate file and .gnu_debugdata. When the module file itself is gone or was rebuilt, its
 * debug file found by the recorded build-id stands in for it. Files are opened lazily, on the
 * first address that falls in them. */
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sym_internal.h"

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = NULL, /* ":.debug:/usr/lib/debug" */
};

/* This process' vdso, in a memfd, when its build-id is the recorded one (same kernel). */
static int own_vdso_fd(const struct obj *o, uint64_t recorded_size)
{
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return -1;
	char line[512];
	uint64_t lo = 0, hi = 0;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "[vdso]") && sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi) == 2)
			break;
		lo = hi = 0;
	}
	fclose(f);
	if (hi <= lo || hi - lo > (64u << 20))
		return -1;
	if (!o->build_id_len && recorded_size && recorded_size != hi - lo)
		return -1;
	int fd = memfd_create("vdso", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, (const void *)(uintptr_t)lo, hi - lo) != (ssize_t)(hi - lo) ||
	    lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int build_id_matches(const struct obj *o)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(o->mod, &bits, &vaddr);
	if (!o->build_id_len)
		return 1; /* nothing recorded: can't check */
	return len > 0 && (uint32_t)len == o->build_id_len &&
	       memcmp(bits, o->build_id, (size_t)len) == 0;
}

void sym_obj_close(struct obj *o)
{
	if (o->dwfl)
		dwfl_end(o->dwfl);
	o->dwfl = NULL;
	o->mod = NULL;
	o->elf = NULL;
}

/* Reports `file` (or fd, which it takes) as the object's ELF. 0 on success. */
static int obj_open(struct obj *o, const char *file, int fd)
{
	if (fd < 0)
		fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	o->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!o->dwfl) {
		close(fd);
		return -1;
	}
	dwfl_report_begin(o->dwfl);
	o->mod = dwfl_report_elf(o->dwfl, sym_basename(o->path), file, fd, 0, true);
	dwfl_report_end(o->dwfl, NULL, NULL);
	if (!o->mod) {
		close(fd); /* not taken over on failure */
		sym_obj_close(o);
		return -1;
	}
	GElf_Addr bias;
	o->elf = dwfl_module_getelf(o->mod, &bias);
	if (!o->elf || bias != 0) {
		sym_obj_close(o);
		return -1;
	}
	return 0;
}

/* obj_open, then the recorded build-id checked: 0 when both hold, -1 when the file can't be
 * opened, -2 when it is another build (then it is closed again). */
static int obj_open_checked(struct obj *o, const char *file, int fd)
{
	if (obj_open(o, file, fd) != 0)
		return -1;
	if (build_id_matches(o))
		return 0;
	sym_obj_close(o);
	return -2;
}

/* The separate debug file named by the recorded build-id, if it has that build-id. */
static int obj_open_debug_by_build_id(struct obj *o)
{
	if (o->build_id_len < 2)
		return -1;
	char hex[2 * WP_MAX_BUILD_ID + 1], path[256];
	size_t k = 0;
	for (uint32_t i = 0; i < o->build_id_len && k + 3 <= sizeof(hex); i++)
		k += (size_t)snprintf(hex + k, sizeof(hex) - k, "%02x", o->build_id[i]);
	hex[k] = 0;
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	if (access(path, R_OK) != 0 || obj_open_checked(o, path, -1) != 0)
		return -1;
	o->debug_only = 1;
	return 0;
}

/* Why the recorded path can't be used, or NULL when it is open. */
static const char *open_recorded(struct obj *o)
{
	struct stat st;
	if (stat(o->path, &st) != 0)
		return "cannot be read";
	if (!S_ISREG(st.st_mode))
		return "is not a regular file";
	switch (obj_open_checked(o, o->path, -1)) {
	case 0:
		return NULL;
	case -1:
		return "is not a readable ELF file";
	default:
		return "does not match the profiled file (build-id differs: rebuilt or upgraded "
		       "since?)";
	}
}

void sym_obj_load(struct wp_symbolizer *s, struct obj *o, const struct mod *m)
{
	o->state = OBJ_BAD;
	if (o->path[0] != '/') {
		int fd = o->is_vdso ? own_vdso_fd(o, m->r.hi - m->r.lo) : -1;
		if (fd < 0 || obj_open_checked(o, o->path, fd) != 0)
			return; /* [vdso] of another kernel, [vsyscall], [anon], ...: quietly "name+0xoff" */
	} else {
		const char *why = open_recorded(o);
		if (why && obj_open_debug_by_build_id(o) == 0) {
			sym_warn(s, "%s: %s; symbolizing from its debug file found by build-id",
				 o->path, why);
		} else if (why) {
			sym_warn(s, "%s: %s; its frames are shown as %s+0xOFFSET", o->path, why,
				 sym_basename(o->path));
			return;
		}
	}
	sym_load_symbols(o);
	sym_load_dwarf(o);
	if (!o->dw && o->is_main)
		sym_warn(s, "%s: no DWARF debug info found (no source lines or inlined frames; "
			    "build with -g or install its debug package)",
			 o->path);
	o->state = OBJ_OK;
}

/* The load bias when the ELF is a separate debug file: offsets in its program headers are not
 * the original's, so use its executable segment and the lowest mapped offset among this
 * file's records. */
static void bias_from_debug_file(struct wp_symbolizer *s, struct mod *m, size_t phnum)
{
	struct obj *o = m->obj;
	uint64_t minoff = m->file_offset;
	for (size_t i = 0; i < s->nmods; i++)
		if (s->mods[i].obj == o && s->mods[i].file_offset < minoff)
			minoff = s->mods[i].file_offset;
	int nx = 0;
	GElf_Phdr x = { 0 };
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(o->elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			x = ph;
			nx++;
		}
	}
	if (nx != 1)
		return;
	m->bias = m->r.lo - (m->file_offset - minoff) - (x.p_vaddr & ~(uint64_t)0xfff);
	m->bias_state = 1;
}

/* Load bias of a module record: start - (vaddr that file_offset maps to). */
void sym_compute_bias(struct wp_symbolizer *s, struct mod *m)
{
	m->bias_state = -1;
	struct obj *o = m->obj;
	size_t phnum;
	if (elf_getphdrnum(o->elf, &phnum) != 0)
		return;
	if (o->debug_only) {
		bias_from_debug_file(s, m, phnum);
		return;
	}
	int best = -1;
	GElf_Phdr bp = { 0 };
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(o->elf, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		uint64_t pstart = ph.p_offset & ~(uint64_t)0xfff;
		if (m->file_offset < pstart || m->file_offset >= ph.p_offset + ph.p_filesz)
			continue;
		/* prefer exact containment, then executable segments */
		int score = (m->file_offset >= ph.p_offset ? 2 : 0) + ((ph.p_flags & PF_X) ? 1 : 0);
		if (score > best) {
			best = score;
			bp = ph;
		}
	}
	if (best < 0)
		return;
	m->bias = m->r.lo - (bp.p_vaddr + (m->file_offset - bp.p_offset));
	m->bias_state = 1;
}
