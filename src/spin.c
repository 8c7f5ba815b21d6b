#include "spin.h"

#include <stdlib.h>
#include <string.h>

static int by_value(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* The mean without the longest eighth: a preemption or a fault now and
 * then says nothing of the way (a median would, with two kinds of gaps
 * in the mix, jump from one kind to the other on a gap more or less). */
static int64_t trimmed_mean(const uint32_t *gaps)
{
	enum { KEPT = SPIN_TRY_SAMPLES - SPIN_TRY_SAMPLES / 8 };
	uint32_t v[SPIN_TRY_SAMPLES];
	int64_t sum = 0;

	memcpy(v, gaps, sizeof v);
	qsort(v, SPIN_TRY_SAMPLES, sizeof v[0], by_value);
	for (int i = 0; i < KEPT; i++)
		sum += v[i];
	return sum / KEPT;
}

/* The way of the trial's next gap: at random while both need gaps. */
static int next_turn(struct spin_choice *c)
{
	if (c->n[0] == SPIN_TRY_SAMPLES)
		return 1;
	if (c->n[1] == SPIN_TRY_SAMPLES)
		return 0;
	c->turn ^= c->turn << 13;
	c->turn ^= c->turn >> 17;
	c->turn ^= c->turn << 5;
	return c->turn >> 31;
}

static void start_trial(struct spin_choice *c)
{
	c->trying = 1;
	c->n[0] = c->n[1] = 0;
	c->spins = next_turn(c);
}

void spin_choice_init(struct spin_choice *c)
{
	memset(c, 0, sizeof *c);
	c->turn = 0x9E3779B9u;
	c->chosen = -1;
	start_trial(c);
}

void spin_choice_fix(struct spin_choice *c, int spins)
{
	memset(c, 0, sizeof *c);
	c->fixed = 1;
	c->spins = c->chosen = spins != 0;
}

int spin_choice_spins(const struct spin_choice *c)
{
	return c->spins;
}

/* Both ways have their gaps: the choice, kept from now on. */
static int choose(struct spin_choice *c)
{
	int was = c->chosen;

	c->spin_mean_ns = trimmed_mean(c->gap_ns[1]);
	c->sleep_mean_ns = trimmed_mean(c->gap_ns[0]);
	c->chosen = c->spin_mean_ns * 100 < c->sleep_mean_ns * SPIN_WIN_PERCENT;
	c->spins = c->chosen;
	c->trying = 0;
	c->kept = 0;
	return c->chosen != was;
}

int spin_choice_note(struct spin_choice *c, int64_t gap_ns)
{
	if (c->fixed || gap_ns < 0 || gap_ns > SPIN_MAX_GAP_NS)
		return 0;
	if (!c->trying) {
		if (++c->kept == SPIN_KEEP_SAMPLES)
			start_trial(c);
		return 0;
	}
	c->gap_ns[c->spins][c->n[c->spins]++] = (uint32_t)gap_ns;
	if (c->n[0] == SPIN_TRY_SAMPLES && c->n[1] == SPIN_TRY_SAMPLES)
		return choose(c);
	c->spins = next_turn(c);
	return 0;
}
