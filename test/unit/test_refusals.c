/* SPDX-License-Identifier: MIT */
/* The refusal lines of the outside sampler (src/outside/refusals.c), decided from the facts
 * alone: every cause that this machine cannot produce (Yama, perf_event_paranoid above 2, a
 * process that is not dumpable as root, a container) gets its line checked here for the cause,
 * its value and what to do; test/e2e/test_attach_refusals.py runs the ones it can for real. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "outside/refusals.h"

/* Facts under which nothing refuses: a process of our own user, no Yama, paranoid 2. */
static struct wp_refusal_facts base(void)
{
	struct wp_refusal_facts f;
	memset(&f, 0, sizeof(f));
	f.pid = 4242;
	f.tracer = "";
	f.other_uid = -1;
	f.owner = "";
	f.other_gid = -1;
	f.group = "";
	f.dumpable = 1;
	f.ptrace_scope = -1;
	f.paranoid = 2;
	return f;
}

static struct wp_refusal_facts refused(enum wp_refused_call call, int err)
{
	struct wp_refusal_facts f = base();
	f.call = call;
	f.err = err;
	return f;
}

/* The line for `f`: one line, refused, fitting wallprof-outside's 512-byte buffer; each of the
 * NULL-ended `must` in it and none of `mustnt`. */
static void line_has(const char *what, const struct wp_refusal_facts *f, const char *const *must,
		     const char *const *mustnt)
{
	char why[512];
	memset(why, 'x', sizeof(why));
	int r = wp_refusal_explain(f, why, sizeof(why));
	CHECK(r == -1, "%s: refused", what);
	CHECK(strlen(why) < sizeof(why) - 1 && !strchr(why, '\n'), "%s: one whole line: %s", what,
	      why);
	for (; must && *must; must++)
		CHECK(strstr(why, *must) != NULL, "%s: says \"%s\": %s", what, *must, why);
	for (; mustnt && *mustnt; mustnt++)
		CHECK(strstr(why, *mustnt) == NULL, "%s: does not say \"%s\": %s", what, *mustnt,
		      why);
}

#define L(...) ((const char *const[]){ __VA_ARGS__, NULL })

static void nothing_refuses(void)
{
	char why[512] = "stale";
	struct wp_refusal_facts f = base();
	CHECK_INT(wp_refusal_explain(&f, why, sizeof(why)), 0);
	CHECK_STR(why, "");
	/* settings that would refuse, when no call was refused: nothing to say */
	f.ptrace_scope = 3;
	f.paranoid = 4;
	f.seccomp = 1;
	f.dumpable = 0;
	f.ns_pid = 7;
	strcpy(why, "stale");
	CHECK_INT(wp_refusal_explain(&f, why, sizeof(why)), 0);
	CHECK_STR(why, "");
}

static void tracer(void)
{
	struct wp_refusal_facts f = base();
	f.tracer_pid = 4300;
	f.tracer = "strace";
	line_has("strace attached", &f, L("pid 4242 is traced by pid 4300 (strace)", "detach it first"),
		 NULL);
	f.tracer = "gdb";
	f.call = WP_REFUSED_PROC; /* a tracer is the first thing to name */
	f.err = EPERM;
	f.ptrace_scope = 1;
	line_has("gdb attached", &f, L("traced by pid 4300 (gdb)"), L("Yama"));
}

static void users(void)
{
	struct wp_refusal_facts f = refused(WP_REFUSED_PROC, EACCES);
	f.other_uid = 0;
	f.owner = "root";
	line_has("another user", &f, L("pid 4242 belongs to root", "run it as root"), NULL);
	f.other_uid = -1;
	f.other_gid = 42;
	f.group = "shadow";
	line_has("set-group-ID", &f, L("group shadow", "set-group-ID", "run it as root"),
		 L("belongs to"));
	/* root reads any user's process: a refusal as root is something else */
	f = refused(WP_REFUSED_PROC, EACCES);
	f.root = 1;
	f.other_uid = 1000;
	f.owner = "alice";
	line_has("root, another user", &f, L("security module"), L("belongs to", "run it as root"));
}

static void not_dumpable(void)
{
	struct wp_refusal_facts f = refused(WP_REFUSED_PROC, EACCES);
	f.dumpable = 0;
	line_has("not dumpable", &f, L("pid 4242 is not dumpable", "PR_SET_DUMPABLE",
				       "run wallprof as root"), L("security module"));
	/* the kernel checks the user before dumpability */
	f.other_uid = 0;
	f.owner = "root";
	line_has("not dumpable, another user", &f, L("belongs to root"), L("dumpable"));
}

