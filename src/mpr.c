/* mpr: see mpr.h */
