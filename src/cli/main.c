/* wallprof: run a program under the sampling agent and report where its threads spend their
 * time; or re-report, compare and export saved profiles. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

#ifndef WALLPROF_VERSION
#define WALLPROF_VERSION "0.0.0"
#endif

static const char usage_text[] =
"Usage:\n"
"  wallprof [RECORD OPTIONS] [REPORT OPTIONS] -- COMMAND [ARGS...]\n"
"  wallprof --flame-graph [RECORD OPTIONS] -- COMMAND [ARGS...] > profile.svg\n"
"  wallprof --live [RECORD OPTIONS] -- COMMAND [ARGS...]\n"
"  wallprof --report FILE [REPORT OPTIONS]\n"
"  wallprof --compare BEFORE.prof AFTER.prof [--flame-graph]\n"
"  wallprof --overhead-test [-- COMMAND [ARGS...]]\n"
"\n"
"wallprof samples every thread of a native program, running or waiting, without recompiling\n"
"it and without root, then reports where the time went: a flat profile with file:line, a\n"
"call graph, per-thread sections and flame graphs. The program runs with libwallprof.so\n"
"preloaded; its output, exit status and system calls are its own. wallprof exits with the\n"
"program's status (or dies of the same signal).\n"
"\n"
"Record options:\n"
"  --mode=wall|cpu      wall (default): sample threads whether running or blocked, to see\n"
"                       where time goes as the user waits for it. cpu: sample only threads\n"
"                       using the CPU, in proportion to the CPU time they use.\n"
"  --hz=N, --sample-rate=N, -F N\n"
"                       ticks per second, 1-10000 (default 100). In cpu mode a busy thread\n"
"                       gets about N samples per CPU second.\n"
"  --threads=N          wall mode: threads sampled per tick, chosen at random (default 16;\n"
"                       0 = every thread every tick).\n"
"  -o FILE, --output=FILE\n"
"                       where to save the profile (default wallprof.<pid>.prof; the\n"
"                       report names it). Re-report it later with --report.\n"
"  -q, --quiet          no progress line while the program runs.\n"
"\n"
"Report options:\n"
"  --format=FMT, -f FMT text (default), folded (flamegraph.pl), svg (flame graph), csv,\n"
"                       pprof (gzipped profile.proto for `go tool pprof`), speedscope (JSON).\n"
"                       When such a report goes to standard output, the program's own\n"
"                       standard output goes to standard error, so the file stays clean.\n"
"  --per-thread         per-thread roots ([name tid=N]) in folded and svg output\n"
"  --thread=NAME|TID    only this thread's samples\n"
"  --top=N              rows in the flat profile (default 20)\n"
"  --report-output=FILE write the report there instead of standard output\n"
"\n"
"Other:\n"
"  --flame-graph        write an SVG flame graph on standard output (as --format=svg)\n"
"  --compare A B        differential profile of two saved profiles: functions that got\n"
"                       faster or slower, with sampling noise marked not significant;\n"
"                       with --flame-graph, a red/blue differential SVG\n"
"  --overhead-test      time a workload unprofiled and at 100, 1000 and 10000 Hz\n"
"  --live               a live terminal view of the hottest functions while COMMAND runs\n"
"  -h, --help           this text;   -V, --version   the version\n"
"\n"
"Environment (the agent's settings, also usable with LD_PRELOAD=libwallprof.so directly):\n"
"  WALLPROF_MODE, WALLPROF_HZ, WALLPROF_THREADS, WALLPROF_OUT (%p = pid), WALLPROF_QUIET=1\n"
"  WALLPROF_AGENT       path of libwallprof.so when it is not next to wallprof\n"
"\n"
"Examples:\n"
"  wallprof --hz=1000 -- ./server --port 8080\n"
"  wallprof --mode=cpu -o before.prof -- ./bench; wallprof --compare before.prof after.prof\n"
"  wallprof --report before.prof --format=folded --per-thread | flamegraph.pl > f.svg\n";

static void usage(FILE *f)
{
	fputs(usage_text, f);
}

static int bad(const char *msg, const char *arg)
{
	fprintf(stderr, "wallprof: %s%s%s\nTry 'wallprof --help' for the options.\n", msg,
		arg ? ": " : "", arg ? arg : "");
	return 2;
}

static int parse_num(const char *s, long lo, long hi, int *out)
{
	char *end;
	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

static int parse_format(const char *s, enum wp_format *f)
{
	static const struct {
		const char *name;
		enum wp_format f;
	} names[] = {
		{ "text", WP_FMT_TEXT }, { "folded", WP_FMT_FOLDED }, { "collapsed", WP_FMT_FOLDED },
		{ "svg", WP_FMT_SVG },   { "csv", WP_FMT_CSV },       { "pprof", WP_FMT_PPROF },
		{ "speedscope", WP_FMT_SPEEDSCOPE },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i].name)) {
			*f = names[i].f;
			return 0;
		}
	return -1;
}

/* "--name=value" or "--name value" (advancing *i); NULL when `a` is not --name. */
static const char *value_of(int argc, char **argv, int *i, const char *name, int *missing)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (strncmp(a, name, n))
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n])
		return NULL;
	if (*i + 1 >= argc) {
		*missing = 1;
		return NULL;
	}
	return argv[++*i];
}

