#define _GNU_SOURCE /* strtof_l: floats parse with a '.' whatever the locale */
#include "ini.h"

#include <errno.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cp1251.h"
#include "res.h"

/* Spelling of the float NaNs that are not the default ones. */
#define NAN_BITS_FMT "nan(0x%08x)"
enum { QNAN = 0x7fc00000u, NEG_QNAN = 0xffc00000u, EXP_MASK = 0x7f800000u,
       MANT_MASK = 0x007fffffu, POS_INF = 0x7f800000u, NEG_INF = 0xff800000u };

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static uint32_t float_bits(const float *f)
{
	uint32_t bits;

	memcpy(&bits, f, sizeof bits);
	return bits;
}

static int text_is(const char *s, size_t len, const char *word)
{
	return len == strlen(word) && memcmp(s, word, len) == 0;
}

/* ---- numbers ---------------------------------------------------------- */

/* "nan(0x7fa00000)": any NaN, by its bits (sign included).  Returns 1,
 * -1 when the bits are no NaN, 0 when s is not of that form. */
static int nan_bits_text(const char *s, size_t len, uint32_t *bits)
{
	size_t i;

	if (len < 8 || len > 15 || memcmp(s, "nan(0x", 6) != 0 || s[len - 1] != ')')
		return 0;
	*bits = 0;
	for (i = 6; i < len - 1; i++) {
		int h = hex_value(s[i]);

		if (h < 0)
			return 0;
		*bits = *bits << 4 | (uint32_t)h;
	}
	return (*bits & EXP_MASK) == EXP_MASK && (*bits & MANT_MASK) ? 1 : -1;
}

/* The spellings of infinities and NaNs; *bits gets the float they mean.
 * Returns 1, -1 for nan() bits that are no NaN, 0 for other text. */
static int special_float(const char *s, size_t len, uint32_t *bits)
{
	int neg = len > 0 && s[0] == '-';
	size_t sign = len > 0 && (s[0] == '-' || s[0] == '+');
	int nan_bits = nan_bits_text(s, len, bits);

	if (nan_bits)
		return nan_bits;
	if (text_is(s + sign, len - sign, "inf")) {
		*bits = neg ? NEG_INF : POS_INF;
		return 1;
	}
	if (text_is(s + sign, len - sign, "nan")) {
		*bits = neg ? NEG_QNAN : QNAN;
		return 1;
	}
	return 0;
}

static size_t skip_digits(const char *s, size_t i, size_t len)
{
	while (i < len && is_digit(s[i]))
		i++;
	return i;
}

enum ini_class ini_classify(const char *s, size_t len)
{
	size_t i = 0, int_digits, frac_digits = 0;
	int dot = 0, exp = 0;
	uint32_t bits;

	if (special_float(s, len, &bits)) /* bad nan() bits too: no string */
		return INI_FLOAT;
	if (i < len && (s[i] == '+' || s[i] == '-'))
		i++;
	int_digits = skip_digits(s, i, len) - i;
	i += int_digits;
	if (i == len)
		return int_digits ? INI_INT : INI_STRING;
	if (s[i] == '.') {
		dot = 1;
		frac_digits = skip_digits(s, i + 1, len) - (i + 1);
		i += 1 + frac_digits;
	}
	if (int_digits + frac_digits == 0)
		return INI_STRING;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		size_t d = i + 1 < len && (s[i + 1] == '+' || s[i + 1] == '-') ? i + 2 : i + 1;
		size_t end = skip_digits(s, d, len);

		if (end == d)
			return INI_STRING;
		exp = 1;
		i = end;
	}
	return i == len && (dot || exp) ? INI_FLOAT : INI_STRING;
}

/* s holds an INI_INT of len bytes.  Returns 0 or -ERANGE. */
static int parse_int(const char *s, size_t len, int32_t *out)
{
	int neg = s[0] == '-';
	size_t i = s[0] == '-' || s[0] == '+';
	int64_t v = 0;

	for (; i < len; i++) {
		v = v * 10 + (s[i] - '0');
		if (v > (int64_t)INT32_MAX + 1)
			return -ERANGE;
	}
	if (neg)
		v = -v;
	if (v > INT32_MAX || v < INT32_MIN)
		return -ERANGE;
	*out = (int32_t)v;
	return 0;
}

/* s (NUL-terminated) holds an INI_FLOAT.  Returns 0, -ERANGE for a finite
 * number beyond the float range, -EINVAL for nan() bits that are no NaN. */
