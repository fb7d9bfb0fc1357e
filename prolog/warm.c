/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * BootMode=warm (doc/design.md section 7): the job's guest is restored
 * from a template, a guest of the same image and shape booted once on this
 * node, without any job's identity, and saved. A template is WarmDir/KEY/:
 * its frozen overlay (every job's backing file), its seed, its save image
 * and, last, the marker that says it is whole. KEY digests what the saved
 * state depends on: the template's own domain XML (the guest's shape), the
 * files it boots and slurm-vm's version.
 *
 * A restore reads the save image through a FIFO with its head rewritten to
 * the job's name and uuid (vm/saveimage.h), hot-plugs the NIC and devices
 * into the paused guest, lets it run, and the relay hands the agent the
 * job's identity (slurm-vm-relay --persona) before the guest is ready.
 * Whatever refuses (no template can be made, libvirt, a hot-plug, a guest
 * that does not take its identity) is a cold boot: WARM_COLD.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "channel/persona_format.h"
#include "channel/proto.h"
#include "core/clock.h"
#include "core/fileutil.h"
#include "core/log.h"
#include "core/macro.h"
#include "core/run.h"
#include "core/strutil.h"
#include "job/user.h"
#include "prolog.h"
#include "vm/domain.h"
#include "vm/hypervisor.h"
#include "vm/pidfile.h"
#include "vm/saveimage.h"
#include "vm/warmcache.h"
#include "vm/seed.h"
#include "vm/teardown.h"

#define WARM_SAVE     "state.save"
#define WARM_OVERLAY  "overlay.qcow2"
#define WARM_SEED     "seed.iso"
#define WARM_FIFO     "warm.fifo"
#define WARM_PERSONA  "persona"
#define WARM_DOMAIN   "svm-warm-"
#define WARM_HOSTNAME "slurm-vm-template"

struct warm {
	char key[WARMCACHE_KEY_LEN + 1];
	char *dir; /* WarmDir/KEY */
	char *save, *overlay, *seed, *marker;
	char *key_text; /* what the key digests, kept in the marker */
};

static void warm_free(struct warm *w)
{
	free(w->dir);
	free(w->save);
	free(w->overlay);
	free(w->seed);
	free(w->marker);
	free(w->key_text);
}

