/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * OpenSM's own partitions.conf parser (opensm/osm_prtn_config.c of the
 * Debian source, compiled beside this file by test_opensm_parse.sh) with a
 * subnet of no ports: the partition calls it makes are recorded here and
 * printed, one line per partition and member:
 *
 *   partition NAME 0xPKEY
 *   member NAME 0xGUID full|limited
 *   member NAME ALL full|limited
 *
 * Exit 0 when OpenSM parsed the whole file, 1 when it refused it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <opensm/osm_log.h>
#include <opensm/osm_partition.h>
#include <opensm/osm_subnet.h>

int osm_prtn_config_parse_file(osm_log_t *p_log, osm_subn_t *p_subn,
			       const char *file_name);

#define MAX_PARTS 4096

static osm_prtn_t *parts[MAX_PARTS];
static size_t n_parts;

osm_prtn_t *osm_prtn_make_new(osm_log_t *p_log, osm_subn_t *p_subn,
			      const char *name, uint16_t pkey)
{
	osm_prtn_t *p;

	(void)p_log;
	(void)p_subn;
	pkey &= cl_hton16(0x7fff);
	for (size_t i = 0; i < n_parts; i++)
		if ((pkey && parts[i]->pkey == pkey) ||
		    (!pkey && name && strcmp(parts[i]->name, name) == 0))
			return parts[i]; /* OpenSM merges them the same way */
	if (!pkey || n_parts == MAX_PARTS)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pkey = pkey;
	snprintf(p->name, sizeof(p->name), "%s", name ? name : "");
	cl_map_construct(&p->full_guid_tbl);
	cl_map_construct(&p->part_guid_tbl);
	cl_map_init(&p->full_guid_tbl, 32);
	cl_map_init(&p->part_guid_tbl, 32);
	printf("partition %s 0x%04x\n", p->name, cl_ntoh16(p->pkey));
	return parts[n_parts++] = p;
}

ib_api_status_t osm_prtn_add_port(osm_log_t *p_log, osm_subn_t *p_subn,
				  osm_prtn_t *p, ib_net64_t guid,
				  boolean_t full, boolean_t indx0)
{
	(void)p_log;
	(void)p_subn;
	(void)indx0;
	printf("member %s 0x%016llx %s\n", p->name,
	       (unsigned long long)cl_ntoh64(guid), full ? "full" : "limited");
	return IB_SUCCESS;
}

ib_api_status_t osm_prtn_add_all(osm_log_t *p_log, osm_subn_t *p_subn,
				 osm_prtn_t *p, unsigned type, boolean_t full,
				 boolean_t indx0)
{
	(void)p_log;
	(void)p_subn;
	(void)indx0;
	printf("member %s ALL%s %s\n", p->name, type ? "_TYPE" : "",
	       full ? "full" : "limited");
	return IB_SUCCESS;
}

ib_api_status_t osm_prtn_add_mcgroup(osm_log_t *p_log, osm_subn_t *p_subn,
				     osm_prtn_t *p, uint8_t rate, uint8_t mtu,
				     uint8_t sl, uint8_t scope, uint32_t Q_Key,
				     uint8_t tclass, uint32_t FlowLabel,
				     const ib_gid_t *mgid)
{
	(void)p_log, (void)p_subn, (void)p, (void)rate, (void)mtu, (void)sl;
	(void)scope, (void)Q_Key, (void)tclass, (void)FlowLabel, (void)mgid;
	return IB_SUCCESS;
}

struct osm_mgrp *osm_get_mgrp_by_mgid(osm_subn_t *subn, ib_gid_t *mgid)
{
	(void)subn;
	(void)mgid;
	return NULL;
}

int main(int argc, char **argv)
{
	static osm_subn_t subn;
	static osm_log_t log;

	if (argc != 2) {
		fprintf(stderr, "usage: opensm-parse partitions.conf\n");
		return 2;
	}
	osm_log_construct(&log);
	if (osm_log_init_v2(&log, TRUE, OSM_LOG_ERROR, "/dev/stderr", 0,
			    FALSE) != IB_SUCCESS)
		return 2;
	/* osm_subn_construct() lives in the opensm binary, not libopensm:
	 * the parser reads only these. */
	memset(&subn, 0, sizeof(subn));
	cl_qmap_init(&subn.prtn_pkey_tbl);
	subn.opt.qos = FALSE;
	subn.opt.allow_both_pkeys = FALSE;
	return osm_prtn_config_parse_file(&log, &subn, argv[1]) ? 1 : 0;
}
