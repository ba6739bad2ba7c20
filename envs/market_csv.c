// envs/market_csv.c: the CSV loaders (LEAN quote bars, LEAN equity daily, CSV with a header).
//
// The file is read through zlib (gzopen reads plain and gzip files alike) in chunks, and split
// into lines here rather than with gzgets: gzgets cannot tell a NUL byte from the end of its
// buffer, and a line of any length must either load whole or fail naming its line.
// Every field is parsed with a full check (no bare strtod/sscanf), every row validated with
// market_bar_check, and the first problem stops the load with "FILE:LINE: ...".
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>

#include "common/check.h"
#include "common/error.h"
#include "common/text.h"
#include "common/time_utc.h"
#include "envs/market_data_impl.h"

enum {
  CSV_CHUNK = 1 << 16,   // bytes per gzread
  CSV_MAX_COLUMNS = 32,  // more than any layout recognises (19 names, no repeats)
  CSV_NAME_MAX = 96,     // a column name's bytes, its terminator included (longer ones are unknown)
};

// --- lines ---------------------------------------------------------------------------------------

typedef struct {
  const char *path;
  gzFile gz;
  char *chunk;  // (CSV_CHUNK,) raw bytes
  int chunk_len, chunk_pos;
  char *line;  // the current line, NUL-terminated, without "\n" / "\r\n"
  size_t line_len, line_cap;
  int64_t line_no;  // of the current line, 1-based
  bool eof;
  bool sniffed;  // the file's first bytes were looked at (reader_sniff)
} LineReader;

static int reader_open(LineReader *r, const char *path) {
  memset(r, 0, sizeof *r);
  r->path = path;
  errno = 0;
  r->gz = gzopen(path, "rb");
  if (!r->gz) {
    error_set("%s: cannot open: %s", path, errno ? strerror(errno) : "out of memory in zlib");
    return -1;
  }
  gzbuffer(r->gz, 1 << 17);
  r->chunk = CHECK_ALLOC(CSV_CHUNK, "CSV read buffer");
  r->line_cap = 256;
  r->line = CHECK_ALLOC(r->line_cap, "CSV line");
  return 0;
}

static void reader_close(LineReader *r) {
  if (r->gz) gzclose(r->gz);
  free(r->chunk);
  free(r->line);
  memset(r, 0, sizeof *r);
}

// Text this reader cannot read, told by the file's first bytes (after gzip): UTF-16, which Excel's
// "Unicode Text" and some platforms' exports write, would otherwise be refused as a NUL byte in a
// file that is not text. 0, or -1 and the message.
static int reader_sniff(const LineReader *r, const char *bytes, int n) {
  const unsigned char *b = (const unsigned char *)bytes;
  if (n >= 2 && ((b[0] == 0xFF && b[1] == 0xFE) || (b[0] == 0xFE && b[1] == 0xFF))) {
    error_set(
        "%s:1: UTF-16 text (it starts with the byte-order mark %s); ppo-data reads UTF-8 or ASCII: save the file as "
        "CSV UTF-8, or convert it, e.g. iconv -f UTF-16 -t UTF-8 IN.csv > OUT.csv",
        r->path, b[0] == 0xFF ? "FF FE" : "FE FF");
    return -1;
  }
  return 0;
}

// A carriage return that does not end its line: the lines end in CR alone (classic Mac OS), so the
// whole file would read as one line, or in CR CR LF (line ends converted twice).
static int carriage_return_error(const LineReader *r, int64_t line_no, size_t at) {
  error_set(
      "%s:%lld: carriage return (\\r) inside the line, at byte %lld: lines must end in LF or CR LF, and these end in "
      "CR alone (classic Mac OS) or in CR CR LF: convert them, e.g. tr '\\r' '\\n' < IN.csv > OUT.csv (the blank "
      "lines that leaves are skipped)",
      r->path, (long long)line_no, (long long)at + 1);
  return -1;
}

// Reads the next line into r->line. Returns 1, 0 at the end of the file, or -1 and the message.
static int reader_next(LineReader *r) {
  r->line_len = 0;
  if (r->eof) return 0;
  bool got_bytes = false;
  for (;;) {
    if (r->chunk_pos == r->chunk_len) {
      // zlib hands out what it could decode before reporting a damaged stream: use it first.
      int n = gzread(r->gz, r->chunk, CSV_CHUNK);
      int errnum = Z_OK;
      const char *why = gzerror(r->gz, &errnum);
      if (n <= 0 && errnum != Z_OK && errnum != Z_STREAM_END) {
        size_t path_len = strlen(r->path);  // zlib's text starts with "PATH: "
        if (strncmp(why, r->path, path_len) == 0 && strncmp(why + path_len, ": ", 2) == 0) why += path_len + 2;
        error_set("%s:%lld: cannot read: %s", r->path, (long long)(r->line_no + 1),
                  errnum == Z_ERRNO ? strerror(errno) : why);
        return -1;
      }
      if (n <= 0) {
        r->eof = true;
        if (!got_bytes) return 0;
        break;  // a last line without '\n'
      }
      r->chunk_len = n;
      r->chunk_pos = 0;
      if (!r->sniffed) {
        r->sniffed = true;
        if (reader_sniff(r, r->chunk, n) != 0) return -1;
      }
    }
    got_bytes = true;
    char *start = r->chunk + r->chunk_pos;
    size_t avail = (size_t)(r->chunk_len - r->chunk_pos);
    char *newline = memchr(start, '\n', avail);
    size_t take = newline ? (size_t)(newline - start) : avail;
    if (r->line_len + take > MARKET_LINE_MAX) {
      const char *cr = r->line_len > 1 ? memchr(r->line, '\r', r->line_len - 1) : NULL;
      if (cr) return carriage_return_error(r, r->line_no + 1, (size_t)(cr - r->line));
      error_set("%s:%lld: line longer than %d bytes (a market CSV line is at most a few hundred)", r->path,
                (long long)(r->line_no + 1), MARKET_LINE_MAX);
      return -1;
    }
    if (r->line_len + take + 1 > r->line_cap) {
      size_t cap = r->line_cap;
      while (cap < r->line_len + take + 1) cap *= 2;
      char *grown = realloc(r->line, cap);
      CHECK(grown != NULL, "out of memory while reading a CSV line");
      r->line = grown, r->line_cap = cap;
    }
    memcpy(r->line + r->line_len, start, take);
    r->line_len += take;
    r->chunk_pos += (int)take + (newline ? 1 : 0);
    if (newline) break;
  }
  r->line_no++;
  if (r->line_len > 0 && r->line[r->line_len - 1] == '\r') r->line_len--;
  r->line[r->line_len] = '\0';
  char *nul = memchr(r->line, '\0', r->line_len);
  if (nul) {
    // Every other byte NUL over the line's start: UTF-16 text without a byte-order mark
    size_t check = r->line_len < 16 ? r->line_len : 16, nuls = 0;
    for (size_t i = 0; i < check; i++) nuls += r->line[i] == '\0';
    bool utf16 =
        check >= 4 && (nuls == check / 2 || nuls == (check + 1) / 2) && (r->line[0] == '\0') != (r->line[1] == '\0');
    if (utf16)
      error_set(
          "%s:%lld: NUL byte at position %lld (every other byte is NUL: UTF-16 text without a byte-order mark? "
          "ppo-data reads UTF-8 or ASCII: convert it, e.g. iconv -f %s -t UTF-8 IN.csv > OUT.csv)",
          r->path, (long long)r->line_no, (long long)(nul - r->line + 1), r->line[0] == '\0' ? "UTF-16BE" : "UTF-16LE");
    else
      error_set("%s:%lld: NUL byte at position %lld (not a text file?)", r->path, (long long)r->line_no,
                (long long)(nul - r->line + 1));
    return -1;
  }
  char *cr = memchr(r->line, '\r', r->line_len);
  if (cr) return carriage_return_error(r, r->line_no, (size_t)(cr - r->line));
  return 1;
}