static int parse_float(const char *s, size_t len, locale_t c, float *out)
{
	uint32_t bits;
	float f;

	switch (special_float(s, len, &bits)) {
	case 1:
		memcpy(out, &bits, sizeof *out);
		return 0;
	case -1:
		return -EINVAL;
	default:
		break;
	}
	/* correctly rounded straight to float: no double rounding through a
	 * double; underflow rounds to a subnormal or zero like any rounding */
	f = strtof_l(s, NULL, c);
	if ((float_bits(&f) & EXP_MASK) == EXP_MASK)
		return -ERANGE;
	*out = f;
	return 0;
}

/* The shortest text that parses back to the same bits, always with a '.'
 * (ini2reg types by it), except the spellings of infinities and NaNs. */
static void format_float(const float *fp, locale_t c, GString *out)
{
	static const char *const fmt[] = { "%.1g", "%.2g", "%.3g", "%.4g", "%.5g",
					   "%.6g", "%.7g", "%.8g", "%.9g" };
	uint32_t bits = float_bits(fp);
	char buf[G_ASCII_DTOSTR_BUF_SIZE], full[G_ASCII_DTOSTR_BUF_SIZE];
	const char *e;
	float back;
	size_t i;

	if ((bits & EXP_MASK) == EXP_MASK) {
		if (bits == POS_INF || bits == NEG_INF)
			g_string_append(out, bits == POS_INF ? "inf" : "-inf");
		else if (bits == QNAN || bits == NEG_QNAN)
			g_string_append(out, bits == QNAN ? "nan" : "-nan");
		else
			g_string_append_printf(out, NAN_BITS_FMT, bits);
		return;
	}
	for (i = 0; i < G_N_ELEMENTS(fmt) - 1; i++) {
		g_ascii_formatd(buf, sizeof buf, fmt[i], (double)*fp);
		if (parse_float(buf, strlen(buf), c, &back) == 0 && float_bits(&back) == bits)
			break;
	}
	g_ascii_formatd(buf, sizeof buf, fmt[i], (double)*fp);
	/* few digits make %g go exponential early ("4e+01"): up to 9 integer
	 * digits read better in full */
	e = strchr(buf, 'e');
	if (e && atoi(e + 1) >= 0 && atoi(e + 1) < 9) {
		g_ascii_formatd(full, sizeof full, fmt[atoi(e + 1)], (double)*fp);
		if (parse_float(full, strlen(full), c, &back) == 0 && float_bits(&back) == bits)
			memcpy(buf, full, sizeof buf);
	}
	e = strchr(buf, 'e');
	if (strchr(buf, '.'))
		g_string_append(out, buf);
	else if (e)
		g_string_append_printf(out, "%.*s.0%s", (int)(e - buf), buf, e);
	else
		g_string_append_printf(out, "%s.0", buf);
}

/* ---- REG -> INI ----------------------------------------------------------- */

/* Bytes that cannot appear in unquoted text: controls (a line break would
 * end the line) and the byte cp1251 leaves undefined. */
static int byte_needs_quotes(unsigned char c)
{
	return c < 0x20 || c == 0x7f || c == 0x98;
}

/* What the reader takes verbatim: it trims blanks and opens a quote at a
 * leading '"'. */
static int plain_text(const char *s, size_t len)
{
	if (len && (is_blank(s[0]) || is_blank(s[len - 1]) || s[0] == '"'))
		return 0;
	for (size_t i = 0; i < len; i++)
		if (byte_needs_quotes((unsigned char)s[i]))
			return 0;
	return 1;
}

/* A key name also must not end the key at an '=', look like a section,
 * a comment or an array marker ("name[]"), or be empty. */
static int plain_key(const char *s, size_t len)
{
	return len && plain_text(s, len) && !memchr(s, '=', len) && !strchr("[;#", s[0])
	       && s[len - 1] != ']';
}

/* A string value also must not read as a number. */
static int plain_value(const char *s, size_t len)
{
	return plain_text(s, len) && ini_classify(s, len) == INI_STRING;
}

/* The escape of a byte inside quotes; NULL for a byte that needs none or
 * the \xHH form. */
static const char *escape_of(unsigned char c)
{
	switch (c) {
	case '"':
		return "\\\"";
	case '\\':
		return "\\\\";
	case '\n':
		return "\\n";
	case '\r':
		return "\\r";
	case '\t':
		return "\\t";
	default:
		return NULL;
	}
}

