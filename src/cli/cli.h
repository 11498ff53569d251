/* SPDX-License-Identifier: MIT */
/* The wallprof command: its options and the entry points of each subcommand and report. The
 * layout (docs/design.md, "The command"): options.c reads the command line, main.c picks the
 * subcommand; cmds/ one file per subcommand (record, report, compare, overhead, live, whose
 * parts are in live/); model/ the symbols and the resolved profile; reports/ one file per
 * format; util/ small helpers. */
#ifndef WP_CLI_H
#define WP_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "common/profile.h"
#include "resolve.h"
#include "rwaits.h"
#include "summary.h"

enum wp_format {
	WP_FMT_TEXT = 0,
	WP_FMT_FOLDED,
	WP_FMT_SVG,
	WP_FMT_CSV,
	WP_FMT_PPROF,
	WP_FMT_SPEEDSCOPE,
	WP_FMT_JSON,       /* --dump only */
};

struct wp_opts {
	/* recording */
	const char *mode;        /* "wall" | "cpu" | NULL (agent default) */
	int hz;                  /* 0 = agent default */
	int threads;             /* -1 = agent default */
	const char *out;         /* -o: profile path; NULL = default */
	int quiet;
	int no_report;           /* --no-report: record only (as perf record), report later */
	char **cmd;              /* after "--" */
	int attach_pid;          /* --pid: sample this running process from outside */
	double duration;         /* --duration: seconds (0: until Ctrl-C or its end) */
	int dump;                /* --dump: one snapshot of the --pid process's threads */
	/* reporting */
	enum wp_format format;
	int format_set;
	int per_thread;
	int waits;               /* --waits: folded stacks end with what they waited in */
	int wait_leaves;         /* --wait-leaves=on|off; -1: the format's default (text: on) */
	const char *thread;      /* --thread=NAME|TID */
	const char *process;     /* --process=PID|NAME, --process-tree=PID|NAME */
	int process_tree;        /* --process-tree: with its descendants */
	int per_process;         /* --per-process */
	int single_file;         /* --single-file: --report FILE reports that file alone */
	int top;                 /* --top=N, default 20 */
	const char *report_out;  /* where the report goes (stdout when NULL) */
	/* subcommands */
	const char *report_file; /* --report FILE */
	const char **report_more; /* more files after it (--report A B...), malloc'ed */
	int nreport_more;
	size_t cap_report_more;
	const char *compare[2];  /* --compare A B */
	int flame_graph;         /* --flame-graph */
	int overhead_test;
	int live;
	int help;                /* -h: print the usage, nothing else */
	int version;             /* -V */
	/* recorded by `record`, for the report header */
	int exit_status;         /* as from waitpid */
	int have_exit_status;
	long root_pid;           /* the process it ran (0: none): its tree's files are found by it
				  * when the main file is missing */
};

/* options.c. Reads the command line into `opts` (defaults first). Returns 0, or 2 with the
 * problem said on standard error (wp_usage_error). It stops at -h or -V, setting opts->help or
 * opts->version. */
int wp_parse_options(int argc, char **argv, struct wp_opts *opts);
/* The usage text (--help). */
void wp_usage(FILE *to);
/* "wallprof: MSG[: ARG]" and the pointer to --help, on standard error. Returns 2, the exit
 * status of a usage error. */
int wp_usage_error(const char *msg, const char *arg);

/* Runs opts->cmd under the agent, writing the profile to `profile_path` (filled in, cap
 * bytes). Returns 0 when the program ran (its status in opts->exit_status), -1 with a
 * message printed, or -2 when the profile path cannot be written (nothing was run). */
int wp_record(struct wp_opts *opts, char *profile_path, size_t cap);
/* writers.c. Waits (at most `max_s`) until no sampler of the run rooted at `root_pid` whose
 * program is gone is still running: a killed process's profile is written after its death,
 * and a report that started first would be short of it. */
