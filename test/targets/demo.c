/* SPDX-License-Identifier: MIT */
/* demo: a small program with the usual shapes of time, for `scripts/demo`.
 *
 *   parser     CPU work: tokenizes and checksums a generated document, over and over
 *              (parse_document -> next_token / checksum_token)
 *   io         blocks on a pipe read (read_record); a feeder thread writes a record every
 *              20 ms, and io "flushes" each one with a short sleep (flush_record)
 *   worker-N   four workers contending on one lock (update_shared_table), doing a little work
 *              inside it and a little outside (prepare_update)
 *   main       waits for all of them (pthread_join)
 *
 * Runs for about 3 seconds (or argv[1] seconds). */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

static uint64_t deadline;
static volatile uint64_t sink;
static int pipe_fd[2];

static int done(void)
{
	return mono_ns() >= deadline;
}

/* --- parser --------------------------------------------------------------------------- */

static char document[1 << 16];

static void make_document(void)
{
	static const char *words[] = { "alpha", "beta", "gamma", "delta", "42", "3.14", "{", "}",
				       "key", "value", "x", "(", ")", "\"quoted text\"" };
	size_t at = 0, w = 0;
	while (at + 32 < sizeof(document)) {
		const char *s = words[(w * 7 + w / 3) % (sizeof(words) / sizeof(words[0]))];
		at += (size_t)snprintf(document + at, sizeof(document) - at, "%s ", s);
		w++;
	}
}

KEEP static const char *next_token(const char *p, size_t *len)
{
	while (*p && isspace((unsigned char)*p))
		p++;
	const char *start = p;
	if (*p == '"') {
		p++;
		while (*p && *p != '"')
			p++;
		if (*p)
			p++;
	} else {
		while (*p && !isspace((unsigned char)*p))
			p++;
	}
	*len = (size_t)(p - start);
	return start;
}

KEEP static uint64_t checksum_token(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;
	for (int round = 0; round < 8; round++)
		for (size_t i = 0; i < len; i++)
			h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

KEEP static uint64_t parse_document(void)
{
	uint64_t sum = 0;
	const char *p = document;
	size_t len;
	for (;;) {
		const char *tok = next_token(p, &len);
		if (!len)
			break;
		sum += checksum_token(tok, len);
		p = tok + len;
	}
	return sum;
}

KEEP static void *parser_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "parser");
	while (!done()) {
		sink += parse_document();
		BARRIER();
	}
	return NULL;
}

/* --- io ------------------------------------------------------------------------------- */

KEEP static ssize_t read_record(char *buf, size_t cap)
{
	ssize_t n = read(pipe_fd[0], buf, cap);
	BARRIER();
	return n;
}

KEEP static void flush_record(const char *buf, ssize_t n)
{
	sink += (uint64_t)n + (uint64_t)buf[0];
	sleep_ns(3000000); /* pretend to write it somewhere slow */
	BARRIER();
}

KEEP static void *io_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "io");
	char buf[256];
	ssize_t n;
	while ((n = read_record(buf, sizeof(buf))) > 0)
		flush_record(buf, n);
	return NULL;
}

KEEP static void *feeder_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "feeder");
	int i = 0;
	while (!done()) {
		char rec[64];
		int n = snprintf(rec, sizeof(rec), "record %d\n", i++);
		if (write(pipe_fd[1], rec, (size_t)n) != n)
			break;
		sleep_ns(20000000);
	}
	close(pipe_fd[1]);
	return NULL;
}

/* --- workers -------------------------------------------------------------------------- */

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t shared_table[1024];

KEEP static uint64_t prepare_update(uint64_t x)
{
	for (int i = 0; i < 20000; i++)
		x = x * 6364136223846793005ull + (uint64_t)i;
	return x;
}

KEEP static void update_shared_table(uint64_t x)
{
	pthread_mutex_lock(&table_lock);
	for (int i = 0; i < 60000; i++) {
		x = x * 2862933555777941757ull + 3037000493ull;
		shared_table[x % 1024] += x;
	}
	pthread_mutex_unlock(&table_lock);
	BARRIER();
}

KEEP static void *worker_main(void *arg)
{
	char name[16];
	snprintf(name, sizeof(name), "worker-%d", (int)(uintptr_t)arg);
	pthread_setname_np(pthread_self(), name);
	uint64_t x = (uintptr_t)arg;
	while (!done()) {
		x = prepare_update(x);
		update_shared_table(x);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = run_seconds(argc, argv, 3.0);
	if (pipe(pipe_fd) != 0) {
		perror("pipe");
		return 1;
	}
	make_document();
	deadline = mono_ns() + (uint64_t)(seconds * 1e9);

	pthread_t t[8];
	int n = 0;
	pthread_create(&t[n++], NULL, parser_main, NULL);
	pthread_create(&t[n++], NULL, io_main, NULL);
	pthread_create(&t[n++], NULL, feeder_main, NULL);
	for (int i = 1; i <= 4; i++)
		pthread_create(&t[n++], NULL, worker_main, (void *)(uintptr_t)i);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("demo: done (checksum %llx)\n", (unsigned long long)(sink & 0xffff));
	return 0;
}
