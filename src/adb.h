#ifndef EIFS_ADB_H
#define EIFS_ADB_H
#endif
