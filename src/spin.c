#include "spin.h"

#include <string.h>

enum { TRY_SPIN, TRY_SLEEP, KEEP, FIXED };

void spin_choice_init(struct spin_choice *c)
{
	memset(c, 0, sizeof *c);
	c->phase = TRY_SPIN;
	c->spins = 1;
	c->chosen = -1;
}

void spin_choice_fix(struct spin_choice *c, int spins)
{
	spin_choice_init(c);
	c->phase = FIXED;
	c->spins = c->chosen = spins != 0;
}

int spin_choice_spins(const struct spin_choice *c)
{
	return c->spins;
}

static void enter(struct spin_choice *c, int phase, int spins)
{
	c->phase = phase;
	c->spins = spins;
	c->samples = 0;
	c->sum_ns = 0;
}

int spin_choice_note(struct spin_choice *c, int64_t gap_ns)
{
	int was = c->chosen;

	if (c->phase == FIXED || gap_ns < 0 || gap_ns > SPIN_MAX_GAP_NS)
		return 0;
	c->sum_ns += gap_ns;
	if (++c->samples < (c->phase == KEEP ? SPIN_KEEP_SAMPLES : SPIN_TRY_SAMPLES))
		return 0;
	switch (c->phase) {
	case TRY_SPIN:
		c->spin_mean_ns = c->sum_ns / c->samples;
		enter(c, TRY_SLEEP, 0);
		return 0;
	case TRY_SLEEP:
		c->sleep_mean_ns = c->sum_ns / c->samples;
		enter(c, KEEP, c->spin_mean_ns * 100 < c->sleep_mean_ns * SPIN_WIN_PERCENT);
		c->chosen = c->spins ? 1 : 0;
		return c->chosen != was;
	default:
		enter(c, TRY_SPIN, 1);
		return 0;
	}
}
