/* reg: see reg.h */
