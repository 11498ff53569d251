/* SPDX-License-Identifier: MIT */
#include "unwind.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <string.h>

#include "log.h"
#include "modules.h"

/* libunwind is loaded with dlopen(RTLD_LOCAL) rather than linked: its shared library drags in
 * libunwind.so.8, which exports _Unwind_RaiseException and friends; in the global scope of a
 * preloaded agent those would replace the program's C++ exception unwinder. Debian's static
 * archive is not fully PIC, so it cannot be linked into the agent either. */
#define LIBUNWIND_SONAME "libunwind-x86_64.so.8"

static struct {
	unw_addr_space_t (*create_addr_space)(unw_accessors_t *, int);
	int (*set_caching_policy)(unw_addr_space_t, unw_caching_policy_t);
	void (*flush_cache)(unw_addr_space_t, unw_word_t, unw_word_t);
	int (*init_remote)(unw_cursor_t *, unw_addr_space_t, void *);
	int (*get_reg)(unw_cursor_t *, int, unw_word_t *);
	int (*step)(unw_cursor_t *);
	/* Not in libunwind's public header, but exported by the generic library: the table
	 * search its own local path uses over .eh_frame_hdr. */
	int (*search_table)(unw_addr_space_t, unw_word_t, unw_dyn_info_t *, unw_proc_info_t *,
			    int, void *);
} lu;

static unw_addr_space_t as;
static unsigned seen_generation;

static int find_proc_info(unw_addr_space_t a, unw_word_t ip, unw_proc_info_t *pi,
			  int need_unwind_info, void *arg)
{
	const struct wp_rt_module *m = wp_modules_find(ip);
	if (!m || !m->eh_hdr)
		return -UNW_ENOINFO;
	unw_dyn_info_t di;
	memset(&di, 0, sizeof(di));
	di.start_ip = m->lo;
	di.end_ip = m->hi;
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.u.rti.segbase = m->eh_hdr;
	di.u.rti.table_data = m->table;
	di.u.rti.table_len = m->fde_count * 8 / sizeof(unw_word_t);
	return lu.search_table(a, ip, &di, pi, need_unwind_info, arg);
}

static void put_unwind_info(unw_addr_space_t a, unw_proc_info_t *pi, void *arg)
{
	/* Unwind info for table lookups lives in libunwind's own pool; nothing of ours. */
}

static int get_dyn_info_list_addr(unw_addr_space_t a, unw_word_t *dilap, void *arg)
{
	return -UNW_ENOINFO;
}

static int access_mem(unw_addr_space_t a, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
	const struct wp_unwind_input *in = arg;
	if (write)
		return -UNW_EREADONLYREG;
	if (addr >= in->stack_lo && addr - in->stack_lo <= in->stack_len - sizeof(*val) &&
	    in->stack_len >= sizeof(*val)) {
		memcpy(val, in->stack + (addr - in->stack_lo), sizeof(*val));
		return 0;
	}
	const uint8_t *p = wp_modules_read(addr, sizeof(*val));
	if (p) {
		memcpy(val, p, sizeof(*val));
		return 0;
	}
	/* Inside a module but not copied: in practice the GOT slot holding a CIE's personality
	 * routine (C++ frames with destructors or catch, glibc's dl_iterate_phdr), which libunwind
	 * reads while parsing the CIE but never needs for unwinding. Zero lets it carry on
	 * without reading the host's memory. */
	if (wp_modules_contains(addr)) {
		*val = 0;
		return 0;
	}
	return -UNW_EINVAL;
}

