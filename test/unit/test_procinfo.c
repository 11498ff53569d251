/* SPDX-License-Identifier: MIT */
/* Unit tests of what a profile says of its process (src/cli/model/procinfo.c): the name and
 * command line a process goes by (its title with most samples: a title over its argv, a comm
 * set by PR_SET_NAME, neither; files without titles, as older agents wrote them) and the
 * agent's warnings of several processes (each once, in order, counting who else said it and
 * what was dropped). Profiles are built in memory (profile_build.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli/model/procinfo.h"
#include "profile_build.h"

static struct wp_profile *profile(const char *meta)
{
	struct buf b;
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, meta);
	rec_end_marker(&b);
	struct wp_profile *p = NULL;
	char err[256];
	if (wp_profile_parse(b.d, b.len, &p, err, sizeof(err)) != 0) {
		fprintf(stderr, "test profile: %s\n", err);
		exit(2);
	}
	buf_free(&b);
	return p;
}

static void test_names(void)
{
	char buf[256];
	/* an older agent's file: META command only */
	struct wp_profile *p = profile("pid=1\ncommand=/usr/sbin/nginx -c /etc/nginx.conf\n");
	CHECK_STR(wp_proc_name(p, buf, sizeof(buf)), "nginx");
	CHECK_STR(wp_proc_command(p, buf, sizeof(buf)), "/usr/sbin/nginx -c /etc/nginx.conf");
	CHECK(wp_proc_named(p, "nginx"));
	wp_profile_free(p);

	/* a worker: its parent's title for 80 samples, its own for 600 */
	p = profile("command=nginx: master process nginx\n"
		    "title_1=nginx: master process nginx\ntitle_1_comm=nginx\n"
		    "title_1_samples=80\ntitle_1_retitled=argv\n"
		    "title_2=nginx: worker process\ntitle_2_comm=nginx\n"
		    "title_2_samples=600\ntitle_2_retitled=argv\n");
	CHECK_STR(wp_proc_name(p, buf, sizeof(buf)), "nginx: worker process");
	CHECK_STR(wp_proc_command(p, buf, sizeof(buf)), "nginx: worker process");
	CHECK(wp_proc_named(p, "nginx: worker process"));
	CHECK(wp_proc_named(p, "nginx:")); /* the program as the file's command shows it */
	CHECK(!wp_proc_named(p, "nginx: master process nginx"));
	wp_profile_free(p);

	/* PR_SET_NAME: named by its comm; the row shows its command line and the name */
	p = profile("command=/bin/app --serve\n"
		    "title_1=/bin/app --serve\ntitle_1_comm=app\ntitle_1_samples=10\n"
		    "title_1_retitled=no\n"
		    "title_2=/bin/app --serve\ntitle_2_comm=app-worker\ntitle_2_samples=10\n"
		    "title_2_retitled=comm\n");
	CHECK_STR(wp_proc_name(p, buf, sizeof(buf)), "app-worker"); /* a tie: the later */
	CHECK_STR(wp_proc_command(p, buf, sizeof(buf)), "/bin/app --serve (named app-worker)");
	CHECK(wp_proc_named(p, "app") && wp_proc_named(p, "app-worker"));
	wp_profile_free(p);

	/* not retitled: its program, from the title */
	p = profile("command=/bin/sh -c x\ntitle_1=/bin/sh -c x\ntitle_1_comm=sh\n"
		    "title_1_samples=5\ntitle_1_retitled=no\n");
	CHECK_STR(wp_proc_name(p, buf, sizeof(buf)), "sh");
	CHECK_STR(wp_proc_command(p, buf, sizeof(buf)), "/bin/sh -c x");
	wp_profile_free(p);

	/* nothing known */
	p = profile("pid=3\n");
	CHECK_STR(wp_proc_name(p, buf, sizeof(buf)), "?");
	CHECK_STR(wp_proc_command(p, buf, sizeof(buf)), "");
	wp_profile_free(p);
}

static void test_messages(void)
{
	const struct wp_profile *ps[3] = {
		profile("message_1=first\nmessage_2=shared\n"),
		profile("message_1=shared\nmessage_2=child's own\nmessage_3=shared\n"
			"messages_dropped=2\n"),
		profile("message_1=shared\n"),
	};
	struct wp_agent_msg *m;
	uint64_t dropped;
	size_t n = wp_agent_messages(ps, 3, &m, &dropped);
	CHECK_EQ_U(n, 3);
	CHECK_EQ_U(dropped, 2);
	if (n == 3) {
		CHECK_STR(m[0].text, "first");
		CHECK_EQ_U(m[0].proc, 0);
		CHECK_EQ_U(m[0].more, 0);
		CHECK_STR(m[1].text, "shared");
		CHECK_EQ_U(m[1].proc, 0);
		CHECK_EQ_U(m[1].more, 2); /* the second process said it twice: counted once */
		CHECK_STR(m[2].text, "child's own");
		CHECK_EQ_U(m[2].proc, 1);
	}
	free(m);
	for (int i = 0; i < 3; i++)
		wp_profile_free((struct wp_profile *)ps[i]);
}

int main(void)
{
	test_names();
	test_messages();
	printf("procinfo: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
