# libFuzzer targets, one per decoder (built with --enable-fuzzing).
if ENABLE_FUZZING
endif
