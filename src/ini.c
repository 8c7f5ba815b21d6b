/* ini: see ini.h */
