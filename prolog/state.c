/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The prolog's job state: its state directory, the journal's records of
 * what the prolog changes, the reason the job's steps fail with. Below
 * every phase of the prolog (doc/design.md, "The prolog's files"). */
#include "config.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "core/macro.h"
#include "job/journal.h"
#include "prolog.h"

#define REASON_FILE  "reason"
#define CONSOLE_TAIL 2048

char *state_file(const struct prolog *p, const char *name)
{
	char *path;

	if (asprintf(&path, "%s/%s", p->state_path, name) < 0)
		return NULL;
	return path;
}

int state_journal(struct prolog *p, enum journal_verb verb, const char *arg)
{
	const char *args[] = { arg, NULL };

	return journal_append(p->state_fd, verb, args);
}

void state_record_reason(struct prolog *p, const char *fmt, ...)
{
	_cleanup_close_ int fd = -1;
	_cleanup_close_ int con = -1;
	char tail[CONSOLE_TAIL + 1];
	va_list ap;
	off_t size;
	ssize_t n;

	va_start(ap, fmt);
	vsnprintf(p->reason, sizeof(p->reason), fmt, ap);
	va_end(ap);
	/* It may hold the guest's console and the directory's name is no
	 * secret: root's, 0400. The job's tasks read it while still root
	 * (spank_vm's task_init_privileged); a file of the user's here could
	 * be made writable and grown without bound. */
	fd = openat(p->state_fd, REASON_FILE,
		    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		    0400);
	if (fd < 0)
		return;
	p->reason_recorded = true;
	if (fchown(fd, 0, 0) < 0 || fchmod(fd, 0400) < 0)
		log_errno(errno, "job %u: cannot make %s/%s root's, 0400",
			  p->req.job_id, p->state_path, REASON_FILE);
	va_start(ap, fmt);
	vdprintf(fd, fmt, ap);
	va_end(ap);
	dprintf(fd, "\n");
	con = openat(p->state_fd, "console.log",
		     O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (con < 0)
		return;
	size = lseek(con, 0, SEEK_END);
	if (size > CONSOLE_TAIL)
		lseek(con, size - CONSOLE_TAIL, SEEK_SET);
	else
		lseek(con, 0, SEEK_SET);
	n = read(con, tail, CONSOLE_TAIL);
	if (n > 0)
		dprintf(fd,
			"--- last console output (%s/console.log) ---\n%.*s\n",
			p->state_path, (int)n, tail);
}

enum prolog_result state_dir_create(struct prolog *p)
{
	statedir_name(p->req.job_id, p->req.restart_count, p->state_name,
		      sizeof(p->state_name));
	p->state_fd = statedir_open(p->conf.state_dir, p->state_name, true);
	if (p->state_fd < 0) {
		log_errno(p->state_fd,
			  "cannot set up the state directory %s/%s",
			  p->conf.state_dir, p->state_name);
		return PROLOG_NODE_FAULT;
	}
	if (asprintf(&p->state_path, "%s/%s", p->conf.state_dir,
		     p->state_name) < 0)
		return PROLOG_NODE_FAULT;
	/* A requeued job must not find an old reason. */
	unlinkat(p->state_fd, REASON_FILE, 0);
	return PROLOG_OK;
}
