# spank_vm(8) and vm.conf(5)
dist_man_MANS += doc/spank_vm.8 doc/vm.conf.5 doc/slurm-vm-prolog.8 \
	doc/slurm-vm-epilog.8 doc/slurm-vm-agent.8
# gres_ibvf(8): the gres/ibvf plugin (documented even when not built)
dist_man_MANS += doc/gres_ibvf.8
