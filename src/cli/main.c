/* SPDX-License-Identifier: MIT */
/* wallprof: run a program under the sampling agent and report where its threads spend their
 * time; or re-report, compare and export saved profiles. This file picks the subcommand; the
 * options are read in options.c. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#ifndef WALLPROF_VERSION
#define WALLPROF_VERSION "0.0.0"
#endif

static int record_and_report(struct wp_opts *o)
{
	char path[PATH_MAX];
	if (o->flame_graph && !o->format_set)
		o->format = WP_FMT_SVG;
	if (o->format == WP_FMT_SVG && !o->report_out && isatty(1))
		return wp_usage_error("an SVG on a terminal is not readable; redirect it: > "
				      "profile.svg", NULL);
	int rec = wp_record(o, path, sizeof(path));
	if (rec == -2)
		return 2;
	if (rec != 0)
		return 1;
	return wp_report_after_run(o, path);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--internal-workload"))
		return wp_internal_workload(argc - 1, argv + 1);
	struct wp_opts o;
	int rc = wp_parse_options(argc, argv, &o);
	if (rc)
		return rc;
	if (o.help) {
		wp_usage(stdout);
		return 0;
	}
	if (o.version) {
		printf("wallprof %s\n", WALLPROF_VERSION);
		return 0;
	}
	int modes = !!o.report_file + !!o.compare[0] + !!o.overhead_test + !!o.live;
	if (modes > 1)
		return wp_usage_error("--report, --compare, --overhead-test and --live do not go "
				      "together", NULL);
	if (o.overhead_test) {
		FILE *out = wp_open_report(&o);
		return out ? wp_close_report(&o, out, wp_overhead_test(&o, out)) : 1;
	}
	if (o.compare[0]) {
		if (o.cmd)
			return wp_usage_error("--compare takes no command", NULL);
		FILE *out = wp_open_report(&o);
		return out ? wp_close_report(&o, out, wp_compare(&o, o.compare[0], o.compare[1],
								 out)) : 1;
	}
	if (o.report_file) {
		if (o.cmd)
			return wp_usage_error("--report takes no command", NULL);
		if (o.flame_graph && !o.format_set)
			o.format = WP_FMT_SVG;
		FILE *out = wp_open_report(&o);
		return out ? wp_close_report(&o, out, wp_report_files(&o, out)) : 1;
	}
	if (o.dump) {
		if (!o.attach_pid || o.cmd || modes)
			return wp_usage_error("--dump goes with --pid=PID alone", NULL);
		if (o.format != WP_FMT_TEXT && o.format != WP_FMT_JSON)
			return wp_usage_error("--dump writes text or json", NULL);
		return wp_dump_pid(&o);
	}
	if (o.format == WP_FMT_JSON)
		return wp_usage_error("--format=json goes with --dump", NULL);
	if (o.no_report && (o.live || o.flame_graph || o.format_set || o.report_out))
		return wp_usage_error("--no-report records only: it takes no report option "
				      "(--live, --flame-graph, --format, --report-output)", NULL);
	if (o.attach_pid) {
		if (o.cmd)
			return wp_usage_error("--pid takes no command", NULL);
		return o.live ? wp_live(&o) : wp_attach(&o);
	}
	if (o.duration > 0)
		return wp_usage_error("--duration goes with --pid", NULL);
	if (!o.cmd) {
		wp_usage(stderr);
		return 2;
	}
	if (o.live)
		return wp_live(&o);
	return record_and_report(&o);
}