static bool line_is_blank(const char *s) {
  for (; *s; s++)
    if (*s != ' ' && *s != '\t') return false;
  return true;
}

// Skips blank lines. Returns 1 with a non-blank line, 0 at the end, -1 on error.
static int reader_next_nonblank(LineReader *r) {
  int got;
  while ((got = reader_next(r)) == 1)
    if (!line_is_blank(r->line)) return 1;
  return got;
}

static int count_columns(const char *line, char sep) {
  int n = 1;
  for (; *line; line++) n += *line == sep;
  return n;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t') s++;
  size_t len = strlen(s);
  while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t')) s[--len] = '\0';
  return s;
}

// Splits `line` in place at `sep` into exactly n fields (the caller counted them), each trimmed and
// without the double quotes some exporters put around every field.
static void split_fields(char *line, int n, char **fields, char sep) {
  char *p = line;
  for (int i = 0; i < n; i++) {
    char *end = strchr(p, sep);
    if (end) *end = '\0';
    char *field = trim(p);
    size_t len = strlen(field);
    if (len >= 2 && field[0] == '"' && field[len - 1] == '"') {
      field[len - 1] = '\0';
      field = trim(field + 1);
    }
    fields[i] = field;
    p = end ? end + 1 : p + strlen(p);
  }
}

// The separator of a header line: ',' when it has one, else a tab or ';' (MetaTrader and
// spreadsheet exports in locales whose decimal mark is the comma).
static char detect_separator(const char *line) {
  if (strchr(line, ',')) return ',';
  if (strchr(line, '\t')) return '\t';
  if (strchr(line, ';')) return ';';
  return ',';
}

// --- fields ----------------------------------------------------------------------------------------

typedef enum {
  COL_TIME,
  COL_OPEN,
  COL_HIGH,
  COL_LOW,
  COL_CLOSE,
  COL_BID_OPEN,
  COL_BID_HIGH,
  COL_BID_LOW,
  COL_BID_CLOSE,
  COL_ASK_OPEN,
  COL_ASK_HIGH,
  COL_ASK_LOW,
  COL_ASK_CLOSE,
  COL_VOLUME,
  COL_ADJ_CLOSE,
  COL_BID_SIZE,
  COL_ASK_SIZE,
  COL_TICKVOL,
  COL_SPREAD,
  COL_KINDS,
  COL_CLOCK = COL_KINDS,  // the time of day beside a date column (MetaTrader's <DATE>,<TIME>)
  COL_IGNORED,            // named by ignore_columns: not read
} ColumnKind;

static const char *const column_names[COL_KINDS] = {"time",     "open",     "high",      "low",       "close",
                                                    "bid_open", "bid_high", "bid_low",   "bid_close", "ask_open",
                                                    "ask_high", "ask_low",  "ask_close", "volume",    "adj_close",
                                                    "bid_size", "ask_size", "tickvol",   "spread"};

#define CSV_RECOGNISED                                                                                      \
  "time|date|datetime|date_time|timestamp|gmt_time|open_time (or date and time), open, high, low, close, "  \
  "adj_close, volume|vol, bid_open, bid_high, bid_low, bid_close, ask_open, ask_high, ask_low, ask_close, " \
  "bid_size, ask_size, tickvol, spread"

// Where each price column goes in a MarketBar (NULL for the checked-but-not-kept ones).
static double *bar_slot(MarketBar *bar, ColumnKind kind) {
  switch (kind) {
    case COL_OPEN:
      return &bar->open;
    case COL_HIGH:
      return &bar->high;
    case COL_LOW:
      return &bar->low;
    case COL_CLOSE:
      return &bar->close;
    case COL_BID_OPEN:
      return &bar->bid_open;
    case COL_BID_HIGH:
      return &bar->bid_high;
    case COL_BID_LOW:
      return &bar->bid_low;
    case COL_BID_CLOSE:
      return &bar->bid_close;
    case COL_ASK_OPEN:
      return &bar->ask_open;
    case COL_ASK_HIGH:
      return &bar->ask_high;
    case COL_ASK_LOW:
      return &bar->ask_low;
    case COL_ASK_CLOSE:
      return &bar->ask_close;
    case COL_VOLUME:
      return &bar->volume;
    default:
      return NULL;
  }
}

typedef struct {
  MarketFormat format;
  char sep;  // field separator
  int n_columns;
  ColumnKind kinds[CSV_MAX_COLUMNS];
  char names[CSV_MAX_COLUMNS][CSV_NAME_MAX];  // as the messages name them (the header's spelling for csv)
  double price_divisor;             // 10000 for LEAN equity (deci-cents), else 1
  bool has_bid_ask, has_volume;
  bool has_clock;       // a separate time-of-day column: the time column holds dates
  bool adjust;          // open..close times adj_close / close (an adj_close column, raw_prices off)
  bool unnamed_last;    // the header ends with a separator: its empty last column must stay empty
  int64_t header_line;  // 0 when there is no header
} Layout;

// A decimal number: digits, sign, point and exponent only (no "nan", "inf", hex), finite.
static const char *parse_number(const char *s, double *out) {
  if (!*s) return "empty";
  if (s[strspn(s, "0123456789+-.eE")] != '\0') return "not a number";
  errno = 0;
  char *end = NULL;
  double v = strtod(s, &end);
  if (end == s || *end != '\0') return "not a number";
  if (errno == ERANGE || !isfinite(v)) return "out of range";
  *out = v;
  return NULL;
}

// --- timestamps ------------------------------------------------------------------------------------
// Each reader stops at the first mismatch; reading never passes the terminating NUL because a NUL
// fails every digit and separator test before the pointer moves past it.

typedef enum { TIME_OK, TIME_BAD_SHAPE, TIME_NO_SUCH_DATE, TIME_SUBSECOND, TIME_COMPACT_DATE } TimeParse;

#define TIME_ALLOWED                                                                                      \
  "YYYY-MM-DD[ HH:MM[:SS]] (or YYYY.MM.DD, YYYY/MM/DD, DD.MM.YYYY, YYYYMMDD; 'T' before the time; a UTC " \
  "offset Z, +HH:MM or ' UTC' after it), YYYYMMDD HH:MM, or Unix seconds, milliseconds or microseconds"

// "YYYYMMDD HH:MM"
static bool shape_lean(const char **p, CivilTime *t) {
  return utc_read_digits(p, 4, &t->year) && utc_read_digits(p, 2, &t->month) && utc_read_digits(p, 2, &t->day) &&
         *(*p)++ == ' ' && utc_read_digits(p, 2, &t->hour) && *(*p)++ == ':' && utc_read_digits(p, 2, &t->minute);
}