static void put_quoted(GString *out, const char *s, size_t len)
{
	size_t run = 0; /* the first byte not written yet */

	g_string_append_c(out, '"');
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *esc = escape_of(c);

		if (!esc && !byte_needs_quotes(c))
			continue;
		cp1251_to_utf8(s + run, i - run, NULL, out);
		if (esc)
			g_string_append(out, esc);
		else
			g_string_append_printf(out, "\\x%02X", c);
		run = i + 1;
	}
	cp1251_to_utf8(s + run, len - run, NULL, out);
	g_string_append_c(out, '"');
}

static void put_text(GString *out, const char *s, size_t len, int plain)
{
	if (plain)
		cp1251_to_utf8(s, len, NULL, out);
	else
		put_quoted(out, s, len);
}

static void put_value(GString *out, const struct reg_key *k, uint32_t i, locale_t c)
{
	switch (reg_key_base(k)) {
	case REG_INT:
		g_string_append_printf(out, "%d", (int)k->v.i[i]);
		break;
	case REG_FLOAT:
		format_float(&k->v.f[i], c, out);
		break;
	default:
		put_text(out, k->v.str[i].s, k->v.str[i].len,
			 plain_value(k->v.str[i].s, k->v.str[i].len));
		break;
	}
}

static const char *const type_word[] = { "int", "float", "string" };

/* One line per value: arrays repeat the key (ini2reg's form); a 1-element
 * array is "key[]=v", an empty one "key[type]=". */
static void put_key(GString *out, const struct reg_key *k, locale_t c)
{
	const char *suffix = "";

	if (reg_key_is_array(k) && k->count == 0) {
		put_text(out, k->name, k->name_len, plain_key(k->name, k->name_len));
		g_string_append_printf(out, "[%s]=\n", type_word[reg_key_base(k)]);
		return;
	}
	if (reg_key_is_array(k) && k->count == 1)
		suffix = "[]";
	for (uint32_t i = 0; i < k->count; i++) {
		put_text(out, k->name, k->name_len, plain_key(k->name, k->name_len));
		g_string_append(out, suffix);
		g_string_append_c(out, '=');
		put_value(out, k, i, c);
		g_string_append_c(out, '\n');
	}
}

/* INI repeats an array's key name on the line of every value, so its text
 * grows with the name's length times the count: a 330 KB REG (a
 * 65535-byte name with 65535 values) would make 4 GiB of it.  The names
 * of a key's lines may take at most INI_NAME_GROWTH times the bytes the
 * key takes in the REG; a key that needs more is refused both ways. */
enum { INI_NAME_GROWTH = 32 };

static uint64_t key_reg_bytes(const struct reg_key *k)
{
	uint64_t n = 3 + (uint64_t)k->name_len + (reg_key_is_array(k) ? 2 : 0);

	if (reg_key_base(k) != REG_STRING)
		return n + 4 * (uint64_t)k->count;
	for (uint32_t i = 0; i < k->count; i++)
		n += 2 + (uint64_t)k->v.str[i].len;
	return n;
}

/* Returns 0, or -1 with err filled (EFBIG) for a key too costly as INI;
 * where is the error offset, prefix leads the message. */
static int check_key_growth(const struct reg_key *k, uint64_t where, const char *prefix,
			    struct format_error *err)
{
	GString *name;
	uint64_t names, bytes;
	char kn[REG_MSG_NAME];

	if (k->count < 2)
		return 0;
	name = g_string_new(NULL);
	put_text(name, k->name, k->name_len, plain_key(k->name, k->name_len));
	names = (uint64_t)name->len * k->count;
	g_string_free(name, TRUE);
	bytes = key_reg_bytes(k);
	if (names <= INI_NAME_GROWTH * bytes)
		return 0;
	return format_fail(err, EFBIG, where,
			   "%s%s: %u values under a %zu-byte name would repeat it in %llu bytes of INI, more than %d times the key's %llu bytes",
			   prefix, reg_msg_name(k->name, k->name_len, kn), k->count, k->name_len,
			   (unsigned long long)names, INI_NAME_GROWTH, (unsigned long long)bytes);
}

static GHashTable *name_set_new(void)
{
	return g_hash_table_new_full(g_bytes_hash, g_bytes_equal, (GDestroyNotify)g_bytes_unref, NULL);
}

/* Adds a name to set; 0 when it was there already. */
static int name_set_add(GHashTable *set, const char *name, size_t len)
{
	return g_hash_table_add(set, g_bytes_new_static(name, len));
}

