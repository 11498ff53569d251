/* SPDX-License-Identifier: MIT */
#include "signals.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "eintr.h"
#include "handshake.h"
#include "log.h"
#include "pages.h"
#include "threadmask.h"
#include "transfers.h"

#define EXPORT __attribute__((visibility("default")))

static int (*real_sigaction_fn)(int, const struct sigaction *, struct sigaction *);

int wp_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!real_sigaction_fn)
		real_sigaction_fn = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(
			RTLD_NEXT, "sigaction");
	if (!real_sigaction_fn) {
		errno = ENOSYS;
		return -1;
	}
	return real_sigaction_fn(sig, act, old);
}

/* ---- choosing the signal ---- */

int wp_signals_parse_env(const char *v)
{
	if (!v || !*v)
		return 0;
	const char *s = !strncmp(v, "SIG", 3) ? v + 3 : v;
	char *end;
	long n;
	if (!strcmp(s, "PROF"))
		return SIGPROF;
	if (!strcmp(s, "VTALRM"))
		return SIGVTALRM;
	if (!strcmp(s, "USR1"))
		return SIGUSR1;
	if (!strcmp(s, "USR2"))
		return SIGUSR2;
	if (!strncmp(s, "RTMIN", 5) || !strncmp(s, "RTMAX", 5)) {
		n = s[5] ? strtol(s + 5, &end, 10) : 0;
		if (!s[5] || (!*end && (s[5] == '+' || s[5] == '-'))) {
			n += s[3] == 'I' ? SIGRTMIN : SIGRTMAX;
			if (n >= SIGRTMIN && n <= SIGRTMAX)
				return (int)n;
		}
	} else {
		n = strtol(s, &end, 10);
		if (*s && !*end && ((n >= SIGRTMIN && n <= SIGRTMAX) || n == SIGPROF ||
				    n == SIGVTALRM || n == SIGUSR1 || n == SIGUSR2))
			return (int)n;
	}
	wp_log("WALLPROF_SIGNAL='%s' is not valid: use PROF, VTALRM, USR1, USR2, RTMIN+N, RTMAX-N "
	       "or a real-time signal number (%d-%d); profiling is off for this run",
	       v, SIGRTMIN, SIGRTMAX);
	return -1;
}

static int is_default(int sig)
{
	struct sigaction sa;
	return wp_real_sigaction(sig, NULL, &sa) == 0 && !(sa.sa_flags & SA_SIGINFO) &&
	       sa.sa_handler == SIG_DFL;
}

/* A real-time signal nobody handles, from the top down (the bottom ones are glibc's and
 * commonly taken by runtimes), not `except` nor in `avoid`. 0 when none. */
static int free_rt_signal(int except, const sigset_t *avoid)
{
	for (int s = SIGRTMAX; s >= SIGRTMIN + 3; s--)
		if (s != except && (!avoid || sigismember(avoid, s) != 1) && is_default(s))
			return s;
	return 0;
}

int wp_signals_choose(int wanted)
{
	struct sigaction sa;
	if (wanted > 0)
		return wanted;
	/* SIG_IGN too (inherited across exec): the program's disposition, shared (chaining) */
	if (is_default(SIGPROF) || (wp_real_sigaction(SIGPROF, NULL, &sa) == 0 &&
				    !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_IGN))
		return SIGPROF;
	int s = free_rt_signal(0, NULL);
	if (s)
		wp_log("SIGPROF is already handled (another profiler?); sampling with signal %d "
		       "instead (set WALLPROF_SIGNAL to choose)", s);
	return s ? s : SIGPROF;
}

/* ---- the program's sigaction/signal ---- */

/* Fatal signals we flush on, and whether the program asked for their default. */
static const int fatal_sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS,
				  SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGPIPE, SIGALRM, SIGXCPU,
				  SIGXFSZ, SIGUSR1, SIGUSR2, SIGVTALRM };
