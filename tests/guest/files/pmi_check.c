/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * svm-pmi-check: a PMI client of the test guest that speaks the wire protocol
 * itself over the socket in PMI_FD, as an MPI library does in MPI_Init:
 *
 *   svm-pmi-check 1    PMI-1 (MPICH's "simple" PMI: one line per command)
 *   svm-pmi-check 2    PMI-2 (length-prefixed "cmd=...;key=value;" commands)
 *
 * Every rank puts a value naming itself, all ranks fence, then every rank
 * gets every other rank's value and checks it. Two rounds with fresh keys,
 * so a second fence works too. Prints one line per rank and exits 0 only if
 * every check passed; a PMI server that never answers ends it after 120 s.
 *
 * Built static (the guest has no libc of its own), no PMI library: this
 * tests the byte stream slurm-vm forwards, not a library's view of it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PMI_LINE	4096
#define PMI2_LEN_DIGITS 6
#define ROUNDS		2

struct pmi {
	int fd;
	int version;
	int rank, size;
	char kvs[256];
	char host[256];
	char reply[PMI_LINE];
};

static void fail(const struct pmi *p, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "svm-pmi-check: pmi%d rank %d: ", p->version, p->rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void on_alarm(int sig)
{
	static const char msg[] =
		"svm-pmi-check: no answer from the PMI server in 120 s\n";
	ssize_t n = write(2, msg, sizeof(msg) - 1);

	(void)n;
	_exit(128 + sig);
}

static void write_all(const struct pmi *p, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(p->fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fail(p, "write to PMI_FD %d: %s", p->fd,
			     strerror(errno));
		buf += n;
		len -= (size_t)n;
	}
}

static void read_full(const struct pmi *p, char *buf, size_t len)
{
	while (len) {
		ssize_t n = read(p->fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fail(p, "read from PMI_FD %d: %s", p->fd,
			     n ? strerror(errno) : "the server closed it");
		buf += n;
		len -= (size_t)n;
	}
}

/* PMI-1 and the init line of both: one '\n'-terminated line each way. */
static void line_cmd(struct pmi *p, const char *fmt, ...)
{
	char cmd[PMI_LINE];
	size_t n = 0;
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (len < 0 || (size_t)len >= sizeof(cmd))
		fail(p, "command too long");
	write_all(p, cmd, (size_t)len);
	do {
		if (n == sizeof(p->reply) - 1)
			fail(p, "reply longer than %d bytes", PMI_LINE);
		read_full(p, &p->reply[n], 1);
	} while (p->reply[n++] != '\n');
	p->reply[n - 1] = '\0';
}

/* PMI-2: a 6-digit length, then "cmd=NAME;key=value;..." each way. */
static void pmi2_cmd(struct pmi *p, const char *fmt, ...)
{
	char cmd[PMI_LINE], lenbuf[PMI2_LEN_DIGITS + 1];
	unsigned long len;
	va_list ap;
	int body;

	va_start(ap, fmt);
	body = vsnprintf(cmd + PMI2_LEN_DIGITS, sizeof(cmd) - PMI2_LEN_DIGITS,
			 fmt, ap);
	va_end(ap);
	if (body < 0 || (size_t)body >= sizeof(cmd) - PMI2_LEN_DIGITS)
		fail(p, "command too long");
	snprintf(lenbuf, sizeof(lenbuf), "%-6d", body);
	memcpy(cmd, lenbuf, PMI2_LEN_DIGITS);
	write_all(p, cmd, PMI2_LEN_DIGITS + (size_t)body);
	read_full(p, lenbuf, PMI2_LEN_DIGITS);
	lenbuf[PMI2_LEN_DIGITS] = '\0';
	len = strtoul(lenbuf, NULL, 10);
	if (len == 0 || len >= sizeof(p->reply))
		fail(p, "bad reply length '%s'", lenbuf);
	read_full(p, p->reply, len);
	p->reply[len] = '\0';
}

/* The value of KEY in the last reply ("" if absent); fields end at @sep. */
static const char *field(struct pmi *p, const char *key, char sep)
{
	static char val[PMI_LINE];
	size_t klen = strlen(key);
	const char *s = p->reply;

	while (s && *s) {
		if (strncmp(s, key, klen) == 0 && s[klen] == '=') {
			size_t vlen =
				strcspn(s + klen + 1, (char[]){ sep, '\0' });

			memcpy(val, s + klen + 1, vlen);
			val[vlen] = '\0';
			return val;
		}
		s = strchr(s, sep);
		if (s)
			s++;
	}
	val[0] = '\0';
	return val;
}

/* The reply is CMD with rc=0 (PMI-1 replies without rc mean success). */
static void expect(struct pmi *p, const char *cmd, char sep)
{
	const char *rc;

	if (strcmp(field(p, "cmd", sep), cmd) != 0)
		fail(p, "expected %s, got '%s'", cmd, p->reply);
	rc = field(p, "rc", sep);
	if (*rc && strcmp(rc, "0") != 0)
		fail(p, "%s failed: '%s'", cmd, p->reply);
}

static int env_int(const struct pmi *p, const char *name)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s)
		fail(p, "%s is not set (not started by srun --mpi=pmi2?)",
		     name);
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < 0 || v > 1 << 24)
		fail(p, "%s='%s' is not a number", name, s);
	return (int)v;
}

