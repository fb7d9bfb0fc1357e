# libFuzzer targets, one per decoder (built with --enable-fuzzing).
# tests/fuzz/run.sh runs them for a bounded time on tests/fuzz/corpus/.
if ENABLE_FUZZING
PROTO_FUZZ_CF = $(AM_CFLAGS) -fsanitize=fuzzer
PROTO_FUZZ_LF = $(AM_LDFLAGS) -fsanitize=fuzzer
PROTO_FUZZ_LIBS = common/channel/libslurmvm-channel.la

noinst_PROGRAMS += tests/fuzz/fuzz_proto_frame tests/fuzz/gen_corpus
tests_fuzz_fuzz_proto_frame_SOURCES = tests/fuzz/fuzz_proto_frame.c tests/fuzz/fuzz_proto.h
tests_fuzz_fuzz_proto_frame_CFLAGS = $(PROTO_FUZZ_CF)
tests_fuzz_fuzz_proto_frame_LDFLAGS = $(PROTO_FUZZ_LF)
tests_fuzz_fuzz_proto_frame_LDADD = $(PROTO_FUZZ_LIBS)
tests_fuzz_gen_corpus_SOURCES = tests/fuzz/gen_corpus.c
tests_fuzz_gen_corpus_LDADD = $(PROTO_FUZZ_LIBS)

noinst_PROGRAMS += tests/fuzz/fuzz_proto_hello
tests_fuzz_fuzz_proto_hello_SOURCES = tests/fuzz/fuzz_proto_decode.c tests/fuzz/fuzz_proto.h
tests_fuzz_fuzz_proto_hello_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_KIND=PROTO_HELLO
tests_fuzz_fuzz_proto_hello_CFLAGS = $(PROTO_FUZZ_CF)
tests_fuzz_fuzz_proto_hello_LDFLAGS = $(PROTO_FUZZ_LF)
tests_fuzz_fuzz_proto_hello_LDADD = $(PROTO_FUZZ_LIBS)

noinst_PROGRAMS += tests/fuzz/fuzz_proto_ready
tests_fuzz_fuzz_proto_ready_SOURCES = tests/fuzz/fuzz_proto_decode.c tests/fuzz/fuzz_proto.h
tests_fuzz_fuzz_proto_ready_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_KIND=PROTO_READY
tests_fuzz_fuzz_proto_ready_CFLAGS = $(PROTO_FUZZ_CF)
tests_fuzz_fuzz_proto_ready_LDFLAGS = $(PROTO_FUZZ_LF)
tests_fuzz_fuzz_proto_ready_LDADD = $(PROTO_FUZZ_LIBS)

noinst_PROGRAMS += tests/fuzz/fuzz_proto_exec
tests_fuzz_fuzz_proto_exec_SOURCES = tests/fuzz/fuzz_proto_decode.c tests/fuzz/fuzz_proto.h
tests_fuzz_fuzz_proto_exec_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_KIND=PROTO_EXEC
tests_fuzz_fuzz_proto_exec_CFLAGS = $(PROTO_FUZZ_CF)
tests_fuzz_fuzz_proto_exec_LDFLAGS = $(PROTO_FUZZ_LF)
tests_fuzz_fuzz_proto_exec_LDADD = $(PROTO_FUZZ_LIBS)

noinst_PROGRAMS += tests/fuzz/fuzz_proto_data
tests_fuzz_fuzz_proto_data_SOURCES = tests/fuzz/fuzz_proto_decode.c tests/fuzz/fuzz_proto.h
tests_fuzz_fuzz_proto_data_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_KIND=PROTO_DATA
tests_fuzz_fuzz_proto_data_CFLAGS = $(PROTO_FUZZ_CF)
tests_fuzz_fuzz_proto_data_LDFLAGS = $(PROTO_FUZZ_LF)
tests_fuzz_fuzz_proto_data_LDADD = $(PROTO_FUZZ_LIBS)

noinst_PROGRAMS += tests/fuzz/fuzz_proto_eof
tests_fuzz_fuzz_proto_eof_SOURCES = tests/fuzz/fuzz_proto_decode.c tests/fuzz/fuzz_proto.h
tests_fuzz_fuzz_proto_eof_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_KIND=PROTO_EOF
tests_fuzz_fuzz_proto_eof_CFLAGS = $(PROTO_FUZZ_CF)
tests_fuzz_fuzz_proto_eof_LDFLAGS = $(PROTO_FUZZ_LF)
tests_fuzz_fuzz_proto_eof_LDADD = $(PROTO_FUZZ_LIBS)

