/* SPDX-License-Identifier: MIT */
/* The number parser shared by the command and the agent (src/common/numparse.c), checked on
 * its own and through both of its users: each text is given to wp_parse_int, to the agent as
 * WALLPROF_HZ (wp_config_load) and to the command as --hz=TEXT, -F TEXT and --sample-rate
 * TEXT (wp_parse_options). All must agree: the command once took " 5" where the agent
 * refused it, and the agent took a tab where it refused a space. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/config.h"
#include "cli.h"
#include "common/numparse.h"

#include "check.h"

struct sample {
	const char *text;
	int ok;    /* accepted as a rate from 1 to 10000 */
	int value; /* when accepted */
};

static const struct sample samples[] = {
	{ "5", 1, 5 },
	{ "1", 1, 1 },
	{ "10000", 1, 10000 },
	{ "007", 1, 7 },            /* leading zeros are still decimal */
	{ " 5", 0, 0 },             /* strtol skips leading white space */
	{ "\t5", 0, 0 },
	{ "\n5", 0, 0 },
	{ "5 ", 0, 0 },
	{ "5\n", 0, 0 },
	{ "+5", 0, 0 },             /* strtol takes a sign */
	{ "-5", 0, 0 },
	{ "", 0, 0 },
	{ "5x", 0, 0 },
	{ "x5", 0, 0 },
	{ "0x10", 0, 0 },
	{ "1e3", 0, 0 },
	{ "5.0", 0, 0 },
	{ "0", 0, 0 },              /* below the range */
	{ "10001", 0, 0 },          /* above it */
	{ "4294967301", 0, 0 },     /* 2^32 + 5: 5 if cut to 32 bits */
	{ "18446744073709551621", 0, 0 }, /* 2^64 + 5 */
	{ "99999999999999999999999999999999", 0, 0 },
};

/* Standard error off while `fn` runs: both users say why they refuse, which is not the
 * point here. */
static int quietly(int (*fn)(const char *, int *), const char *text, int *value)
{
	fflush(stderr);
	int saved = dup(2), null = open("/dev/null", O_WRONLY);
	dup2(null, 2);
	int rc = fn(text, value);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(null);
	return rc;
}

static int direct(const char *text, int *value)
{
	return wp_parse_int(text, 1, 10000, value);
}

static const char *env_hz;

static char *fake_getenv(const char *k)
{
	return !strcmp(k, "WALLPROF_HZ") ? (char *)env_hz : NULL;
}

static int agent(const char *text, int *value)
{
	struct wp_config c;
	env_hz = text;
	int rc = wp_config_load(&c, fake_getenv);
	*value = c.hz;
	return rc;
}

/* The command line as `wallprof ARGS -- true`. */
static int command(int n, const char *const *args, int *value)
{
	char *argv[8];
	int argc = 0;
	argv[argc++] = (char *)"wallprof";
	for (int i = 0; i < n; i++)
		argv[argc++] = (char *)args[i];
	argv[argc++] = (char *)"--";
	argv[argc++] = (char *)"true";
	argv[argc] = NULL;
	struct wp_opts o;
	int rc = wp_parse_options(argc, argv, &o);
	*value = o.hz;
	return rc == 0 && o.cmd && !strcmp(o.cmd[0], "true") ? 0 : -1;
}

static int command_hz(const char *text, int *value)
{
	char arg[64];
	snprintf(arg, sizeof(arg), "--hz=%s", text);
	const char *args[] = { arg };
	return command(1, args, value);
}

static int command_F(const char *text, int *value)
{
	const char *args[] = { "-F", text };
	return command(2, args, value);
}

static int command_sample_rate(const char *text, int *value)
{
	const char *args[] = { "--sample-rate", text };
	return command(2, args, value);
}

static void test_sides(void)
{
	static const struct {
		const char *name;
		int (*fn)(const char *, int *);
	} sides[] = {
		{ "wp_parse_int", direct },
		{ "agent WALLPROF_HZ", agent },
		{ "command --hz=", command_hz },
		{ "command -F", command_F },
		{ "command --sample-rate", command_sample_rate },
	};
	for (size_t s = 0; s < sizeof(sides) / sizeof(sides[0]); s++)
		for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
			const struct sample *x = &samples[i];
			int value = -1, rc = quietly(sides[s].fn, x->text, &value);
			if (x->ok)
				CHECK(rc == 0 && value == x->value, "%s: '%s' gives %d (got rc %d, %d)",
				      sides[s].name, x->text, x->value, rc, value);
			else
				CHECK(rc != 0, "%s: '%s' is refused (got %d)", sides[s].name, x->text,
				      value);
		}
}

static void test_ranges(void)
{
	int v = -1;
	CHECK(wp_parse_int("0", 0, 5, &v) == 0 && v == 0, "0 within [0, 5]");
	CHECK(wp_parse_int("2147483647", 0, INT_MAX, &v) == 0 && v == INT_MAX, "INT_MAX: %d", v);
	v = 42;
	CHECK(wp_parse_int("2147483648", 0, INT_MAX, &v) == -1 && v == 42,
	      "INT_MAX + 1 refused, the value untouched");
	CHECK(wp_parse_int(NULL, 0, 5, &v) == -1, "NULL refused");
	CHECK(wp_parse_int("6", 0, 5, &v) == -1 && wp_parse_int("3", 4, 5, &v) == -1,
	      "outside [lo, hi]");
}

int main(void)
{
	test_sides();
	test_ranges();
	printf("numparse: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