static int access_reg(unw_addr_space_t a, unw_regnum_t reg, unw_word_t *val, int write, void *arg)
{
	/* libunwind's x86-64 numbering (DWARF order) to the ucontext's. */
	static const int map[] = {
		[UNW_X86_64_RAX] = REG_RAX, [UNW_X86_64_RDX] = REG_RDX, [UNW_X86_64_RCX] = REG_RCX,
		[UNW_X86_64_RBX] = REG_RBX, [UNW_X86_64_RSI] = REG_RSI, [UNW_X86_64_RDI] = REG_RDI,
		[UNW_X86_64_RBP] = REG_RBP, [UNW_X86_64_RSP] = REG_RSP, [UNW_X86_64_R8] = REG_R8,
		[UNW_X86_64_R9] = REG_R9,   [UNW_X86_64_R10] = REG_R10, [UNW_X86_64_R11] = REG_R11,
		[UNW_X86_64_R12] = REG_R12, [UNW_X86_64_R13] = REG_R13, [UNW_X86_64_R14] = REG_R14,
		[UNW_X86_64_R15] = REG_R15, [UNW_X86_64_RIP] = REG_RIP,
	};
	const struct wp_unwind_input *in = arg;
	if (write || reg < 0 || reg > UNW_X86_64_RIP)
		return -UNW_EBADREG;
	*val = (unw_word_t)in->gregs[map[reg]];
	return 0;
}

static int access_fpreg(unw_addr_space_t a, unw_regnum_t reg, unw_fpreg_t *val, int write,
			void *arg)
{
	return -UNW_EBADREG;
}

static int resume(unw_addr_space_t a, unw_cursor_t *c, void *arg)
{
	return -UNW_EINVAL;
}

static unw_accessors_t accessors = {
	.find_proc_info = find_proc_info,
	.put_unwind_info = put_unwind_info,
	.get_dyn_info_list_addr = get_dyn_info_list_addr,
	.access_mem = access_mem,
	.access_reg = access_reg,
	.access_fpreg = access_fpreg,
	.resume = resume,
	.get_proc_name = NULL,
};

static int load_libunwind(void)
{
	void *h = dlopen(LIBUNWIND_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		wp_log("cannot load %s (%s): install libunwind8", LIBUNWIND_SONAME, dlerror());
		return -1;
	}
#define SYM(field, name)                                   \
	if (!(*(void **)&lu.field = dlsym(h, name))) {         \
		wp_log("%s lacks %s", LIBUNWIND_SONAME, name); \
		return -1;                                     \
	}
	SYM(create_addr_space, "_Ux86_64_create_addr_space");
	SYM(set_caching_policy, "_Ux86_64_set_caching_policy");
	SYM(flush_cache, "_Ux86_64_flush_cache");
	SYM(init_remote, "_Ux86_64_init_remote");
	SYM(get_reg, "_Ux86_64_get_reg");
	SYM(step, "_Ux86_64_step");
	SYM(search_table, "_Ux86_64_dwarf_search_unwind_table");
#undef SYM
	return 0;
}

static int loaded;
static unw_addr_space_t abandoned; /* reachable for leak checkers; never touched */

int wp_unwind_init(void)
{
	if (!loaded && load_libunwind() != 0)
		return -1;
	loaded = 1;
	as = lu.create_addr_space(&accessors, 0);
	if (!as)
		return -1;
	/* Caches the register-state of each pc across samples: unwinding the same hot frames
	 * again costs a fraction of the first time. Flushed whenever the module table changes. */
	lu.set_caching_policy(as, UNW_CACHE_GLOBAL);
	seen_generation = wp_modules_generation();
	return 0;
}

void wp_unwind_abandon(void)
{
	if (as)
		abandoned = as;
	as = NULL;
}

/* A word of the copied stack, or 0 when it is not in the copy. */
static uint64_t stack_word(const struct wp_unwind_input *in, uint64_t addr)
{
	uint64_t v = 0;
	if (addr >= in->stack_lo && in->stack_len >= sizeof(v) &&
	    addr - in->stack_lo <= in->stack_len - sizeof(v))
		memcpy(&v, in->stack + (addr - in->stack_lo), sizeof(v));
	return v;
}