#define NFATAL (sizeof(fatal_sigs) / sizeof(fatal_sigs[0]))
static _Atomic int fatal_ours[65]; /* 1 while our flush handler stands in for SIG_DFL */
static void (*flush_fn)(int);
static _Atomic int chained[65]; /* our handler is on it (sampling, or was before a move) */
static _Atomic int moved_once;

/* Dies of `sig` as if our handler had never been there. */
static void die_of(int sig, siginfo_t *info)
{
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	wp_real_sigaction(sig, &dfl, NULL);
	/* A fault raised by the CPU comes back when the faulting instruction runs again on
	 * return, now with the default action: the same status and core dump. Anything else is
	 * raised again; it is delivered as soon as this handler returns. */
	if (info && info->si_code > 0 && (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
					  sig == SIGFPE || sig == SIGTRAP))
		return;
	syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
}

static void fatal_handler(int sig, siginfo_t *info, void *uc)
{
	int saved = errno;
	/* Default first, so a second fault while flushing kills us plainly. */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	wp_real_sigaction(sig, &dfl, NULL);
	fatal_ours[sig] = 0;
	if (flush_fn)
		flush_fn(sig);
	die_of(sig, info);
	errno = saved;
	(void)uc;
}

static void wrap_existing(void);

static int install_flush(int sig)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fatal_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigfillset(&sa.sa_mask);
	if (wp_real_sigaction(sig, &sa, NULL) != 0)
		return -1;
	fatal_ours[sig] = 1;
	return 0;
}

/* 1 from wp_signals_defer_fatal until the sampler's first tick has done the set-up. */
static _Atomic int setup_deferred;

static void install_fatal_now(void)
{
	for (size_t i = 0; i < NFATAL; i++) {
		int s = fatal_sigs[i];
		if (s != wp_handshake_signal() && !atomic_load(&chained[s]) && is_default(s))
			install_flush(s);
	}
	wrap_existing();
}

void wp_signals_install_fatal(void (*flush)(int))
{
	flush_fn = flush;
	install_fatal_now();
}

void wp_signals_defer_fatal(void (*flush)(int))
{
	flush_fn = flush;
	atomic_store(&setup_deferred, 1);
}

static void lock_chain(uint64_t *saved);
static void unlock_chain(const uint64_t *saved);

void wp_signals_finish_setup(void)
{
	if (!atomic_load(&setup_deferred))
		return;
	uint64_t saved;
	lock_chain(&saved); /* the program's sigaction waits meanwhile (about 60 system calls) */
	if (atomic_load(&setup_deferred))
		install_fatal_now();
	atomic_store(&setup_deferred, 0);
	unlock_chain(&saved);
}

static int is_handler(const struct sigaction *a)
{
	return (a->sa_flags & SA_SIGINFO) ||
	       (a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN);
}

/* ---- the program's handlers, counted ----
 * Each handler the program installs runs through a trampoline that bumps a thread-local
 * counter first (eintr.h): a call that fails with EINTR while the program's handler ran is
 * the program's to see, even when our signal arrived at the same moment (a thread woken by
 * the program's signal shows as running in /proc before it leaves the kernel, and may get
 * ours too). The program sees its own handler when it asks. */
static void *_Atomic prog_handler[65];
static _Atomic int prog_siginfo[65];
/* The sa_mask the program asked for (signals 1..64): the one installed never blocks our
 * signal, so a thread running the program's handler can still be sampled rather than have
 * our signal wait, pending, under a mask nobody published (sigmask.h). */
static _Atomic uint64_t prog_mask[65];
/* Whether the program asked for SA_RESTART on that signal. */
static _Atomic int prog_restart[65];
/* While the agent's handler runs on this thread: the context it interrupted (the program's
 * call), else NULL (initial-exec TLS: async-signal-safe). */
static __thread void *ours_uc __attribute__((tls_model("initial-exec")));

/* libc's executable segment: the interposed calls (eintr.c, transfers.c) all make their
 * system call from there, and it stays mapped and readable for the life of the process. */
