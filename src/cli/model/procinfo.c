/* SPDX-License-Identifier: MIT */
#include "procinfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

/* The program's name in a command line: its first word without the directory. */
static const char *program_name(const char *cmd, char *buf, size_t cap)
{
	if (!cmd || !*cmd)
		return "?";
	size_t n = strcspn(cmd, " ");
	const char *w = cmd;
	for (size_t i = 0; i < n; i++)
		if (cmd[i] == '/')
			w = cmd + i + 1;
	size_t l = (size_t)(cmd + n - w);
	if (l >= cap)
		l = cap - 1;
	memcpy(buf, w, l);
	buf[l] = 0;
	return buf;
}

/* META title_<i><suffix>. */
static const char *title_key(const struct wp_profile *p, int i, const char *suffix)
{
	char key[48];
	snprintf(key, sizeof(key), "title_%d%s", i, suffix);
	return wp_profile_meta(p, key);
}

/* The title with the most samples (the later one on a tie), 0 when the file has none. */
static int main_title(const struct wp_profile *p)
{
	int best = 0;
	long long most = -1;
	for (int i = 1; title_key(p, i, ""); i++) {
		const char *s = title_key(p, i, "_samples");
		long long v = s ? atoll(s) : 0;
		if (v >= most) {
			most = v;
			best = i;
		}
	}
	return best;
}

static const char *retitled(const struct wp_profile *p, int i)
{
	const char *r = i ? title_key(p, i, "_retitled") : NULL;
	return r ? r : "no";
}

const char *wp_proc_name(const struct wp_profile *p, char *buf, size_t cap)
{
	int i = main_title(p);
	const char *how = retitled(p, i);
	const char *title = i ? title_key(p, i, "") : NULL;
	const char *comm = i ? title_key(p, i, "_comm") : NULL;
	if (!strcmp(how, "argv") && title && *title)
		return title;
	if (!strcmp(how, "comm") && comm && *comm)
		return comm;
	return program_name(title && *title ? title : p->info.command, buf, cap);
}

const char *wp_proc_command(const struct wp_profile *p, char *buf, size_t cap)
{
	int i = main_title(p);
	const char *title = i ? title_key(p, i, "") : NULL;
	const char *comm = i ? title_key(p, i, "_comm") : NULL;
	if (!title || !*title) {
		const char *cmd = p->info.command;
		return cmd ? cmd : "";
	}
	if (!strcmp(retitled(p, i), "comm") && comm && *comm) {
		snprintf(buf, cap, "%s (named %s)", title, comm);
		return buf;
	}
	return title;
}

int wp_proc_named(const struct wp_profile *p, const char *sel)
{
	char buf[256];
	return !strcmp(program_name(p->info.command, buf, sizeof(buf)), sel) ||
	       !strcmp(wp_proc_name(p, buf, sizeof(buf)), sel);
}

/* Whether p's message_1 .. message_<i-1> has `m`. */
static int said_before(const struct wp_profile *p, int i, const char *m)
{
	for (int k = 1; k < i; k++) {
		char key[32];
		snprintf(key, sizeof(key), "message_%d", k);
		const char *s = wp_profile_meta(p, key);
		if (s && !strcmp(s, m))
			return 1;
	}
	return 0;
}

size_t wp_agent_messages(const struct wp_profile *const *ps, size_t n,
			 struct wp_agent_msg **out, uint64_t *dropped)
{
	size_t len = 0, cap = 0;
	struct wp_agent_msg *v = NULL;
	*dropped = 0;
	for (size_t k = 0; k < n; k++) {
		*dropped += ps[k]->info.messages_dropped;
		for (int i = 1;; i++) {
			char key[32];
			snprintf(key, sizeof(key), "message_%d", i);
			const char *m = wp_profile_meta(ps[k], key);
			if (!m)
				break;
			size_t j = 0;
			while (j < len && strcmp(v[j].text, m))
				j++;
			if (j < len) {
				if (v[j].proc != k && !said_before(ps[k], i, m))
					v[j].more++;
				continue;
			}
			if (wp_grow(&v, &cap, len + 1, sizeof(*v))) {
				free(v);
				*out = NULL;
				return 0;
			}
			v[len++] = (struct wp_agent_msg){ .text = m, .proc = k, .more = 0 };
		}
	}
	*out = v;
	return len;
}