/* Code without unwind tables (Go's: no .eh_frame for Go functions) is unwound by libunwind
 * from the frame pointer, which holds the caller's frame only once the function has set up
 * its own. A function that sets up none (Go's small leaves), or is stopped in its prologue
 * or epilogue, still has its return address on top of the stack while the frame pointer
 * names its caller's frame: unwinding from it would skip the caller (main.main missing under
 * every leaf). So, for the innermost frame only, when it has no unwind information and the
 * word at the stack pointer is an address in a module's code other than the one the frame
 * pointer gives, that word is taken as the return address: the caller's frame comes next, as
 * if the leaf had returned (rip from the stack, rsp past it, rbp unchanged). A framed
 * function whose lowest stack word happens to hold a code address gains one wrong frame. */
static int frameless_leaf(const struct wp_unwind_input *in, greg_t *regs)
{
	unw_proc_info_t pi;
	uint64_t ip = (uint64_t)in->gregs[REG_RIP], sp = (uint64_t)in->gregs[REG_RSP];
	uint64_t bp = (uint64_t)in->gregs[REG_RBP];
	/* (libunwind's own unw_get_proc_info succeeds without tables: it fakes a one-byte
	 * procedure) */
	memset(&pi, 0, sizeof(pi));
	if (!wp_modules_find(ip) || find_proc_info(as, ip, &pi, 0, (void *)in) >= 0)
		return 0;
	uint64_t ret = stack_word(in, sp);
	if (!ret || ret == ip || !wp_modules_find(ret) || (bp > sp && stack_word(in, bp + 8) == ret))
		return 0;
	memcpy(regs, in->gregs, sizeof(greg_t) * NGREG);
	regs[REG_RIP] = (greg_t)ret;
	regs[REG_RSP] = (greg_t)(sp + 8);
	return 1;
}

void wp_unwind(const struct wp_unwind_input *in, uint64_t *pcs, uint32_t max,
	       struct wp_unwind_result *res)
{
	unw_cursor_t c;
	unw_word_t ip, sp, prev_sp = 0;
	memset(res, 0, sizeof(*res));
	if (wp_modules_generation() != seen_generation) {
		lu.flush_cache(as, 0, 0);
		seen_generation = wp_modules_generation();
	}
	if (lu.init_remote(&c, as, (void *)in) < 0) {
		pcs[0] = (uint64_t)in->gregs[REG_RIP];
		res->n = 1;
		res->truncated = 1;
		return;
	}
	greg_t caller_regs[NGREG];
	struct wp_unwind_input caller = *in;
	if (max > 1 && frameless_leaf(in, caller_regs)) {
		caller.gregs = caller_regs;
		pcs[res->n++] = (uint64_t)in->gregs[REG_RIP];
		prev_sp = (unw_word_t)in->gregs[REG_RSP];
		res->max_sp = prev_sp;
		if (lu.init_remote(&c, as, (void *)&caller) < 0) {
			res->truncated = 1;
			return;
		}
	}
	for (;;) {
		if (lu.get_reg(&c, UNW_REG_IP, &ip) < 0 || lu.get_reg(&c, UNW_REG_SP, &sp) < 0)
			break;
		if (ip == 0)
			break;
		/* A stack that does not grow towards its root is corrupt; stop rather than loop. */
		if (res->n > 0 && sp < prev_sp) {
			res->truncated = 1;
			break;
		}
		pcs[res->n++] = ip;
		prev_sp = sp;
		if (sp > res->max_sp)
			res->max_sp = sp;
		if (res->n == max) {
			res->truncated = 1;
			break;
		}
		int r = lu.step(&c);
		if (r == 0)
			break;
		if (r < 0) {
			res->truncated = 1;
			break;
		}
	}
	if (res->n == 0) {
		pcs[0] = (uint64_t)in->gregs[REG_RIP];
		res->n = 1;
		res->truncated = 1;
	}
}
