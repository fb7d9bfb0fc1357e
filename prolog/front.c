/* SPDX-License-Identifier: GPL-2.0-or-later */
/* slurm-vm-prolog as slurmd runs it: a plain job leaves before any library of
 * the suite is loaded; a VM job gets slurm-vm-prolog-vm (common/front/front.h).
 */
#include "config.h"

#include "front/front.h"

int main(int argc, char **argv)
{
	return front_main("slurm-vm-prolog", "slurm-vm-prolog-vm", argv);
}