static uintptr_t libc_lo, libc_hi;

static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t fn = (uintptr_t)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && fn >= lo &&
		    fn < lo + ph->p_memsz) {
			libc_lo = lo;
			libc_hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

void wp_signals_find_libc(void)
{
	void *fn = dlsym(RTLD_DEFAULT, "gnu_get_libc_version"); /* libc's alone */
	if (fn)
		dl_iterate_phdr(find_text, fn);
}

/* Whether this handler run leaves a system call to be restarted (SA_RESTART, nothing moved
 * yet): the kernel then put the call's number back in rax and the pc back on the `syscall`
 * instruction. Only calls made from libc's code are recognised (two code bytes are read,
 * which is safe only there); anything else counts as interrupted, as before.
 * Async-signal-safe: registers and two bytes of mapped code. */
static int restarts_a_call(const ucontext_t *uc)
{
	long rax = (long)uc->uc_mcontext.gregs[REG_RAX];
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	if (rax < 0 || rax >= 1024 || pc < libc_lo || pc + 2 > libc_hi)
		return 0;
	const volatile uint8_t *code = (const uint8_t *)pc;
	return code[0] == 0x0f && code[1] == 0x05; /* x86-64 `syscall` */
}

/* The call is to fail with EINTR instead of restarting, as without SA_RESTART: past the
 * `syscall` instruction, -EINTR as its result. */
static void no_restart(ucontext_t *uc)
{
	uc->uc_mcontext.gregs[REG_RIP] += 2;
	uc->uc_mcontext.gregs[REG_RAX] = -EINTR;
}

/* A run of the program's handler counts as the program's (eintr.h) unless it leaves the call
 * it interrupted to be restarted: then it did not cut that call short and the program never
 * sees it there, so a later interruption of the same call by our signal is still ours to
 * undo. Except inside a transfer the agent is finishing (transfers.h): part of the data has
 * moved, and unprofiled this signal would have ended the program's call right here with a
 * short count, SA_RESTART or not; so the agent's piece is made to fail with EINTR, as the
 * kernel does without SA_RESTART, and the transfer ends with what moved so far.
 *
 * The program's signal may also land inside the agent's handler (which blocks nothing). The
 * call it cuts is then the one our signal interrupted, not our handler's own wait: that call
 * restarts (under our SA_RESTART) only if the program asked for SA_RESTART too; without it
 * the call is made to fail with EINTR, as it would have unprofiled. */
static void run_program(int sig, siginfo_t *info, ucontext_t *uc, void *h, int si,
			int restart_asked, int shared)
{
	ucontext_t *cut = ours_uc ? ours_uc : uc;
	int finishing = wp_transfer_finishing;
	int restart = restarts_a_call(cut);
	/* Under the program's own flags (a wrapped handler, not nested in ours) a call left to
	 * restart means the program asked for SA_RESTART: undone only inside a transfer. Nested
	 * in our handler, or on the signal the agent shares (installed with our SA_RESTART),
	 * the kernel applied ours: undone unless the program asked for it too. */
	int undo = restart && (finishing || ((shared || cut != uc) && !restart_asked));
	greg_t pc = cut->uc_mcontext.gregs[REG_RIP];
	if (!restart || undo)
		wp_program_signals++;
	if (h) {
		void *outer = ours_uc;
		ours_uc = NULL; /* our signal may interrupt this handler in turn */
		wp_transfer_finishing = 0; /* the handler's own calls are not part of it */
		if (si)
			((void (*)(int, siginfo_t *, void *))h)(sig, info, uc);
		else
			((void (*)(int))h)(sig);
		wp_transfer_finishing = finishing;
		ours_uc = outer;
	}
	if (undo && cut->uc_mcontext.gregs[REG_RIP] == pc) /* unless its handler moved it */
		no_restart(cut);
}

static void trampoline(int sig, siginfo_t *info, void *ucv)
{
	run_program(sig, info, ucv, atomic_load(&prog_handler[sig]),
		    atomic_load(&prog_siginfo[sig]), atomic_load(&prog_restart[sig]), 0);
}

const ucontext_t *wp_signals_outer_context(const void *ucv)
{
	const ucontext_t *uc = ucv;
	const greg_t *g = uc->uc_mcontext.gregs;
	if ((uintptr_t)g[REG_RIP] == (uintptr_t)trampoline && g[REG_RDX])
		return (const ucontext_t *)(uintptr_t)g[REG_RDX];
	return uc;
}

void *wp_signals_enter_ours(void *ucontext)
{
	void *outer = ours_uc;
	ours_uc = ucontext;
	return outer;
}

void wp_signals_leave_ours(void *outer)
{
	ours_uc = outer;
}

/* ---- the agent's signal, shared with the program (chaining) ----
 * A program that takes the signal the agent samples with (Go's runtime takes every signal at
 * start-up; a program with its own SIGPROF timer) keeps it, and so does the agent, as the
 * JVM's libjsig and async-profiler do: our handler stays installed, the program's
 * disposition is kept here, and every delivery that is not one of our requests
 * (handshake.c tells them apart by the request it carries) goes to the program's handler
 * with its own siginfo and ucontext, or does what SIG_DFL or SIG_IGN would have done. The
 * program sees its own disposition when it asks through sigaction(); one installed with the
 * system call itself is noticed by the sampler before each batch (wp_signals_keep_ours). */
struct chain_rec {
	void *h; /* SIG_DFL, SIG_IGN or the program's handler */
	int flags;
	uint64_t mask; /* signals 1..64 */
};
/* Records are never freed: a handler may be reading one while the program changes its
 * disposition. A ring long enough that one is not reused while a handler still reads it. */
#define NRECS 256
static struct chain_rec recs[NRECS] WP_BIG;
static _Atomic unsigned next_rec;
static const struct chain_rec rec_dfl; /* SIG_DFL */
/* The program's disposition of each signal our handler is on, and the one it replaced (what
 * the program saw there when it installed its own: chaining to it reaches us again). */
static const struct chain_rec *_Atomic chain_cur[65];
static const struct chain_rec *_Atomic chain_prev[65];
static void (*ours_fn)(int, siginfo_t *, void *);
static _Atomic int shared_said;
/* While this thread runs the program's handler for a shared signal: the ucontext it was given
 * (initial-exec TLS: async-signal-safe). */
static __thread void *fwd_uc __attribute__((tls_model("initial-exec")));
static __thread int fwd_to_prev __attribute__((tls_model("initial-exec")));

static struct chain_rec rec_of(const struct sigaction *a)
{
	struct chain_rec r;
	r.flags = a->sa_flags;
	r.h = (a->sa_flags & SA_SIGINFO) ? (void *)a->sa_sigaction : (void *)a->sa_handler;
	r.mask = wp_sigset_word(&a->sa_mask);
	return r;
}

static void view_rec(const struct chain_rec *r, struct sigaction *out)
{
	memset(out, 0, sizeof(*out));
	out->sa_flags = r->flags;
	if (r->flags & SA_SIGINFO)
		out->sa_sigaction = (void (*)(int, siginfo_t *, void *))r->h;
	else
		out->sa_handler = (void (*)(int))r->h;
	sigemptyset(&out->sa_mask);
	memcpy(&out->sa_mask, &r->mask, sizeof(r->mask));
}

/* Async-signal-safe (SA_RESETHAND is applied from the handler). */
static void publish(int sig, const struct chain_rec *src)
{
	struct chain_rec *r = &recs[atomic_fetch_add(&next_rec, 1) % NRECS];
	*r = *src;
	atomic_store(&chain_prev[sig], atomic_load(&chain_cur[sig]));
	atomic_store(&chain_cur[sig], r);
}

/* The program's sigaction (on any of its threads), the sampler's look and SA_RESETHAND change
 * a record and the kernel's disposition together: one at a time, or the sampler could take
 * the moment between the two for a change the program made with the system call. Held for a
 * few system calls. A program thread holds it with every signal blocked (its own handler may
 * call sigaction); the sampler only tries it (a busy lock: look again next batch). */
static _Atomic int chain_lock;
/* SA_ONSTACK as ours was last installed on each signal, under the lock */
static _Atomic int installed_onstack[65];

static void lock_chain(uint64_t *saved)
{
	uint64_t all = ~0ull;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, saved, sizeof(all));
	while (atomic_exchange(&chain_lock, 1))
		sched_yield();
}

