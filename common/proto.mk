# The guest channel wire format (libc only: the static agent links it).
common_libslurmvm_core_la_SOURCES += common/proto.c common/proto.h
