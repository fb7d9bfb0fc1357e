/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tasks in the guest: slurmstepd's --multi-prog grammar, the task map the
 * prolog records and the translation of a task's environment. */
#include "config.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/log.h"
#include "job/multiprog.h"
#include "core/strutil.h"
#include "job/taskenv.h"
#include "hw/taskmap.h"

/* SLURM_VERSION_NUMBER of a release. */
#define SLURM_22_05 ((22u << 16) | (5u << 8))
#define SLURM_24_05 ((24u << 16) | (5u << 8) | 8u)
#define SLURM_24_11 ((24u << 16) | (11u << 8))

/* ---- --multi-prog ---- */

static void assert_argv(char **argv, const char *want)
{
	_cleanup_free_ char *got = strv_join((const char *const *)argv, "|");

	assert_non_null(got);
	assert_string_equal(got, want);
}

static void assert_task(const char *conf, unsigned rank, const char *want)
{
	char **argv = NULL;

	assert_int_equal(multiprog_task_argv(conf, rank, NULL, 0, &argv), 0);
	assert_argv(argv, want);
	strv_free(argv);
}

static void test_multiprog_ranks(void **state)
{
	const char *conf = "# a comment\n"
			   "\n"
			   "0      echo zero\n"
			   "  1-2,4 echo t=%t o=%o\n"
			   "3,5-6  echo three\n"
			   "*      echo rest %t\n";

	assert_task(conf, 0, "echo|zero");
	assert_task(conf, 1, "echo|t=1|o=0");
	assert_task(conf, 2, "echo|t=2|o=1");
	assert_task(conf, 4, "echo|t=4|o=2");
	assert_task(conf, 6, "echo|three");
	assert_task(conf, 9, "echo|rest|9");
	/* the first line that holds the rank wins */
	assert_task("0-3 a\n2 b\n", 2, "a");
}

static void test_multiprog_quoting(void **state)
{
	assert_task("0 sh -c 'echo a  b; exit 3'", 0,
		    "sh|-c|echo a  b; exit 3");
	assert_task("0 echo a\\ b \\'c", 0, "echo|a b|'c");
	assert_task("0 printf ''", 0, "printf|");
	assert_task("0 echo 100%d%%t", 0, "echo|100t");
	assert_task("0 echo x%", 0, "echo|x");
	assert_task("0\techo\t tabs  ", 0, "echo|tabs");
	/* a continued line is one entry, never a line of its own */
	assert_task("0 echo a \\\nb\n1 x\n", 0, "echo|a|b");
	assert_task("0 echo a \\\n1 x\n2 y\n", 2, "y");
}

static void test_multiprog_extra_and_errors(void **state)
{
	char *extra[] = { "x", "y z" };
	char **argv = NULL;
	_cleanup_free_ char *big = NULL;

	assert_int_equal(multiprog_task_argv("* prog", 3, extra, 2, &argv), 0);
	assert_argv(argv, "prog|x|y z");
	strv_free(argv);
	assert_int_equal(multiprog_task_argv("0 a\n", 1, NULL, 0, &argv),
			 -ENOENT);
	assert_int_equal(multiprog_task_argv("0\n", 0, NULL, 0, &argv),
			 -EINVAL);
	/* a continuation line is never an entry */
	assert_int_equal(
		multiprog_task_argv("0 a \\\n1 x\n", 1, NULL, 0, &argv),
		-ENOENT);
	assert_int_equal(multiprog_task_argv("0 'open", 0, NULL, 0, &argv),
			 -EINVAL);
	assert_int_equal(multiprog_task_argv("x-y a\n", 0, NULL, 0, &argv),
			 -ENOENT);
	/* at most MULTIPROG_MAX_ARGC - 1 arguments, as slurmstepd */
	big = malloc(2 + 2 * 300 + 1);
	strcpy(big, "0");
	for (int i = 0; i < 300; i++)
		strcat(big, " a");
	assert_int_equal(multiprog_task_argv(big, 0, NULL, 0, &argv), 0);
	assert_int_equal(strv_length(argv), MULTIPROG_MAX_ARGC - 1);
	strv_free(argv);
}

/* ---- the task map ---- */