static int check_keys(const struct reg_section *s, struct format_error *err)
{
	GHashTable *seen = name_set_new();
	int rc = 0;

	for (guint j = 0; rc == 0 && j < s->keys->len; j++) {
		const struct reg_key *k = g_ptr_array_index(s->keys, j);

		char sn[REG_MSG_NAME], kn[REG_MSG_NAME], prefix[REG_MSG_NAME + 3];

		reg_msg_name(s->name, s->name_len, sn);
		reg_msg_name(k->name, k->name_len, kn);
		snprintf(prefix, sizeof prefix, "[%s] ", sn);
		if ((k->type & ~REG_ARRAY) > REG_STRING)
			rc = format_fail(err, EINVAL, 0, "[%s] %s: unknown type 0x%02x", sn, kn, k->type);
		else if (!reg_key_is_array(k) && k->count != 1)
			rc = format_fail(err, EINVAL, 0, "[%s] %s: %u values but not an array",
					 sn, kn, k->count);
		else if (!name_set_add(seen, k->name, k->name_len))
			rc = format_fail(err, EINVAL, 0,
					 "[%s] has two keys named \"%s\": INI would read them as one array",
					 sn, kn);
		else
			rc = check_key_growth(k, 0, prefix, err);
	}
	g_hash_table_unref(seen);
	return rc;
}

static int check_model(const struct reg_file *f, struct format_error *err)
{
	GHashTable *seen = name_set_new();
	int rc = 0;

	for (guint i = 0; rc == 0 && i < f->sections->len; i++) {
		const struct reg_section *s = g_ptr_array_index(f->sections, i);

		char sn[REG_MSG_NAME];

		if (!name_set_add(seen, s->name, s->name_len))
			rc = format_fail(err, EINVAL, 0,
					 "two sections named [%s]: INI cannot hold them apart",
					 reg_msg_name(s->name, s->name_len, sn));
		else
			rc = check_keys(s, err);
	}
	g_hash_table_unref(seen);
	return rc;
}

static locale_t c_locale(struct format_error *err)
{
	locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t)0);

	if (c == (locale_t)0)
		format_fail(err, ENOMEM, 0, "no memory for the C locale");
	return c;
}

int reg_to_ini(const struct reg_file *f, GString *out, struct format_error *err)
{
	locale_t c;

	if (check_model(f, err) < 0)
		return -1;
	c = c_locale(err);
	if (c == (locale_t)0)
		return -1;
	for (guint i = 0; i < f->sections->len; i++) {
		const struct reg_section *s = g_ptr_array_index(f->sections, i);

		if (i)
			g_string_append_c(out, '\n');
		g_string_append_c(out, '[');
		put_text(out, s->name, s->name_len, plain_text(s->name, s->name_len));
		g_string_append(out, "]\n");
		for (guint j = 0; j < s->keys->len; j++)
			put_key(out, g_ptr_array_index(s->keys, j), c);
	}
	freelocale(c);
	return 0;
}

/* ---- INI -> REG: the pieces of the text ------------------------------------ */

/* One value line of a key: its text in cp1251 and whether it was quoted. */
struct elem {
	GString *text;
	unsigned line;
	int quoted;
};

/* A key while its section is read: lines with the same name gather here. */
struct pkey {
	GBytes *name;       /* cp1251 */
	unsigned line;      /* its first line */
	int array;          /* "[]" or more than one line */
	int empty_type;     /* reg_type of a "name[type]=" line, else -1 */
	GArray *elems;      /* struct elem */
};

struct psec {
	GString *name;
	GPtrArray *keys;    /* struct pkey *, first-line order */
	GHashTable *by_name; /* GBytes -> struct pkey * */
};

struct parser {
	const char *line_start;
	unsigned line;
	locale_t c;
	struct format_error *err;
	struct reg_file *f;
	GHashTable *sections; /* GBytes name -> first line */
	struct psec *cur;
};

static void elem_clear(gpointer p)
{
	g_string_free(((struct elem *)p)->text, TRUE);
}

static void pkey_free(gpointer p)
{
	struct pkey *k = p;

	g_bytes_unref(k->name);
	g_array_unref(k->elems);
	g_free(k);
}

static void psec_free(struct psec *s)
{
	if (!s)
		return;
	g_string_free(s->name, TRUE);
	g_hash_table_unref(s->by_name);
	g_ptr_array_unref(s->keys);
	g_free(s);
}