static void unlock_chain(const uint64_t *saved)
{
	atomic_store(&chain_lock, 0);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, saved, NULL, sizeof(*saved));
}

void wp_signals_fork_child(void)
{
	/* a fork taken while another thread (or the sampler) held it: that thread is not here */
	atomic_store(&chain_lock, 0);
}

static const struct chain_rec *current(int sig)
{
	const struct chain_rec *r = atomic_load(&chain_cur[sig]);
	return r ? r : &rec_dfl;
}

/* Our handler on `sig`, on the program's alternate stack when its handler asked for one (Go
 * runs its handlers on the sigaltstack it gives each thread, and checks it is on it). */
static int install_ours(int sig, const struct chain_rec *prog, struct sigaction *old)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = ours_fn;
	/* SA_RESTART: restartable system calls resume after our handler instead of failing with
	 * EINTR (docs/design.md); the program's own signals still fail them when it did not ask
	 * for SA_RESTART (run_program). */
	sa.sa_flags = SA_SIGINFO | SA_RESTART | (prog->flags & SA_ONSTACK);
	sigemptyset(&sa.sa_mask);
	atomic_store(&installed_onstack[sig], !!(prog->flags & SA_ONSTACK));
	return wp_real_sigaction(sig, &sa, old);
}

int wp_signals_take(int sig, void (*fn)(int, siginfo_t *, void *))
{
	if (sig <= 0 || sig >= 65)
		return -EINVAL;
	ours_fn = fn;
	uint64_t saved;
	int e = 0;
	lock_chain(&saved);
	if (!atomic_load(&chained[sig])) {
		/* Whatever is there now is the program's (a handler another library installed
		 * before us, when WALLPROF_SIGNAL forces a taken signal). */
		struct sigaction k;
		if (wp_real_sigaction(sig, NULL, &k) != 0) {
			e = -errno;
			goto out;
		}
		if (!wp_handshake_is_ours(&k)) {
			struct chain_rec r = rec_of(&k);
			publish(sig, &r);
		}
		atomic_store(&chained[sig], 1);
	}
	if (install_ours(sig, current(sig), NULL) != 0)
		e = -errno;
out:
	unlock_chain(&saved);
	return e;
}

