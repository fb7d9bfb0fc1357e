/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/log.h"

static const char *log_ident = "slurm-vm";
static enum log_level log_level = LOG_LEVEL_INFO;
static log_sink_fn log_sink;
static FILE *log_file;
static char last_error[512];

static const char *const level_names[] = {
	[LOG_LEVEL_ERROR] = "error",
	[LOG_LEVEL_WARN] = "warn",
	[LOG_LEVEL_INFO] = "info",
	[LOG_LEVEL_DEBUG] = "debug",
};

void log_open(const char *ident)
{
	log_ident = ident;
}

int log_open_file(const char *path)
{
	int fd;

	if (log_file) {
		fclose(log_file);
		log_file = NULL;
	}
	if (!path)
		return 0;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0)
		return -errno;
	log_file = fdopen(fd, "a");
	if (!log_file) {
		close(fd);
		return -ENOMEM;
	}
	setvbuf(log_file, NULL, _IOLBF, 0);
	return 0;
}

void log_close(void)
{
	log_open_file(NULL);
}

void log_set_level(enum log_level level)
{
	log_level = level;
}

enum log_level log_get_level(void)
{
	return log_level;
}

void log_set_sink(log_sink_fn sink)
{
	log_sink = sink;
}

int log_level_from_string(const char *s, enum log_level *level)
{
	for (size_t i = 0; i < ARRAY_SIZE(level_names); i++) {
		if (strcasecmp(s, level_names[i]) == 0) {
			*level = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

static void log_write_file(enum log_level level, const char *msg)
{
	struct timespec ts;
	struct tm tm;
	char stamp[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(log_file, "[%s.%03ld] %s[%ld] %s: %s\n", stamp,
		ts.tv_nsec / 1000000, log_ident, (long)getpid(),
		level_names[level], msg);
}

void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	char msg[2048];
	int saved = errno;

	if (level > log_level && !log_file)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* Messages quote user input: one message, one line. */
	for (char *p = msg; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	if (level == LOG_LEVEL_ERROR)
		snprintf(last_error, sizeof(last_error), "%.*s",
			 (int)sizeof(last_error) - 1, msg);
	if (log_file)
		log_write_file(level, msg);
	if (level <= log_level) {
		if (log_sink)
			log_sink(level, msg);
		else
			fprintf(stderr, "%s: %s%s\n", log_ident,
				level == LOG_LEVEL_ERROR  ? "error: "
				: level == LOG_LEVEL_WARN ? "warning: "
							  : "",
				msg);
	}
	errno = saved;
}

const char *log_last_error(void)
{
	return last_error;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

int log_errno(int err, const char *fmt, ...)
{
	char msg[1536];
	va_list ap;

	if (err < 0)
		err = -err;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_msg(LOG_LEVEL_ERROR, "%s: %s", msg, strerror(err));
	return -err;
}