// A date: "YYYY-MM-DD" with '-', '.' or '/' (the same twice), "DD.MM.YYYY" (day first, as Europe and
// Dukascopy write it; never "../../YYYY", whose order is the locale's) or "YYYYMMDD".
static bool read_date(const char **p, CivilTime *t) {
  const char *s = *p;
  if (s[0] >= '0' && s[0] <= '9' && s[1] >= '0' && s[1] <= '9' && s[2] == '.') {
    return utc_read_digits(p, 2, &t->day) && *(*p)++ == '.' && utc_read_digits(p, 2, &t->month) && *(*p)++ == '.' &&
           utc_read_digits(p, 4, &t->year);
  }
  if (!utc_read_digits(p, 4, &t->year)) return false;
  char sep = **p;
  if (sep >= '0' && sep <= '9') return utc_read_digits(p, 2, &t->month) && utc_read_digits(p, 2, &t->day);
  if (sep != '-' && sep != '.' && sep != '/') return false;
  (*p)++;
  return utc_read_digits(p, 2, &t->month) && *(*p)++ == sep && utc_read_digits(p, 2, &t->day);
}

// "HH:MM[:SS[.fff]]": *fraction says whether the fraction (any number of digits) is not zero.
static bool read_clock(const char **p, CivilTime *t, bool *fraction) {
  if (!(utc_read_digits(p, 2, &t->hour) && *(*p)++ == ':' && utc_read_digits(p, 2, &t->minute))) return false;
  if (**p != ':') return true;
  (*p)++;
  if (!utc_read_digits(p, 2, &t->second)) return false;
  if (**p != '.') return true;
  (*p)++;
  if (**p < '0' || **p > '9') return false;
  for (; **p >= '0' && **p <= '9'; (*p)++)
    if (**p != '0') *fraction = true;
  return true;
}

// A UTC offset after a time: nothing, "Z", "+HH:MM", "-HH:MM", "+HHMM", "+HH", or " UTC" / " GMT",
// optionally after one space. *offset gets the seconds east of UTC, *zoned whether one was there.
static bool read_zone(const char **p, int *offset, bool *zoned) {
  *offset = 0;
  *zoned = false;
  if (**p == ' ') (*p)++;
  if (**p == '\0') return true;
  *zoned = true;
  if (**p == 'Z') {
    (*p)++;
    return true;
  }
  if (strcmp(*p, "UTC") == 0 || strcmp(*p, "GMT") == 0) {
    *p += 3;
    return true;
  }
  if (**p != '+' && **p != '-') return false;
  int sign = *(*p)++ == '-' ? -1 : 1, hours = 0, minutes = 0;
  if (!utc_read_digits(p, 2, &hours)) return false;
  bool colon = **p == ':';
  if (colon) (*p)++;
  if ((colon || **p != '\0') && !utc_read_digits(p, 2, &minutes)) return false;
  if (hours > 14 || minutes > 59) return false;
  *offset = sign * (hours * 3600 + minutes * 60);
  return true;
}

// Whether 10 or 12 digits are a calendar time written without separators, YYYYMMDDHH or
// YYYYMMDDHHMM of the years 1900-2099: as Unix time those read as seconds of 2030-2036 or
// milliseconds of 1976, when no market data was stamped so; as dates they are an export's compact
// clock (MetaTrader scripts, some vendors). Neither is read: parse_unix refuses them as ambiguous.
static bool compact_date_time(const char *s, size_t n) {
  if (n != 10 && n != 12) return false;
  CivilTime t = {0, 0, 0, 0, 0, 0};
  const char *p = s;
  if (!(utc_read_digits(&p, 4, &t.year) && utc_read_digits(&p, 2, &t.month) && utc_read_digits(&p, 2, &t.day) &&
        utc_read_digits(&p, 2, &t.hour)))
    return false;
  if (n == 12 && !utc_read_digits(&p, 2, &t.minute)) return false;
  return t.year >= 1900 && t.year <= 2099 && utc_civil_valid(&t);
}

// Unix time: 9-10 digits are seconds, 12-13 milliseconds, 15-16 microseconds (Binance's klines
// since 2025); a part of a second that is not zero is TIME_SUBSECOND; 10 or 12 digits that are also
// a compact calendar time are TIME_COMPACT_DATE.
static TimeParse parse_unix(const char *s, int64_t *out) {
  size_t n = strlen(s);
  int64_t per_second = n >= 9 && n <= 10 ? 1 : n >= 12 && n <= 13 ? 1000 : n >= 15 && n <= 16 ? 1000000 : 0;
  if (per_second == 0) return TIME_BAD_SHAPE;
  if (compact_date_time(s, n)) return TIME_COMPACT_DATE;
  int64_t v = 0;
  for (const char *c = s; *c; c++) v = v * 10 + (*c - '0');
  if (v % per_second != 0) return TIME_SUBSECOND;
  *out = v / per_second;
  return TIME_OK;
}

typedef enum {
  TIME_LEAN,  // "YYYYMMDD HH:MM" only (the LEAN layouts)
  TIME_ANY,   // every shape above
  TIME_DATE,  // a date alone (the date column beside a time-of-day column)
} TimeMode;

// What a timestamp's text said besides the time: whether it was an instant already (a UTC offset
// or Unix time: no local zone applies to it) and whether it had a time of day.
typedef struct {
  bool zoned, clock;
} TimeForm;

static TimeParse parse_time(const char *s, TimeMode mode, int64_t *out, TimeForm *form) {
  CivilTime t = {0, 0, 0, 0, 0, 0};
  const char *p = s;
  *form = (TimeForm){false, mode == TIME_LEAN};
  if (mode == TIME_LEAN) {
    if (!(shape_lean(&p, &t) && *p == '\0')) return TIME_BAD_SHAPE;
    if (!utc_civil_valid(&t)) return TIME_NO_SUCH_DATE;
    *out = utc_from_civil(&t);
    return TIME_OK;
  }
  size_t digits = strspn(s, "0123456789");
  if (mode == TIME_ANY && s[digits] == '\0' && digits != 8) {
    *form = (TimeForm){true, true};
    return parse_unix(s, out);
  }
  bool fraction = false;
  int offset = 0;
  if (!read_date(&p, &t)) return TIME_BAD_SHAPE;
  if (mode == TIME_ANY && (*p == ' ' || *p == 'T')) {
    p++;
    form->clock = true;
    if (!read_clock(&p, &t, &fraction) || !read_zone(&p, &offset, &form->zoned)) return TIME_BAD_SHAPE;
  }
  if (*p != '\0') return TIME_BAD_SHAPE;
  if (!utc_civil_valid(&t)) return TIME_NO_SUCH_DATE;
  if (fraction) return TIME_SUBSECOND;
  *out = utc_from_civil(&t) - offset;
  return TIME_OK;
}

// The time-of-day column: "HH:MM[:SS[.000]]", as seconds into the day.
static TimeParse parse_clock(const char *s, int64_t *out) {
  CivilTime t = {1970, 1, 1, 0, 0, 0};
  const char *p = s;
  bool fraction = false;
  if (!read_clock(&p, &t, &fraction) || *p != '\0') return TIME_BAD_SHAPE;
  if (!utc_civil_valid(&t)) return TIME_NO_SUCH_DATE;
  if (fraction) return TIME_SUBSECOND;
  *out = t.hour * 3600 + t.minute * 60 + t.second;
  return TIME_OK;
}

