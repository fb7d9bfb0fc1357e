/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm-adopt --hold's gate (prolog/holdgate.c): after a SIGTERM the
 * extern step's sleep goes only when slurmctld says the job ends, asked
 * at most once a second, never while it cannot be asked; a user's
 * `scancel -s TERM` leaves the job running, so its guest stays. Before,
 * the sleep went as soon as no other step of the job ran on the node.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "holdgate.h"

struct ctld {
	int answer; /* what job_ending() would say */
	unsigned asked;
};

static int ask(void *arg)
{
	struct ctld *c = arg;

	c->asked++;
	return c->answer;
}

/* scancel -s TERM: the job runs, nothing else runs here: held. */
static void test_signal_is_no_end(void **state)
{
	struct hold_gate g = { 0 };
	struct ctld c = { .answer = 0 };

	assert_false(hold_gate_release(&g, 100.0, false, ask, &c));
	assert_int_equal(c.asked, 1);
	/* the 0.1 s polls within a second do not ask again */
	for (double t = 100.1; t < 100.95; t += 0.1)
		assert_false(hold_gate_release(&g, t, false, ask, &c));
	assert_int_equal(c.asked, 1);
	assert_false(hold_gate_release(&g, 101.0, false, ask, &c));
	assert_int_equal(c.asked, 2);
	/* then the job ends: let go at the next question */
	c.answer = 1;
	assert_false(hold_gate_release(&g, 101.5, false, ask, &c));
	assert_true(hold_gate_release(&g, 102.0, false, ask, &c));
	assert_int_equal(c.asked, 3);
	assert_true(hold_gate_release(&g, 102.1, false, ask, &c));
	assert_int_equal(c.asked, 3);
}

/* Another step of the job runs here: held, and slurmctld is not asked. */
static void test_steps_running(void **state)
{
	struct hold_gate g = { 0 };
	struct ctld c = { .answer = 1 };

	assert_false(hold_gate_release(&g, 5.0, true, ask, &c));
	assert_int_equal(c.asked, 0);
	assert_true(hold_gate_release(&g, 5.1, false, ask, &c));
	assert_int_equal(c.asked, 1);
}

/* slurmctld does not answer: held (KillWait's SIGKILL still ends it). */
static void test_ctld_unreachable(void **state)
{
	struct hold_gate g = { 0 };
	struct ctld c = { .answer = -EHOSTDOWN };

	for (double t = 0.0; t < 5.0; t += 0.1)
		assert_false(hold_gate_release(&g, t, false, ask, &c));
	assert_true(c.asked >= 4 && c.asked <= 6);
	c.answer = 1;
	assert_true(hold_gate_release(&g, 6.0, false, ask, &c));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_signal_is_no_end),
		cmocka_unit_test(test_steps_running),
		cmocka_unit_test(test_ctld_unreachable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
