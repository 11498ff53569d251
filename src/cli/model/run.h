/* SPDX-License-Identifier: MIT */
/* The processes of one run. Every process of a tree writes its own file (the agent: the
 * main file NAME.EXT for the root, NAME.PID.EXT for the others, NAME[.PID].execN.EXT for an
 * image replaced by exec) and tags it with META run=, the same in every file of the run. From
 * the run's main file, wp_run_find() finds the others beside it by that naming and that run
 * id, and keeps what a report's header says of each process (from its META).
 *
 * Files named like siblings that cannot be read (cut short, foreign, damaged) are said in one
 * line each on `warn` and left out; files of another run (an earlier run's leftovers) are left
 * out silently. A file without a run id (an older agent) has no siblings. */
#ifndef WP_RUN_H
#define WP_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/profile.h"
#include "proctree.h"

struct wp_run_proc {
	char *file;          /* the file's name, without its directory */
	char *path;          /* the file as found (directory and name) */
	long pid, ppid;      /* -1 when unknown */
	char *command;       /* as the process showed it (procinfo.h's wp_proc_command: its
			      * title, when it retitled itself); "" when unknown */
	/* How it ended, when known: a wait status as waitpid gives it (WIFEXITED, WIFSIGNALED),
	 * from META exit_status or died_of_signal (profile.h's wp_profile_end) or, for the run's
	 * root, the command's own waitpid (wp_run_set_exit). exit_known is 0 until one says. */
	int exit_known, exit_status;
	enum wp_end end_kind; /* what its file says (wp_profile_end) */
	char end[32];        /* what the header says: "exit 0", "SIGSEGV" (died of it, or killed),
			      * "exec'd", "no word" (its last write was a checkpoint: killed by
			      * SIGKILL, or still running), "ended" (an older agent: how is not
			      * recorded) */
	uint64_t start_unix_ns, wall_ns, samples;
	uint64_t cpu_ns;     /* this image's own: its pid's earlier images' taken off (the
			      * kernel counts a process's CPU time across exec) */
	int is_main;         /* the file the report is of */
	struct wp_profile *prof; /* the profile as read: wp_run_siblings' (the caller's to
				  * take and free; NULL for the main file, which the caller read)
				  * or wp_run_load's (cli.h: the run's, keeps_profs), else NULL */
};

/* A process of the run that took no sample: it left no profile, only a line in the run's
 * list of them (NAME.unsampled beside the files; the agent's note_unsampled). */
struct wp_run_unsampled {
	long pid, ppid;
	char end[32];        /* "exit 0", "signal 9", "exec" (the image was replaced), "stop" */
	uint64_t wall_ns, cpu_ns;
	char *command;
};

struct wp_run {
	struct wp_run_proc *procs; /* the main file's process too; by start time, then pid */
	size_t n;
	struct wp_proc_id *ids;    /* parallel to procs, their CPU as their files say: the
				    * tree's parents and CPU per image are proctree.h's */
	size_t skipped;      /* sibling files that could not be read */
	/* Processes that ran too briefly to be sampled: each pid once (the images of a pid that
	 * exec'd are one process), none of them a pid of procs. Exact for processes whose agent
	 * ended them (exit, _exit, a fatal signal it saw, exec); one killed by SIGKILL before
	 * any sample leaves nothing to count. */
	struct wp_run_unsampled *unsampled;
	size_t nunsampled;
	size_t unsampled_bad; /* lines of those lists that could not be read */
	int merged;          /* the report's samples are of every process listed (wp_run_of) */
	int keeps_profs;     /* wp_run_free frees each procs[].prof (wp_run_load's runs) */
};

/* Fills `run` with the processes of the run `main` (read from main_path) belongs to. Returns
 * 0 (run->n is 1 when the file has no siblings), or -1 when out of memory. */
int wp_run_find(const char *main_path, const struct wp_profile *main, FILE *warn,
		struct wp_run *run);
/* The same processes, without the unsampled list, for a caller that reads every file of the
 * run anyway: each sibling's profile, read once here, is kept in its row (prof), so that
 * the caller takes it instead of reading the file again; `what` is what to leave out of them
 * (profile.h's WP_READ_*). Returns 0 or -1 (out of memory: nothing kept). */
int wp_run_siblings(const char *main_path, const struct wp_profile *main, unsigned what,
		    FILE *warn, struct wp_run *run);
/* The other files of a run whose main file is missing (its root process ended by _exit, or
 * was killed before its first checkpoint): those beside main_path whose run id is the one the
 * command gave the tree of root_pid ("<root_pid>-..."). Returns 0 (run->n may be 0) or -1. */
int wp_run_find_orphans(const char *main_path, long root_pid, FILE *warn, struct wp_run *run);

/* Fills `run` with the processes of the profiles ps[0..n) read from paths[0..n), in that
 * order, for a report over all of them (merged); `skipped`: files that could not be read.
 * Returns 0, or -1 when out of memory. */
int wp_run_of(const struct wp_profile *const *ps, const char *const *paths, size_t n,
	      size_t skipped, struct wp_run *run);
/* The exit status the command saw (waitpid's) for process `pid` of the run: its last image's
 * row says it (the others were exec'd). */
void wp_run_set_exit(struct wp_run *run, long pid, int status);
/* The run's root: the first process (by start) whose parent is not in the run, or NULL. */
const struct wp_run_proc *wp_run_root(const struct wp_run *run);
/* The depth of procs[i] in the tree (0: its parent is not in the run; at most 8). */
int wp_run_depth(const struct wp_run *run, size_t i);
/* The time between the first start and the last end of process `pid`'s images, in ns. */
uint64_t wp_run_pid_wall(const struct wp_run *run, long pid);
void wp_run_free(struct wp_run *run);

#endif