static int field_error(const LineReader *r, const char *column, const char *value, const char *reason,
                       const char *allowed) {
  char shown[MARKET_FIELD_SHOWN_BYTES];
  error_set("%s:%lld: column %s = '%s': %s (allowed: %s)", r->path, (long long)r->line_no, column,
            text_escape_cut(value, MARKET_FIELD_SHOWN, shown, sizeof shown), reason, allowed);
  return -1;
}

static int time_error(const LineReader *r, const char *column, const char *text, TimeParse got, bool clock, bool lean) {
  switch (got) {
    case TIME_BAD_SHAPE:
      if (clock) return field_error(r, column, text, "not a time of day", "HH:MM[:SS]");
      return field_error(r, column, text, "not a timestamp", lean ? "YYYYMMDD HH:MM" : TIME_ALLOWED);
    case TIME_NO_SUCH_DATE:
      return field_error(r, column, text, "no such date or time", "a calendar date, hours 00-23, minutes 00-59");
    case TIME_SUBSECOND:
      return field_error(r, column, text, "fractions of a second are not supported", "whole seconds, e.g. .000");
    case TIME_COMPACT_DATE:
      return field_error(r, column, text,
                         strlen(text) == 12
                             ? "ambiguous: Unix milliseconds of 1976, or a date and time YYYYMMDDHHMM, which is "
                               "not read (write it as YYYY-MM-DD HH:MM)"
                             : "ambiguous: Unix seconds after 2030, or a date and hour YYYYMMDDHH, which is not "
                               "read (write it as YYYY-MM-DD HH:00)",
                         TIME_ALLOWED);
    case TIME_OK:
      break;
  }
  return 0;
}

// --- local time to UTC ------------------------------------------------------------------------------
// Through the C library's zone database (TZ set for the load, restored after): mktime of the wall
// clock as standard and as daylight time, each kept only if localtime gives the same wall clock
// back. None: a time the zone skips (spring forward). Two: the hour repeated when daylight saving
// ends; the earlier instant unless it is not after the row before, then the later (rows in time
// order; a file that holds that hour once, or with a gap in it, is read as its first pass, and
// MarketCsvSummary counts the rows so that ppo-data can say so).

typedef struct {
  bool active;
  char *saved_tz;  // TZ before the load (NULL: unset)
} ZoneScope;

static int zone_begin(ZoneScope *z, const char *path, const char *zone) {
  memset(z, 0, sizeof *z);
  if (!zone) return 0;
  const char *dir = getenv("TZDIR") && *getenv("TZDIR") ? getenv("TZDIR") : "/usr/share/zoneinfo";
  char file[1024];
  struct stat st;
  char magic[4] = "";
  if (zone[0] != '/' && !strstr(zone, "..") && strncmp(zone, "right/", 6) != 0 &&
      snprintf(file, sizeof file, "%s/%s", dir, zone) < (int)sizeof file && stat(file, &st) == 0 &&
      S_ISREG(st.st_mode)) {
    FILE *f = fopen(file, "rb");
    if (f) {
      if (fread(magic, 1, 4, f) != 4) magic[0] = '\0';
      fclose(f);
    }
  }
  // Not a zone file (TZ would fall back to UTC without a word), or right/'s, which count leap seconds.
  if (memcmp(magic, "TZif", 4) != 0) {
    error_set("%s: cannot convert from the time zone '%s': the zone database (%s) has no such zone", path, zone, dir);
    return -1;
  }
  const char *old = getenv("TZ");
  z->saved_tz = old ? strdup(old) : NULL;
  z->active = true;
  setenv("TZ", zone, 1);
  tzset();
  return 0;
}

static void zone_end(ZoneScope *z) {
  if (!z->active) return;
  if (z->saved_tz)
    setenv("TZ", z->saved_tz, 1);
  else
    unsetenv("TZ");
  tzset();
  free(z->saved_tz);
  z->active = false;
}

// One wall-clock ts (read on the UTC calendar) to UTC. 0, 1 for the repeated hour's second pass, -1 skipped;
// *ambiguous: the time falls in a repeated hour (two instants have it).
static int wall_to_utc(int64_t wall, const int64_t *previous, int64_t *out, bool *ambiguous) {
  CivilTime c = utc_to_civil(wall);
  int64_t found[2];
  int n = 0;
  for (int dst = 0; dst <= 1; dst++) {
    struct tm tm = {.tm_year = c.year - 1900,
                    .tm_mon = c.month - 1,
                    .tm_mday = c.day,
                    .tm_hour = c.hour,
                    .tm_min = c.minute,
                    .tm_sec = c.second,
                    .tm_isdst = dst};
    time_t t = mktime(&tm);
    struct tm back;
    if (!localtime_r(&t, &back)) continue;  // a failed mktime's -1 does not give the wall clock back
    if (back.tm_year != c.year - 1900 || back.tm_mon != c.month - 1 || back.tm_mday != c.day ||
        back.tm_hour != c.hour || back.tm_min != c.minute || back.tm_sec != c.second)
      continue;
    if (n == 0 || (int64_t)t != found[0]) found[n++] = (int64_t)t;
  }
  *ambiguous = n == 2;
  if (n == 0) return -1;
  if (n == 2 && found[1] < found[0]) {
    int64_t t = found[0];
    found[0] = found[1], found[1] = t;
  }
  bool second = n == 2 && previous && found[0] <= *previous;
  *out = found[second ? 1 : 0];
  return second;
}

// --- rows ------------------------------------------------------------------------------------------

// A row without any value but its time: each other field empty, "null" (Yahoo's holidays), "nan" or "n/a".
static bool row_is_null(const Layout *layout, char **fields) {
  for (int c = 0; c < layout->n_columns; c++) {
    ColumnKind kind = layout->kinds[c];
    if (kind == COL_TIME || kind == COL_CLOCK || kind == COL_IGNORED) continue;
    const char *f = fields[c];
    if (*f && strcasecmp(f, "null") != 0 && strcasecmp(f, "nan") != 0 && strcasecmp(f, "n/a") != 0) return false;
  }
  return true;
}

