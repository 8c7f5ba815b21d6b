#ifndef EIFS_MPR_H
#define EIFS_MPR_H
#endif
