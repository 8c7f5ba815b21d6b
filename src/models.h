#ifndef EIFS_MODELS_H
#define EIFS_MODELS_H
#endif