// Parses one data line (already split) into bar; *factor gets adj_close / close when the layout
// adjusts (the caller applies it after the row's checks, which see the file's own prices).
// 0, or -1 and the message.
static int parse_row(const LineReader *r, const Layout *layout, char **fields, MarketBar *bar, double *factor,
                     TimeForm *form) {
  static const double nan_value = NAN;
  *bar = (MarketBar){0,         nan_value, nan_value, nan_value, nan_value, nan_value, nan_value,
                     nan_value, nan_value, nan_value, nan_value, nan_value, nan_value, nan_value};
  bool lean = layout->format != MARKET_FORMAT_CSV;
  int64_t clock = 0;
  double adj_close = NAN;
  *form = (TimeForm){false, false};
  for (int c = 0; c < layout->n_columns; c++) {
    const char *name = layout->names[c];
    const char *text = fields[c];
    ColumnKind kind = layout->kinds[c];
    if (kind == COL_IGNORED) {
      // A separator ending every line leaves an empty field; a value there belongs to a column
      // the header does not name (a volume, say), which would be dropped without a word.
      if (layout->unnamed_last && c == layout->n_columns - 1 && *text)
        return field_error(r, name, text, "a value in the column the header leaves without a name",
                           "an empty field after the separator ending the line; or name the column in the header");
      continue;
    }
    if (kind == COL_TIME || kind == COL_CLOCK) {
      TimeMode mode = TIME_ANY;
      if (lean) mode = TIME_LEAN;
      if (layout->has_clock) mode = TIME_DATE;
      TimeForm date_form;
      TimeParse got = kind == COL_CLOCK ? parse_clock(text, &clock) : parse_time(text, mode, &bar->ts, &date_form);
      if (kind == COL_TIME) form->zoned = date_form.zoned, form->clock |= date_form.clock;
      if (kind == COL_CLOCK) form->clock = true;
      if (got != TIME_OK) return time_error(r, name, text, got, kind == COL_CLOCK, lean);
      continue;
    }
    double value;
    const char *why = parse_number(text, &value);
    bool is_size =
        kind == COL_VOLUME || kind == COL_BID_SIZE || kind == COL_ASK_SIZE || kind == COL_TICKVOL || kind == COL_SPREAD;
    const char *allowed = is_size ? "a finite decimal number >= 0" : "a finite decimal number > 0";
    if (why && layout->sep == ';' && strchr(text, ','))  // a spreadsheet in a locale that writes 1,5
      return field_error(r, name, text, "not a number (a decimal comma: write decimal points)", allowed);
    if (why) return field_error(r, name, text, why, allowed);
    if (is_size ? !(value >= 0) : !(value > 0))
      return field_error(r, name, text, is_size ? "must not be negative" : "prices must be positive", allowed);
    value += 0.0;  // a size written -0 is stored as 0 (the bits of -0.0 would give the file another data hash)
    if (layout->price_divisor != 1.0 && !is_size && strpbrk(text, ".eE"))
      return field_error(r, name, text, "lean-equity prices are whole numbers of 1/10000 USD",
                         "digits only; a file of decimal prices needs a header line naming its columns, e.g. "
                         "time,open,high,low,close,volume");
    if (!is_size && kind != COL_ADJ_CLOSE)
      value /= layout->price_divisor;  // a division, so 973100 gives the double nearest 97.31
    if (kind == COL_ADJ_CLOSE) adj_close = value;
    double *slot = bar_slot(bar, kind);
    if (slot) *slot = value;
  }
  bar->ts += clock;
  if (layout->has_bid_ask) market_bar_mid(bar);
  *factor = layout->adjust ? adj_close / bar->close : 1.0;
  return 0;
}

// --- layouts -----------------------------------------------------------------------------------------

static void layout_lean(Layout *layout, MarketFormat format) {
  static const ColumnKind quote[] = {COL_TIME,      COL_BID_OPEN,  COL_BID_HIGH, COL_BID_LOW,
                                     COL_BID_CLOSE, COL_BID_SIZE,  COL_ASK_OPEN, COL_ASK_HIGH,
                                     COL_ASK_LOW,   COL_ASK_CLOSE, COL_ASK_SIZE};
  static const ColumnKind equity[] = {COL_TIME, COL_OPEN, COL_HIGH, COL_LOW, COL_CLOSE, COL_VOLUME};
  memset(layout, 0, sizeof *layout);
  layout->format = format;
  layout->sep = ',';
  bool is_quote = format == MARKET_FORMAT_LEAN_QUOTE;
  layout->n_columns = is_quote ? 11 : 6;
  for (int c = 0; c < layout->n_columns; c++) {
    layout->kinds[c] = is_quote ? quote[c] : equity[c];
    market_copy_text(layout->names[c], sizeof layout->names[c], column_names[layout->kinds[c]]);
  }
  layout->price_divisor = is_quote ? 1.0 : 10000.0;
  layout->has_bid_ask = is_quote;
  layout->has_volume = !is_quote;
}

// A column name as compared: lower case, ' ' and '-' as '_', MetaTrader's <...> dropped. Writes ""
// when it does not fit.
static void normalise_name(const char *name, char *norm, size_t capacity) {
  size_t len = strlen(name);
  if (len >= 2 && name[0] == '<' && name[len - 1] == '>') name++, len -= 2;
  if (len >= capacity) len = 0;
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    norm[i] = (c == ' ' || c == '-') ? '_' : (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
  }
  norm[len] = '\0';
}

static int column_kind_from_name(const char *norm) {
  static const char *const time_names[] = {"time",     "date",      "datetime", "timestamp",
                                           "gmt_time", "date_time", "open_time"};
  if (!norm[0]) return -1;
  for (size_t k = 0; k < sizeof time_names / sizeof time_names[0]; k++)
    if (strcmp(norm, time_names[k]) == 0) return COL_TIME;
  for (int k = COL_OPEN; k < COL_KINDS; k++)
    if (strcmp(norm, column_names[k]) == 0) return k;
  if (strcmp(norm, "adjclose") == 0) return COL_ADJ_CLOSE;
  if (strcmp(norm, "vol") == 0) return COL_VOLUME;
  if (strcmp(norm, "tick_volume") == 0) return COL_TICKVOL;
  return -1;
}

// Whether the comma-separated list `names` holds the normalised name `norm`.
static bool name_listed(const char *names, const char *norm) {
  for (const char *p = names; p && *p;) {
    size_t len = strcspn(p, ",");
    char one[CSV_NAME_MAX], want[CSV_NAME_MAX];
    if (len < sizeof one) {
      memcpy(one, p, len);
      one[len] = '\0';
      normalise_name(trim(one), want, sizeof want);
      if (want[0] && strcmp(want, norm) == 0) return true;
    }
    p += len + (p[len] == ',');
  }
  return false;
}

