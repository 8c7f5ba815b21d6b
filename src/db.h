#ifndef EIFS_DB_H
#define EIFS_DB_H
#endif