void wp_wait_run_writers(long root_pid, double max_s);
/* The agent's warnings received while recording, printed to `to` (when no profile shows them). */
void wp_record_print_messages(FILE *to);
/* cmds/outside.c. --pid: samples the running process from outside (wallprof-outside), then
 * reports. Returns the exit code. */
int wp_attach(struct wp_opts *opts);
/* --live --pid, in the live view's child: execs the outside sampler on opts->attach_pid,
 * rewriting the profile at `profile_path` every second (a checkpoint). Never returns. */
void wp_exec_outside_live(const struct wp_opts *opts, const char *profile_path)
	__attribute__((noreturn));
/* --dump: wallprof-outside --once on `pid`, the snapshot written to `profile_path`. Returns 0,
 * or 1 when it could not be taken (the sampler said why: a refusal is --pid's line). */
int wp_outside_once(int pid, const char *profile_path);
/* cmds/dump.c. --dump --pid: one snapshot of the process, reported as text or JSON. Returns
 * the exit code. */
int wp_dump_pid(struct wp_opts *opts);

/* Whether program `prog` (as execvp would find it) is a statically linked ELF: no PT_INTERP,
 * so no dynamic loader to preload the agent. 0 when dynamic or unknown (not found, not ELF:
 * the agent's run says what is wrong). */
int wp_program_is_static(const char *prog);
/* Runs a statically linked opts->cmd under the outside sampler from its first instruction,
 * the profile at `profile_path`. As wp_record. */
int wp_record_outside(struct wp_opts *opts, char *profile_path, size_t cap);

/* Whether a profile can be written at `path` (its directory is writable); prints why not. */
int wp_check_profile_path(const char *path);
/* The exit code the shell expects for a program's wait status: its
 * code, or (after dying of the same signal, which does not return) 128 + the signal. */
int wp_exit_like(int status);
/* The agent library to preload, or NULL with a message printed. */
const char *wp_find_agent(void);
/* The first of `rel` (paths relative to this executable's directory, NULL-ended) that is a
 * file, written into path; NULL when none is. */
const char *wp_find_beside(const char *const *rel, char *path, size_t cap);
/* The child's side of running a program under the agent (after fork): LD_PRELOAD and the
 * WALLPROF_* settings from `opts`, then exec of opts->cmd. `progress_fd` >= 0 is moved to a
 * high descriptor for the agent's progress lines. Never returns: exits 127 when the program
 * cannot be run. Used by wp_record and by --live, which adds its own settings first. */
void wp_exec_under_agent(const struct wp_opts *opts, const char *agent,
			 const char *profile_path, int progress_fd) __attribute__((noreturn));

/* What the report options keep of a profile (--thread), for wp_resolve. */
struct wp_filter wp_opts_filter(const struct wp_opts *opts);

/* Where the report goes: opts->report_out opened for writing, or stdout; NULL with a message
 * printed when the file cannot be opened. */
FILE *wp_open_report(const struct wp_opts *opts);
/* Closes what wp_open_report gave (not stdout). Returns rc, or 1 with a message printed when
 * rc was 0 and the file could not be written. */
int wp_close_report(const struct wp_opts *opts, FILE *f, int rc);
/* The end of a recorded run (the record path and --live): the report of the profile at
 * `path`, or why there is none, and where the profile was saved. Returns the exit code the
 * shell should see: the program's (wp_exit_like; dying of its signal does not return). */
int wp_report_after_run(const struct wp_opts *opts, const char *path);

/* Loads a profile, builds its model with the options' filter, then writes the report in
 * opts->format to `out`. Returns the process exit code (0, or 1 with a message printed). */
int wp_report_file(const struct wp_opts *opts, const char *path, FILE *out);
/* --report: a file and the other files of its run (a run's main file finds its siblings;
 * with --single-file, the file alone, as wp_report_file), several files, or a directory's
 * *.prof: one model over all their processes (a file that cannot be read gets one line on
 * standard error and is left out). */