// The header line (already split into n fields) defines the columns.
static int layout_from_header(const LineReader *r, char **fields, int n, const MarketCsvOptions *options,
                              Layout *layout, int *ignored) {
  char sep = layout->sep;
  memset(layout, 0, sizeof *layout);
  layout->format = MARKET_FORMAT_CSV;
  layout->sep = sep;
  layout->price_divisor = 1.0;
  layout->header_line = r->line_no;
  layout->n_columns = n;
  int seen[COL_KINDS];
  for (int k = 0; k < COL_KINDS; k++) seen[k] = 0;
  char shown[MARKET_FIELD_SHOWN_BYTES], norm[CSV_NAME_MAX], norms[CSV_MAX_COLUMNS][CSV_NAME_MAX];
  *ignored = 0;
  for (int c = 0; c < n; c++) {
    market_copy_text(layout->names[c], sizeof layout->names[c], fields[c]);
    normalise_name(fields[c], norms[c], sizeof norms[c]);
    if (c == n - 1 && c > 0 && fields[c][0] == '\0') {  // a separator ending every line (some exporters)
      market_copy_text(layout->names[c], sizeof layout->names[c], "(empty)");
      layout->kinds[c] = COL_IGNORED;
      layout->unnamed_last = true;
      continue;
    }
    if (options->ignore_columns && norms[c][0] && name_listed(options->ignore_columns, norms[c])) {
      layout->kinds[c] = COL_IGNORED;
      ++*ignored;
      continue;
    }
    int kind = column_kind_from_name(norms[c]);
    if (kind < 0 && c == 0 && fields[c][0] >= '0' && fields[c][0] <= '9') {  // data quoted, so not told by the
      error_set(                                                             // format detection's first field
          "%s:%lld: no header line: the first field '%s' is data; add a header line naming the columns, e.g. "
          "time,open,high,low,close,volume",
          r->path, (long long)r->line_no, text_escape_cut(fields[c], MARKET_FIELD_SHOWN, shown, sizeof shown));
      return -1;
    }
    if (kind < 0) {
      error_set("%s:%lld: unknown column '%s' (column %d) (recognised, case-insensitive: " CSV_RECOGNISED
                "; ppo-data import --ignore-columns leaves a column out)",
                r->path, (long long)r->line_no, text_escape_cut(fields[c], MARKET_FIELD_SHOWN, shown, sizeof shown),
                c + 1);
      return -1;
    }
    // A date column and a time column: the date and the time of day (MetaTrader, many vendors).
    if (kind == COL_TIME && seen[COL_TIME] && !layout->has_clock) {
      const char *earlier = norms[seen[COL_TIME] - 1];
      if (strcmp(earlier, "date") == 0 && strcmp(norms[c], "time") == 0) {
        layout->kinds[c] = COL_CLOCK, layout->has_clock = true;
        continue;
      }
      if (strcmp(earlier, "time") == 0 && strcmp(norms[c], "date") == 0) {
        layout->kinds[seen[COL_TIME] - 1] = COL_CLOCK, layout->has_clock = true;
        layout->kinds[c] = COL_TIME, seen[COL_TIME] = c + 1;
        continue;
      }
    }
    if (seen[kind]) {
      error_set("%s:%lld: column '%s' (column %d) repeats column %d ('%s' names the same column%s)", r->path,
                (long long)r->line_no, text_escape_cut(fields[c], MARKET_FIELD_SHOWN, shown, sizeof shown), c + 1,
                seen[kind], column_names[kind],
                kind == COL_TIME ? "; a date column and a time column are read together" : "");
      return -1;
    }
    seen[kind] = c + 1;
    layout->kinds[c] = (ColumnKind)kind;
  }
  if (options->ignore_columns) {  // every name it lists is a column of this header
    for (const char *p = options->ignore_columns; *p;) {
      size_t len = strcspn(p, ",");
      char one[CSV_NAME_MAX] = "";
      if (len < sizeof one) memcpy(one, p, len), one[len] = '\0';
      normalise_name(trim(one), norm, sizeof norm);
      bool found = false;
      for (int c = 0; c < n && !found; c++) found = layout->kinds[c] == COL_IGNORED && strcmp(norms[c], norm) == 0;
      if (!found) {
        error_set("%s:%lld: --ignore-columns names '%s', which is not a column of this header", r->path,
                  (long long)r->line_no, text_escape_cut(one, MARKET_FIELD_SHOWN, shown, sizeof shown));
        return -1;
      }
      p += len + (p[len] == ',');
    }
  }
  if (!seen[COL_TIME]) {
    error_set("%s:%lld: no time column (name one time, date, datetime, timestamp, gmt_time or open_time)", r->path,
              (long long)r->line_no);
    return -1;
  }
  int n_trade = 0, n_quote = 0;
  for (int k = COL_OPEN; k <= COL_CLOSE; k++) n_trade += seen[k] != 0;
  for (int k = COL_BID_OPEN; k <= COL_ASK_CLOSE; k++) n_quote += seen[k] != 0;
  char missing[256] = "";
  if (n_quote > 0 && n_trade > 0) {
    error_set(
        "%s:%lld: both open/high/low/close and bid_/ask_ columns: give one or the other (the mid prices are "
        "computed from bid and ask)",
        r->path, (long long)r->line_no);
    return -1;
  }
  if (n_quote > 0 && seen[COL_ADJ_CLOSE]) {
    error_set(
        "%s:%lld: an adj_close column with bid_/ask_ prices: adj_close adjusts open/high/low/close (leave it out "
        "with --ignore-columns)",
        r->path, (long long)r->line_no);
    return -1;
  }
  int first = n_quote > 0 ? COL_BID_OPEN : COL_OPEN, last = n_quote > 0 ? COL_ASK_CLOSE : COL_CLOSE;
  for (int k = first; k <= last; k++) {
    if (!seen[k]) {
      strcat(missing, missing[0] ? ", " : "");
      strcat(missing, column_names[k]);
    }
  }
  if (missing[0]) {
    error_set("%s:%lld: missing column%s %s (%s)", r->path, (long long)r->line_no, strchr(missing, ',') ? "s" : "",
              missing,
              n_quote > 0 ? "bid/ask data needs all eight bid_ and ask_ open/high/low/close columns"
                          : "prices need open, high, low and close");
    return -1;
  }
  layout->has_bid_ask = n_quote > 0;
  layout->has_volume = seen[COL_VOLUME] != 0;
  layout->adjust = seen[COL_ADJ_CLOSE] && !options->raw_prices;
  return 0;
}

static bool looks_like_lean_time(const char *s) {
  CivilTime t;
  const char *p = s;
  return shape_lean(&p, &t) && *p == '\0';
}

// Decides the layout from the first non-blank line (auto) or checks the forced one. For csv the
// header is consumed; for LEAN the line stays in r->line as the first data row.
static int layout_detect(LineReader *r, const MarketCsvOptions *options, Layout *layout, int *ignored) {
  MarketFormat format = options->format;
  // A UTF-8 byte-order mark (spreadsheet exports) goes before the detection reads the first field.
  if (r->line_no == 1 && (unsigned char)r->line[0] == 0xEF && (unsigned char)r->line[1] == 0xBB &&
      (unsigned char)r->line[2] == 0xBF)
    memmove(r->line, r->line + 3, strlen(r->line + 3) + 1);
  *ignored = 0;
  int n = count_columns(r->line, ',');
  if (format == MARKET_FORMAT_AUTO) {
    size_t first_len = strcspn(r->line, ",");
    char first[64];
    size_t keep = first_len < sizeof first - 1 ? first_len : sizeof first - 1;
    memcpy(first, r->line, keep);
    first[keep] = '\0';
    char *field = trim(first);
    char shown[MARKET_FIELD_SHOWN_BYTES];
    if (looks_like_lean_time(field)) {
      if (n != 11 && n != 6) {
        error_set(
            "%s:%lld: %d columns, expected 11 (lean-quote: time, bid OHLC, bid size, ask OHLC, ask size) or 6 "
            "(lean-equity: time, OHLC, volume)",
            r->path, (long long)r->line_no, n);
        return -1;
      }
      format = n == 11 ? MARKET_FORMAT_LEAN_QUOTE : MARKET_FORMAT_LEAN_EQUITY;
    } else if (n == 12 && (strlen(field) == 13 || strlen(field) == 16) &&
               strspn(field, "0123456789") == strlen(field)) {
      error_set(  // data.binance.vision's klines come without their header
          "%s:%lld: no header line: the first field '%s' is data, and 12 columns starting with Unix milliseconds "
          "(or microseconds) look like Binance's klines: add their header, open_time,open,high,low,close,volume,"
          "close_time,quote_volume,count,taker_buy_volume,taker_buy_quote_volume,ignore, and import with "
          "--ignore-columns close_time,quote_volume,count,taker_buy_volume,taker_buy_quote_volume,ignore",
          r->path, (long long)r->line_no, text_escape_cut(field, MARKET_FIELD_SHOWN, shown, sizeof shown));
      return -1;
    } else if (strchr("0123456789+-.", field[0]) && field[0] != '\0') {
      error_set(
          "%s:%lld: unknown format: the first field '%s' is data but not a LEAN time (YYYYMMDD HH:MM) "
          "(allowed: lean-quote or lean-equity rows without a header, or a header line naming the columns: add "
          "one, e.g. date,time,open,high,low,close,volume for MetaTrader 4's export)",
          r->path, (long long)r->line_no, text_escape_cut(field, MARKET_FIELD_SHOWN, shown, sizeof shown));
      return -1;
    } else {
      format = MARKET_FORMAT_CSV;
    }
  }
  if (format != MARKET_FORMAT_CSV) {
    layout_lean(layout, format);
    return 0;
  }
  layout->sep = detect_separator(r->line);
  n = count_columns(r->line, layout->sep);
  if (n > CSV_MAX_COLUMNS) {
    error_set("%s:%lld: %d columns in the header, at most %d expected (recognised: " CSV_RECOGNISED ")", r->path,
              (long long)r->line_no, n, CSV_MAX_COLUMNS);
    return -1;
  }
  char *fields[CSV_MAX_COLUMNS];
  split_fields(r->line, n, fields, layout->sep);
  return layout_from_header(r, fields, n, options, layout, ignored);
}

