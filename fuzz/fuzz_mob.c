/* MOB map objects: the node tree view and the (decrypted) script view,
 * which exists exactly when mob_has_script says so. */
#include "fuzz.h"

#include "mob.h"

void fuzz_mob_one(const uint8_t *data, size_t size)
{
	int has = mob_has_script(data, size);
	int rc;

	fuzz_view(mob_to_text, "mob_to_text", data, size);
	rc = fuzz_view(mob_script_to_text, "mob_script_to_text", data, size);
	FUZZ_CHECK(has == (rc == 0), "mob_has_script says %d, the script view returns %d", has, rc);
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_mob_one(data, size);
	return 0;
}
#endif