static int fail_line(struct parser *p, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail_line(struct parser *p, int code, const char *fmt, ...)
{
	char msg[sizeof p->err->msg];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return format_fail(p->err, code, p->line, "line %u: %s", p->line, msg);
}

/* The 1-based character column of at, for messages: what editors show.
 * What precedes at on the line has been decoded already, so it is UTF-8. */
static size_t column(const struct parser *p, const char *at)
{
	return (size_t)g_utf8_strlen(p->line_start, at - p->line_start) + 1;
}

/* Appends the cp1251 form of UTF-8 text to out. */
static int to_cp1251(struct parser *p, const char *s, size_t len, GString *out)
{
	size_t bad = 0;

	if (utf8_to_cp1251(s, len, out, &bad) == 0)
		return 0;
	return fail_line(p, EILSEQ,
			 "column %zu: not UTF-8, or a character that cp1251 (the game's encoding) lacks",
			 column(p, s + bad));
}

/* Decodes the escape at q (a backslash); returns the bytes it took. */
static int escape_byte(struct parser *p, const char *q, const char *end, GString *out)
{
	static const char from[] = "\"\\nrt", to[] = "\"\\\n\r\t";
	const char *hit = end - q >= 2 && q[1] != '\0' ? strchr(from, q[1]) : NULL;

	if (hit) {
		g_string_append_c(out, to[hit - from]);
		return 2;
	}
	if (end - q >= 4 && q[1] == 'x' && hex_value(q[2]) >= 0 && hex_value(q[3]) >= 0) {
		g_string_append_c(out, (char)(hex_value(q[2]) << 4 | hex_value(q[3])));
		return 4;
	}
	return fail_line(p, EINVAL, "column %zu: unknown escape (use \\\" \\\\ \\n \\r \\t \\xHH)",
			 column(p, q));
}

/* Reads the quoted text at s (which is '"') up to its closing quote, on
 * this line (before end); *after gets the byte after the quote. */
static int read_quoted(struct parser *p, const char *s, const char *end, GString *out,
		       const char **after)
{
	const char *run = s + 1;

	for (const char *q = s + 1; q < end;) {
		int n;

		if (*q != '"' && *q != '\\') {
			q++;
			continue;
		}
		if (to_cp1251(p, run, (size_t)(q - run), out) < 0)
			return -1;
		if (*q == '"') {
			*after = q + 1;
			return 0;
		}
		n = escape_byte(p, q, end, out);
		if (n < 0)
			return -1;
		q += n;
		run = q;
	}
	return fail_line(p, EINVAL, "column %zu: the quote opened here is not closed",
			 column(p, s));
}

static const char *skip_blanks(const char *s, const char *end)
{
	while (s < end && is_blank(*s))
		s++;
	return s;
}

static const char *trim_end(const char *s, const char *end)
{
	while (end > s && is_blank(end[-1]))
		end--;
	return end;
}

/* Reads a name or value: quoted, or the text itself.  Nothing but blanks
 * may follow a closing quote. */
static int read_text(struct parser *p, const char *s, const char *end, GString *out,
		     int *quoted)
{
	const char *after;

	*quoted = s < end && *s == '"';
	if (!*quoted)
		return to_cp1251(p, s, (size_t)(end - s), out);
	if (read_quoted(p, s, end, out, &after) < 0)
		return -1;
	if (skip_blanks(after, end) != end)
		return fail_line(p, EINVAL, "column %zu: text after the closing quote",
				 column(p, after));
	return 0;
}

/* ---- INI -> REG: building sections and keys ------------------------------ */

static int check_name(struct parser *p, const GString *name, const char *what)
{
	if (name->len > REG_MAX_LEN)
		return fail_line(p, ERANGE, "a %s name of %zu bytes, more than %u", what,
				 name->len, REG_MAX_LEN);
	if (res_hash(name->str, name->len, 1) < 0)
		return fail_line(p, EINVAL,
				 "the %s name's cp1251 bytes have a negative signed sum: the game's hash cannot place it",
				 what);
	return 0;
}

static enum ini_class elem_class(const struct elem *e)
{
	return e->quoted ? INI_STRING : ini_classify(e->text->str, e->text->len);
}

/* ini2reg's rule: an array is int or float only if every element is;
 * with a string among them it is a string array.  Ints mixed with floats
 * have no safe reading (a float array edited to "1" would silently become
 * strings): refused. */
static int key_class(struct parser *p, const struct pkey *k, enum ini_class *out)
{
	const struct elem *first = &g_array_index(k->elems, struct elem, 0);
	const struct elem *other = NULL;
	const char *name;
	gsize len;
	char kn[REG_MSG_NAME];

	*out = elem_class(first);
	for (guint i = 1; i < k->elems->len; i++) {
		const struct elem *e = &g_array_index(k->elems, struct elem, i);
		enum ini_class c = elem_class(e);

		if (c == INI_STRING) {
			*out = INI_STRING;
			return 0;
		}
		if (c != *out && !other)
			other = e;
	}
	if (*out == INI_STRING || !other)
		return 0;
	p->line = other->line;
	name = g_bytes_get_data(k->name, &len);
	return fail_line(p, EINVAL,
			 "\"%s\" mixes ints and floats (line %u has %s): give every value a decimal point, or quote them all for strings",
			 reg_msg_name(name, len, kn), first->line, *out == INI_INT ? "an int" : "a float");
}

static int convert_elem(struct parser *p, struct reg_key *k, uint32_t i, const struct elem *e)
{
	int rc;

	p->line = e->line;
	switch (reg_key_base(k)) {
	case REG_INT:
		if (parse_int(e->text->str, e->text->len, &k->v.i[i]) < 0)
			return fail_line(p, ERANGE, "%.40s does not fit a 32-bit int (-2147483648..2147483647)",
					 e->text->str);
		return 0;
	case REG_FLOAT:
		rc = parse_float(e->text->str, e->text->len, p->c, &k->v.f[i]);
		if (rc == -ERANGE)
			return fail_line(p, ERANGE, "%.40s is beyond the float range (write inf for infinity)",
					 e->text->str);
		if (rc < 0)
			return fail_line(p, EINVAL, "%.40s: not the bits of a NaN", e->text->str);
		return 0;
	default:
		reg_set_string(k, i, e->text->str, e->text->len);
		return 0;
	}
}

static int build_key(struct parser *p, struct reg_section *s, const struct pkey *pk)
{
	size_t name_len;
	const char *name = g_bytes_get_data(pk->name, &name_len);
	enum ini_class c;
	struct reg_key *k;
	char prefix[32];

	if (pk->empty_type >= 0) {
		reg_add_key(s, name, name_len, (uint8_t)(pk->empty_type | REG_ARRAY), 0);
		return 0;
	}
	if (key_class(p, pk, &c) < 0)
		return -1;
	k = reg_add_key(s, name, name_len,
			(uint8_t)((c == INI_INT ? REG_INT : c == INI_FLOAT ? REG_FLOAT : REG_STRING)
				  | (pk->array ? REG_ARRAY : 0)),
			pk->elems->len);
	for (guint i = 0; i < pk->elems->len; i++)
		if (convert_elem(p, k, i, &g_array_index(pk->elems, struct elem, i)) < 0)
			return -1;
	snprintf(prefix, sizeof prefix, "line %u: ", pk->line);
	return check_key_growth(k, pk->line, prefix, p->err);
}

/* Types and stores the keys of the section just read. */
static int close_section(struct parser *p)
{
	struct psec *ps = p->cur;
	struct reg_section *s;
	unsigned line = p->line;
	int rc = 0;

	if (!ps)
		return 0;
	s = reg_add_section(p->f, ps->name->str, ps->name->len);
	for (guint j = 0; rc == 0 && j < ps->keys->len; j++)
		rc = build_key(p, s, g_ptr_array_index(ps->keys, j));
	p->line = line;
	psec_free(ps);
	p->cur = NULL;
	return rc;
}

static int open_section(struct parser *p, GString *name)
{
	GBytes *key;
	gpointer first;

	if (close_section(p) < 0)
		return -1;
	key = g_bytes_new(name->str, name->len);
	first = g_hash_table_lookup(p->sections, key);
	if (first) {
		g_bytes_unref(key);
		return fail_line(p, EINVAL, "[%s] again (first at line %u): merge the two, REG holds a name once",
				 reg_msg_name(name->str, name->len, (char[REG_MSG_NAME]){ 0 }),
				 GPOINTER_TO_UINT(first));
	}
	if (g_hash_table_size(p->sections) >= REG_MAX_SLOTS) {
		g_bytes_unref(key);
		return fail_line(p, ERANGE, "more than %u sections", REG_MAX_SLOTS);
	}
	g_hash_table_insert(p->sections, key, GUINT_TO_POINTER(p->line));
	p->cur = g_new0(struct psec, 1);
	p->cur->name = g_string_new_len(name->str, (gssize)name->len);
	p->cur->keys = g_ptr_array_new_with_free_func(pkey_free);
	p->cur->by_name = g_hash_table_new(g_bytes_hash, g_bytes_equal);
	return 0;
}

static int section_line(struct parser *p, const char *s, const char *end)
{
	GString *name;
	int quoted, rc;

	if (end[-1] != ']' || end - s < 2)
		return fail_line(p, EINVAL, "a section line must end with ']'");
	name = g_string_new(NULL);
	s = skip_blanks(s + 1, end - 1);
	rc = read_text(p, s, trim_end(s, end - 1), name, &quoted);
	if (rc == 0)
		rc = check_name(p, name, "section");
	if (rc == 0)
		rc = open_section(p, name);
	g_string_free(name, TRUE);
	return rc;
}

/* What a "[...]" after a key name means: -2 nothing known, -1 "[]", or
 * the reg_type of "[int]", "[float]", "[string]" (an empty array). */
static int marker_of(const char *s, size_t len)
{
	if (text_is(s, len, ""))
		return -1;
	for (int t = 0; t < 3; t++)
		if (text_is(s, len, type_word[t]))
			return t;
	return -2;
}

static struct pkey *pkey_new(struct parser *p, const GString *name, int marker)
{
	struct pkey *k = g_new0(struct pkey, 1);

	k->name = g_bytes_new(name->str, name->len);
	k->line = p->line;
	k->array = marker != -2;
	k->empty_type = marker >= 0 ? marker : -1;
	k->elems = g_array_new(FALSE, FALSE, sizeof(struct elem));
	g_array_set_clear_func(k->elems, elem_clear);
	g_ptr_array_add(p->cur->keys, k);
	g_hash_table_insert(p->cur->by_name, k->name, k);
	return k;
}

static struct pkey *find_key(const struct psec *s, const GString *name)
{
	GBytes *lookup = g_bytes_new_static(name->str, name->len);
	struct pkey *k = g_hash_table_lookup(s->by_name, lookup);

	g_bytes_unref(lookup);
	return k;
}

/* Whether one more line of key name (k if seen before) may be filed. */
static int check_value(struct parser *p, const struct pkey *k, const GString *name, int marker)
{
	if (k && (k->empty_type >= 0 || marker >= 0))
		return fail_line(p, EINVAL,
				 "\"%s\" is also at line %u: an empty array (name[type]=) must be its only line",
				 reg_msg_name(name->str, name->len, (char[REG_MSG_NAME]){ 0 }), k->line);
	if (!k && p->cur->keys->len >= REG_MAX_SLOTS)
		return fail_line(p, ERANGE, "more than %u keys in this section", REG_MAX_SLOTS);
	if (k && k->elems->len >= REG_MAX_LEN)
		return fail_line(p, ERANGE, "\"%s\" has more than %u values",
				 reg_msg_name(name->str, name->len, (char[REG_MSG_NAME]){ 0 }), REG_MAX_LEN);
	return 0;
}

/* Files one key line: a new key, or one more value of a key seen before.
 * Takes value, whether it files it or refuses the line. */
static int add_value(struct parser *p, const GString *name, int marker, GString *value,
		     int quoted)
{
	struct pkey *k = find_key(p->cur, name);
	struct elem e = { value, p->line, quoted };
	int rc = check_value(p, k, name, marker);

	if (rc < 0) {
		g_string_free(value, TRUE);
		return rc;
	}
	if (!k)
		k = pkey_new(p, name, marker);
	else
		k->array = 1;
	if (marker < 0)
		g_array_append_val(k->elems, e);
	else
		g_string_free(value, TRUE); /* name[type]= has no value */
	return 0;
}

/* The key part of "key=value" (s..eq): quoted or verbatim, then an
 * optional marker; *marker as marker_of. */
static int read_key_name(struct parser *p, const char *s, const char *eq, GString *name,
			 int *marker)
{
	const char *end = trim_end(s, eq), *open = end;
	int quoted;

	*marker = -2;
	if (end > s && end[-1] == ']') {
		while (open > s && open[-1] != '[')
			open--;
		if (open > s && marker_of(open, (size_t)(end - 1 - open)) != -2) {
			*marker = marker_of(open, (size_t)(end - 1 - open));
			end = trim_end(s, open - 1);
		}
	}
	if (read_text(p, s, end, name, &quoted) < 0)
		return -1;
	if (!quoted && name->len == 0)
		return fail_line(p, EINVAL, "an empty key name (write \"\"= for one)");
	return check_name(p, name, "key");
}

/* Where the key part ends: at the first '=', but a quoted name may hold
 * '=' itself.  *eq is NULL when there is none. */
static int find_eq(struct parser *p, const char *s, const char *end, const char **eq)
{
	const char *from = s;

	if (*s == '"') {
		GString *skip = g_string_new(NULL);
		int rc = read_quoted(p, s, end, skip, &from);

		g_string_free(skip, TRUE);
		if (rc < 0)
			return -1;
	}
	*eq = memchr(from, '=', (size_t)(end - from));
	return 0;
}

static int key_line(struct parser *p, const char *s, const char *end)
{
	const char *eq;
	GString *name, *value;
	int marker, quoted, rc;

	if (find_eq(p, s, end, &eq) < 0)
		return -1;
	if (!eq)
		return fail_line(p, EINVAL, "not a [section], key=value, comment (; or #) or blank line");
	if (!p->cur)
		return fail_line(p, EINVAL, "key=value before any [section]");
	name = g_string_new(NULL);
	value = g_string_new(NULL);
	rc = read_key_name(p, s, eq, name, &marker);
	if (rc == 0)
		rc = read_text(p, skip_blanks(eq + 1, end), end, value, &quoted);
	if (rc == 0 && value->len > REG_MAX_LEN)
		rc = fail_line(p, ERANGE, "a value of %zu bytes, more than %u", value->len, REG_MAX_LEN);
	if (rc == 0 && marker >= 0 && (quoted || value->len))
		rc = fail_line(p, EINVAL, "name[%s]= is an empty array: nothing may follow the '='",
			       type_word[marker]);
	if (rc == 0) {
		rc = add_value(p, name, marker, value, quoted);
		value = NULL; /* add_value took it, even when it refused the line */
	}
	g_string_free(name, TRUE);
	if (value)
		g_string_free(value, TRUE);
	return rc;
}

static int parse_line(struct parser *p, const char *s, const char *end)
{
	p->line_start = s;
	s = skip_blanks(s, end);
	end = trim_end(s, end);
	if (s == end || *s == ';' || *s == '#')
		return 0; /* REG has no place for blanks and comments */
	if (*s == '[')
		return section_line(p, s, end);
	return key_line(p, s, end);
}

static int parse_lines(struct parser *p, const char *text, size_t len)
{
	const char *s = text, *end = text + len;

	if (len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
		s += 3; /* a BOM, as Windows editors write */
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *eol = nl ? nl : end;

		p->line++;
		if (eol > s && eol[-1] == '\r')
			eol--;
		if (parse_line(p, s, eol) < 0)
			return -1;
		s = nl ? nl + 1 : end;
	}
	return close_section(p);
}

int ini_to_reg(const char *text, size_t len, struct reg_file **out, struct format_error *err)
{
	struct format_error local = { 0 };
	struct parser p = { 0 };
	int rc;

	*out = NULL;
	p.err = err ? err : &local;
	p.c = c_locale(p.err);
	if (p.c == (locale_t)0)
		return -1;
	p.f = reg_new();
	p.sections = g_hash_table_new_full(g_bytes_hash, g_bytes_equal,
					   (GDestroyNotify)g_bytes_unref, NULL);
	rc = parse_lines(&p, text, len);
	psec_free(p.cur);
	g_hash_table_unref(p.sections);
	freelocale(p.c);
	if (rc < 0) {
		reg_free(p.f);
		return -1;
	}
	*out = p.f;
	return 0;
}

/* ---- on bytes ------------------------------------------------------------ */

int reg_bytes_to_ini(const unsigned char *data, size_t len, GString *out,
		     struct format_error *err)
{
	struct reg_file *f;
	int rc;

	if (reg_parse(data, len, &f, err) < 0)
		return -1;
	rc = reg_to_ini(f, out, err);
	reg_free(f);
	return rc;
}

int ini_to_reg_bytes(const char *text, size_t len, GByteArray *out, struct format_error *err)
{
	struct reg_file *f;
	int rc;

	if (ini_to_reg(text, len, &f, err) < 0)
		return -1;
	rc = reg_write(f, out, err);
	reg_free(f);
	return rc;
}
