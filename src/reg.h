#ifndef EIFS_REG_H
#define EIFS_REG_H
#endif
