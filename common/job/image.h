/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Which image a job boots, and whether it may: catalog names resolved to
 * descriptors, user paths allowed only where vm.conf says so, and every file
 * of the backing chain parsed by us (qcow2.h) and kept inside ImageDirs.
 *
 * The same checks run twice: in sbatch/srun for the user's convenience, and
 * in the prolog as root but with the job user's credentials
 * (image_check_as_user), because SPANK_* values are user input.
 * Errors are logged with what to do; functions return 0 or -errno.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "job/qcow2.h"
#include "job/vmconf.h"

#define IMAGE_NAME_MAX	64
#define IMAGE_CHAIN_MAX 8
/* The largest virtual size a qcow2 overlay with 64 KiB clusters holds
 * (qemu's L1 table is at most 32 MiB): 2 PiB. */
#define IMAGE_VIRTUAL_SIZE_MAX (1ull << 51)

/* A catalog descriptor, <ImageCatalog>/<name>.image. */
struct image_spec {
	char *name; /* catalog name; NULL for a user path */
	char *path;
	char *format; /* "raw" | "qcow2"; NULL for a user path */
	char *kernel; /* direct kernel boot, optional */
	char *initrd;
	char *cmdline;
	char *firmware;		   /* "bios" | "uefi" */
	uint64_t mem_overhead_mib; /* 0: vm.conf's MemOverhead */
	char *boot_mode;	   /* "cold" | "warm"; NULL: vm.conf's */
	char *description;
};

struct image_layer {
	char *path; /* canonical */
	enum image_format format;
	uint64_t virtual_size;
	uint64_t file_size;
};

/* The image and its backing files, top first. */
struct image_chain {
	unsigned depth;
	struct image_layer layers[IMAGE_CHAIN_MAX];
};

/* At submission: @request as the prolog must get it. Where user images
 * are allowed, a relative path ("./a.qcow2", or "a.qcow2" that is no catalog
 * name but a file in @cwd) becomes @cwd/@request; anything else is copied
 * unchanged (image_resolve then says what is wrong with it). */
int image_request_at(const struct vmconf *conf, const char *request,
		     const char *cwd, char **out);
/* @request: a catalog name or, where allowed, an absolute path. */
int image_resolve(const struct vmconf *conf, const char *request,
		  struct image_spec *spec);
void image_spec_free(struct image_spec *spec);

/* Sorted names in the catalog (empty list when there is none). */
int image_catalog_names(const char *dir, char ***names);

/* Checks the whole chain with the caller's own credentials. */
int image_check(const struct vmconf *conf, const struct image_spec *spec,
		struct image_chain *chain);
/* The same check in a child that runs as @uid/@gid with the user's groups. */
int image_check_as_user(const struct vmconf *conf,
			const struct image_spec *spec, uid_t uid, gid_t gid,
			struct image_chain *chain);
void image_chain_free(struct image_chain *chain);
/* A Firmware=uefi image's Kernel= must boot through OVMF (EFI stub);
 * part of image_check. */
int image_kernel_check(const struct image_spec *spec);

/* Whether absolute @path and every directory the kernel passes to reach it
 * (symlinks followed; a symlink is as safe as the directory that holds it)
 * are owned by root and writable by no group or other: what root may run
 * with nobody else's hand in it. 0; -EPERM with the first that is not in
 * @bad; another -errno (with that path in @bad) when one cannot be read. */
int image_path_root_only(const char *path, char *bad, size_t size);
/* image_path_root_only() of every layer of @chain, @spec's kernel and
 * initrd: BootMode=warm's template runs them in root's qemu. */
int image_root_only(const struct image_spec *spec,
		    const struct image_chain *chain, char *bad, size_t size);

/* Is canonical @path inside one of @dirs (on a component boundary)? */
bool path_is_inside(const char *path, char *const *dirs);