// --- the loader -----------------------------------------------------------------------------------------

typedef struct {
  MarketBar *bars;
  int64_t *lines;  // each bar's line in the file
  int64_t count, capacity;
} BarList;

static void bar_list_push(BarList *list, const MarketBar *bar, int64_t line) {
  if (list->count == list->capacity) {
    int64_t cap = list->capacity ? list->capacity * 2 : 4096;
    MarketBar *grown = realloc(list->bars, (size_t)cap * sizeof *grown);
    CHECK(grown != NULL, "out of memory while loading bars");
    list->bars = grown;
    int64_t *lines = realloc(list->lines, (size_t)cap * sizeof *lines);
    CHECK(lines != NULL, "out of memory while loading bars");
    list->lines = lines, list->capacity = cap;
  }
  list->bars[list->count] = *bar;
  list->lines[list->count++] = line;
}

typedef struct {
  MarketBar bar;
  int64_t line;
} LinedBar;

static int by_time_then_line(const void *a, const void *b) {
  const LinedBar *x = a, *y = b;
  if (x->bar.ts != y->bar.ts) return x->bar.ts < y->bar.ts ? -1 : 1;
  return x->line < y->line ? -1 : x->line > y->line;
}

// Sorts the bars by time, ties in file order; returns how many changed place.
static int64_t sort_bars(BarList *list) {
  LinedBar *tmp = CHECK_ALLOC((size_t)list->count * sizeof *tmp, "sorting bars");
  for (int64_t i = 0; i < list->count; i++) tmp[i] = (LinedBar){list->bars[i], list->lines[i]};
  qsort(tmp, (size_t)list->count, sizeof *tmp, by_time_then_line);
  int64_t moved = 0;
  for (int64_t i = 0; i < list->count; i++) {
    moved += tmp[i].line != list->lines[i];
    list->bars[i] = tmp[i].bar, list->lines[i] = tmp[i].line;
  }
  free(tmp);
  return moved;
}

// Bars equal in every field, NaN as NaN (the columns the file does not have).
static bool same_bar(const MarketBar *a, const MarketBar *b) { return memcmp(a, b, sizeof *a) == 0; }

// The order rule for a bar that follows `last` (line last_line): a later time, or with
// drop_duplicates an equal row, which is dropped. 0 keep, 1 drop, -1 and the message.
static int order_check(const char *path, const MarketCsvOptions *options, const MarketBar *last, int64_t last_line,
                       const MarketBar *bar, int64_t line) {
  char when[40], before[40];
  if (bar->ts == last->ts && options->drop_duplicates && same_bar(bar, last)) return 1;
  if (bar->ts == last->ts) {
    const char *hint = "", *dst = "";
    if (same_bar(bar, last)) {
      hint = "; the rows are equal: ppo-data import --drop-duplicates drops such repeats";
    } else {
      hint = options->drop_duplicates ? "; the rows differ (two sets of prices for one bar: overlapping downloads, a "
                                        "partial last bar?), and --drop-duplicates drops only equal rows"
                                      : "; the rows differ (two sets of prices for one bar: overlapping downloads, a "
                                        "partial last bar?)";
      if (!options->local_zone && bar->ts % 86400 != 0)
        dst =
            "; or the file is in local time, which repeats an hour when daylight saving ends: ppo-data import "
            "--timezone ZONE --to-utc converts it";
    }
    error_set("%s:%lld: duplicate timestamp %s (also on line %lld)%s%s", path, (long long)line,
              market_time_format(bar->ts, when, sizeof when), (long long)last_line, hint, dst);
    return -1;
  }
  if (bar->ts < last->ts) {
    error_set(
        "%s:%lld: timestamp %s is before %s on line %lld (timestamps must strictly increase; ppo-data import "
        "--sort sorts the rows by time)",
        path, (long long)line, market_time_format(bar->ts, when, sizeof when),
        market_time_format(last->ts, before, sizeof before), (long long)last_line);
    return -1;
  }
  return 0;
}

// The sorted bars through the order rule, compacted in place. 0, or -1 and the message.
static int check_sorted(const char *path, const MarketCsvOptions *options, BarList *list, MarketCsvSummary *summary) {
  int64_t kept = list->count > 0;
  for (int64_t i = 1; i < list->count; i++) {
    int got = order_check(path, options, &list->bars[kept - 1], list->lines[kept - 1], &list->bars[i], list->lines[i]);
    if (got < 0) return -1;
    if (got == 1) {
      summary->duplicate_rows++;
      continue;
    }
    list->bars[kept] = list->bars[i], list->lines[kept] = list->lines[i];
    kept++;
  }
  list->count = kept;
  return 0;
}