static void say_shared(int sig, const char *how)
{
	if (!atomic_exchange(&shared_said, 1))
		wp_log("the program installs its own handler for signal %d%s; wallprof keeps "
		       "sampling with it and passes it every signal that is not its own", sig, how);
}

/* The program's sigaction() on a signal our handler is on. */
static int chained_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	uint64_t saved;
	lock_chain(&saved);
	const struct chain_rec *before = current(sig);
	struct sigaction was;
	view_rec(before, &was);
	if (act) {
		struct chain_rec r = rec_of(act);
		publish(sig, &r);
		if (install_ours(sig, &r, NULL) != 0) {
			int e = errno;
			publish(sig, before);
			install_ours(sig, before, NULL);
			unlock_chain(&saved);
			errno = e;
			return -1;
		}
	}
	unlock_chain(&saved);
	if (act && is_handler(act))
		say_shared(sig, "");
	if (old)
		*old = was;
	return 0;
}

void wp_signals_keep_ours(int sig)
{
	struct {
		void *h;
		unsigned long flags;
		void *restorer;
		uint64_t mask;
	} k;
	if (!ours_fn || sig <= 0 || sig >= 65 || atomic_exchange(&chain_lock, 1))
		return; /* (the sampler has every signal blocked: the lock alone) */
	if (syscall(SYS_rt_sigaction, sig, NULL, &k, sizeof(k.mask)) != 0)
		goto out;
	if (k.h == (void *)ours_fn) {
		/* Ours, but not as we install it: the program put back, with the system call, the
		 * handler it read before installing its own (ours, to a raw query), as Go does
		 * when its profiler stops. It means the disposition it replaced. */
		unsigned long want = SA_SIGINFO | SA_RESTART |
				     (atomic_load(&installed_onstack[sig]) ? SA_ONSTACK : 0);
		if ((k.flags & (SA_SIGINFO | SA_RESTART | SA_ONSTACK | SA_NODEFER | SA_RESETHAND)) !=
			    want || k.mask) {
			const struct chain_rec *prev = atomic_load(&chain_prev[sig]);
			publish(sig, prev ? prev : &rec_dfl);
			install_ours(sig, current(sig), NULL);
		}
		goto out;
	}
	/* Installed with the system call itself, unseen by sigaction(): ours goes back on top and
	 * chains to it. What ours replaces is the latest (the program may have changed it again
	 * since the look). */
	struct chain_rec r = { k.h, (int)k.flags, k.mask };
	struct sigaction old;
	if (install_ours(sig, &r, &old) != 0)
		goto out;
	if (!wp_handshake_is_ours(&old)) {
		r = rec_of(&old);
		if ((r.flags ^ (int)k.flags) & SA_ONSTACK)
			install_ours(sig, &r, NULL);
	}
	publish(sig, &r);
	atomic_store(&chain_lock, 0);
	if (r.h != SIG_DFL && r.h != SIG_IGN)
		say_shared(sig, " (with a system call)");
	return;
out:
	atomic_store(&chain_lock, 0);
}

