#ifndef EIFS_INI_H
#define EIFS_INI_H
#endif
