/* adb: see adb.h */
