/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "core/macro.h"
#include "core/run.h"
#include "vm/seed.h"
#include "job/vmconf.h"

/* Starts the agent from the seed when the image has none of its own. Runs
 * as a cloud-init bootcmd (every boot, before the network): a fixed script,
 * no value of the job in it. systemd-run --no-block: cloud-init.service
 * runs before sysinit.target, which the unit's default dependencies wait
 * for, so waiting for the start would deadlock the boot; queued, the agent
 * starts once cloud-init's init stage has made the user and /etc/hosts,
 * so it says ready only after them. The agent gets a tmpfs of its own:
 * systemd 252 (Debian 12) mounts /run noexec, and the image's disk stays
 * untouched. */
static const char agent_start_script[] =
	"a=$(command -v " SEED_AGENT_NAME " || true)\n"
	"if [ -z \"$a\" ]; then\n"
	"  b=/run/slurm-vm/bin; d=/run/slurm-vm/seed; a=$b/" SEED_AGENT_NAME
	"\n"
	"  mkdir -p \"$b\" \"$d\" && { mountpoint -q \"$b\" ||\n"
	"    mount -t tmpfs -o mode=0755,size=8m slurm-vm \"$b\"; } &&\n"
	"    mount -o ro LABEL=" SEED_LABEL " \"$d\" &&\n"
	"    install -m 0755 \"$d/" SEED_AGENT_NAME "\" \"$a\"; umount \"$d\"\n"
	"fi\n"
	"[ -x \"$a\" ] || exit 0\n"
	"pgrep -x " SEED_AGENT_NAME " >/dev/null && exit 0\n"
	"if [ -d /run/systemd/system ]; then\n"
	"  systemd-run --no-block --unit=" SEED_AGENT_NAME
	" -p Restart=always \"$a\"\n"
	"else\n"
	"  setsid sh -c 'while :; do \"$0\"; sleep 1; done' \"$a\" "
	"</dev/null >/dev/null 2>&1 &\n"
	"fi\n";

/* A YAML double-quoted scalar: nothing in @s can end it or add structure. */
static void yaml_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* Names go to useradd/groupadd in the guest: printable ASCII only. */
static int check_name(const char *what, const char *s)
{
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e) {
			log_error(
				"%s \"%s\" has a character the guest cannot take",
				what, s);
			return -EINVAL;
		}
	return *s ? 0 : -EINVAL;
}

