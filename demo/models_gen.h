/* Generators of the demo's model and map files (demo/models.c). */
#ifndef EIFS_DEMO_MODELS_GEN_H
#define EIFS_DEMO_MODELS_GEN_H

#include <glib.h>

void gen_lnk(GByteArray *o, int n, char **links);
void gen_bon(GByteArray *o, float x, float y, float z);
void gen_fig(GByteArray *o, float size);
void gen_anm(GByteArray *o, int frames);
void gen_mp(GByteArray *o);
void gen_sec(GByteArray *o, int sx, int sy);

#endif