/* Why this job boots cold though BootMode=warm; NULL: it need not. */
static const char *warm_refusal(const struct prolog *p)
{
	static char why[PATH_MAX + 160];
	char bad[PATH_MAX];

	if (!p->spec.name)
		return "a user's image boots cold (its template would be "
		       "theirs to tamper with)";
	if (p->spec.firmware && strcmp(p->spec.firmware, "uefi") == 0)
		return "UEFI guests boot cold";
	if (!p->conf.warm_templates)
		return "WarmTemplates=0";
	if (p->req.keep)
		return "--vm-keep keeps the overlay, which must not depend on a "
		       "template that ages out";
	/* The template's qemu is root's, and what it saves every later job
	 * restores: checked before a template is made and before each
	 * restore (a file replaced since is another key). */
	if (image_root_only(&p->spec, &p->chain, bad, sizeof(bad)) < 0) {
		snprintf(why, sizeof(why),
			 "%s is not root's alone (another user owns it, or "
			 "group or others may write it), and the warm "
			 "template runs the image's files as root",
			 bad);
		return why;
	}
	return NULL;
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

/* What a file is: a replaced image, kernel or agent is another template. */
static void key_file(FILE *f, const char *what, const char *path)
{
	struct stat st;

	if (!path)
		return;
	if (stat(path, &st) < 0) {
		fprintf(f, "%s %s missing\n", what, path);
		return;
	}
	fprintf(f, "%s %s %ju %ju %jd %ld.%09ld\n", what, path,
		(uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
		(intmax_t)st.st_size, (long)st.st_mtim.tv_sec,
		st.st_mtim.tv_nsec);
}

/* The template XML without what differs between jobs of one shape: the
 * pinning, the host NUMA nodes, the job's metadata. */
static void key_xml(FILE *f, const char *xml)
{
	static const char *const skip[][2] = {
		{ "<metadata>", "</metadata>" },
		{ "<cputune>", "</cputune>" },
		{ "<numatune>", "</numatune>" },
	};

	while (*xml) {
		const char *next = NULL;
		size_t k = 0;

		for (size_t i = 0; i < ARRAY_SIZE(skip); i++) {
			const char *at = strstr(xml, skip[i][0]);

			if (at && (!next || at < next)) {
				next = at;
				k = i;
			}
		}
		if (!next) {
			fputs(xml, f);
			return;
		}
		fwrite(xml, 1, (size_t)(next - xml), f);
		xml = strstr(next, skip[k][1]);
		if (!xml)
			return;
		xml += strlen(skip[k][1]);
	}
}

static int warm_paths(struct prolog *p, struct warm *w)
{
	if (asprintf(&w->dir, "%s/%s", p->conf.warm_dir, w->key) < 0 ||
	    asprintf(&w->save, "%s/" WARM_SAVE, w->dir) < 0 ||
	    asprintf(&w->overlay, "%s/" WARM_OVERLAY, w->dir) < 0 ||
	    asprintf(&w->seed, "%s/" WARM_SEED, w->dir) < 0 ||
	    asprintf(&w->marker, "%s/" WARMCACHE_MARKER, w->dir) < 0)
		return -ENOMEM;
	return 0;
}

/* The template's domain parameters: the job's shape, root's qemu (no job
 * user may touch what later jobs restore), no identity, its own files in
 * @dir, the shares' devices pointed at an empty directory root's qemu
 * cannot write (0555; libvirt drops qemu's capabilities), in mapped mode
 * (no host file with a guest's mode). */
static void template_params(struct prolog *p, struct boot_names *n,
			    const char *dir, struct domain_params *dp,
			    char **share_dirs, char **paths)
{
	unsigned n_shares = (unsigned)vmconf_n_shared_dirs(&p->conf);

	boot_domain_params(p, n, dp);
	dp->uid = 0;
	dp->gid = 0;
	dp->hotplug = true;
	dp->genid = "";
	snprintf(n->name, sizeof(n->name), WARM_DOMAIN "%s",
		 dir + strlen(dir) - WARMCACHE_KEY_LEN);
	if (asprintf(&paths[0], "%s/console.log", dir) < 0)
		paths[0] = NULL;
	if (asprintf(&paths[1], "%s/agent.sock", dir) < 0)
		paths[1] = NULL;
	if (asprintf(&paths[2], "%s/empty", dir) < 0)
		paths[2] = NULL;
	dp->console_log = paths[0];
	dp->channel_socket = paths[1];
	for (unsigned i = 0; i < n_shares; i++)
		share_dirs[i] = paths[2];
	dp->shares = share_dirs;
	dp->n_shares = n_shares;
	dp->shares_mapped = true;
	dp->share_sockets = NULL;
}

/* KEY: the digest of the template's XML (laid out in a stand-in WarmDir),
 * the files it boots, the agent its seed carries, slurm-vm's version. */
static int warm_key(struct prolog *p, const char *agent, struct warm *w)
{
	_cleanup_(boot_names_free) struct boot_names n = { 0 };
	_cleanup_free_ char *xml = NULL;
	char *share_dirs[SHARED_DIRS_MAX] = { 0 }, *paths[3] = { 0 };
	struct domain_params dp = { 0 };
	char key_dir[] = "/warm/0000000000000000";
	size_t len;
	FILE *f;
	int r;

	template_params(p, &n, key_dir, &dp, share_dirs, paths);
	dp.overlay = "/warm/" WARM_OVERLAY;
	dp.seed = "/warm/" WARM_SEED;
	r = domain_xml_build(&p->plan, &dp, &xml);
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++)
		free(paths[i]);
	if (r < 0)
		return r;
	f = open_memstream(&w->key_text, &len);
	if (!f)
		return -ENOMEM;
	fprintf(f, "slurm-vm %s\n", PACKAGE_VERSION);
	for (unsigned i = 0; i < p->chain.depth; i++)
		key_file(f, "layer", p->chain.layers[i].path);
	key_file(f, "kernel", p->spec.kernel);
	key_file(f, "initrd", p->spec.initrd);
	key_file(f, "emulator",
		 p->conf.emulator ?: "/usr/bin/qemu-system-x86_64");
	key_file(f, "agent", agent);
	key_xml(f, xml);
	if (fclose(f) != 0)
		return -ENOMEM;
	snprintf(w->key, sizeof(w->key), "%016" PRIx64, fnv1a(w->key_text));
	return warm_paths(p, w);
}

/* Waits until the agent on the channel socket @path says READY. */
static int agent_wait_ready(const char *path, unsigned timeout_s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct proto_hello hello = { .min_version = PROTO_VERSION_MIN,
				     .max_version = PROTO_VERSION_MAX };
	struct proto_reader rd = { 0 };
	struct proto_buf out = { 0 };
	struct proto_frame fr;
	double end = clock_now_s() + timeout_s;
	int fd = -1, r = -ETIMEDOUT;

	if (strlen(path) >= sizeof(sa.sun_path) || proto_reader_init(&rd) < 0)
		return -EINVAL;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getrandom(&hello.nonce, sizeof(hello.nonce), 0) < 0 ||
	    proto_put_hello(&out, &hello) < 0) {
		r = -errno ?: -EIO;
		goto out;
	}
	while (proto_buf_pending(&out))
		if (proto_buf_write(&out, fd) < 0)
			goto out;
	while (clock_now_s() < end) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (poll(&pfd, 1, 200) < 0 && errno != EINTR)
			break;
		if (!(pfd.revents & (POLLIN | POLLHUP)))
			continue;
		if (proto_reader_pull(&rd, fd) < 0)
			break;
		while (proto_reader_next(&rd, &fr) > 0)
			if (fr.hdr.kind == PROTO_READY) {
				r = 0;
				goto out;
			}
	}
