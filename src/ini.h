/* REG <-> INI text, the view a mount shows beside every .reg file.  The
 * text is what the community tools reg2ini/ini2reg read and write
 * (FORMATS 2.4), plus a few rules for what they cannot tell apart; the
 * rules are in the VIEWS section of eifs(1).  Whatever reg_to_ini writes,
 * ini_to_reg reads back into the same model, so that REG -> INI -> REG
 * gives the same bytes. */
#ifndef EIFS_INI_H
#define EIFS_INI_H

#include <stddef.h>
#include <glib.h>

#include "format_error.h"
#include "reg.h"

/* Appends f as UTF-8 INI text with LF line ends to out.  Fails (out
 * unchanged) only for what INI cannot hold apart, EINVAL: two sections, or
 * two keys of one section, with the same name; and EFBIG for an array
 * whose name, repeated on the line of every value, would take more than
 * 32 times the key's bytes in the REG (a long name with many values: the
 * text would grow with their product).  ini_to_reg refuses such a key
 * too. */
int reg_to_ini(const struct reg_file *f, GString *out, struct format_error *err);

/* Parses UTF-8 INI text (LF or CRLF, an optional BOM).  On error *out is
 * NULL and err->offset is the 1-based line number of the problem; code is
 * EINVAL for syntax and structure, ERANGE for a number, length or count
 * the REG format cannot hold, EFBIG for a key reg_to_ini refuses so (at
 * its first line), EILSEQ for text that is not UTF-8 or has a character
 * cp1251 lacks. */
int ini_to_reg(const char *text, size_t len, struct reg_file **out, struct format_error *err);

/* The two conversions on bytes.  reg_bytes_to_ini's err->offset is a byte
 * offset into the REG when the REG is malformed (0 when reg_to_ini
 * refuses); ini_to_reg_bytes's is a line number (0 only when the writer
 * refuses a REG of more than 4 GiB: ini_to_reg checks everything else). */
int reg_bytes_to_ini(const unsigned char *data, size_t len, GString *out,
		     struct format_error *err);
int ini_to_reg_bytes(const char *text, size_t len, GByteArray *out, struct format_error *err);

/* How an unquoted INI value is typed (ini2reg's rules, FORMATS 2.4, plus
 * the spellings of infinities and NaNs): the writer quotes every string
 * this would not call a string. */
enum ini_class { INI_STRING, INI_INT, INI_FLOAT };
enum ini_class ini_classify(const char *s, size_t len);

#endif
