/* Model files: LNK, BON, ANM tracks and CAM have no magic, so every input
 * goes through all five views; FIG also by its magic test. */
#include "fuzz.h"

#include "models.h"

void fuzz_models_one(const uint8_t *data, size_t size)
{
	int fig;

	fuzz_view(lnk_to_text, "lnk_to_text", data, size);
	fuzz_view(bon_to_text, "bon_to_text", data, size);
	fuzz_view(anm_to_text, "anm_to_text", data, size);
	fuzz_view(cam_to_text, "cam_to_text", data, size);
	fig = fuzz_view(fig_to_text, "fig_to_text", data, size);
	FUZZ_CHECK(fig < 0 || fig_is_magic(data, size), "a FIG view of a file without FIG magic");
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_models_one(data, size);
	return 0;
}
#endif