/* vCPUs 0-3 on host CPUs 2,3,6,7; one cell on host node 1; three GPUs
 * whose guest PCI order (fc, fd, fe) is not their slurmd order (3, 0, 1). */
static const char *const map_text = "vcpu 0 2\n"
				    "vcpu 1 3\n"
				    "vcpu 2 6\n"
				    "vcpu 3 7\n"
				    "cell 0 1\n"
				    "device gpu 1 0000:fe:00.0\n"
				    "device gpu 0 0000:fd:00.0\n"
				    "device ibvf 0 0000:fb:00.0\n"
				    "device gpu 3 0000:fc:00.0\n";

static void load_map(struct task_map *m)
{
	assert_int_equal(task_map_parse(map_text, m), 0);
}

static void test_task_map_roundtrip(void **state)
{
	struct task_map m;
	char *text = NULL;

	load_map(&m);
	assert_int_equal(m.n_vcpus, 4);
	assert_int_equal(m.n_cells, 1);
	assert_int_equal(m.n_devices, 4);
	assert_int_equal(task_map_format(&m, &text), 0);
	assert_string_equal(text, map_text);
	free(text);
	task_map_free(&m);
}

static void test_task_map_refuses(void **state)
{
	static const char *const bad[] = {
		"",			/* no vCPU */
		"vcpu 1 2\n",		/* out of order */
		"vcpu 0 2\nvcpu 0 3\n", /* duplicate */
		"vcpu 0 -2\n",		/* sign */
		"vcpu 0 2 9\n",		/* trailing field */
		"vcpu 0 2\ncell 0\n",	/* short */
		"vcpu 0 2\ndevice gpu x 0000:fe:00.0\n",
		"vcpu 0 2\ndevice gpu 0 0000:fe:00\n",
		"vcpu 0 2\ndevice ../x 0 0000:fe:00.0\n",
		"vcpu 0 2\nshell rm -rf\n",
		"vcpu 0 99999\n", /* beyond any mask */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct task_map m;

		assert_int_equal(task_map_parse(bad[i], &m), -EINVAL);
	}
}

static void test_task_map_from_plan(void **state)
{
	struct plan_vcpu vcpus[] = { { .pu = 5 }, { .pu = 4 } };
	struct plan_cell cells[] = { { .host_node = 0 } };
	struct plan_pci funcs[] = { { .primary = true, .function = 0 } };
	struct plan_device devs[] = { {
		.gres = "gpu",
		.gres_index = 1,
		.guest_bus = 0xfe,
		.funcs = funcs,
		.n_funcs = 1,
	} };
	struct plan plan = { .n_vcpus = 2,
			     .vcpus = vcpus,
			     .n_cells = 1,
			     .cells = cells,
			     .n_devices = 1,
			     .devices = devs };
	struct task_map m;
	char *text = NULL;

	assert_int_equal(task_map_from_plan(&plan, &m), 0);
	assert_int_equal(task_map_format(&m, &text), 0);
	assert_string_equal(text, "vcpu 0 5\nvcpu 1 4\ncell 0 0\n"
				  "device gpu 1 0000:fe:00.0\n");
	free(text);
	task_map_free(&m);
}

static void test_affinity(void **state)
{
	struct task_map m;
	cpu_set_t set;
	char *v = NULL;

	load_map(&m);
	CPU_ZERO(&set);
	CPU_SET(2, &set);
	CPU_SET(3, &set);
	CPU_SET(7, &set);
	CPU_SET(9, &set); /* not the guest's: ignored */
	assert_int_equal(taskenv_affinity(&m, &set, &v), 0);
	assert_string_equal(v, "0-1,3");
	free(v);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	assert_int_equal(taskenv_affinity(&m, &set, &v), -ENOENT);
	task_map_free(&m);
}

/* ---- the environment ---- */

static char **translate(const struct taskenv_rule *rule, const char **env)
{
	struct task_map m;
	char **out = NULL;

	load_map(&m);
	assert_int_equal(taskenv_translate(&m, rule, (char *const *)env, &out),
			 0);
	task_map_free(&m);
	return out;
}

