/* Whether the reader of the kernel's requests spins for the next one or
 * sleeps until it comes.  Spinning spares a program that sends request
 * after request (cat over many files) the wake-up of a sleeping reader,
 * which on some virtual machines costs more than the request; on others
 * the spinning CPU slows that very program down, by half as much again.
 * Neither can be told from the machine's description, so the two ways
 * take turns now and then, each for a few requests, and the one after
 * which the next request came sooner is kept until the next turns.
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
	int phase;            /* trying spinning, trying sleeping, keeping */
	uint32_t samples;     /* gaps counted in this phase */
	int64_t sum_ns;       /* and their sum */
	int64_t spin_mean_ns; /* the trial of spinning's mean gap */
	int64_t sleep_mean_ns;
	int spins;            /* the way now */
	int chosen;           /* the way the last trials chose, -1 before */
};

/* A fresh choice: it tries spinning first. */
void spin_choice_init(struct spin_choice *c);

/* A choice that never changes: always spins (1) or always sleeps (0). */
void spin_choice_fix(struct spin_choice *c, int spins);

/* Whether the reader should spin for the next request. */
int spin_choice_spins(const struct spin_choice *c);

/* The time from an answer to the next request's arrival, waited for the
 * way spin_choice_spins said.  Gaps over SPIN_MAX_GAP_NS (or negative)
 * are not counted: the program did something else meanwhile, and either
 * way was as good.  Returns 1 when this gap ended trials that chose
 * another way than the trials before (the first ones too). */
int spin_choice_note(struct spin_choice *c, int64_t gap_ns);

#endif