static void pmi_init(struct pmi *p)
{
	p->fd = env_int(p, "PMI_FD");
	line_cmd(p, "cmd=init pmi_version=%d pmi_subversion=%d\n", p->version,
		 p->version == 1 ? 1 : 0);
	expect(p, "response_to_init", ' ');
	if (atoi(field(p, "pmi_version", ' ')) != p->version)
		fail(p, "server answered '%s'", p->reply);
	if (p->version == 1) {
		p->rank = env_int(p, "PMI_RANK");
		p->size = env_int(p, "PMI_SIZE");
		line_cmd(p, "cmd=get_maxes\n");
		expect(p, "maxes", ' ');
		line_cmd(p, "cmd=get_universe_size\n");
		expect(p, "universe_size", ' ');
		if (atoi(field(p, "size", ' ')) != p->size)
			fail(p, "universe size '%s', PMI_SIZE %d", p->reply,
			     p->size);
		line_cmd(p, "cmd=get_my_kvsname\n");
		expect(p, "my_kvsname", ' ');
		snprintf(p->kvs, sizeof(p->kvs), "%s",
			 field(p, "kvsname", ' '));
	} else {
		int rank = env_int(p, "PMI_RANK");
		const char *jobid = getenv("PMI_JOBID");

		if (!jobid)
			fail(p, "PMI_JOBID is not set");
		pmi2_cmd(p,
			 "cmd=fullinit;pmijobid=%s;pmirank=%d;threaded=FALSE;",
			 jobid, rank);
		expect(p, "fullinit-response", ';');
		p->rank = atoi(field(p, "rank", ';'));
		p->size = atoi(field(p, "size", ';'));
		if (p->rank != rank || p->size < 1)
			fail(p, "fullinit for rank %d answered '%s'", rank,
			     p->reply);
		pmi2_cmd(p, "cmd=job-getid;");
		expect(p, "job-getid-response", ';');
		snprintf(p->kvs, sizeof(p->kvs), "%s", field(p, "jobid", ';'));
	}
	if (!p->kvs[0])
		fail(p, "no KVS name/job id: '%s'", p->reply);
}

static void pmi_put(struct pmi *p, const char *key, const char *val)
{
	if (p->version == 1) {
		line_cmd(p, "cmd=put kvsname=%s key=%s value=%s\n", p->kvs, key,
			 val);
		expect(p, "put_result", ' ');
	} else {
		pmi2_cmd(p, "cmd=kvs-put;key=%s;value=%s;", key, val);
		expect(p, "kvs-put-response", ';');
	}
}

static void pmi_fence(struct pmi *p)
{
	if (p->version == 1) {
		line_cmd(p, "cmd=barrier_in\n");
		expect(p, "barrier_out", ' ');
	} else {
		pmi2_cmd(p, "cmd=kvs-fence;");
		expect(p, "kvs-fence-response", ';');
	}
}

static const char *pmi_get(struct pmi *p, const char *key)
{
	if (p->version == 1) {
		line_cmd(p, "cmd=get kvsname=%s key=%s\n", p->kvs, key);
		expect(p, "get_result", ' ');
		return field(p, "value", ' ');
	}
	pmi2_cmd(p, "cmd=kvs-get;jobid=%s;srcid=-1;key=%s;", p->kvs, key);
	expect(p, "kvs-get-response", ';');
	if (strcmp(field(p, "found", ';'), "TRUE") != 0)
		fail(p, "key %s not found: '%s'", key, p->reply);
	return field(p, "value", ';');
}

static void pmi_finalize(struct pmi *p)
{
	if (p->version == 1) {
		line_cmd(p, "cmd=finalize\n");
		expect(p, "finalize_ack", ' ');
	} else {
		pmi2_cmd(p, "cmd=finalize;");
		expect(p, "finalize-response", ';');
	}
}

int main(int argc, char **argv)
{
	struct pmi p = { .fd = -1, .rank = -1 };
	char key[64], val[PMI_LINE], want[PMI_LINE];

	if (argc != 2 || (strcmp(argv[1], "1") && strcmp(argv[1], "2"))) {
		fprintf(stderr, "usage: svm-pmi-check 1|2   (PMI-1 or PMI-2, "
				"under srun --mpi=pmi2)\n");
		return 2;
	}
	p.version = atoi(argv[1]);
	signal(SIGALRM, on_alarm);
	alarm(120);
	if (gethostname(p.host, sizeof(p.host) - 1) < 0)
		snprintf(p.host, sizeof(p.host), "?");
	pmi_init(&p);

	/* A value only this rank of this KVS in this round would put. */
	for (int round = 1; round <= ROUNDS; round++) {
		snprintf(key, sizeof(key), "svm-r%d-rank%d", round, p.rank);
		snprintf(val, sizeof(val), "%d:%d:%d:%s:%s", round, p.rank,
			 p.size, p.kvs, p.host);
		pmi_put(&p, key, val);
		pmi_fence(&p);
		for (int r = 0; r < p.size; r++) {
			const char *got;

			snprintf(key, sizeof(key), "svm-r%d-rank%d", round, r);
			snprintf(want, sizeof(want), "%d:%d:%d:%s:", round, r,
				 p.size, p.kvs);
			got = pmi_get(&p, key);
			if (strncmp(got, want, strlen(want)) != 0)
				fail(&p,
				     "round %d: rank %d's value is '%s', not '%s<host>'",
				     round, r, got, want);
		}
	}
	pmi_finalize(&p);
	printf("pmi%d: rank %d of %d on %s (kvs %s): %d fences, every rank's value right\n",
	       p.version, p.rank, p.size, p.host, p.kvs, ROUNDS);
	return 0;
}