static void assert_env(char **env, const char *name, const char *want)
{
	size_t len = strlen(name);
	const char *got = NULL;

	for (; *env; env++)
		if (!strncmp(*env, name, len) && (*env)[len] == '=')
			got = *env + len + 1;
	if (!want) {
		if (got)
			fail_msg("%s=%s should be gone", name, got);
		return;
	}
	if (!got)
		fail_msg("%s is missing", name);
	assert_string_equal(got, want);
}

static void test_env_gpus(void **state)
{
	struct taskenv_rule rule = { 0 };
	/* slurmd's indices 1 and 3: guest ordinals 2 and 0 */
	const char *global[] = {
		"SLURM_STEP_GPUS=1,3",	    "CUDA_VISIBLE_DEVICES=1,3",
		"ROCR_VISIBLE_DEVICES=1,3", "GPU_DEVICE_ORDINAL=1,3",
		"ZE_AFFINITY_MASK=1,3",	    NULL
	};
	/* ConstrainDevices: local ordinals, the same GPUs */
	const char *local[] = { "CUDA_VISIBLE_DEVICES=0,1",
				"SLURM_STEP_GPUS=1,3", NULL };
	const char *uuid[] = { "SLURM_STEP_GPUS=1",
			       "CUDA_VISIBLE_DEVICES=GPU-8f2a", NULL };
	const char *user[] = { "CUDA_VISIBLE_DEVICES=1", NULL };
	const char *lost[] = { "SLURM_STEP_GPUS=2", "CUDA_VISIBLE_DEVICES=2",
			       NULL };
	char **out;

	out = translate(&rule, global);
	assert_env(out, "CUDA_VISIBLE_DEVICES", "2,0");
	assert_env(out, "ROCR_VISIBLE_DEVICES", "2,0");
	assert_env(out, "GPU_DEVICE_ORDINAL", "2,0");
	assert_env(out, "ZE_AFFINITY_MASK", "2,0");
	assert_env(out, "SLURM_STEP_GPUS", "1,3"); /* Slurm's names stay */
	strv_free(out);
	out = translate(&rule, local);
	assert_env(out, "CUDA_VISIBLE_DEVICES", "2,0");
	strv_free(out);
	out = translate(&rule, uuid);
	assert_env(out, "CUDA_VISIBLE_DEVICES", "GPU-8f2a");
	strv_free(out);
	out = translate(&rule, user);
	assert_env(out, "CUDA_VISIBLE_DEVICES", "1");
	strv_free(out);
	out = translate(&rule, lost);
	assert_env(out, "CUDA_VISIBLE_DEVICES", "2");
	strv_free(out);
}

static void test_env_cpu_bind(void **state)
{
	struct taskenv_rule rule = { 0 };
	const char *mask[] = { "SLURM_CPU_BIND=quiet,mask_cpu:0xc,0xC0",
			       "SLURM_CPU_BIND_LIST=0xc,0xC0",
			       "SLURM_CPU_BIND_TYPE=mask_cpu:",
			       "SLURM_CPU_BIND_VERBOSE=quiet", NULL };
	const char *map[] = { "SLURM_CPU_BIND=verbose,map_cpu:6,3",
			      "SLURM_CPU_BIND_LIST=6,3",
			      "SLURM_CPU_BIND_TYPE=map_cpu:", NULL };
	const char *ldom[] = { "SLURM_CPU_BIND=quiet,map_ldom:1",
			       "SLURM_CPU_BIND_LIST=1",
			       "SLURM_CPU_BIND_TYPE=map_ldom:", NULL };
	const char *outside[] = { "SLURM_CPU_BIND=quiet,map_cpu:0",
				  "SLURM_CPU_BIND_LIST=0",
				  "SLURM_CPU_BIND_TYPE=map_cpu:",
				  "SLURM_CPU_BIND_VERBOSE=quiet", NULL };
	const char *cores[] = { "SLURM_CPU_BIND=quiet,cores",
				"SLURM_CPU_BIND_LIST=",
				"SLURM_CPU_BIND_TYPE=cores", NULL };
	char **out;

	out = translate(&rule, mask);
	assert_env(out, "SLURM_CPU_BIND", "quiet,mask_cpu:0x3,0xc");
	assert_env(out, "SLURM_CPU_BIND_LIST", "0x3,0xc");
	assert_env(out, "SLURM_CPU_BIND_TYPE", "mask_cpu:");
	strv_free(out);
	out = translate(&rule, map);
	assert_env(out, "SLURM_CPU_BIND", "verbose,map_cpu:2,1");
	assert_env(out, "SLURM_CPU_BIND_LIST", "2,1");
	strv_free(out);
	out = translate(&rule, ldom);
	assert_env(out, "SLURM_CPU_BIND", "quiet,map_ldom:0");
	strv_free(out);
	/* host CPU 0 is not the guest's: no binding can say it */
	out = translate(&rule, outside);
	assert_env(out, "SLURM_CPU_BIND", NULL);
	assert_env(out, "SLURM_CPU_BIND_LIST", NULL);
	assert_env(out, "SLURM_CPU_BIND_TYPE", NULL);
	assert_env(out, "SLURM_CPU_BIND_VERBOSE", NULL);
	strv_free(out);
	out = translate(&rule, cores);
	assert_env(out, "SLURM_CPU_BIND", "quiet,cores");
	assert_env(out, "SLURM_CPU_BIND_TYPE", "cores");
	strv_free(out);
}

