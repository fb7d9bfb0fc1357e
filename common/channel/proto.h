/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The guest channel wire format (doc/protocol.md has the full story).
 *
 * One byte stream (the virtio-serial port between relay and agent, or the
 * relay's task socket between slurm-vm-exec and the relay) carries frames:
 *
 *   offset size field
 *        0    2 magic    0x56 0x53 ("VS")
 *        2    1 version  1
 *        3    1 kind     enum proto_kind
 *        4    4 session  0 = the connection itself, else a task session
 *        8    4 length   payload bytes, <= PROTO_MAX_PAYLOAD
 *       12    2 flags    PROTO_FLAG_MORE (only on EXEC), other bits 0
 *       14    2 reserved 0
 *
 * All integers are big-endian. A string is u32 length (counting its
 * terminating NUL) followed by that many bytes, the last one NUL and no NUL
 * before it. Every payload must be consumed exactly: trailing bytes are an
 * error. Payloads (kind: layout):
 *
 *   HELLO    (session 0) u16 min_version, u16 max_version, u64 nonce,
 *            str identity (printable ASCII, may be empty)
 *   READY    (session 0) empty: the agent accepts EXEC
 *   EXEC     (session != 0) u32 uid, u32 gid, u32 flags (PMI and PMIX
 *            not both), u32 rank,
 *            u16 rows, u16 cols, u32 ngroups, u32 argc, u32 envc,
 *            ngroups x u32 gid, str cwd, argc x str, envc x str
 *            May span frames: all but the last carry PROTO_FLAG_MORE and the
 *            frames are full (PROTO_MAX_PAYLOAD) and sent back to back; at
 *            most PROTO_MAX_EXEC in total.
 *   DATA     (session != 0) u8 stream, >= 1 byte of data
 *   EOF      (session != 0) u8 stream
 *   CREDIT   (session != 0) u8 stream, u32 bytes (1..PROTO_MAX_WINDOW)
 *   SIGNAL   (session != 0) u32 signo (1..64)
 *   EXIT     (session != 0) u8 how (1 exited, 2 signaled), u8 core dumped,
 *            u16 0, u32 code (0..255) or signal (1..64)
 *   ERROR    (any session) u32 code (0 = warning, else the session or, on
 *            session 0, the connection failed), str text (printable)
 *   PING/PONG(any session) u64 cookie
 *   SHUTDOWN (session 0) u32 flags (PROTO_SHUTDOWN_POWEROFF)
 *   WINSIZE  (session != 0) u16 rows, u16 cols (both >= 1): the terminal
 *            of a PTY session was resized
 *   PERSONA  (session 0) host -> agent: u32 count, count x str "key=value"
 *            (no control characters, key not empty; count <=
 *            PROTO_MAX_PERSONA): the job's identity for a guest restored
 *            from a template (issue #30). Agent -> host, the answer:
 *            u32 failures, str text ("" exactly when failures is 0, else
 *            what failed, printable, <= PROTO_MAX_ERROR). Sent only by a
 *            relay given --persona: an older agent never sees it.
 *
 * Flow control: every stream of every session starts with PROTO_WINDOW bytes
 * of credit in each direction; a sender may only send DATA it has credit
 * for, the receiver returns credit with CREDIT once it has passed the bytes
 * on. Available credit never exceeds PROTO_MAX_WINDOW.
 *
 * Resync: after a (re)connect or a framing error, a receiver discards bytes
 * until a valid HELLO header; the host side always starts with HELLO, the
 * agent answers with HELLO (same nonce, its identity) and READY. Sessions do
 * not survive a reconnect: the agent kills the old connection's processes.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROTO_MAGIC	  0x5653u
#define PROTO_VERSION_MIN 1
#define PROTO_VERSION_MAX 1
#define PROTO_HEADER_SIZE 16
#define PROTO_MAX_PAYLOAD 65536u
#define PROTO_MAX_FRAME	  (PROTO_HEADER_SIZE + PROTO_MAX_PAYLOAD)
#define PROTO_MAX_DATA	  (PROTO_MAX_PAYLOAD - 1)
#define PROTO_MAX_EXEC	  (1024u * 1024u)
#define PROTO_MAX_ARGC	  4096u
#define PROTO_MAX_ENVC	  4096u
#define PROTO_MAX_GROUPS  1024u
#define PROTO_MAX_STRING  (128u * 1024u) /* with its NUL */

/* The 9p mount tag of share @i, in the domain and in the guest's mount:
 * the agent tells a share by it (agent/guest/workdir.c). */
#define SHARED_DIR_TAG_FMT    "svmshare%u"
#define PROTO_MAX_PATH	      4096u /* with its NUL */
#define PROTO_MAX_IDENTITY    256u  /* without its NUL */
#define PROTO_MAX_ERROR	      4096u /* without its NUL */
#define PROTO_WINDOW	      (256u * 1024u)
#define PROTO_MAX_WINDOW      (16u * 1024u * 1024u)
#define PROTO_MAX_SIGNAL      64u
#define PROTO_MAX_PERSONA     4096u /* PERSONA entries */
#define PROTO_READER_CAPACITY (2 * PROTO_MAX_FRAME)

#define PROTO_FLAG_MORE 0x0001u

/* In an EXEC's environment, for the agent, which applies it and removes it:
 * the vCPUs (list syntax, "0-1,3") the task is bound to. */
#define PROTO_ENV_AFFINITY "SLURM_VM_AFFINITY"

/* A --vm-batch script's variable NAME=value, other than Slurm's, as the
 * host's server of its Slurm commands (agent/host/hostcmd_env.h) passes it to
 * them: a name nothing on the host reads. A step's task in the guest gets
 * NAME=value again (taskenv.h). */
#define PROTO_ENV_GUEST_PREFIX "SLURM_VM_GUESTENV_"

enum proto_kind {
	PROTO_HELLO = 1,
	PROTO_READY,
	PROTO_EXEC,
	PROTO_DATA,
	PROTO_EOF,
	PROTO_CREDIT,
	PROTO_SIGNAL,
	PROTO_EXIT,
	PROTO_ERROR,
	PROTO_PING,
	PROTO_PONG,
	PROTO_SHUTDOWN,
	PROTO_WINSIZE,
	PROTO_PERSONA,
	PROTO_KIND_MAX = PROTO_PERSONA,
};

enum proto_stream {
	PROTO_STDIN = 0,
	PROTO_STDOUT,
	PROTO_STDERR,
	PROTO_PMI,
	PROTO_STREAMS,
};

enum proto_exec_flags {
	PROTO_EXEC_ALLOW_ROOT = 1u << 0, /* the host allows uid/gid 0 */
	PROTO_EXEC_PTY = 1u << 1,	 /* run on a pty of rows x cols */
	PROTO_EXEC_PMI = 1u << 2,	 /* give the task a PMI_FD */
	/* PMIx: the task's one connection to a listener on the guest's
	 * 127.0.0.1 is the PMI stream (common/channel/pmixenv.h) */
	PROTO_EXEC_PMIX = 1u << 3,
	PROTO_EXEC_FLAGS_ALL = 0xfu,
};

/* PMI and PMIx both use the PMI stream: a task gets one or the other. */
static inline bool proto_exec_flags_clash(uint32_t flags)
{
	return (flags & PROTO_EXEC_PMI) && (flags & PROTO_EXEC_PMIX);
}

enum proto_exit_how {
	PROTO_EXITED = 1,
	PROTO_SIGNALED = 2,
};

#define PROTO_SHUTDOWN_POWEROFF 0x1u

struct proto_header {
	uint8_t version;
	uint8_t kind;
	uint16_t flags;
	uint32_t session;
	uint32_t length;
};

struct proto_frame {
	struct proto_header hdr;
	const uint8_t *payload; /* valid until the next proto_reader call */
	size_t length;
};

struct proto_hello {
	uint16_t min_version;
	uint16_t max_version;
	uint64_t nonce;
	char identity[PROTO_MAX_IDENTITY + 1];
};

struct proto_exec {
	uint32_t uid, gid, flags, rank;
	uint16_t rows, cols;
	uint32_t ngroups;
	uint32_t *groups;
	char *cwd;
	char **argv; /* NULL-terminated */
	char **env;  /* NULL-terminated, every entry NAME=value */
	void *storage;
};

struct proto_exit {
	uint8_t how;
	bool core_dumped;
	uint32_t value;
};

struct proto_error {
	uint32_t code;
	char text[PROTO_MAX_ERROR + 1];
};

/* PERSONA from the host: the entries point into @storage. */
struct proto_persona {
	uint32_t count;
	char **entries; /* NULL-terminated, every entry key=value */
	void *storage;
};

/* PERSONA's answer from the agent. */
struct proto_persona_answer {
	uint32_t failures;
	char text[PROTO_MAX_ERROR + 1]; /* "" when failures is 0 */
};

/* An output queue: frames are appended, the front is written out. */
struct proto_buf {
	uint8_t *data;
	size_t off, len, cap;
};

/* Splits a byte stream into frames, reassembles EXEC messages. */
struct proto_reader {
	uint8_t *buf;
	size_t start, end;
	bool resync;
	bool msg_open, msg_done;
	struct proto_header msg_hdr;
	uint8_t *msg;
	size_t msg_len, msg_cap;
};

const char *proto_kind_name(uint8_t kind);

/* Header: 0, -EAGAIN (fewer than PROTO_HEADER_SIZE bytes), -EBADMSG (bad
 * magic, flags, reserved bits, kind or session for the kind), -EPROTO (bad
 * version), -EMSGSIZE (length). */
int proto_header_decode(const uint8_t *buf, size_t len, struct proto_header *h);
void proto_header_encode(uint8_t *buf, const struct proto_header *h);

/* Decoders: 0 or -EBADMSG/-EMSGSIZE/-EPROTO; never read past @len. */
int proto_decode_hello(const uint8_t *p, size_t len, struct proto_hello *m);
int proto_decode_ready(const uint8_t *p, size_t len);
int proto_decode_exec(const uint8_t *p, size_t len, struct proto_exec *m);
void proto_exec_free(struct proto_exec *m);
int proto_decode_data(const uint8_t *p, size_t len, uint8_t *stream,
		      const uint8_t **data, size_t *data_len);
int proto_decode_eof(const uint8_t *p, size_t len, uint8_t *stream);
int proto_decode_credit(const uint8_t *p, size_t len, uint8_t *stream,
			uint32_t *bytes);
int proto_decode_signal(const uint8_t *p, size_t len, uint32_t *signo);
int proto_decode_exit(const uint8_t *p, size_t len, struct proto_exit *m);
int proto_decode_error(const uint8_t *p, size_t len, struct proto_error *m);
int proto_decode_ping(const uint8_t *p, size_t len, uint64_t *cookie);
int proto_decode_shutdown(const uint8_t *p, size_t len, uint32_t *flags);
int proto_decode_winsize(const uint8_t *p, size_t len, uint16_t *rows,
			 uint16_t *cols);
int proto_decode_persona(const uint8_t *p, size_t len, struct proto_persona *m);
void proto_persona_free(struct proto_persona *m);
int proto_decode_persona_answer(const uint8_t *p, size_t len,
				struct proto_persona_answer *m);

/* Encoders append whole frames to @b; they refuse (-E2BIG, -EINVAL) what
 * the decoders would reject. */
int proto_put_frame(struct proto_buf *b, uint8_t kind, uint16_t flags,
		    uint32_t session, const void *payload, size_t len);
int proto_put_hello(struct proto_buf *b, const struct proto_hello *m);
int proto_put_ready(struct proto_buf *b);
int proto_put_exec(struct proto_buf *b, uint32_t session,
		   const struct proto_exec *m);
int proto_put_data(struct proto_buf *b, uint32_t session, uint8_t stream,
		   const void *data, size_t len);
int proto_put_eof(struct proto_buf *b, uint32_t session, uint8_t stream);
int proto_put_credit(struct proto_buf *b, uint32_t session, uint8_t stream,
		     uint32_t bytes);
int proto_put_signal(struct proto_buf *b, uint32_t session, uint32_t signo);
int proto_put_exit(struct proto_buf *b, uint32_t session,
		   const struct proto_exit *m);
/* @text is truncated to PROTO_MAX_ERROR and control characters replaced. */
int proto_put_error(struct proto_buf *b, uint32_t session, uint32_t code,
		    const char *text);
int proto_put_ping(struct proto_buf *b, uint8_t kind, uint32_t session,
		   uint64_t cookie);
int proto_put_shutdown(struct proto_buf *b, uint32_t flags);
int proto_put_winsize(struct proto_buf *b, uint32_t session, uint16_t rows,
		      uint16_t cols);
/* @entries NULL-terminated, each key=value without control characters. */
int proto_put_persona(struct proto_buf *b, char *const *entries);
/* @text (ignored when @failures is 0, "failed" when empty) is truncated to
 * PROTO_MAX_ERROR and control characters replaced. */
int proto_put_persona_answer(struct proto_buf *b, uint32_t failures,
			     const char *text);

/* Available credit @avail grows by @grant: -EOVERFLOW past PROTO_MAX_WINDOW,
 * -EBADMSG for a zero grant. */
int proto_credit_add(uint32_t *avail, uint32_t grant);

/* Output queue. */
static inline size_t proto_buf_pending(const struct proto_buf *b)
{
	return b->len - b->off;
}
static inline const uint8_t *proto_buf_head(const struct proto_buf *b)
{
	return b->data + b->off;
}
int proto_buf_append(struct proto_buf *b, const void *data, size_t len);
void proto_buf_consume(struct proto_buf *b, size_t n);
/* write()s the front; returns bytes written, -EAGAIN or -errno. */
ssize_t proto_buf_write(struct proto_buf *b, int fd);
void proto_buf_free(struct proto_buf *b);

/* Reader. */
int proto_reader_init(struct proto_reader *r);
void proto_reader_free(struct proto_reader *r);
/* Drops buffered bytes; with @resync, skips to the next HELLO header. */
void proto_reader_reset(struct proto_reader *r, bool resync);
/* Copies in what fits; returns bytes taken (0 when full). */
size_t proto_reader_feed(struct proto_reader *r, const void *data, size_t n);
/* read()s into free space: bytes read, 0 at EOF, -EAGAIN, -ENOBUFS when
 * full (call proto_reader_next first), -errno. */
ssize_t proto_reader_read(struct proto_reader *r, int fd);
/* proto_reader_read for a poll loop: 0 while the stream lives (frames may
 * wait for proto_reader_next), -EPIPE at end of file, -errno when read()
 * fails. */
int proto_reader_pull(struct proto_reader *r, int fd);
/* 1 with a frame (a whole EXEC message for EXEC), 0 when more bytes are
 * needed, < 0 on a malformed stream: then the reader resyncs by itself. */
int proto_reader_next(struct proto_reader *r, struct proto_frame *f);
