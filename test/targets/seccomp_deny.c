/* SPDX-License-Identifier: MIT */
/* seccomp_deny: runs a command under a seccomp filter that makes some system calls fail with
 * EPERM, as a container's profile does (Docker's default refuses perf_event_open, ptrace and
 * process_vm_readv to a container without CAP_SYS_PTRACE / CAP_PERFMON). The filter is
 * inherited by everything the command starts.
 *
 * Usage: seccomp_deny CALL[,CALL...] COMMAND [ARGS...]
 *   CALL: perf_event_open, process_vm_readv or ptrace */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static const struct {
	const char *name;
	long nr;
} calls[] = {
	{ "perf_event_open", SYS_perf_event_open },
	{ "process_vm_readv", SYS_process_vm_readv },
	{ "ptrace", SYS_ptrace },
};

#define MAX_DENY 8

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: seccomp_deny CALL[,CALL...] COMMAND [ARGS...]\n");
		return 2;
	}
	long deny[MAX_DENY];
	int n = 0;
	for (char *tok = strtok(argv[1], ","); tok && n < MAX_DENY; tok = strtok(NULL, ",")) {
		size_t k = 0;
		while (k < sizeof(calls) / sizeof(calls[0]) && strcmp(calls[k].name, tok))
			k++;
		if (k == sizeof(calls) / sizeof(calls[0])) {
			fprintf(stderr, "seccomp_deny: unknown call %s\n", tok);
			return 2;
		}
		deny[n++] = calls[k].nr;
	}
	/* arch check, load the call's number, one comparison per denied call, allow */
	struct sock_filter f[4 + 2 * MAX_DENY + 1];
	int i = 0;
	f[i++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[i++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	f[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[i++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	for (int k = 0; k < n; k++) {
		f[i++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (__u32)deny[k], 0, 1);
		f[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
						      SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
	}
	f[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = { .len = (unsigned short)i, .filter = f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp_deny: prctl");
		return 1;
	}
	execvp(argv[2], argv + 2);
	perror("seccomp_deny: exec");
	return 127;
}
