/* ADB animation databases: the text view. */
#include "fuzz.h"

#include "adb.h"

void fuzz_adb_one(const uint8_t *data, size_t size)
{
	fuzz_view(adb_to_text, "adb_to_text", data, size);
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_adb_one(data, size);
	return 0;
}
#endif