/* What SIG_DFL does with a signal the program did not handle: the agent's possible signals
 * (SIGPROF, SIGVTALRM, SIGUSR1/2, real-time) all end the process. */
static void default_action(int sig, siginfo_t *info)
{
	if (sig == SIGCHLD || sig == SIGURG || sig == SIGWINCH || sig == SIGCONT)
		return;
	if (flush_fn)
		flush_fn(sig);
	die_of(sig, info);
}

int wp_signals_program_handles(int sig)
{
	if (sig <= 0 || sig >= 65)
		return 0;
	const void *h = current(sig)->h;
	return h != SIG_DFL && h != SIG_IGN;
}

void wp_signals_forward(int sig, siginfo_t *info, void *ucv)
{
	if (sig <= 0 || sig >= 65)
		return;
	const struct chain_rec *r = current(sig);
	int to_prev = fwd_uc && fwd_uc == ucv;
	if (to_prev) {
		/* The program's handler passes the signal on to the one it saw installed before it
		 * (read with the system call, it read ours): that is the one it replaced, when it
		 * is a handler (nobody calls SIG_DFL); once, so that two handlers each passing on
		 * to "ours" cannot loop. */
		r = atomic_load(&chain_prev[sig]);
		if (fwd_to_prev || !r || r->h == SIG_DFL || r->h == SIG_IGN || r->h == current(sig)->h)
			return;
	}
	if (r->h == SIG_IGN)
		return;
	if (r->h == SIG_DFL) {
		default_action(sig, info);
		return;
	}
	if (r->flags & SA_RESETHAND) {
		uint64_t saved;
		lock_chain(&saved);
		publish(sig, &rec_dfl);
		unlock_chain(&saved);
	}
	/* The mask the program's handler expects (its sa_mask; the signal itself unless
	 * SA_NODEFER), never our sampling signal; sigreturn puts the thread's own back. */
	int ours = wp_handshake_signal();
	uint64_t block = r->mask & ~(1ull << (sig - 1));
	if (ours > 0)
		block &= ~(1ull << (ours - 1));
	if (block)
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, &block, NULL, sizeof(block));
	if (r->flags & SA_NODEFER) {
		uint64_t self = 1ull << (sig - 1);
		syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &self, NULL, sizeof(self));
	}
	void *outer = fwd_uc;
	int outer_prev = fwd_to_prev;
	fwd_uc = ucv;
	fwd_to_prev = to_prev;
	run_program(sig, info, ucv, r->h, !!(r->flags & SA_SIGINFO), !!(r->flags & SA_RESTART), 1);
	fwd_uc = outer;
	fwd_to_prev = outer_prev;
}

