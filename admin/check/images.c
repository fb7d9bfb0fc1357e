/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The image catalog: each descriptor resolves, its files open to the job's
 * user, a warm image's files root's alone.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "job/image.h"
#include "job/user.h"
#include "job/vmconf.h"
#include "core/strutil.h"

static bool firmware_file_ok(struct checker *c, const char *key,
			     const char *path, const char *image)
{
	struct stat st;
	char fix[512];

	if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
		return true;
	snprintf(
		fix, sizeof(fix),
		"install the ovmf package, or point %s= in vm.conf at the OVMF file",
		key);
	check_problem(
		c, fix,
		"image %s boots UEFI but %s=%s is not a file: its jobs drain the node",
		image, key, path);
	return false;
}

/* The first directory above canonical @path that other users cannot
 * enter, in @dir; "" when there is none. */
static void closed_dir(const char *path, char *dir, size_t size)
{
	_cleanup_free_ char *canon = realpath(path, NULL);
	struct stat st;

	dir[0] = '\0';
	for (char *p = canon ? canon : NULL; p && (p = strchr(p + 1, '/'));) {
		*p = '\0';
		if (stat(canon, &st) == 0 && S_ISDIR(st.st_mode) &&
		    !(st.st_mode & S_IXOTH)) {
			snprintf(dir, size, "%s", canon);
			return;
		}
		*p = '/';
	}
}

/* qemu opens the image, kernel, initrd and OVMF as the job's user: a file
 * only root can open fails every job that asks for the image. nobody
 * stands in for an ordinary user. */
static bool file_open_to_users(struct checker *c, const char *image,
			       const char *key, const char *path)
{
	struct passwd *pw = getpwnam("nobody");
	char fix[1024], dir[PATH_MAX];
	int r;

	if (!path)
		return true;
	r = user_can_open(pw ? pw->pw_uid : 65534, pw ? pw->pw_gid : 65534,
			  path);
	if (r == 0)
		return true;
	closed_dir(path, dir, sizeof(dir));
	if (dir[0])
		snprintf(fix, sizeof(fix),
			 "other users cannot enter %s: move the file to a "
			 "directory every user can enter (e.g. "
			 "/var/lib/slurm-vm/images), or chmod o+x %s",
			 dir, dir);
	else
		snprintf(fix, sizeof(fix),
			 "make it readable by every user (chmod o+r %s), or "
			 "copy it where they can read it",
			 path);
	check_problem(c, fix,
		      "catalog image %s: %s=%s cannot be opened by an ordinary "
		      "user (as nobody: %s); qemu runs as the job's user, so "
		      "its jobs fail",
		      image, key, path, strerror(-r));
	return false;
}

static bool image_files_open_to_users(struct checker *c,
				      const struct vmconf *vc,
				      const struct image_spec *spec,
				      const char *name, bool uefi)
{
	struct image_chain chain;
	bool ok = true;

	if (geteuid() != 0)
		return true; /* cannot become nobody: said once by the caller */
	if (image_check(vc, spec, &chain) == 0) {
		for (unsigned i = 0; i < chain.depth; i++)
			ok = file_open_to_users(c, name,
						i ? "its backing file" : "Path",
						chain.layers[i].path) &&
			     ok;
		image_chain_free(&chain);
	}
	ok = file_open_to_users(c, name, "Kernel", spec->kernel) && ok;
	ok = file_open_to_users(c, name, "Initrd", spec->initrd) && ok;
	if (uefi) {
		ok = file_open_to_users(c, name, "UefiCode", vc->uefi_code) &&
		     ok;
		ok = file_open_to_users(c, name, "UefiVars", vc->uefi_vars) &&
		     ok;
	}
	return ok;
}

/* BootMode=warm: the template's qemu is root's, so each file it boots and
 * every directory above must be root's alone, or the prolog boots the
 * image's jobs cold (prolog/warm.c, warm_refusal). */
