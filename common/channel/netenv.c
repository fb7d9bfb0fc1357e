/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/macro.h"
#include "channel/netenv.h"
#include "core/strutil.h"

/* ib_verbs' IB_PORT_ACTIVE: sysfs shows "4: ACTIVE". */
#define IB_PORT_ACTIVE 4

static bool env_has(char *const *env, const char *name)
{
	size_t len = strlen(name);

	for (; env && *env; env++)
		if (strncmp(*env, name, len) == 0 && (*env)[len] == '=')
			return true;
	return false;
}

/* A path in @buf; false when it does not fit. */
_printf_(3, 4) static bool path_fmt(char *buf, size_t size, const char *fmt,
				    ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < size;
}

/* The first line of a small sysfs attribute, without its newline. */
static int read_attr(const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static bool port_is_active_ib(const char *port_dir)
{
	char path[4096], state[64], layer[64];
	unsigned s;

	if (!path_fmt(path, sizeof(path), "%s/state", port_dir) ||
	    read_attr(path, state, sizeof(state)) < 0 ||
	    sscanf(state, "%u:", &s) != 1 || s != IB_PORT_ACTIVE)
		return false;
	return path_fmt(path, sizeof(path), "%s/link_layer", port_dir) &&
	       read_attr(path, layer, sizeof(layer)) == 0 &&
	       strcmp(layer, "InfiniBand") == 0;
}

static int entry_is_name(const struct dirent *d)
{
	/* A name that cannot break the list syntax "dev:port,dev:port"
	 * (the guest's root may rename devices). */
	return str_is_safe_name(d->d_name, 64);
}

/* The first full-member P_Key of @port_dir's table other than the default
 * partition's: the job's (IbPartitions=yes), without the membership bit;
 * 0 when there is none. */
static unsigned port_job_pkey(const char *port_dir)
{
	char dir[4096], path[4096], value[16];
	struct dirent **keys = NULL;
	unsigned key, found = 0;
	int n;

	if (!path_fmt(dir, sizeof(dir), "%s/pkeys", port_dir))
		return 0;
	n = scandir(dir, &keys, entry_is_name, versionsort);
	for (int i = 0; i < n; i++) {
		if (!found &&
		    path_fmt(path, sizeof(path), "%s/%s", dir,
			     keys[i]->d_name) &&
		    read_attr(path, value, sizeof(value)) == 0 &&
		    sscanf(value, "%x", &key) == 1 && (key & 0x8000) &&
		    (key & 0x7fff) != 0x7fff && (key & 0x7fff))
			found = key & 0x7fff;
		free(keys[i]);
	}
	free(keys);
	return found;
}

/* Appends "DEV:PORT" of each active InfiniBand port of @dev to @f; *@pkey
 * gets the first job P_Key found on them. */
static void ib_device_ports(FILE *f, const char *ib_dir, const char *dev,
			    bool *first, unsigned *pkey)
{
	char dir[4096], port_dir[4096];
	struct dirent **ports = NULL;
	int n;

	if (!path_fmt(dir, sizeof(dir), "%s/%s/ports", ib_dir, dev))
		return;
	n = scandir(dir, &ports, entry_is_name, versionsort);
	for (int i = 0; i < n; i++) {
		if (path_fmt(port_dir, sizeof(port_dir), "%s/%s", dir,
			     ports[i]->d_name) &&
		    port_is_active_ib(port_dir)) {
			fprintf(f, "%s%s:%s", *first ? "" : ",", dev,
				ports[i]->d_name);
			*first = false;
			if (!*pkey)
				*pkey = port_job_pkey(port_dir);
		}
		free(ports[i]);
	}
	free(ports);
}

/* "mlx5_0:1,mlx5_1:1" (malloc'd) or NULL when no port qualifies, and the
 * job's P_Key on them (0: none). */
static int ib_active_ports(const char *sysfs, char **list, unsigned *pkey)
{
	char dir[4096];
	struct dirent **devs = NULL;
	char *buf = NULL;
	size_t len = 0;
	bool first = true;
	FILE *f;
	int n;

	*list = NULL;
	if (!path_fmt(dir, sizeof(dir), "%s/class/infiniband", sysfs))
		return 0;
	n = scandir(dir, &devs, entry_is_name, versionsort);
	if (n <= 0)
		return 0;
	f = open_memstream(&buf, &len);
	for (int i = 0; i < n; i++) {
		if (f)
			ib_device_ports(f, dir, devs[i]->d_name, &first, pkey);
		free(devs[i]);
	}
	free(devs);
	if (!f)
		return -ENOMEM;
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	if (first)
		free(buf);
	else
		*list = buf;
	return 0;
}

/* Adds NAME=value to @out unless @env has NAME. */
static int add_default(char **out, int *n, char *const *env, const char *name,
		       const char *value)
{
	if (!value || env_has(env, name))
		return 0;
	if (asprintf(&out[*n], "%s=%s", name, value) < 0) {
		out[*n] = NULL;
		return -ENOMEM;
	}
	out[++*n] = NULL;
	return 0;
}

int netenv_defaults(const char *sysfs, char *const *env, char **out)
{
	static const char *const socket_vars[] = {
		"OMPI_MCA_btl_tcp_if_include",
		"OMPI_MCA_oob_tcp_if_include",
		"FI_TCP_IFACE",
		"NCCL_SOCKET_IFNAME",
	};
	_cleanup_free_ char *ib = NULL;
	const char *job = NETENV_JOB_IFACE;
	char path[4096], pkey_text[16];
	unsigned pkey = 0;
	int n = 0, r;

	out[0] = NULL;
	if (!path_fmt(path, sizeof(path), "%s/class/net/%s", sysfs,
		      NETENV_JOB_IFACE) ||
	    access(path, F_OK) < 0)
		job = NULL;
	r = ib_active_ports(sysfs, &ib, &pkey);
	snprintf(pkey_text, sizeof(pkey_text), "0x%04x", pkey);
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(socket_vars); i++)
		r = add_default(out, &n, env, socket_vars[i], job);
	if (r == 0)
		r = add_default(out, &n, env, "UCX_NET_DEVICES", ib ? ib : job);
	if (r == 0)
		r = add_default(out, &n, env, "NCCL_IB_HCA", ib);
	if (r == 0)
		r = add_default(out, &n, env, "UCX_IB_PKEY",
				pkey ? pkey_text : NULL);
	if (r == 0)
		r = add_default(out, &n, env, "OMPI_MCA_btl_openib_pkey",
				pkey ? pkey_text : NULL);
	if (r < 0) {
		netenv_free(out);
		return r;
	}
	return n;
}

void netenv_free(char **out)
{
	for (char **p = out; *p; p++)
		free(*p);
	out[0] = NULL;
}