static int load_rows(LineReader *r, const MarketCsvOptions *options, Layout *layout, BarList *list,
                     MarketCsvSummary *summary) {
  int got = reader_next_nonblank(r);
  if (got < 0) return -1;
  if (got == 0) {
    error_set("%s:%lld: empty file (no header and no data)", r->path, (long long)(r->line_no ? r->line_no : 1));
    return -1;
  }
  if (layout_detect(r, options, layout, &summary->ignored_columns) != 0) return -1;
  bool have_line = layout->format != MARKET_FORMAT_CSV;  // a LEAN first line is data
  char *fields[CSV_MAX_COLUMNS];
  char reason[512];
  int64_t previous_utc = 0;       // the last row's converted time (local_zone)
  MarketBar previous_wall = {0};  // and its bar before the conversion
  bool first_zoned = false;       // the kind of time of the rows read so far (TimeForm.zoned)
  int64_t rows_read = 0;
  for (;;) {
    if (!have_line) {
      got = reader_next_nonblank(r);
      if (got < 0) return -1;
      if (got == 0) break;
    }
    have_line = false;
    int n = count_columns(r->line, layout->sep);
    if (n != layout->n_columns) {
      if (layout->header_line) {
        error_set("%s:%lld: %d columns, expected %d (csv, as named by the header on line %lld)", r->path,
                  (long long)r->line_no, n, layout->n_columns, (long long)layout->header_line);
      } else {
        char names[512] = "";
        for (int c = 0; c < layout->n_columns; c++) {
          strcat(names, c ? ", " : "");
          strcat(names, layout->names[c]);
        }
        error_set("%s:%lld: %d columns, expected %d (%s: %s)", r->path, (long long)r->line_no, n, layout->n_columns,
                  market_format_name(layout->format), names);
      }
      return -1;
    }
    split_fields(r->line, n, fields, layout->sep);
    if (layout->format == MARKET_FORMAT_CSV && row_is_null(layout, fields)) {
      if (options->skip_null_rows) {
        summary->null_rows++;
        continue;
      }
      char shown[MARKET_FIELD_SHOWN_BYTES];
      int c = 0;
      while (layout->kinds[c] == COL_TIME || layout->kinds[c] == COL_CLOCK || layout->kinds[c] == COL_IGNORED) c++;
      error_set(
          "%s:%lld: a row without prices (every column but the time is like '%s'); ppo-data import "
          "--skip-null-rows skips such rows",
          r->path, (long long)r->line_no, text_escape_cut(fields[c], MARKET_FIELD_SHOWN, shown, sizeof shown));
      return -1;
    }
    MarketBar bar;
    double factor = 1.0;
    TimeForm form;
    if (parse_row(r, layout, fields, &bar, &factor, &form) != 0) return -1;
    if (market_bar_check(&bar, layout->has_bid_ask, layout->has_volume, false, reason, sizeof reason)) {
      error_set("%s:%lld: %s", r->path, (long long)r->line_no, reason);
      return -1;
    }
    // Instants (a UTC offset, Unix time) and wall-clock times do not mix: the second kind needs a zone.
    if (rows_read > 0 && form.zoned != first_zoned) {
      error_set("%s:%lld: a time %s a UTC offset (or Unix time) where the rows before %s: one file, one kind of time",
                r->path, (long long)r->line_no, form.zoned ? "with" : "without", form.zoned ? "had none" : "had one");
      return -1;
    }
    first_zoned = form.zoned;
    rows_read++;
    summary->zoned_rows += form.zoned;
    if (layout->adjust) {  // x f keeps low <= open, close <= high: a correctly rounded product is monotonic
      bar.open *= factor, bar.high *= factor, bar.low *= factor, bar.close *= factor;
      if (!(factor > 0 && isfinite(factor)) ||
          market_bar_check(&bar, false, layout->has_volume, false, reason, sizeof reason)) {
        error_set("%s:%lld: adjusted by adj_close / close = %g: %s", r->path, (long long)r->line_no, factor,
                  factor > 0 && isfinite(factor) ? reason : "not a finite factor > 0");
        return -1;
      }
      if (!summary->adjusted || factor < summary->factor_min) summary->factor_min = factor;
      if (!summary->adjusted || factor > summary->factor_max) summary->factor_max = factor;
      summary->adjusted = true;
    }
    if (options->local_zone) {
      if (form.zoned || !form.clock) {
        error_set("%s:%lld: %s: --to-utc converts wall-clock times of day", r->path, (long long)r->line_no,
                  form.zoned ? "the time carries a UTC offset or is Unix time, so it is UTC already"
                             : "a date without a time of day (a daily file's dates are kept as they are)");
        return -1;
      }
      // An exact repeat of the row before, dropped before its conversion would read it as the
      // repeated hour's second pass.
      if (options->drop_duplicates && list->count > 0 && same_bar(&bar, &previous_wall)) {
        summary->duplicate_rows++;
        continue;
      }
      previous_wall = bar;
      int64_t utc;
      bool ambiguous = false;
      int got_utc = wall_to_utc(bar.ts, list->count > 0 ? &previous_utc : NULL, &utc, &ambiguous);
      if (got_utc < 0) {
        char when[40];
        error_set("%s:%lld: %s does not exist in %s (the hour skipped when daylight saving starts)", r->path,
                  (long long)r->line_no, market_time_format(bar.ts, when, sizeof when), options->local_zone);
        return -1;
      }
      summary->ambiguous_rows += ambiguous;
      summary->repeated_hours += got_utc;
      bar.ts = previous_utc = utc;
    }
    // A four-digit year moved past 0000-01-01 or 9999-12-31 by its UTC offset or the zone: the
    // years a MarketData holds (market_data_validate; the HDF5 loader refuses anything else).
    if (!utc_in_four_digit_years(bar.ts)) {
      error_set("%s:%lld: the time is %lld seconds since 1970 in UTC (%s), outside the years 0000 to 9999", r->path,
                (long long)r->line_no, (long long)bar.ts,
                options->local_zone ? "converted from its time zone" : "after its UTC offset");
      return -1;
    }
    if (!options->sort && list->count > 0) {  // in file order the first problem is the one reported
      int order =
          order_check(r->path, options, &list->bars[list->count - 1], list->lines[list->count - 1], &bar, r->line_no);
      if (order < 0) return -1;
      if (order == 1) {
        summary->duplicate_rows++;
        continue;
      }
    }
    bar_list_push(list, &bar, r->line_no);
  }
  if (list->count == 0) {
    error_set("%s:%lld: no data rows (%s)", r->path, (long long)layout->header_line,
              summary->null_rows ? "every row was without prices" : "only a header");
    return -1;
  }
  if (!options->sort) return 0;
  summary->moved_rows = sort_bars(list);
  return check_sorted(r->path, options, list, summary);
}

MarketCsvOptions market_csv_options_default(void) {
  return (MarketCsvOptions){MARKET_FORMAT_AUTO, false, false, false, false, NULL, NULL};
}

MarketData *market_data_load_csv(const char *path, MarketFormat format) {
  MarketCsvOptions options = market_csv_options_default();
  options.format = format;
  return market_data_load_csv_with(path, &options, NULL);
}

MarketData *market_data_load_csv_with(const char *path, const MarketCsvOptions *options, MarketCsvSummary *summary) {
  MarketCsvSummary local;
  if (!summary) summary = &local;
  memset(summary, 0, sizeof *summary);
  if (options->local_zone && options->sort) {
    error_set(
        "%s: converting from %s needs the rows oldest first (a repeated hour is told apart by order): sort the "
        "file first, then convert",
        path, options->local_zone);
    return NULL;
  }
  LineReader reader;
  if (reader_open(&reader, path) != 0) return NULL;
  Layout layout;
  BarList list = {NULL, NULL, 0, 0};
  ZoneScope zone;
  int status = zone_begin(&zone, path, options->local_zone);
  if (status == 0) status = load_rows(&reader, options, &layout, &list, summary);
  zone_end(&zone);
  reader_close(&reader);
  if (status != 0) {
    free(list.bars), free(list.lines);
    return NULL;
  }
  MarketData *data = market_data_new(list.count);
  for (int64_t i = 0; i < list.count; i++) market_bar_put(data, i, &list.bars[i]);
  free(list.bars), free(list.lines);
  data->has_bid_ask = layout.has_bid_ask;
  data->has_volume = layout.has_volume;
  data->bar_seconds = market_data_bar_seconds(data->ts, data->rows);
  market_symbol_from_path(path, data->symbol, sizeof data->symbol);
  market_copy_text(data->timezone, sizeof data->timezone, "UTC");
  market_copy_text(data->source, sizeof data->source, market_path_base(path));
  bool changed = summary->adjusted && (summary->factor_min != 1.0 || summary->factor_max != 1.0);
  snprintf(data->source_format, sizeof data->source_format, "%s%s", market_format_name(layout.format),
           changed ? " adjusted by adj_close" : "");  // the file's layout, and whether its prices were changed
  return data;
}