out:
	if (fd >= 0)
		close(fd);
	proto_buf_free(&out);
	proto_reader_free(&rd);
	return r;
}

/* The template's seed: a hostname and the agent, nobody's user. */
static int template_seed(const struct warm *w, const char *agent)
{
	_cleanup_free_ char *seed_dir = NULL;
	struct seed_params sp = {
		.hostname = WARM_HOSTNAME,
		.agent = agent,
	};

	if (asprintf(&seed_dir, "%s/seed", w->dir) < 0)
		return -ENOMEM;
	if (mkdir(seed_dir, 0700) < 0 && errno != EEXIST)
		return log_errno(errno, "cannot create %s", seed_dir);
	return seed_build(&sp, seed_dir, w->seed);
}

/* Boots the template, waits for its agent and saves it; its overlay is
 * then read-only, every job's backing file. */
static int template_boot_save(struct prolog *p, const struct warm *w)
{
	_cleanup_(boot_names_free) struct boot_names n = { 0 };
	_cleanup_free_ char *xml = NULL;
	char *share_dirs[SHARED_DIRS_MAX] = { 0 }, *paths[3] = { 0 };
	struct domain_params dp = { 0 };
	struct hypervisor *hv = NULL;
	double t0 = clock_now_s();
	int r;

	template_params(p, &n, w->dir, &dp, share_dirs, paths);
	dp.overlay = w->overlay;
	dp.seed = w->seed;
	/* the shares' source: root's, and not even root's qemu may write it */
	r = paths[2] ? 0 : -ENOMEM;
	if (r == 0 && (mkdir(paths[2], 0555) < 0 || chmod(paths[2], 0555) < 0))
		r = log_errno(errno, "cannot create %s", paths[2]);
	if (r == 0)
		r = domain_xml_build(&p->plan, &dp, &xml);
	if (r == 0)
		r = hv_open(p->conf.libvirt_uri, &hv);
	if (r == 0) {
		/* a prolog killed while it made this one left it running */
		hv_destroy(hv, n.name);
		r = hv_create(hv, xml, p->plan.mem_limit_mib, NULL, NULL);
	}
	if (r == 0) {
		r = agent_wait_ready(dp.channel_socket, boot_time_left(p));
		if (r < 0)
			log_error("warm template %s: its agent was not ready "
				  "within %us (%s/console.log)",
				  n.name, p->conf.boot_timeout, w->dir);
		else
			r = hv_save(hv, n.name, w->save);
		if (r < 0)
			hv_destroy(hv, n.name);
	}
	if (r == 0)
		log_info("job %u: warm template %s booted and saved in %.1fs",
			 p->req.job_id, w->key, clock_now_s() - t0);
	hv_close(hv);
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++)
		free(paths[i]);
	return r;
}

