/* db: see db.h */
