/* SPDX-License-Identifier: MIT */
/* Whether the outside sampler may look at process `pid`, and if not, one line saying why and
 * what to do: no such process, a zombie, another tracer holding it (named from TracerPid),
 * another user's process, a process that is not dumpable, Yama's ptrace_scope, a container
 * boundary, perf_event_paranoid, a seccomp filter or security module refusing
 * process_vm_readv or perf_event_open. /proc/PID/task/TID/syscall and process_vm_readv need
 * ptrace read access (PTRACE_MODE_ATTACH: the same checks as attaching a debugger, without
 * attaching); the perf clocks need perf_event_open on another process's threads (allowed for
 * one's own processes up to paranoid 2). */
#ifndef WP_REFUSALS_H
#define WP_REFUSALS_H

#include <stddef.h>
#include <sys/types.h>

/* 0 when every check passes; else -1 with the line in `why` (without "wallprof: "). */
int wp_refusal_check(pid_t pid, char *why, size_t cap);
/* --exec (a static program, our own child: no permission check between us): whether the
 * calls themselves are allowed here (a seccomp filter refuses them for every target). */
int wp_refusal_check_self(char *why, size_t cap);
/* Exit status of wallprof-outside --exec refusing before it ran the program (it writes no
 * profile then; the program's own 125 comes with one). */
#define WP_OUTSIDE_REFUSED 125

/* The call that was refused, in the order wp_refusal_check tries them. */
enum wp_refused_call {
	WP_REFUSED_NONE, /* none was */
	WP_REFUSED_PROC, /* reading /proc/PID/task/PID/syscall (ptrace read access) */
	WP_REFUSED_VM,	 /* process_vm_readv of one byte */
	WP_REFUSED_PERF, /* perf_event_open of a clock on the leader */
};

/* Unknown values of the numbers below (a file that could not be read). */
#define WP_FACT_UNKNOWN (-100)

/* What wp_refusal_check reads from /proc and learns from the calls it tries: all that
 * wp_refusal_explain decides from, so that every explanation can be tested on any machine. */
struct wp_refusal_facts {
	pid_t pid;	     /* the process looked at */
	int self;	     /* it is the sampler itself (a static program's check) */
	enum wp_refused_call call;
	int err;	     /* errno of the refused call */
	long tracer_pid;     /* its TracerPid: 0 none */
	const char *tracer;  /* the tracer's comm */
	int root;	     /* wallprof runs as root (euid 0) */
	long other_uid;	     /* the first of the target's uids (effective, real, saved) that is
			      * not ours, -1 when all are */
	const char *owner;   /* that uid's user name */
	long other_gid;	     /* likewise its first gid that is not ours (set-group-ID) */
	const char *group;   /* that gid's group name */
	int dumpable;	     /* 0: not dumpable (its /proc files belong to root); 1, or unknown */
	long ptrace_scope;   /* kernel.yama.ptrace_scope; -1 without Yama */
	int descendant;	     /* the target descends from wallprof (Yama scope 1 allows that) */
	long ns_pid;	     /* its pid in the pid namespace it lives in (a container's) when that
			      * is not ours; 0 when it shares ours */
	long paranoid;	     /* kernel.perf_event_paranoid; WP_FACT_UNKNOWN when unreadable */
	int seccomp;	     /* wallprof runs under a seccomp filter (Seccomp: 2) */
};

/* The line for `f` in `why` and -1, or 0 (and an empty line) when nothing refuses: no tracer
 * and no refused call. Pure: reads nothing but `f`. */
int wp_refusal_explain(const struct wp_refusal_facts *f, char *why, size_t cap);

#endif