/* Makes the template in WarmDir/KEY (another prolog making it: -EBUSY). */
static int template_build(struct prolog *p, const struct warm *w,
			  const char *agent)
{
	char out[1024];
	int r;

	warmcache_remove_tree(w->dir); /* an unfinished one */
	if (mkdir(w->dir, 0755) < 0)
		return log_errno(errno, "cannot create %s", w->dir);
	r = boot_overlay_create(w->overlay, &p->chain.layers[0], true, out,
				sizeof(out));
	if (r != 0) {
		log_error("warm template %s: qemu-img: %s", w->key, out);
		r = -EIO;
	}
	if (r == 0)
		r = template_seed(w, agent);
	if (r == 0)
		r = template_boot_save(p, w);
	if (r == 0 && (chmod(w->overlay, 0444) < 0 || chmod(w->save, 0400) < 0))
		r = log_errno(errno, "cannot freeze template %s", w->dir);
	if (r == 0)
		/* the marker last: a template without it is unfinished */
		r = file_replace(w->marker, w->key_text, strlen(w->key_text),
				 0444);
	if (r < 0)
		warmcache_remove_tree(w->dir);
	return r;
}

static int lock_template(const struct prolog *p, const struct warm *w)
{
	_cleanup_free_ char *path = NULL;
	int fd;

	if (asprintf(&path, "%s/%s.lock", p->conf.warm_dir, w->key) < 0)
		return -ENOMEM;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return log_errno(errno, "cannot open %s", path);
	/* Shared to restore (the template stays), exclusive to make it. */
	if (flock(fd, LOCK_SH | LOCK_NB) < 0) {
		close(fd);
		return -EBUSY;
	}
	return fd;
}

/* The template of @w, made when there is none: the lock fd held while the
 * job uses it, or -errno (-EBUSY: another prolog makes it). */
static int template_ready(struct prolog *p, struct warm *w, const char *agent)
{
	int fd, r;

	r = dir_open_root_private(p->conf.warm_dir, 0755, "WarmDir");
	if (r < 0)
		return r;
	close(r);
	fd = lock_template(p, w);
	if (fd < 0)
		return fd;
	if (access(w->marker, F_OK) == 0)
		return fd;
	/* None: make it, alone. */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return -EBUSY;
	}
	r = template_build(p, w, agent);
	if (r < 0) {
		close(fd);
		return r;
	}
	flock(fd, LOCK_SH);
	return fd;
}

/* The names and home NSS gives go into the persona file as they are; the
 * format's own checks (channel/persona_format.h: the relay's and the agent's)
 * decide what it can carry. A user it cannot (a name with a space or a
 * control character, a home with ':') boots cold, where the seed says
 * why: never a relay that refuses its file, a drained node. */
static bool persona_user_ok(const struct user_info *u)
{
	bool ok = persona_name_ok(u->name) &&
		  persona_name_ok(u->primary.name) && u->home[0] == '/' &&
		  !strchr(u->home, ':') && str_is_utf8_text(u->home);

	for (size_t i = 0; ok && i < u->n_groups; i++)
		ok = persona_name_ok(u->groups[i].name);
	return ok;
}

/* The user's authorized_keys lines, as the seed gives them to cloud-init
 * (comments, blank and non-ASCII lines left out, a tab made a space). */
static void persona_write_keys(struct persona_writer *w, const char *keys)
{
	while (keys && *keys) {
		size_t len = strcspn(keys, "\n");
		_cleanup_free_ char *line = strndup(keys, len);
		bool ok = line && len > 0 && keys[0] != '#';

		if (ok && line[len - 1] == '\r')
			line[len - 1] = '\0';
		for (char *c = line; ok && *c; c++) {
			if (*c == '\t')
				*c = ' ';
			ok = *c >= 0x20 && *c < 0x7f;
		}
		if (ok && line[0])
			persona_writef(w, "authorized_key", "%s", line);
		keys += len;
		if (*keys == '\n')
			keys++;
	}
}