noinst_PROGRAMS += tests/fuzz/fuzz_proto_credit
tests_fuzz_fuzz_proto_credit_SOURCES = tests/fuzz/fuzz_proto_decode.c tests/fuzz/fuzz_proto.h
tests_fuzz_fuzz_proto_credit_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_KIND=PROTO_CREDIT
tests_fuzz_fuzz_proto_credit_CFLAGS = $(PROTO_FUZZ_CF)
tests_fuzz_fuzz_proto_credit_LDFLAGS = $(PROTO_FUZZ_LF)
tests_fuzz_fuzz_proto_credit_LDADD = $(PROTO_FUZZ_LIBS)

noinst_PROGRAMS += tests/fuzz/fuzz_proto_signal
tests_fuzz_fuzz_proto_signal_SOURCES = tests/fuzz/fuzz_proto_decode.c tests/fuzz/fuzz_proto.h
tests_fuzz_fuzz_proto_signal_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_KIND=PROTO_SIGNAL
tests_fuzz_fuzz_proto_signal_CFLAGS = $(PROTO_FUZZ_CF)
tests_fuzz_fuzz_proto_signal_LDFLAGS = $(PROTO_FUZZ_LF)
tests_fuzz_fuzz_proto_signal_LDADD = $(PROTO_FUZZ_LIBS)

noinst_PROGRAMS += tests/fuzz/fuzz_proto_exit
tests_fuzz_fuzz_proto_exit_SOURCES = tests/fuzz/fuzz_proto_decode.c tests/fuzz/fuzz_proto.h
tests_fuzz_fuzz_proto_exit_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_KIND=PROTO_EXIT
tests_fuzz_fuzz_proto_exit_CFLAGS = $(PROTO_FUZZ_CF)
tests_fuzz_fuzz_proto_exit_LDFLAGS = $(PROTO_FUZZ_LF)
tests_fuzz_fuzz_proto_exit_LDADD = $(PROTO_FUZZ_LIBS)

noinst_PROGRAMS += tests/fuzz/fuzz_proto_error
tests_fuzz_fuzz_proto_error_SOURCES = tests/fuzz/fuzz_proto_decode.c tests/fuzz/fuzz_proto.h
tests_fuzz_fuzz_proto_error_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_KIND=PROTO_ERROR
tests_fuzz_fuzz_proto_error_CFLAGS = $(PROTO_FUZZ_CF)
tests_fuzz_fuzz_proto_error_LDFLAGS = $(PROTO_FUZZ_LF)
tests_fuzz_fuzz_proto_error_LDADD = $(PROTO_FUZZ_LIBS)

noinst_PROGRAMS += tests/fuzz/fuzz_proto_ping
tests_fuzz_fuzz_proto_ping_SOURCES = tests/fuzz/fuzz_proto_decode.c tests/fuzz/fuzz_proto.h
tests_fuzz_fuzz_proto_ping_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_KIND=PROTO_PING
tests_fuzz_fuzz_proto_ping_CFLAGS = $(PROTO_FUZZ_CF)
tests_fuzz_fuzz_proto_ping_LDFLAGS = $(PROTO_FUZZ_LF)
tests_fuzz_fuzz_proto_ping_LDADD = $(PROTO_FUZZ_LIBS)

noinst_PROGRAMS += tests/fuzz/fuzz_proto_shutdown
tests_fuzz_fuzz_proto_shutdown_SOURCES = tests/fuzz/fuzz_proto_decode.c tests/fuzz/fuzz_proto.h
tests_fuzz_fuzz_proto_shutdown_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_KIND=PROTO_SHUTDOWN
tests_fuzz_fuzz_proto_shutdown_CFLAGS = $(PROTO_FUZZ_CF)
tests_fuzz_fuzz_proto_shutdown_LDFLAGS = $(PROTO_FUZZ_LF)
tests_fuzz_fuzz_proto_shutdown_LDADD = $(PROTO_FUZZ_LIBS)

noinst_PROGRAMS += tests/fuzz/fuzz_proto_winsize
tests_fuzz_fuzz_proto_winsize_SOURCES = tests/fuzz/fuzz_proto_decode.c tests/fuzz/fuzz_proto.h
tests_fuzz_fuzz_proto_winsize_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_KIND=PROTO_WINSIZE
tests_fuzz_fuzz_proto_winsize_CFLAGS = $(PROTO_FUZZ_CF)
tests_fuzz_fuzz_proto_winsize_LDFLAGS = $(PROTO_FUZZ_LF)
tests_fuzz_fuzz_proto_winsize_LDADD = $(PROTO_FUZZ_LIBS)
# The disk image header parser (common/job/qcow2.c: no other dependency).
noinst_PROGRAMS += tests/fuzz/fuzz_image_header
tests_fuzz_fuzz_image_header_SOURCES = tests/fuzz/fuzz_image_header.c common/job/qcow2.c common/job/qcow2.h
tests_fuzz_fuzz_image_header_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_image_header_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
endif
EXTRA_DIST += tests/fuzz/run.sh tests/fuzz/corpus