static bool image_files_root_only(struct checker *c, const struct vmconf *vc,
				  const struct image_spec *spec,
				  const char *name)
{
	struct image_chain chain;
	char bad[PATH_MAX], fix[2 * PATH_MAX + 128];
	bool warm = spec->boot_mode ? strcmp(spec->boot_mode, "warm") == 0
				    : vc->boot_mode == BOOT_MODE_WARM;
	int r;

	if (!warm || (spec->firmware && strcmp(spec->firmware, "uefi") == 0))
		return true;
	if (image_check(vc, spec, &chain) < 0)
		return true; /* said by image_files_open_to_users() */
	r = image_root_only(spec, &chain, bad, sizeof(bad));
	image_chain_free(&chain);
	if (r == 0)
		return true;
	snprintf(fix, sizeof(fix), "chown root %s && chmod go-w %s", bad, bad);
	check_problem(c, fix,
		      "catalog image %s boots warm, but %s is not root's "
		      "alone (%s): its warm template would run in root's qemu "
		      "what another user can change, so its jobs boot cold",
		      name, bad,
		      r == -EPERM ? "another user owns it, or group or others "
				    "may write it"
				  : strerror(-r));
	return false;
}

/* A directory vm.conf names (@key=@dir) is there; else a problem, what
 * jobs see (@effect), and the command that makes it. */
static bool dir_exists(struct checker *c, const char *key, const char *dir,
		       const char *effect)
{
	struct stat st;
	char fix[PATH_MAX + 32];

	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return true;
	snprintf(fix, sizeof(fix), "mkdir -p %s", dir);
	check_problem(c, fix, "%s=%s is not a directory: %s", key, dir, effect);
	return false;
}

/* Every descriptor parses and names an image inside ImageDirs: a typo
 * otherwise shows only when a job asks for that image. */
void check_catalog(struct checker *c, const struct vmconf *vc)
{
	_cleanup_strv_free_ char **names = NULL;
	unsigned good = 0, n = 0;

	if (!dir_exists(c, "ImageCatalog", vc->image_catalog,
			"every --vm-image=NAME is refused"))
		return;
	for (char **d = vc->image_dirs; d && *d; d++)
		dir_exists(c, "ImageDirs", *d,
			   "no image can be placed where jobs may use it");
	if (image_catalog_names(vc->image_catalog, &names) < 0)
		return;
	if (!names[0])
		check_warn("put a descriptor NAME.image there for each image "
			   "users may ask for (admin guide, section 5)",
			   "ImageCatalog=%s is empty: sbatch --vm-image=NAME "
			   "says so for every NAME",
			   vc->image_catalog);
	for (size_t i = 0; names[i]; i++, n++) {
		struct image_spec spec;
		char fix[512];
		bool ok, uefi;

		if (image_resolve(vc, names[i], &spec) < 0) {
			snprintf(
				fix, sizeof(fix),
				"correct %s/%s.image as the message above says (vm.conf(5), IMAGE CATALOG)",
				vc->image_catalog, names[i]);
			check_problem(
				c, fix,
				"catalog image %s cannot be used: jobs asking for it are refused",
				names[i]);
			continue;
		}
		if (image_kernel_check(&spec) < 0) {
			snprintf(
				fix, sizeof(fix),
				"set Kernel= in %s/%s.image to a vmlinuz (bzImage), or Firmware=bios",
				vc->image_catalog, names[i]);
			check_problem(
				c, fix,
				"catalog image %s: OVMF cannot start its kernel",
				names[i]);
			image_spec_free(&spec);
			continue;
		}
		ok = true;
		uefi = spec.firmware && strcmp(spec.firmware, "uefi") == 0;
		if (uefi) {
			/* both are reported, not just the first */
			ok = firmware_file_ok(c, "UefiCode", vc->uefi_code,
					      names[i]);
			ok = firmware_file_ok(c, "UefiVars", vc->uefi_vars,
					      names[i]) &&
			     ok;
		}
		if (ok)
			ok = image_files_open_to_users(c, vc, &spec, names[i],
						       uefi);
		if (ok)
			ok = image_files_root_only(c, vc, &spec, names[i]);
		good += ok;
		image_spec_free(&spec);
	}
	if (n && good == n)
		check_ok("%s: all %u images resolve%s", vc->image_catalog, n,
			 geteuid() == 0
				 ? ", and every user can open their files"
				 : " (run as root to check that every "
				   "user can open their files)");
}
