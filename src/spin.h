/* Whether the reader of the kernel's requests spins for the next one or
 * sleeps until it comes.  Spinning spares a program that sends request
 * after request (cat over many files) the wake-up of a sleeping reader,
 * which on some virtual machines costs more than the request; on others
 * the spinning CPU slows that very program down, by half as much again.
 * Neither can be told from the machine's description, so now and then a
 * trial lets the two ways take turns at random, 64 gaps each, and the one
 * after which the next request came sooner (on average, the longest
 * eighth of the gaps left out) is kept until the next trial.  Turns at
 * random, not in order: a program's requests come in cycles (open, read,
 * release), and a way that always got the same place in the cycle would
 * measure the program, not itself.
 * No clock and no globals: the caller measures and tells. */
#ifndef EIFS_SPIN_H
#define EIFS_SPIN_H

#include <stdint.h>

enum {
	SPIN_TRY_SAMPLES = 64,     /* gaps measured for each way in a trial */
	SPIN_KEEP_SAMPLES = 4096,  /* gaps the chosen way is kept for */
	SPIN_WIN_PERCENT = 90,     /* spinning must bring the next request this
				    * much sooner (of sleeping's time) to be kept:
				    * it costs CPU time, sleeping none */
};
#define SPIN_MAX_GAP_NS 1000000 /* longer: the program was busy elsewhere */

struct spin_choice {
	int fixed;             /* spin_choice_fix: no trials */
	int trying;            /* a trial runs, else the choice is kept */
	uint32_t kept;         /* gaps since the choice */
	uint32_t n[2];         /* gaps of the trial: [0] slept, [1] spun */
	uint32_t gap_ns[2][SPIN_TRY_SAMPLES];
	uint32_t turn;         /* xorshift state for the trial's turns */
	int spins;             /* the way for the next gap */
	int chosen;            /* the way the last trial chose, -1 before */
	int64_t spin_mean_ns; /* the last trial's trimmed means */
	int64_t sleep_mean_ns;
};

/* A fresh choice: a trial first. */
void spin_choice_init(struct spin_choice *c);

/* A choice that never changes: always spins (1) or always sleeps (0). */
void spin_choice_fix(struct spin_choice *c, int spins);

/* Whether the reader should spin for the next request. */
int spin_choice_spins(const struct spin_choice *c);

/* The time from an answer to the next request's arrival, waited for the
 * way spin_choice_spins said.  Gaps over SPIN_MAX_GAP_NS (or negative)
 * are not counted: the program did something else meanwhile, and either
 * way was as good.  Returns 1 when this gap ended a trial that chose
 * another way than the trial before (the first one too). */
int spin_choice_note(struct spin_choice *c, int64_t gap_ns);

#endif