static void test_env_paths_and_pass(void **state)
{
	struct taskenv_rule tmp = { .tmpdir = "/tmp", .affinity = "0-1" };
	struct taskenv_rule keep = { 0 };
	const char *env[] = { "TMPDIR=/local/job42",
			      "TMP=/local/job42",
			      "XDG_RUNTIME_DIR=/run/user/1000",
			      "SLURM_VM_AFFINITY=0-63",
			      "PMI_RANK=1",
			      "SLURM_JOB_ID=42",
			      "PATH=/usr/bin",
			      "A=b=c",
			      "junk",
			      NULL };
	const char *none[] = { "HOME=/home/u", NULL };
	char **out;

	out = translate(&tmp, env);
	assert_env(out, "TMPDIR", "/tmp");
	assert_env(out, "TMP", "/tmp");
	assert_env(out, "TEMP", NULL);
	assert_env(out, "XDG_RUNTIME_DIR", NULL);
	assert_env(out, TASKENV_AFFINITY, "0-1");
	assert_env(out, "PMI_RANK", "1");
	assert_env(out, "SLURM_JOB_ID", "42");
	assert_env(out, "PATH", "/usr/bin");
	assert_env(out, "A", "b=c");
	assert_int_equal(strv_length(out), 7);
	strv_free(out);
	out = translate(&keep, env);
	assert_env(out, "TMPDIR", "/local/job42");
	assert_env(out, TASKENV_AFFINITY, NULL);
	strv_free(out);
	out = translate(&tmp, none);
	assert_env(out, "TMPDIR", "/tmp");
	assert_env(out, "HOME", "/home/u");
	strv_free(out);
}

/* What a --vm-batch script exported in the guest reaches its steps' tasks
 * in the guests: srun passed it renamed (agent/host/hostcmd_env.h). */
