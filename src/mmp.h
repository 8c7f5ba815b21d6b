#ifndef EIFS_MMP_H
#define EIFS_MMP_H
#endif