static int parse(int argc, char **argv, struct wp_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->threads = -1;
	o->top = 20;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		int missing = 0;
		if (!strcmp(a, "--")) {
			o->cmd = &argv[i + 1];
			if (!argv[i + 1])
				return bad("no command after --", NULL);
			return 0;
		}
#define OPT(name) ((v = value_of(argc, argv, &i, name, &missing)) || missing)
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			printf("wallprof %s\n", WALLPROF_VERSION);
			exit(0);
		} else if (OPT("--mode")) {
			if (!v || (strcmp(v, "wall") && strcmp(v, "cpu")))
				return bad("--mode takes wall or cpu", v);
			o->mode = v;
		} else if (OPT("--hz") || OPT("--sample-rate") || OPT("-F")) {
			if (!v || parse_num(v, 1, 10000, &o->hz))
				return bad("the sample rate takes a whole number of Hz from 1 to 10000", v);
		} else if (OPT("--threads")) {
			if (!v || parse_num(v, 0, 1000000, &o->threads))
				return bad("--threads takes a whole number from 0 (all) to 1000000", v);
		} else if (OPT("--output") || OPT("-o")) {
			if (!v || !*v)
				return bad("-o takes a file name", NULL);
			o->out = v;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o->quiet = 1;
		} else if (OPT("--format") || OPT("-f")) {
			if (!v || parse_format(v, &o->format))
				return bad("--format takes text, folded, svg, csv, pprof or speedscope", v);
			o->format_set = 1;
		} else if (!strcmp(a, "--per-thread")) {
			o->per_thread = 1;
		} else if (OPT("--thread")) {
			if (!v || !*v)
				return bad("--thread takes a thread name or tid", NULL);
			o->thread = v;
		} else if (OPT("--top")) {
			if (!v || parse_num(v, 1, 1000000, &o->top))
				return bad("--top takes a whole number of rows from 1", v);
		} else if (OPT("--report-output")) {
			if (!v || !*v)
				return bad("--report-output takes a file name", NULL);
			o->report_out = v;
		} else if (OPT("--report")) {
			if (!v || !*v)
				return bad("--report takes a profile file", NULL);
			o->report_file = v;
		} else if (!strcmp(a, "--compare")) {
			if (i + 2 >= argc || !strcmp(argv[i + 1], "--") || !strcmp(argv[i + 2], "--"))
				return bad("--compare takes two profile files: BEFORE AFTER", NULL);
			o->compare[0] = argv[++i];
			o->compare[1] = argv[++i];
		} else if (!strcmp(a, "--flame-graph")) {
			o->flame_graph = 1;
		} else if (!strcmp(a, "--overhead-test")) {
			o->overhead_test = 1;
		} else if (!strcmp(a, "--self-profile")) {
			/* the seed's spelling: `--self-profile --overhead-test` */
		} else if (!strcmp(a, "--live")) {
			o->live = 1;
		} else {
			return bad(a[0] == '-' ? "unknown option" : "unexpected argument (put the command "
				   "after --)", a);
		}
