#ifndef EIFS_PNG_H
#define EIFS_PNG_H
#endif