static void persona_write_entries(struct prolog *p, struct persona_writer *w,
				  const struct user_info *u, const char *keys)
{
	char mac[18], ip[16];

	persona_writef(w, "hostname", "%s", p->alloc.node);
	persona_writef(w, "group", "%s:%u", u->primary.name,
		       (unsigned)u->primary.gid);
	for (size_t i = 0; i < u->n_groups; i++)
		persona_writef(w, "group", "%s:%u", u->groups[i].name,
			       (unsigned)u->groups[i].gid);
	if (u->shell && u->shell[0] == '/' && !strchr(u->shell, ':'))
		persona_writef(w, "shell", "%s", u->shell);
	persona_writef(w, "user", "%s:%u:%u:%s", u->name, (unsigned)u->uid,
		       (unsigned)p->req.gid, u->home);
	for (size_t i = 0; i < u->n_groups; i++)
		persona_writef(w, "member", "%s", u->groups[i].name);
	persona_write_keys(w, keys);
	if (p->has_net) {
		jobnet_mac_string(&p->net, p->net.self, mac);
		jobnet_ip_string(&p->net, p->net.self, ip);
		persona_writef(w, "net", "%s %s %s/%u %u", mac,
			       JOBNET_GUEST_IFNAME, ip, p->net.prefix,
			       p->net.mtu);
		for (size_t i = 0; i < p->net.n_nodes; i++) {
			jobnet_ip_string(&p->net, i, ip);
			persona_writef(w, "hosts", "%s %s", ip,
				       p->net.nodes[i].name);
		}
	}
	for (unsigned i = 0; i < vmconf_n_shared_dirs(&p->conf); i++)
		if (p->share_transport == SHARED_DIR_VIRTIOFS)
			persona_writef(w, "share",
				       SHARED_DIR_TAG_FMT " virtiofs - %s", i,
				       p->conf.shared_dirs[i]);
		else
			persona_writef(w, "share",
				       SHARED_DIR_TAG_FMT " 9p %s %s", i,
				       SEED_SHARE_MOUNT_OPTIONS,
				       p->conf.shared_dirs[i]);
}

/* "key=value" lines: what the relay tells the restored agent. -ESRCH: no
 * such user (a job fault); -EINVAL: what the user's NSS entry or keys
 * hold cannot be carried (a cold boot); other: the node's. */
static int persona_write(struct prolog *p, const char *path)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *keys = NULL;
	struct persona_writer w;
	struct user_info u;
	FILE *f;
	int r;

	if (boot_user_load(p, &u) < 0)
		return -ESRCH;
	/* a home that hangs or cannot be read: the cold boot says why */
	if (!persona_user_ok(&u) || seed_read_ssh_keys(&u, &keys) < 0) {
		user_info_free(&u);
		return -EINVAL;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		r = log_errno(errno, "cannot write %s", path);
		user_info_free(&u);
		return r;
	}
	fd = -1;
	persona_writer_init(&w, f);
	persona_write_entries(p, &w, &u, keys);
	user_info_free(&u);
	r = w.error;
	if (fclose(f) != 0 && r == 0)
		r = log_errno(errno, "cannot write %s", path);
	if (r == -EINVAL || r == -E2BIG)
		log_info("job %u: the persona cannot carry the job's identity "
			 "(%s)",
			 p->req.job_id, strerror(-r));
	return r == -E2BIG ? -EINVAL : r;
}

