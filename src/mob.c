/* mob: see mob.h */