void wp_signals_before_exec(void)
{
	/* exec puts handled signals back to SIG_DFL and keeps ignored ones ignored: the program's
	 * SIG_IGN must survive ours. */
	struct sigaction ign;
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	for (int sig = 1; sig < 65; sig++)
		if (atomic_load(&chained[sig]) && current(sig)->h == SIG_IGN)
			wp_real_sigaction(sig, &ign, NULL);
}

void wp_signals_after_failed_exec(void)
{
	for (int sig = 1; sig < 65; sig++) {
		struct sigaction k;
		if (atomic_load(&chained[sig]) && wp_real_sigaction(sig, NULL, &k) == 0 &&
		    !wp_handshake_is_ours(&k))
			install_ours(sig, current(sig), NULL);
	}
}

static int wrappable(int sig)
{
	return sig > 0 && sig < 65 && sig != SIGKILL && sig != SIGSTOP &&
	       !atomic_load(&chained[sig]) && sig != wp_handshake_signal();
}

/* Installs the program's `act` for `sig`, through the trampoline when it is a handler. */
static int install_program(int sig, const struct sigaction *act, struct sigaction *kold)
{
	if (!act || !is_handler(act) || !wrappable(sig))
		return wp_real_sigaction(sig, act, kold);
	struct sigaction w = *act;
	int si = !!(act->sa_flags & SA_SIGINFO);
	atomic_store(&prog_siginfo[sig], si);
	atomic_store(&prog_handler[sig], si ? (void *)act->sa_sigaction : (void *)act->sa_handler);
	atomic_store(&prog_mask[sig], wp_sigset_word(&act->sa_mask));
	atomic_store(&prog_restart[sig], !!(act->sa_flags & SA_RESTART));
	w.sa_sigaction = trampoline;
	w.sa_flags |= SA_SIGINFO;
	int ours = wp_handshake_signal();
	if (ours > 0)
		sigdelset(&w.sa_mask, ours);
	return wp_real_sigaction(sig, &w, kold);
}

/* Handlers the program installed before the agent started (another library's constructor):
 * counted from now on, too. */
static void wrap_existing(void)
{
	for (int sig = 1; sig < 65; sig++) {
		struct sigaction cur;
		if (!wrappable(sig) || fatal_ours[sig] || wp_real_sigaction(sig, NULL, &cur) != 0 ||
		    !is_handler(&cur) || cur.sa_sigaction == trampoline || wp_handshake_is_ours(&cur))
			continue;
		install_program(sig, &cur, NULL);
	}
}

int wp_signals_move_away(int sig, const sigset_t *avoid, const char *how)
{
	int to = free_rt_signal(sig, avoid);
	if (!to && avoid)
		return -1; /* every free signal is in `avoid`: stay */
	if (to && wp_handshake_migrate(to) == 0) {
		if (!atomic_exchange(&moved_once, 1))
			wp_log("the program %s signal %d; wallprof now samples with signal %d "
			       "(WALLPROF_SIGNAL chooses)", how, sig, to);
		return 0;
	}
	if (!atomic_exchange(&moved_once, 1))
		wp_log("the program takes signal %d and no free signal is left; wallprof stops "
		       "sampling", sig);
	wp_handshake_migrate(0);
	return -1;
}

