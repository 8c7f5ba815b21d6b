/* mmp: see mmp.h */