#undef OPT
	}
	return 0;
}


static FILE *open_report(const struct wp_opts *o)
{
	if (!o->report_out)
		return stdout;
	FILE *f = fopen(o->report_out, "w");
	if (!f)
		fprintf(stderr, "wallprof: cannot write %s: %s\n", o->report_out, strerror(errno));
	return f;
}

static int close_report(const struct wp_opts *o, FILE *f, int rc)
{
	if (f != stdout && fclose(f) != 0 && !rc) {
		fprintf(stderr, "wallprof: cannot write %s: %s\n", o->report_out, strerror(errno));
		return 1;
	}
	return rc;
}

static int record_and_report(struct wp_opts *o)
{
	char path[PATH_MAX];
	if (o->flame_graph && !o->format_set)
		o->format = WP_FMT_SVG;
	if (o->format == WP_FMT_SVG && !o->report_out && isatty(1))
		return bad("an SVG on a terminal is not readable; redirect it: > profile.svg", NULL);
	int rec = wp_record(o, path, sizeof(path));
	if (rec == -2)
		return 2;
	if (rec != 0)
		return 1;
	FILE *out = open_report(o);
	int rc = 0;
	if (access(path, R_OK) != 0) {
		if (WIFSIGNALED(o->exit_status) && WTERMSIG(o->exit_status) == SIGKILL)
			fprintf(stderr, "wallprof: the program was killed by SIGKILL before its first "
					"checkpoint, so no profile was written (WALLPROF_CHECKPOINT sets "
					"the interval, 10 s by default)\n");
		else if (WIFEXITED(o->exit_status) && WEXITSTATUS(o->exit_status) == 127)
			fprintf(stderr, "wallprof: no profile: the command could not be run\n");
		else
			fprintf(stderr, "wallprof: the program left no profile at %s (it may have cleared "
					"LD_PRELOAD from its environment, or called _exit before the "
					"agent's first checkpoint)\n", path);
		wp_record_print_messages(stderr);
	} else if (out) {
		if (o->format != WP_FMT_TEXT)
			wp_record_print_messages(stderr); /* the text report shows them itself */
		rc = wp_report_file(o, path, out);
		if (!o->quiet)
			fprintf(stderr, "wallprof: profile saved to %s (wallprof --report %s)\n", path,
				path);
	}
	if (out)
		close_report(o, out, rc);
	return wp_exit_like(o->exit_status);
}

/* overhead.c: the built-in workload --overhead-test times (a hidden subcommand). */
int wp_internal_workload(int argc, char **argv);

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--internal-workload"))
		return wp_internal_workload(argc - 1, argv + 1);
	struct wp_opts o;
	int rc = parse(argc, argv, &o);
	if (rc)
		return rc;
	int modes = !!o.report_file + !!o.compare[0] + !!o.overhead_test + !!o.live;
	if (modes > 1)
		return bad("--report, --compare, --overhead-test and --live do not go together", NULL);
	if (o.overhead_test) {
		FILE *out = open_report(&o);
		return out ? close_report(&o, out, wp_overhead_test(&o, out)) : 1;
	}
	if (o.compare[0]) {
		if (o.cmd)
			return bad("--compare takes no command", NULL);
		FILE *out = open_report(&o);
		return out ? close_report(&o, out, wp_compare(&o, o.compare[0], o.compare[1], out)) : 1;
	}
	if (o.report_file) {
		if (o.cmd)
			return bad("--report takes no command", NULL);
		if (o.flame_graph && !o.format_set)
			o.format = WP_FMT_SVG;
		FILE *out = open_report(&o);
		return out ? close_report(&o, out, wp_report_file(&o, o.report_file, out)) : 1;
	}
	if (!o.cmd) {
		usage(stderr);
		return 2;
	}
	if (o.live)
		return wp_live(&o);
	return record_and_report(&o);
}