/* What the program sees of `kold`, a disposition it asks about. */
static void program_view(int sig, const struct sigaction *kold, struct sigaction *old,
			 int ours_fatal, void *prev_h, int prev_si)
{
	*old = *kold;
	if (wp_handshake_is_ours(kold) && sig > 0 && sig < 65) {
		view_rec(current(sig), old); /* the disposition the program gave it, or SIG_DFL */
	} else if (ours_fatal || wp_handshake_is_ours(kold)) {
		/* What the program sees: the default it never changed. */
		memset(old, 0, sizeof(*old));
		old->sa_handler = SIG_DFL;
	} else if ((kold->sa_flags & SA_SIGINFO) && kold->sa_sigaction == trampoline) {
		/* its own handler, as it installed it */
		if (prev_si) {
			old->sa_sigaction = (void (*)(int, siginfo_t *, void *))prev_h;
		} else {
			old->sa_flags &= ~SA_SIGINFO;
			old->sa_handler = (void (*)(int))prev_h;
		}
		uint64_t m = atomic_load(&prog_mask[sig]);
		memcpy(&old->sa_mask, &m, sizeof(m));
	}
}

/* In a vfork child (gdb starting a program, a shell's vfork): the memory is the parent's,
 * which goes on sampling with the signal it has, so nothing of ours may change here; the
 * handler table is the child's own. The program's request goes to the kernel as made, and
 * it is answered as in the parent. */
static int foreign_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int ours_fatal = sig > 0 && sig < 65 && fatal_ours[sig];
	void *prev_h = sig > 0 && sig < 65 ? atomic_load(&prog_handler[sig]) : NULL;
	int prev_si = sig > 0 && sig < 65 ? atomic_load(&prog_siginfo[sig]) : 0;
	struct sigaction kold;
	if (wp_real_sigaction(sig, act, &kold) != 0)
		return -1;
	if (old)
		program_view(sig, &kold, old, ours_fatal, prev_h, prev_si);
	return 0;
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (wp_tmask_foreign())
		return foreign_sigaction(sig, act, old);
	int ours_fatal = sig > 0 && sig < 65 && fatal_ours[sig];

	if (sig > 0 && sig < 65 && atomic_load(&chained[sig]))
		return chained_sigaction(sig, act, old);
	if (act && ours_fatal && !is_handler(act) && act->sa_handler == SIG_DFL) {
		/* SIG_DFL asked: keep our stand-in, which dies exactly as SIG_DFL would. */
		if (old) {
			memset(old, 0, sizeof(*old));
			old->sa_handler = SIG_DFL;
		}
		return 0;
	}
	/* The sampler's first tick may be installing our stand-ins and wrapping handlers now
	 * (wp_signals_defer_fatal): one at a time, so that it never installs over this. */
	uint64_t saved;
	int locked = atomic_load(&setup_deferred);
	if (locked) {
		lock_chain(&saved);
		ours_fatal = sig > 0 && sig < 65 && fatal_ours[sig];
	}
	void *prev_h = sig > 0 && sig < 65 ? atomic_load(&prog_handler[sig]) : NULL;
	int prev_si = sig > 0 && sig < 65 ? atomic_load(&prog_siginfo[sig]) : 0;
	struct sigaction kold;
	int r = install_program(sig, act, &kold);
	if (r == 0 && act && ours_fatal)
		fatal_ours[sig] = 0; /* the program's handler (or SIG_IGN) replaced our stand-in */
	if (locked)
		unlock_chain(&saved);
	if (r != 0)
		return r;
	if (old)
		program_view(sig, &kold, old, ours_fatal, prev_h, prev_si);
	return 0;
}

EXPORT __sighandler_t signal(int sig, __sighandler_t handler)
{
	/* glibc's signal(): BSD semantics, SA_RESTART and the signal blocked in its handler. */
	struct sigaction act, old;
	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	act.sa_flags = SA_RESTART;
	sigemptyset(&act.sa_mask);
	if (sig > 0 && sig < 65)
		sigaddset(&act.sa_mask, sig);
	if (sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}