static void random_uuid(char *uuid)
{
	uint8_t b[16];

	if (getrandom(b, sizeof(b), 0) != sizeof(b))
		for (size_t i = 0; i < sizeof(b); i++)
			b[i] = (uint8_t)rand();
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	sprintf(uuid,
		"%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
		b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* The FIFO's writer, until the prolog kills it: a reader gets the renamed
 * head, then the template's stream; one that goes away before the end
 * (EPIPE) leaves it to the next. A reader after the whole stream gets EOF
 * at once: a libvirt that opens once more fails, it never hangs on a FIFO
 * nobody writes. */
static pid_t feed_fifo(const char *fifo, int save_fd, const uint8_t *head,
		       size_t head_len, off_t stream_offset)
{
	pid_t pid = fork();
	bool served = false;

	if (pid != 0)
		return pid;
	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		int fd = open(fifo, O_WRONLY | O_CLOEXEC);
		int r;

		if (fd < 0)
			_exit(1);
		if (!served) {
			r = write_all(fd, head, head_len);
			if (r == 0)
				r = saveimage_copy_stream(save_fd,
							  stream_offset, fd);
			served = r == 0;
			if (r < 0 && r != -EPIPE)
				_exit(2);
		}
		/* the next open would find this reader again: wait for it to
		 * go (a pipe's writer sees POLLERR then) */
		while (served) {
			struct pollfd pfd = { .fd = fd };

			if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
				_exit(3);
			if (pfd.revents & (POLLERR | POLLHUP))
				break;
		}
		close(fd);
	}
}

/* libvirt 9.0 reads a save image through one open, so a FIFO fed with the
 * renamed head costs no copy. Later releases open it twice, the metadata
 * first (qemuSaveImageGetMetadata), then qemu's stream: two readers of one
 * pipe cannot be told apart (libvirt 11.3 read the stream where the magic
 * should be). They get a copy of the save image under the job's name in
 * OverlayDir, deleted once the guest is restored; the stream keeps its
 * offset, so a filesystem with reflinks may share its blocks. */
#define FIFO_LIBVIRT_MAX 9000999ul

static int copy_save_image(const char *path, int save_fd, const uint8_t *head,
			   size_t head_len, off_t stream_offset)
{
	_cleanup_close_ int fd =
		open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		     0600);
	int r;

	if (fd < 0)
		return log_errno(errno, "cannot create %s", path);
	r = write_all(fd, head, head_len);
	if (r == 0)
		r = saveimage_copy_stream(save_fd, stream_offset, fd);
	if (r < 0)
		return log_errno(r, "cannot copy the template's state to %s",
				 path);
	return 0;
}

struct hotplug {
	struct prolog *p;
	const char *name;
	char **xmls; /* the NIC first, when there is one */
	struct hypervisor *hv;
	bool failed;
};

/* In the paused guest: its NIC (then its tap is locked before a frame)
 * and its devices at the planned addresses. */
static int hotplug_all(void *arg)
{
	struct hotplug *h = arg;
	struct boot_tap_guard guard = { .p = h->p };

	for (size_t i = 0; h->xmls[i]; i++) {
		if (hv_attach(h->hv, h->name, h->xmls[i]) < 0) {
			h->failed = true;
			return -EIO;
		}
		if (i == 0 && h->p->has_net && boot_guard_tap(&guard) < 0)
			return -EIO;
	}
	return 0;
}

/* The job's guest from the template: job overlay over the template's,
 * restored through the FIFO, hot-plugged, running. */
