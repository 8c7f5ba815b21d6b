/* The end of eifs' own code.  Makefile.am links this after eifs' objects
 * and libeifs.a, and before the libraries linked statically, so that in
 * the text section its address comes after every eifs function and before
 * the libraries' code: the crash report's walk of frame pointers, which
 * those libraries are built without, must know where eifs' frames end
 * (crash.c). */
#include "crash.h"

void eifs_code_end(void)
{
}
