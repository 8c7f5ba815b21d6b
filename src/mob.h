#ifndef EIFS_MOB_H
#define EIFS_MOB_H
#endif
