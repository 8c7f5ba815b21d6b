/* The two kinds of file in a map archive: the .mp header and the .sec
 * sectors, both views on every input (each checks its magic). */
#include "fuzz.h"

#include "mpr.h"

void fuzz_mpr_one(const uint8_t *data, size_t size)
{
	fuzz_view(mp_to_text, "mp_to_text", data, size);
	fuzz_view(sec_to_text, "sec_to_text", data, size);
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_mpr_one(data, size);
	return 0;
}
#endif
