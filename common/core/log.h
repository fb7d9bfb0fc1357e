/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Logging for every slurm-vm program and plugin. Each message carries the
 * program's name ("slurm-vm-prolog: ..."), so an admin reading slurmd's log
 * or a user reading srun's stderr knows which part spoke.
 *
 * log_errno() returns -err so that errors read "return log_errno(r, ...)".
 */
#include <stdarg.h>
#include "core/macro.h"

enum log_level {
	LOG_LEVEL_ERROR = 0,
	LOG_LEVEL_WARN,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
};

/* A sink replaces stderr, e.g. slurm_error() inside a SPANK plugin. */
typedef void (*log_sink_fn)(enum log_level level, const char *msg);

void log_open(const char *ident);
/* Also append every message to @path (created 0600); NULL stops that. */
int log_open_file(const char *path);
void log_close(void);
void log_set_level(enum log_level level);
enum log_level log_get_level(void);
void log_set_sink(log_sink_fn sink);
/* Parses "error", "warn", "info", "debug". */
int log_level_from_string(const char *s, enum log_level *level);

void log_msg(enum log_level level, const char *fmt, ...) _printf_(2, 3);
void log_vmsg(enum log_level level, const char *fmt, va_list ap) _printf_(2, 0);
/* The last error message logged, "" if none: the reason a job failed. */
const char *log_last_error(void);
/* Logs "msg: strerror(err)" and returns -|err|. */
int log_errno(int err, const char *fmt, ...) _printf_(2, 3);

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)
