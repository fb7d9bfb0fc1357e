# gres/ibvf needs Slurm-internal headers: only with --with-slurm-source.
if HAVE_SLURM_SOURCE
endif
