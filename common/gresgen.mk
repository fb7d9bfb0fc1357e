# gres.conf lines of this node's devices (slurm-vm gres, gres/ibvf, prolog)
common_libslurmvm_la_SOURCES += common/gresgen.c common/gresgen.h