static void test_env_guest_vars(void **state)
{
	struct taskenv_rule tmp = { .tmpdir = "/tmp", .affinity = "0-1" };
	const char *env[] = { PROTO_ENV_GUEST_PREFIX "PATH=/home/u/bin:/bin",
			      "PATH=/usr/bin",
			      "OMP_NUM_THREADS=1",
			      PROTO_ENV_GUEST_PREFIX "OMP_NUM_THREADS=4",
			      PROTO_ENV_GUEST_PREFIX "LD_PRELOAD=/home/u/x.so",
			      "TMPDIR=/local/job42",
			      PROTO_ENV_GUEST_PREFIX "TMPDIR=/scratch",
			      "CUDA_VISIBLE_DEVICES=1",
			      PROTO_ENV_GUEST_PREFIX "CUDA_VISIBLE_DEVICES=0,1",
			      "PMIX_RANK=3",
			      PROTO_ENV_GUEST_PREFIX "PMIX_RANK=0",
			      PROTO_ENV_GUEST_PREFIX "PMI_FD=9",
			      "PWD=/home/u/run",
			      PROTO_ENV_GUEST_PREFIX "PWD=/home/u",
			      PROTO_ENV_GUEST_PREFIX TASKENV_AFFINITY "=0-63",
			      PROTO_ENV_GUEST_PREFIX "=x",
			      PROTO_ENV_GUEST_PREFIX PROTO_ENV_GUEST_PREFIX
			      "X=1",
			      PROTO_ENV_GUEST_PREFIX "junk",
			      NULL };
	char **out;

	(void)state;
	out = translate(&tmp, env);
	/* The script's values win over the host's translated ones... */
	assert_env(out, "PATH", "/home/u/bin:/bin");
	assert_env(out, "OMP_NUM_THREADS", "4");
	assert_env(out, "LD_PRELOAD", "/home/u/x.so");
	assert_env(out, "TMPDIR", "/scratch");
	/* ...but for what the step gives each of its tasks: its GPUs, its
	 * MPI wire-up, its vCPUs, its directory (the script's are its batch
	 * step's). */
	assert_env(out, "CUDA_VISIBLE_DEVICES", "1");
	assert_env(out, "PMIX_RANK", "3");
	assert_env(out, "PMI_FD", NULL);
	assert_env(out, TASKENV_AFFINITY, "0-1");
	assert_env(out, "PWD", "/home/u/run");
	/* The renamed ones themselves are not passed on. */
	for (char **e = out; *e; e++)
		if (!strncmp(*e, PROTO_ENV_GUEST_PREFIX,
			     strlen(PROTO_ENV_GUEST_PREFIX)))
			fail_msg("%s should be gone", *e);
	assert_int_equal(strv_length(out), 8);
	strv_free(out);
}

static void test_prolog_output(void **state)
{
	const char *out = "export A=1\n"
			  "export   B = x y\n"
			  "unset  C \n"
			  "print   hello there\n"
			  "garbage line\n"
			  "export NOEQUALS\n"
			  "export SLURM_PROLOG_CPU_MASK=0x4\n"
			  "export A=2";
	char **env = NULL, *mask = NULL, buf[64] = "";
	int p[2];

	assert_int_equal(strv_split("A=0:C=gone:D=kept", ':', &env), 0);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(taskenv_apply_prolog_output(out, SLURM_22_05, &env,
						     p[1], &mask),
			 0);
	close(p[1]);
	assert_true(read(p[0], buf, sizeof(buf) - 1) > 0);
	close(p[0]);
	assert_string_equal(buf, "hello there\n");
	assert_env(env, "A", "2");
	assert_env(env, "B", " x y");
	assert_env(env, "C", NULL);
	assert_env(env, "D", "kept");
	assert_env(env, "NOEQUALS", NULL);
	assert_env(env, "SLURM_PROLOG_CPU_MASK", "0x4");
	assert_string_equal(mask, "0x4");
	assert_string_equal(env[0], "A=2"); /* replaced where it was */
	free(mask);
	strv_free(env);

	/* 24.05 still rebinds; from 24.11 the export is a variable only. */
	p[1] = open("/dev/null", O_WRONLY | O_CLOEXEC);
	assert_true(p[1] >= 0);
	assert_int_equal(strv_split("D=kept", ':', &env), 0);
	assert_int_equal(taskenv_apply_prolog_output(out, SLURM_24_05, &env,
						     p[1], &mask),
			 0);
	assert_string_equal(mask, "0x4");
	free(mask);
	strv_free(env);
	assert_int_equal(strv_split("D=kept", ':', &env), 0);
	assert_int_equal(taskenv_apply_prolog_output(out, SLURM_24_11, &env,
						     p[1], &mask),
			 0);
	assert_null(mask);
	assert_env(env, "SLURM_PROLOG_CPU_MASK", "0x4");
	strv_free(env);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_multiprog_ranks),
		cmocka_unit_test(test_multiprog_quoting),
		cmocka_unit_test(test_multiprog_extra_and_errors),
		cmocka_unit_test(test_task_map_roundtrip),
		cmocka_unit_test(test_task_map_refuses),
		cmocka_unit_test(test_task_map_from_plan),
		cmocka_unit_test(test_affinity),
		cmocka_unit_test(test_env_gpus),
		cmocka_unit_test(test_env_cpu_bind),
		cmocka_unit_test(test_env_paths_and_pass),
		cmocka_unit_test(test_env_guest_vars),
		cmocka_unit_test(test_prolog_output),
	};

	log_open("test_task");
	log_set_level(LOG_LEVEL_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
