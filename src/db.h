/* The game databases (*.idb .udb .sdb .pdb .qdb .ldb, prints.db, acks.db;
 * FORMATS.md section 4) as JSON Lines and back.  One JSON object a line:
 * a first line that describes the file, then one line per row, so that a
 * grep hit shows the table and the whole record.  The text keeps every byte
 * of the file (length forms, field order, unknown tables and fields, values
 * that do not fit their schema type), so that jsonl_to_db(db_to_jsonl(f))
 * gives f back; the VIEWS section of eifs(1) describes the format. */
#ifndef EIFS_DB_H
#define EIFS_DB_H

#include <stddef.h>
#include <glib.h>

#include "format_error.h"

/* The schema a file name selects ("items", "units", "spells", "perks",
 * "quests", "levers", "prints", "acks"), or NULL.  The exact names of the
 * game (items.idb ... acks.db, ASCII case-insensitive, after the last '/' or
 * '\\') and every name ending in .idb .udb .sdb .pdb .qdb .ldb have one;
 * other .db files do not. */
const char *db_schema_of(const char *file_name);

/* Does a file of this name get a database view: db_schema_of is not NULL. */
int db_is_database(const char *file_name);

/* Appends the JSON Lines form of a database to out.  file_name selects the
 * schema (a name without one gets generic keys "t<id>"/"f<id>" and hex
 * values); its last component goes into the first line.  Returns 0, or -1
 * with err filled (EINVAL, offset = byte offset in data) and out as it was:
 * a broken structure (a node past its parent's end, a root or row whose id
 * is not 1, bytes between the root and the 10-byte trailer, another
 * trailer, a table id twice) has no view.
 * Values that do not fit their type never fail: they are shown as hex. */
int db_to_jsonl(const char *file_name, const unsigned char *data, size_t len, GString *out,
		struct format_error *err);

/* Appends the database that a JSON Lines text describes to out.  Returns 0,
 * or -1 with err filled (offset = 1-based line number, msg with line and
 * column; EINVAL for syntax and structure, ERANGE for a number a field
 * cannot hold, EILSEQ for text cp1251 cannot write) and out as it was. */
int jsonl_to_db(const char *text, size_t len, GByteArray *out, struct format_error *err);

/* Checks the built-in schemas: keys unique in each table and sub-structure,
 * none that reads as a generic key or a reserved one.  For the tests. */
int db_schemas_check(struct format_error *err);

#endif
