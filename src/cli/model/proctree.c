/* SPDX-License-Identifier: MIT */
#include "proctree.h"

struct wp_proc_id wp_proc_id_of(const struct wp_profile *p)
{
	return (struct wp_proc_id){
		.pid = (long)p->info.pid,
		.ppid = (long)p->info.ppid,
		.start_ns = p->info.start_unix_ns,
		.cpu_ns = p->info.cpu_user_ns + p->info.cpu_sys_ns,
	};
}

long wp_procs_image_at(const struct wp_proc_id *v, size_t n, long pid, uint64_t at)
{
	long by_then = -1, first = -1;
	for (size_t j = 0; pid > 0 && j < n; j++) {
		if (v[j].pid != pid)
			continue;
		if (v[j].start_ns <= at && (by_then < 0 || v[j].start_ns >= v[by_then].start_ns))
			by_then = (long)j;
		if (first < 0 || v[j].start_ns < v[first].start_ns)
			first = (long)j;
	}
	return by_then >= 0 ? by_then : first;
}

long wp_procs_parent(const struct wp_proc_id *v, size_t n, size_t i)
{
	long p = wp_procs_image_at(v, n, v[i].ppid, v[i].start_ns);
	return p == (long)i ? -1 : p;
}

int wp_procs_descends(const struct wp_proc_id *v, size_t n, size_t i, const char *mark)
{
	/* at most n steps: pids are reused, and a file's ppid can make a cycle */
	long p = wp_procs_parent(v, n, i);
	for (size_t steps = 0; p >= 0 && steps < n; steps++) {
		if (mark[p])
			return 1;
		p = wp_procs_parent(v, n, (size_t)p);
	}
	return 0;
}

int wp_procs_last_image(const struct wp_proc_id *v, size_t n, size_t i)
{
	return v[i].pid <= 0 || wp_procs_image_at(v, n, v[i].pid, UINT64_MAX) == (long)i;
}

uint64_t wp_procs_own_cpu(const struct wp_proc_id *v, size_t n, size_t i)
{
	long prev = v[i].start_ns ? wp_procs_image_at(v, n, v[i].pid, v[i].start_ns - 1) : -1;
	if (prev < 0 || (size_t)prev == i || v[prev].start_ns >= v[i].start_ns)
		return v[i].cpu_ns;
	return v[i].cpu_ns > v[prev].cpu_ns ? v[i].cpu_ns - v[prev].cpu_ns : 0;
}
