/* SPDX-License-Identifier: MIT */
/* wallprof --dump --pid=PID (issue 21): one snapshot of a running process, now. The outside
 * sampler takes it (wallprof-outside --once: src/outside/dump.h) into a profile, by default a
 * temporary file removed after (-o keeps it: --report reads it as any attached run's); the
 * model and its deadlocks are built as for any report, the dump model over them
 * (model/dump_model.h), and the dump is written as text or JSON. Refusals are the outside
 * sampler's, the same lines as --pid's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "dump_model.h"

/* A temporary profile path into buf: 0, or -1 with the problem said. */
static int temp_profile(char *buf, size_t cap)
{
	const char *dir = getenv("TMPDIR");
	snprintf(buf, cap, "%s/wallprof-dump.XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(buf);
	if (fd < 0) {
		fprintf(stderr, "wallprof: cannot create a temporary file in %s: %m\n",
			dir && *dir ? dir : "/tmp");
		return -1;
	}
	close(fd);
	return 0;
}

static int report(const struct wp_opts *o, const char *path)
{
	struct wp_profile *p = NULL;
	char err[256];
	if (wp_profile_read(path, &p, err, sizeof(err)) != 0) {
		fprintf(stderr, "wallprof: the snapshot cannot be read: %s\n", err);
		return 1;
	}
	struct wp_filter f = { .wait_leaves = 0 };
	struct wp_resolved *r = wp_resolve(p, &f);
	if (!r) {
		wp_profile_free(p);
		return 1;
	}
	struct wp_dump d;
	int rc = 1;
	if (wp_dump_build(r, &d) != 0) {
		fprintf(stderr, "wallprof: %s is no snapshot (no dump=1 in its META)\n", path);
	} else {
		FILE *out = wp_open_report(o);
		if (out) {
			int e = o->format == WP_FMT_JSON ? wp_report_dump_json(r, &d, out) :
							   wp_report_dump_text(r, &d, out);
			rc = wp_close_report(o, out, e ? 1 : 0);
		}
		wp_dump_free(&d);
	}
	wp_resolved_free(r);
	wp_profile_free(p);
	return rc;
}

int wp_dump_pid(struct wp_opts *o)
{
	char path[4096];
	if (o->out) {
		snprintf(path, sizeof(path), "%s", o->out);
		if (wp_check_profile_path(path) != 0)
			return 2;
	} else if (temp_profile(path, sizeof(path)) != 0) {
		return 1;
	}
	int rc = wp_outside_once(o->attach_pid, path);
	if (rc == 0)
		rc = report(o, path);
	if (!o->out)
		unlink(path);
	return rc;
}
