/* libFuzzer targets over the format modules.  Each fuzz_*.c holds one
 * target: a fuzz_<name>_one() that runs every entry point it covers on one
 * input and abort()s when a documented property fails, and the
 * LLVMFuzzerTestOneInput that calls it.  The same functions run the
 * committed crash inputs in `make check` (tests/unit_fuzz_regress.c, built
 * with FUZZ_NO_ENTRY and gcc), so a regression input is fed to exactly
 * what found it. */
#ifndef EIFS_FUZZ_H
#define EIFS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "format_error.h"

void fuzz_res_one(const uint8_t *data, size_t size);
void fuzz_reg_one(const uint8_t *data, size_t size);
void fuzz_ini_one(const uint8_t *data, size_t size);
void fuzz_mmp_one(const uint8_t *data, size_t size);
void fuzz_png_one(const uint8_t *data, size_t size);
void fuzz_db_one(const uint8_t *data, size_t size);
void fuzz_jsonl_one(const uint8_t *data, size_t size);
void fuzz_adb_one(const uint8_t *data, size_t size);
void fuzz_mob_one(const uint8_t *data, size_t size);
void fuzz_models_one(const uint8_t *data, size_t size);
void fuzz_mpr_one(const uint8_t *data, size_t size);
void fuzz_tree_one(const uint8_t *data, size_t size);

/* A property the code under test promises did not hold: say which and
 * abort, so that libFuzzer keeps the input as a crash. */
#define FUZZ_CHECK(cond, ...)                                                   \
	do {                                                                    \
		if (!(cond))                                                    \
			fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);      \
	} while (0)

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 4, 5)));

/* A view may be larger than its input by a constant factor only: output
 * that grows faster (a name repeated once per value, ...) lets a small
 * file make a parser allocate gigabytes. */
enum { FUZZ_GROWTH = 64, FUZZ_GROWTH_SLACK = 4096 };
void fuzz_check_growth(size_t in, size_t out, const char *what);

/* What a refusal must look like: an errno value and a message. */
void fuzz_check_refusal(const struct format_error *err, const char *what);

/* The contract of every text view (models.h): 0 and UTF-8 text appended,
 * or -1, err filled and out as it was. */
typedef int fuzz_view_fn(const unsigned char *data, size_t len, GString *out,
			 struct format_error *err);
int fuzz_view(fuzz_view_fn *fn, const char *what, const uint8_t *data, size_t size);

#endif