static int restore(struct prolog *p, const struct warm *w, char **overlay)
{
	_cleanup_(boot_names_free) struct boot_names n = { 0 };
	_cleanup_free_ char *xml = NULL, *fifo = state_file(p, WARM_FIFO);
	_cleanup_free_ char *copy = NULL;
	unsigned long version = 0;
	_cleanup_(strv_freep) char **hot = NULL;
	_cleanup_free_ uint8_t *head = NULL;
	_cleanup_close_ int save_fd = -1;
	struct image_layer base = { .format = IMAGE_FORMAT_QCOW2 };
	struct domain_layer backing[IMAGE_CHAIN_MAX];
	struct domain_params dp = { 0 };
	struct saveimage img = { 0 };
	struct hotplug h = { .p = p };
	char genid[37], uuid[37], out[1024];
	size_t head_len;
	pid_t feeder = -1;
	int r, status;

	save_fd = open(w->save, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (save_fd < 0 || !fifo)
		return log_errno(errno, "cannot open %s", w->save);
	r = saveimage_read(save_fd, &img);
	if (r == 0)
		r = saveimage_genid(&img, genid);
	if (r < 0) {
		log_error("warm template %s: %s is no whole save image with a "
			  "generation ID",
			  w->key, w->save);
		goto out;
	}
	boot_domain_params(p, &n, &dp);
	random_uuid(uuid);
	dp.uuid = uuid;
	dp.genid = genid;
	dp.hotplug = true;
	/* the job's overlay over the template's, over the image chain */
	backing[0].path = p->chain.layers[0].path;
	backing[0].format = image_format_name(p->chain.layers[0].format);
	memcpy(backing + 1, n.backing, sizeof(*backing) * dp.n_backing);
	dp.image = w->overlay;
	dp.image_format = "qcow2";
	dp.backing = backing;
	dp.n_backing++;
	dp.seed = w->seed;
	r = -ENOMEM;
	if (asprintf(overlay, "%s/%s.qcow2", p->conf.overlay_dir,
		     p->state_name) < 0) {
		*overlay = NULL;
		goto out;
	}
	dp.overlay = *overlay;
	r = domain_xml_build(&p->plan, &dp, &xml);
	if (r == 0)
		r = domain_hotplug_xmls(&p->plan, &dp, &hot);
	if (r == 0)
		r = saveimage_renamed_head(&img, n.name, uuid, &head,
					   &head_len);
	if (r < 0)
		goto out;
	if (state_journal(p, JOURNAL_OVERLAY, *overlay) < 0) {
		r = -EIO;
		goto out;
	}
	base.path = w->overlay;
	base.virtual_size = p->chain.layers[0].virtual_size;
	r = boot_overlay_create(*overlay, &base, true, out, sizeof(out));
	if (r != 0) {
		log_error("job %u: qemu-img over template %s: %s",
			  p->req.job_id, w->key, out);
		r = -EIO;
		goto out;
	}
	if (chown(*overlay, p->req.uid, p->req.gid) < 0 ||
	    chmod(*overlay, 0600) < 0) {
		r = log_errno(errno, "cannot give overlay %s to uid %u",
			      *overlay, (unsigned)p->req.uid);
		goto out;
	}
	r = hv_open(p->conf.libvirt_uri, &h.hv);
	if (r == 0)
		r = hv_lib_version(h.hv, &version);
	if (r < 0)
		goto out;
	if (version > FIFO_LIBVIRT_MAX) {
		if (asprintf(&copy, "%s/%s.save", p->conf.overlay_dir,
			     p->state_name) < 0) {
			copy = NULL;
			r = -ENOMEM;
			goto out;
		}
		/* OVERLAY: a file in OverlayDir the teardown deletes */
		unlink(copy);
		r = state_journal(p, JOURNAL_OVERLAY, copy) < 0 ? -EIO : 0;
		if (r == 0)
			r = copy_save_image(copy, save_fd, head, head_len,
					    saveimage_stream_offset(&img));
		if (r < 0)
			goto out;
	} else {
		unlink(fifo);
		if (mkfifo(fifo, 0600) < 0) {
			r = log_errno(errno, "cannot make %s", fifo);
			goto out;
		}
	}
	if (state_journal(p, JOURNAL_DOMAIN, n.name) < 0) {
		r = -EIO;
		goto out;
	}
	if (!copy) {
		feeder = feed_fifo(fifo, save_fd, head, head_len,
				   saveimage_stream_offset(&img));
		if (feeder < 0) {
			r = log_errno(errno, "cannot fork the FIFO's writer");
			goto out;
		}
	}
	h.name = n.name;
	h.xmls = hot;
	r = hv_restore(h.hv, copy ? copy : fifo, n.name, xml,
		       p->plan.mem_limit_mib, hotplug_all, &h);
	if (r == 0)
		boot_record_qemu(p, n.name);
out:
	hv_close(h.hv);
	if (copy)
		unlink(copy);
	if (feeder > 0) {
		kill(feeder, SIGKILL); /* done, or blocked on a FIFO unread */
		waitpid(feeder, &status, 0);
	}
	if (fifo)
		unlink(fifo);
	saveimage_free(&img);
	return r;
}

/* Takes back what restore() left when the guest cannot be the job's: the
 * guest first (destroyed, its virtiofsd end with it), then every record of
 * its own in the journal, so that a cold boot starts its own virtiofsd,
 * relay and overlay. */
static void restore_undo(struct prolog *p)
{
	struct teardown_result res;
	struct hypervisor *hv = NULL;
	char name[96];

	boot_domain_name(p, name, sizeof(name));
	if (hv_open(p->conf.libvirt_uri, &hv) == 0) {
		hv_destroy(hv, name);
		hv_close(hv);
	}
	teardown_guest_only(&p->conf, p->state_fd, &res);
	if (res.failed)
		log_error("job %u: %u of %u steps undoing the restored guest "
			  "failed",
			  p->req.job_id, res.failed, res.steps);
	unlinkat(p->state_fd, QEMU_PIDFILE, 0);
	strv_free(p->share_sockets);
	p->share_sockets = NULL;
}

enum prolog_result prolog_warm(struct prolog *p)
{
	_cleanup_free_ char *agent = NULL, *overlay = NULL,
			    *persona = state_file(p, WARM_PERSONA);
	_cleanup_(warm_free) struct warm w = { 0 };
	_cleanup_close_ int lock_fd = -1;
	enum prolog_result res;
	const char *why = warm_refusal(p);
	double t0 = clock_now_s();
	int r;

	if (why) {
		log_info("job %u: boots cold: %s", p->req.job_id, why);
		return WARM_COLD;
	}
	if (seed_find_agent(p->conf.helper_dir, &agent) < 0 || !persona ||
	    warm_key(p, agent, &w) < 0)
		return WARM_COLD;
	lock_fd = template_ready(p, &w, agent);
	if (lock_fd < 0) {
		log_info("job %u: boots cold: no warm template %s (%s)",
			 p->req.job_id, w.key,
			 lock_fd == -EBUSY ? "another job makes it"
					   : strerror(-lock_fd));
		return WARM_COLD;
	}
	r = persona_write(p, persona);
	if (r == -ESRCH)
		return PROLOG_JOB_FAULT;
	if (r == -EINVAL) {
		log_info("job %u: boots cold: user %s's name, groups, home or "
			 "keys, or the job's size, cannot be written as the "
			 "guest's identity",
			 p->req.job_id, p->req.user);
		return WARM_COLD;
	}
	if (r < 0)
		return PROLOG_NODE_FAULT;
	/* virtiofs shares are hot-plugged: their virtiofsd listen first */
	res = prolog_virtiofs(p);
	if (res != PROLOG_OK)
		return res;
	r = restore(p, &w, &overlay);
	if (r < 0) {
		log_warn("job %u: boots cold: template %s cannot be restored "
			 "(%s: %s)",
			 p->req.job_id, w.key, strerror(-r), log_last_error());
		restore_undo(p);
		return WARM_COLD;
	}
	log_info("job %u: restored from warm template %s in %.1fs",
		 p->req.job_id, w.key, clock_now_s() - t0);
	utimensat(AT_FDCWD, w.marker, NULL, 0); /* used now */
	close(lock_fd);
	lock_fd = -1;
	warmcache_evict(p->conf.warm_dir, p->conf.warm_templates,
			p->conf.warm_cache_gib << 30);
	t0 = clock_now_s();
	/* A relay that cannot start with this persona is no node fault: a
	 * cold boot starts one without it, and that one's failure is. */
	res = boot_relay(p, persona);
	if (res != PROLOG_OK) {
		log_warn("job %u: boots cold: the relay of the guest restored "
			 "from template %s did not start",
			 p->req.job_id, w.key);
		restore_undo(p);
		return WARM_COLD;
	}
	res = boot_wait_ready(p, t0);
	if (res == PROLOG_JOB_FAULT && boot_time_left(p) == 0) {
		/* a cold boot now would wait BootTimeout again */
		log_warn("job %u: the guest restored from template %s did not "
			 "become the job's within BootTimeout=%us (%s)",
			 p->req.job_id, w.key, p->conf.boot_timeout, p->reason);
		restore_undo(p);
		return PROLOG_JOB_FAULT;
	}
	if (res == PROLOG_JOB_FAULT) {
		log_warn("job %u: boots cold: the guest restored from template "
			 "%s did not become the job's (%s)",
			 p->req.job_id, w.key, p->reason);
		restore_undo(p);
		unlinkat(p->state_fd, "reason", 0);
		p->reason_recorded = false;
		return WARM_COLD;
	}
	return res;
}
