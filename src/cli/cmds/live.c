/* SPDX-License-Identifier: MIT */
/* --live: a full-screen terminal view of where the program's threads are, refreshed as it
 * runs, like top for stacks; then the usual final report.
 *
 * Three parts, one file each: the counts of every process of the tree over its checkpoints
 * (model/live_counts.c: a model like the reports', with its unit test), the view (live/view.c:
 * the rows, drawing and keys) and the run (live/run.c: the program started under the agent,
 * its checkpoints found and counted, the loop). The parts that know nothing of the profile
 * are in src/cli/live/ too: the terminal and signals (term.c: how the terminal is taken and
 * given back on every way out), the screen buffer (screen.c), the program's output relayed
 * through a pseudo-terminal (relay.c), the keyboard's bytes to keys (keys.c), the files of
 * the tree's processes (procfiles.c). This file checks the options and starts them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "live/term.h"
#include "live/view.h"

int wp_live(struct wp_opts *o)
{
	if (!isatty(STDOUT_FILENO)) {
		fprintf(stderr, "wallprof: --live needs a terminal on standard output; to record "
				"without one, use `wallprof -o FILE -- COMMAND` and then "
				"`wallprof --report FILE`\n");
		return 2;
	}
	const char *term = getenv("TERM");
	if (!term || !*term || !strcmp(term, "dumb")) {
		fprintf(stderr, "wallprof: --live needs a terminal that can draw a full-screen view "
				"(TERM is %s); use `wallprof -- COMMAND` instead\n",
			term && *term ? term : "not set");
		return 2;
	}
	if (!o->report_out && (o->format == WP_FMT_SVG || o->format == WP_FMT_PPROF ||
			       o->flame_graph)) {
		fprintf(stderr, "wallprof: the final report of --live goes to the terminal; write "
				"an SVG or pprof file with --report-output=FILE\n");
		return 2;
	}
	if (o->flame_graph && !o->format_set)
		o->format = WP_FMT_SVG;
	const char *agent = wp_find_agent();
	if (!agent)
		return 1;

	static struct live L; /* some 10 KB of line buffers: not on the stack */
	memset(&L, 0, sizeof(L));
	L.o = o;
	L.target = o->attach_pid; /* --live --pid: the outside sampler is the child */
	L.sel_kind = -1;
	if (o->out)
		snprintf(L.path, sizeof(L.path), "%s", o->out);
	else
		snprintf(L.path, sizeof(L.path), "wallprof.%ld.prof", (long)getpid());
	if (wp_check_profile_path(L.path) != 0)
		return 2;
	if (wp_live_counts_init(&L.m, term_oom) != 0) {
		fprintf(stderr, "wallprof: out of memory\n");
		return 1;
	}

	int status = live_run(&L, agent);
	wp_live_counts_free(&L.m);
	free(L.rowv);
	if (status < 0)
		return 1;
	if (o->attach_pid) {
		/* the sampler's status, not the process's (which runs on) */
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			return 1;
		o->exit_status = 0;
		o->have_exit_status = 0;
		return wp_report_after_run(o, L.path);
	}
	o->exit_status = status;
	o->have_exit_status = 1;
	return wp_report_after_run(o, L.path);
}
