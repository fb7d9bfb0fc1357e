/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include "holdgate.h"

bool hold_gate_release(struct hold_gate *g, double now, bool steps_running,
		       hold_ask_fn ask, void *arg)
{
	if (steps_running)
		return false; /* they keep the step alive anyway */
	/* a job that ends does not run again: no need to ask twice */
	if (g->ending != 1 &&
	    (!g->asked || now - g->asked_at >= HOLD_ASK_INTERVAL_S)) {
		g->ending = ask(arg);
		g->asked = true;
		g->asked_at = now;
	}
	return g->ending == 1;
}
