# slurm-vm(8): the admin tool (gres, plan)
dist_man_MANS += doc/slurm-vm.8
