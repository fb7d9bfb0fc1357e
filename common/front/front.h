/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The Prolog and Epilog run for every job. Jobs without --vm-image must not
 * notice the suite, and loading libvirt, libxml2, hwloc, libpci and libslurm
 * (about 60 shared objects) costs ~20 ms per exec: so slurmd runs a front
 * that links libc only. Without SPANK_VM_IMAGE (common/job/request.h) it exits
 * 0 at once; a VM job gets the real program, @name, exec'd from the front's own
 * directory (the build tree, a test cluster's copy) or else from PKGLIBEXECDIR
 * (installed).
 */

/* The front's main(): exit status 0 for a plain job; for a VM job returns
 * only when @name could not be exec'd, with 1 (drain: the node is broken).
 * @ident prefixes the messages. */
int front_main(const char *ident, const char *name, char **argv);
