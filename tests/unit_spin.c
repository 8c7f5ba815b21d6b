/* The choice between spinning and sleeping for the next request
 * (src/spin.c), fed with the gaps a machine of either kind shows. */
#include <criterion/criterion.h>

#include "spin.h"

/* Feeds n gaps: spin_ns while the choice spins, sleep_ns while it sleeps;
 * returns how many of them were waited spinning. */
static int feed(struct spin_choice *c, int n, int64_t spin_ns, int64_t sleep_ns)
{
	int spun = 0;

	for (int i = 0; i < n; i++) {
		int spins = spin_choice_spins(c);

		spun += spins;
		spin_choice_note(c, spins ? spin_ns : sleep_ns);
	}
	return spun;
}

Test(spin, a_trial_measures_each_way_64_times_taking_turns_at_random)
{
	struct spin_choice c;
	int spun = 0, switches = 0, was = -1;

	spin_choice_init(&c);
	for (int i = 0; i < 2 * SPIN_TRY_SAMPLES - 1; i++) {
		int spins = spin_choice_spins(&c);

		spun += spins;
		switches += was >= 0 && spins != was;
		was = spins;
		cr_assert_eq(spin_choice_note(&c, spins ? 10000 : 40000), 0, "no choice before both have 64");
	}
	cr_assert_eq(spun + spin_choice_spins(&c), SPIN_TRY_SAMPLES, "64 gaps each way");
	cr_assert_eq(spin_choice_note(&c, spin_choice_spins(&c) ? 10000 : 40000), 1, "the first choice is news");
	cr_assert_eq(c.spin_mean_ns, 10000);
	cr_assert_eq(c.sleep_mean_ns, 40000);
	/* neither all of one way first nor strictly alternating */
	cr_assert(switches > 10 && switches < 2 * SPIN_TRY_SAMPLES - 10, "%d switches", switches);
}

Test(spin, a_cycle_of_requests_does_not_decide)
{
	struct spin_choice c;

	/* a program whose every other gap is long (open, then read): taking
	 * turns in order would give one way all the long ones */
	spin_choice_init(&c);
	for (int i = 0; i < 2 * SPIN_TRY_SAMPLES; i++)
		spin_choice_note(&c, i % 2 ? 50000 : 10000);
	cr_assert_lt(c.spin_mean_ns - c.sleep_mean_ns, 20000);
	cr_assert_lt(c.sleep_mean_ns - c.spin_mean_ns, 20000);
}

Test(spin, an_outlier_does_not_decide)
{
	struct spin_choice c;
	int outliers = 0;

	/* spinning brings the request sooner, but a few of its gaps met a
	 * preemption: the plain mean would have chosen sleeping */
	spin_choice_init(&c);
	for (int i = 0; i < 2 * SPIN_TRY_SAMPLES; i++) {
		int spins = spin_choice_spins(&c);

		spin_choice_note(&c, spins && outliers < 5 && ++outliers ? 900000 : spins ? 15000 : 30000);
	}
	cr_assert(spin_choice_spins(&c));
}

Test(spin, where_waking_costs_it_keeps_spinning)
{
	struct spin_choice c;

	spin_choice_init(&c);
	feed(&c, 2 * SPIN_TRY_SAMPLES, 15000, 30000);
	cr_assert(spin_choice_spins(&c));
	cr_assert_eq(feed(&c, SPIN_KEEP_SAMPLES, 15000, 30000), SPIN_KEEP_SAMPLES, "kept for all of its turn");
	for (int i = 0; i < 2 * SPIN_TRY_SAMPLES; i++)
		cr_assert_eq(spin_choice_note(&c, spin_choice_spins(&c) ? 15000 : 30000), 0,
			     "the same choice again is no news");
	cr_assert(spin_choice_spins(&c));
}

Test(spin, where_spinning_slows_the_program_it_sleeps)
{
	struct spin_choice c;

	spin_choice_init(&c);
	feed(&c, 2 * SPIN_TRY_SAMPLES, 39000, 27000);
	cr_assert_not(spin_choice_spins(&c));
	cr_assert_eq(feed(&c, SPIN_KEEP_SAMPLES, 39000, 27000), 0);
}

Test(spin, a_small_gain_does_not_pay_for_the_cpu)
{
	struct spin_choice c;

	spin_choice_init(&c);
	feed(&c, 2 * SPIN_TRY_SAMPLES, 9500, 10000); /* 5% sooner */
	cr_assert_not(spin_choice_spins(&c));
	spin_choice_init(&c);
	feed(&c, 2 * SPIN_TRY_SAMPLES, 8900, 10000); /* 11% sooner */
	cr_assert(spin_choice_spins(&c));
}

Test(spin, it_tries_again_after_its_turn_and_follows_a_change)
{
	struct spin_choice c;
	int changes = 0;

	spin_choice_init(&c);
	feed(&c, 2 * SPIN_TRY_SAMPLES, 39000, 27000);
	cr_assert_not(spin_choice_spins(&c));
	/* the machine grows costly to wake (another program took the CPU
	 * the reader slept on): the next trials find spinning better */
	for (int i = 0; i < SPIN_KEEP_SAMPLES + 2 * SPIN_TRY_SAMPLES; i++)
		changes += spin_choice_note(&c, spin_choice_spins(&c) ? 12000 : 50000);
	cr_assert(spin_choice_spins(&c));
	cr_assert_eq(changes, 1, "one new choice, whatever the trials did meanwhile: %d", changes);
	cr_assert_eq(c.spin_mean_ns, 12000);
	cr_assert_eq(c.sleep_mean_ns, 50000);
}

Test(spin, long_and_impossible_gaps_do_not_count)
{
	struct spin_choice c;

	spin_choice_init(&c);
	for (int i = 0; i < 10 * SPIN_TRY_SAMPLES; i++) {
		cr_assert_eq(spin_choice_note(&c, SPIN_MAX_GAP_NS + 1), 0);
		cr_assert_eq(spin_choice_note(&c, -1), 0);
	}
	cr_assert_eq(c.n[0] + c.n[1], 0, "still no gap of the first trial");
	feed(&c, 2 * SPIN_TRY_SAMPLES - 1, SPIN_MAX_GAP_NS, SPIN_MAX_GAP_NS);
	cr_assert_eq(c.chosen, -1);
	cr_assert_eq(spin_choice_note(&c, SPIN_MAX_GAP_NS), 1, "the longest gap that counts ends the trial");
}

Test(spin, a_fixed_choice_stays)
{
	struct spin_choice c;

	spin_choice_fix(&c, 0);
	cr_assert_eq(feed(&c, 3 * SPIN_KEEP_SAMPLES, 1000, 900000), 0, "never spins, however much sooner it would");
	spin_choice_fix(&c, 1);
	cr_assert_eq(feed(&c, 3 * SPIN_KEEP_SAMPLES, 900000, 1000), 3 * SPIN_KEEP_SAMPLES);
}