static void yama(void)
{
	struct wp_refusal_facts f = refused(WP_REFUSED_PROC, EPERM);
	f.ptrace_scope = 1;
	line_has("Yama 1", &f, L("refused by Yama", "kernel.yama.ptrace_scope is 1", "ancestors",
				 "wallprof did not start pid 4242", "run wallprof as root",
				 "wallprof -- PROGRAM", "sysctl kernel.yama.ptrace_scope=0"), NULL);
	f.descendant = 1; /* scope 1 lets an ancestor read its descendants */
	line_has("Yama 1, a descendant", &f, L("security module"), L("Yama"));
	f.descendant = 0;
	f.root = 1; /* and CAP_SYS_PTRACE reads any */
	line_has("Yama 1, root", &f, L("security module"), L("Yama"));

	f = refused(WP_REFUSED_PROC, EPERM);
	f.ptrace_scope = 2;
	line_has("Yama 2", &f, L("refused by Yama", "kernel.yama.ptrace_scope is 2", "only root",
				 "run wallprof as root", "sysctl kernel.yama.ptrace_scope=0"),
		 L("ancestors"));
	f.descendant = 1; /* scope 2: descendants too are refused */
	line_has("Yama 2, a descendant", &f, L("kernel.yama.ptrace_scope is 2"), NULL);
	f.root = 1;
	line_has("Yama 2, root", &f, L("security module"), L("Yama"));

	f = refused(WP_REFUSED_PROC, EPERM);
	f.ptrace_scope = 3;
	f.descendant = 1;
	line_has("Yama 3", &f, L("refused by Yama", "kernel.yama.ptrace_scope is 3", "not even root",
				 "restarts", "wallprof -- PROGRAM"),
		 L("run wallprof as root", "sysctl"));
	f.root = 1;
	line_has("Yama 3, root", &f, L("kernel.yama.ptrace_scope is 3", "not even root"),
		 L("run wallprof as root"));

	f = refused(WP_REFUSED_PROC, EPERM);
	f.ptrace_scope = 0;
	line_has("Yama 0", &f, L("security module"), L("Yama"));
}

static void container(void)
{
	struct wp_refusal_facts f = refused(WP_REFUSED_PROC, EPERM);
	f.root = 1;
	f.ns_pid = 7;
	line_has("container", &f, L("container boundary", "pid 7 in its own pid namespace",
				    "Operation not permitted", "nsenter -t 4242", "CAP_SYS_PTRACE"),
		 NULL);
	f = refused(WP_REFUSED_PROC, EACCES);
	line_has("another security refusal", &f, L("reading pid 4242's state refused",
						   "Permission denied", "security module"),
		 L("container boundary"));
	f.err = ENOENT; /* it ended between the checks */
	line_has("ended", &f, L("pid 4242 has ended"), L("security module"));
}

static void paranoid(void)
{
	for (long p = 3; p <= 4; p++) {
		char value[64];
		snprintf(value, sizeof(value), "kernel.perf_event_paranoid is %ld", p);
		struct wp_refusal_facts f = refused(WP_REFUSED_PERF, EACCES);
		f.paranoid = p;
		line_has("paranoid", &f, L("perf_event_open refused", "Permission denied", value,
					   "CAP_PERFMON", "sysctl kernel.perf_event_paranoid=2"),
			 L("seccomp"));
	}
}

static void seccomp(void)
{
	struct wp_refusal_facts f = refused(WP_REFUSED_PERF, EPERM);
	f.seccomp = 1;
	line_has("seccomp, perf", &f, L("perf_event_open refused", "Operation not permitted",
					"kernel.perf_event_paranoid is 2, which allows it",
					"the seccomp filter wallprof runs under",
					"docker run --cap-add PERFMON"), L("sysctl"));
	f.seccomp = 0;
	line_has("security module, perf", &f, L("a security module or a container's seccomp"),
		 L("sysctl", "the seccomp filter wallprof runs under"));
	f.paranoid = WP_FACT_UNKNOWN;
	line_has("perf, paranoid unreadable", &f, L("perf_event_open refused"),
		 L("-100", "which allows it"));
	f = refused(WP_REFUSED_PERF, ENOENT);
	line_has("perf not in this kernel", &f, L("cannot sample user stacks"), L("seccomp"));

	f = refused(WP_REFUSED_VM, EPERM);
	f.seccomp = 1;
	line_has("seccomp, process_vm_readv", &f, L("reading pid 4242's memory (process_vm_readv) "
						    "refused", "the seccomp filter wallprof runs under",
						    "--cap-add SYS_PTRACE"), NULL);
	f.self = 1; /* a static program, checked on the sampler itself */
	line_has("seccomp, process_vm_readv, a static program", &f,
		 L("reading the program's memory"), L("pid 4242"));
}

int main(void)
{
	nothing_refuses();
	tracer();
	users();
	not_dumpable();
	yama();
	container();
	paranoid();
	seccomp();
	printf("refusals: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