static int close_memstream(FILE *f, char **out)
{
	if (ferror(f)) {
		fclose(f);
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	if (fclose(f) != 0) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

int seed_meta_data(const struct seed_params *p, char **out)
{
	char id[64];
	size_t len;
	FILE *f = open_memstream(out, &len);

	if (!f)
		return -ENOMEM;
	snprintf(id, sizeof(id), "slurmvm-job-%" PRIu32 ".%u", p->job_id,
		 p->restart);
	fputs("instance-id: ", f);
	yaml_str(f, id);
	fputs("\nlocal-hostname: ", f);
	yaml_str(f, p->hostname);
	fputc('\n', f);
	return close_memstream(f, out);
}

/* groupadd unless the image has the group: name and gid are arguments. */
static void write_groupadd(FILE *f, const struct user_group *g)
{
	fputs("  - - sh\n"
	      "    - -c\n"
	      "    - 'getent group \"$1\" >/dev/null || groupadd -g \"$2\" \"$1\"'\n"
	      "    - slurm-vm-seed\n"
	      "    - ",
	      f);
	yaml_str(f, g->name);
	fprintf(f, "\n    - \"%u\"\n", (unsigned)g->gid);
}

/* A share mounted at its host path: tag, path (and 9p's options) are
 * arguments. One that cannot be mounted leaves the guest booting: its tasks
 * then start in /tmp with the agent's message. */
static void write_share_mount(FILE *f, unsigned i, const char *path,
			      enum shared_dir_transport transport)
{
	bool virtiofs = transport == SHARED_DIR_VIRTIOFS;
	char tag[32];

	snprintf(tag, sizeof(tag), SHARED_DIR_TAG_FMT, i);
	fputs("  - - sh\n"
	      "    - -c\n"
	      "    - 'mkdir -p \"$2\" && { mountpoint -q \"$2\" || ",
	      f);
	fputs(virtiofs ? "mount -t virtiofs \"$1\" \"$2\"; } || "
		       : "mount -t 9p -o \"$3\" \"$1\" \"$2\"; } || ",
	      f);
	fputs("echo \"slurm-vm: share $1 not mounted at $2\" >&2'\n"
	      "    - slurm-vm-share\n"
	      "    - ",
	      f);
	yaml_str(f, tag);
	fputs("\n    - ", f);
	yaml_str(f, path);
	fputs(virtiofs ? "\n" : "\n    - \"" SEED_SHARE_MOUNT_OPTIONS "\"\n",
	      f);
}

/* One authorized_keys line per entry; comments, blank lines and lines that
 * are not printable ASCII are left out. */
static void write_ssh_keys(FILE *f, const char *keys)
{
	bool header = false;

	while (keys && *keys) {
		size_t len = strcspn(keys, "\n");
		bool ok = len > 0 && keys[0] != '#';

		for (size_t i = 0; ok && i < len; i++)
			ok = (keys[i] >= 0x20 && keys[i] < 0x7f) ||
			     keys[i] == '\t' ||
			     (keys[i] == '\r' && i == len - 1);
		if (ok && !header) {
			fputs("    ssh_authorized_keys:\n", f);
			header = true;
		}
		if (ok) {
			_cleanup_free_ char *line = strndup(keys, len);

			if (line) {
				line[strcspn(line, "\r")] = '\0';
				fputs("      - ", f);
				yaml_str(f, line);
				fputc('\n', f);
			}
		}
		keys += len;
		if (*keys == '\n')
			keys++;
	}
}

/* The job's node names, appended so the image's own entries stay. */
static void write_hosts(FILE *f, const char *hosts)
{
	if (!hosts)
		return;
	fputs("write_files:\n  - path: /etc/hosts\n    append: true\n"
	      "    content: |\n",
	      f);
	while (*hosts) {
		size_t n = strcspn(hosts, "\n");

		fprintf(f, "      %.*s\n", (int)n, hosts);
		hosts += n + (hosts[n] == '\n');
	}
}

/* The job user as on the host; none (a warm start's template): no user,
 * not even the image's default one. */
static void write_user(FILE *f, const struct user_info *u)
{
	if (!u) {
		fputs("users: []\n", f);
		return;
	}
	fputs("users:\n  - name: ", f);
	yaml_str(f, u->name);
	fprintf(f, "\n    uid: %u\n    primary_group: ", (unsigned)u->uid);
	yaml_str(f, u->primary.name);
	fputs("\n    no_user_group: true\n", f);
	if (u->n_groups) {
		fputs("    groups: [", f);
		for (size_t i = 0; i < u->n_groups; i++) {
			if (i)
				fputs(", ", f);
			yaml_str(f, u->groups[i].name);
		}
		fputs("]\n", f);
	}
	fputs("    homedir: ", f);
	yaml_str(f, u->home);
	fputs("\n    shell: ", f);
	yaml_str(f, u->shell);
	fputs("\n    lock_passwd: true\n", f);
}

int seed_user_data(const struct seed_params *p, char **out)
{
	const struct user_info *u = p->user;
	size_t len;
	FILE *f;
	int r = 0;

	if (u)
		r = check_name("user name", u->name)
			    ?: check_name("group name", u->primary.name);
	for (size_t i = 0; r == 0 && u && i < u->n_groups; i++)
		r = check_name("group name", u->groups[i].name);
	if (r < 0)
		return r;
	f = open_memstream(out, &len);
	if (!f)
		return -ENOMEM;
	fprintf(f,
		"#cloud-config\n"
		"# slurm-vm: job %" PRIu32 ".%u, its user as on the host\n",
		p->job_id, p->restart);
	/* Groups first, with the host's gids: users_groups runs after bootcmd
	 * and knows no gids. */
	fputs("bootcmd:\n", f);
	for (size_t i = 0; u && i <= u->n_groups; i++)
		write_groupadd(f, i ? &u->groups[i - 1] : &u->primary);
	for (unsigned i = 0; i < p->n_shares; i++)
		write_share_mount(f, i, p->shares[i], p->share_transport);
	fputs("  - - sh\n    - -c\n    - |\n", f);
	for (const char *l = agent_start_script; *l;) {
		size_t n = strcspn(l, "\n");
		fprintf(f, "      %.*s\n", (int)n, l);
		l += n + (l[n] == '\n');
	}
	write_user(f, u);
	write_ssh_keys(f, p->ssh_keys);
	fputs("ssh_pwauth: false\n", f);
	/* The agent starts when cloud-init's init stage ends: keep it short.
	 * One host key type (ed25519 takes milliseconds, RSA 3072 seconds
	 * under TCG); no resize (the overlay has the image's size). */
	fputs("ssh_genkeytypes: [ed25519]\nresize_rootfs: false\n", f);
	write_hosts(f, p->hosts);
	return close_memstream(f, out);
}

int seed_network_config(const struct seed_params *p, char **out)
{
	static const char doc[] =
		"# slurm-vm: DHCP on a virtio NIC when the domain has one;\n"
		"# optional, so the boot never waits for it\n"
		"version: 2\n"
		"ethernets:\n"
		"  nic0:\n"
		"    match:\n"
		"      driver: virtio_net\n"
		"    dhcp4: true\n"
		"    optional: true\n";

	*out = strdup(p->network_config ?: doc);
	return *out ? 0 : -ENOMEM;
}

int seed_read_ssh_keys(const struct user_info *u, char **keys)
{
	_cleanup_free_ char *path = NULL;
	int r;

	*keys = NULL;
	if (asprintf(&path, "%s/.ssh/authorized_keys", u->home) < 0)
		return -ENOMEM;
	r = user_read_file(u->uid, u->gid, path, SEED_SSH_KEYS_MAX, keys);
	if (r == -ENOENT || r == -ENOTDIR)
		return 0;
	/* A hung home (NFS, FUSE) would hang the next read too. */
	if (r == -ETIMEDOUT)
		return log_errno(
			r,
			"%s could not be read as uid %u within %u s (a "
			"hung network or FUSE filesystem?)",
			path, (unsigned)u->uid, user_child_timeout_ms / 1000);
	if (r < 0)
		log_warn("%s not used: %s (as uid %u)", path,
			 r == -EFBIG ? "larger than 64 KiB" : strerror(-r),
			 (unsigned)u->uid);
	return 0;
}

static bool is_regular_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int seed_find_agent(const char *helper_dir, char **agent)
{
	if (asprintf(agent, "%s/" SEED_AGENT_NAME, helper_dir) < 0) {
		*agent = NULL;
		return -ENOMEM;
	}
	if (is_regular_file(*agent))
		return 0;
	free(*agent);
	*agent = strdup(SBINDIR "/" SEED_AGENT_NAME);
	if (!*agent)
		return -ENOMEM;
	if (is_regular_file(*agent))
		return 0;
	log_warn("no %s in %s or " SBINDIR " to put on the seed; the image "
		 "must have its own",
		 SEED_AGENT_NAME, helper_dir);
	free(*agent);
	*agent = NULL;
	return 0;
}

static int write_doc(int dirfd, const char *name, const char *text)
{
	_cleanup_close_ int fd = -1;
	size_t len = strlen(text);

	fd = openat(dirfd, name,
		    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (fd < 0)
		return log_errno(errno, "cannot write the seed's %s", name);
	if (write(fd, text, len) != (ssize_t)len)
		return log_errno(errno ?: EIO, "cannot write the seed's %s",
				 name);
	return 0;
}

/* The ISO holds the user's keys, groups and network plan: packed in the
 * seed's directory (root's, 0700: no one else can open it meanwhile), made
 * the job user's alone (qemu runs as the user; never its group's, which a
 * site may share among its users) and only then moved to @iso_path. */
static int iso_give_to_user(int dirfd, const char *iso_path,
			    const struct user_info *u)
{
	_cleanup_close_ int fd = -1;
	uid_t uid = u ? u->uid : 0;

	/* No user: a warm start's template seed, which every job's qemu
	 * reads and which holds nothing of anyone's. */
	fd = openat(dirfd, SEED_ISO_PACKED, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchown(fd, uid, u ? u->gid : 0) < 0 ||
	    fchmod(fd, u ? 0600 : 0644) < 0)
		return log_errno(errno, "cannot give the seed to uid %u",
				 (unsigned)uid);
	if (renameat(dirfd, SEED_ISO_PACKED, AT_FDCWD, iso_path) < 0)
		return log_errno(errno, "cannot move the seed to %s", iso_path);
	return 0;
}

int seed_build(const struct seed_params *p, const char *dir_path,
	       const char *iso_path)
{
	_cleanup_free_ char *meta = NULL, *user = NULL, *net = NULL;
	_cleanup_free_ char *meta_path = NULL, *user_path = NULL,
			    *net_path = NULL, *packed = NULL;
	_cleanup_close_ int dirfd = -1;
	char out[1024];
	int r;

	r = seed_meta_data(p, &meta);
	if (r == 0)
		r = seed_user_data(p, &user);
	if (r == 0)
		r = seed_network_config(p, &net);
	if (r < 0)
		return r;
	dirfd = open(dir_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0)
		return log_errno(errno, "cannot open %s", dir_path);
	r = write_doc(dirfd, "meta-data", meta);
	if (r == 0)
		r = write_doc(dirfd, "user-data", user);
	if (r == 0)
		r = write_doc(dirfd, "network-config", net);
	if (r < 0)
		return r;
	if (asprintf(&meta_path, "%s/meta-data", dir_path) < 0 ||
	    asprintf(&user_path, "%s/user-data", dir_path) < 0 ||
	    asprintf(&net_path, "%s/network-config", dir_path) < 0 ||
	    asprintf(&packed, "%s/" SEED_ISO_PACKED, dir_path) < 0)
		return -ENOMEM;
	/* -r: Rock Ridge names (lower case, '-'), readable by any isofs. */
	/* clang-format off */
	char *const argv[] = { SEED_GENISOIMAGE, "-quiet", "-input-charset",
			       "utf-8", "-volid", SEED_LABEL, "-joliet", "-r",
			       "-output", packed, meta_path,
			       user_path, net_path, (char *)p->agent, NULL };
	/* clang-format on */
	r = run_wait(argv, 60, out, sizeof(out));
	if (r != 0)
		return log_errno(r < 0 ? r : EIO, "%s for %s failed: %s",
				 SEED_GENISOIMAGE, iso_path, out);
	r = iso_give_to_user(dirfd, iso_path, p->user);
	/* -EINVAL is the user's (a seed that cannot hold them), never this */
	return r == -EINVAL ? -EIO : r;
}
