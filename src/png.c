/* png: see png.h */