int wp_report_files(const struct wp_opts *opts, FILE *out);
/* The processes of a run with their profiles, read (model/run.h's struct wp_run, the one
 * type of a run: procs[i].prof each process's profile, which wp_run_free frees): `path` a
 * run's main file (and its siblings; with single_file, that file alone) or a directory (its
 * *.prof), by start time. A file that cannot be read gets one line on standard error and is
 * counted in `skipped`. Returns 0 (n >= 1), or -1 with the problem said. */
int wp_run_load(const char *path, int single_file, struct wp_run *run);
/* The same for a model already built (with wp_opts_filter(opts)); `run`: the processes of
 * its run (model/run.h), for the text header, or NULL. */
int wp_report(const struct wp_opts *opts, const struct wp_resolved *r, const struct wp_run *run,
	      FILE *out);

/* The reports: each formats the model `r` (filtered already) and the figures `s` computed
 * from it, and computes nothing of its own. Each returns 0 or -1 (write error). */
int wp_report_text(const struct wp_opts *opts, const struct wp_resolved *r,
		   const struct wp_summary *s, FILE *out);
/* The text report's DEADLOCK sections (reports/text_deadlock.c): nothing when r has none. */
void wp_text_deadlocks(const struct wp_resolved *r, FILE *out);
/* One frame of a stack as the DEADLOCK section and --dump print it (indented 6: the
 * function, fitted to 40 columns; its file's base name and line; its module). */
void wp_text_stack_frame(const struct wp_resolved *r, const struct wp_rframe *f, FILE *out);
int wp_report_folded(const struct wp_opts *opts, const struct wp_resolved *r,
		     const struct wp_summary *s, FILE *out);
/* One stack as folded text (with the thread root when opts->per_thread); returns its length. */
size_t wp_folded_stack(const struct wp_opts *opts, const struct wp_resolved *r,
		       const struct wp_rstack *s, char *buf, size_t cap);
int wp_report_csv(const struct wp_opts *opts, const struct wp_resolved *r,
		  const struct wp_summary *s, FILE *out);
int wp_report_svg(const struct wp_opts *opts, const struct wp_resolved *r,
		  const struct wp_summary *s, FILE *out);
int wp_report_pprof(const struct wp_opts *opts, const struct wp_resolved *r,
		    const struct wp_summary *s, FILE *out);
int wp_report_speedscope(const struct wp_opts *opts, const struct wp_resolved *r,
			 const struct wp_summary *s, FILE *out);

/* The dump's reports (reports/dump_text.c, dump_json.c), of the dump `d` (dump_model.h)
 * built over model r. Each returns 0 or -1 (write error). */
struct wp_dump;
int wp_report_dump_text(const struct wp_resolved *r, const struct wp_dump *d, FILE *out);
int wp_report_dump_json(const struct wp_resolved *r, const struct wp_dump *d, FILE *out);

/* The dump's reports (reports/dump_text.c, dump_json.c), of the dump `d` (dump_model.h)
 * built over model r. Each returns 0 or -1 (write error). */
struct wp_dump;
int wp_report_dump_text(const struct wp_resolved *r, const struct wp_dump *d, FILE *out);
int wp_report_dump_json(const struct wp_resolved *r, const struct wp_dump *d, FILE *out);

/* --compare A B (text, or SVG with opts->flame_graph). Returns the exit code. */
int wp_compare(const struct wp_opts *opts, const char *before, const char *after, FILE *out);
/* --overhead-test. Returns the exit code. */
int wp_overhead_test(const struct wp_opts *opts, FILE *out);
/* `wallprof --internal-workload [UNITS]` (hidden): the built-in workload --overhead-test
 * times, run as a program of its own. argv[0] is "--internal-workload". Returns 0. */
int wp_internal_workload(int argc, char **argv);
/* --live. Returns the exit code (the program's). */
int wp_live(struct wp_opts *opts);

#endif
