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
#include <zlib.h>

#include "common/check.h"
#include "common/error.h"
#include "common/time_utc.h"
#include "envs/market_data_impl.h"

enum {
  CSV_CHUNK = 1 << 16,   // bytes per gzread
  CSV_MAX_COLUMNS = 32,  // more than any layout recognises (19 names, no repeats)
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
    }
    got_bytes = true;
    char *start = r->chunk + r->chunk_pos;
    size_t avail = (size_t)(r->chunk_len - r->chunk_pos);
    char *newline = memchr(start, '\n', avail);
    size_t take = newline ? (size_t)(newline - start) : avail;
    if (r->line_len + take > MARKET_LINE_MAX) {
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
    error_set("%s:%lld: NUL byte at position %lld (not a text file?)", r->path, (long long)r->line_no,
              (long long)(nul - r->line + 1));
    return -1;
  }
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

static int count_columns(const char *line) {
  int n = 1;
  for (; *line; line++) n += *line == ',';
  return n;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t') s++;
  size_t len = strlen(s);
  while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t')) s[--len] = '\0';
  return s;
}

// Splits `line` in place at commas into exactly n fields (the caller counted them).
static void split_fields(char *line, int n, char **fields) {
  char *p = line;
  for (int i = 0; i < n; i++) {
    char *comma = strchr(p, ',');
    if (comma) *comma = '\0';
    fields[i] = trim(p);
    p = comma ? comma + 1 : p + strlen(p);
  }
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
  COL_KINDS,
} ColumnKind;

static const char *const column_names[COL_KINDS] = {
    "time",     "open",     "high",    "low",       "close",  "bid_open",  "bid_high", "bid_low", "bid_close",
    "ask_open", "ask_high", "ask_low", "ask_close", "volume", "adj_close", "bid_size", "ask_size"};

#define CSV_RECOGNISED                                                                                     \
  "time|date|datetime|timestamp|gmt_time, open, high, low, close, adj_close, volume, bid_open, bid_high, " \
  "bid_low, bid_close, ask_open, ask_high, ask_low, ask_close, bid_size, ask_size"

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
  int n_columns;
  ColumnKind kinds[CSV_MAX_COLUMNS];
  char names[CSV_MAX_COLUMNS][40];  // as the messages name them (the header's spelling for csv)
  double price_divisor;             // 10000 for LEAN equity (deci-cents), else 1
  bool has_bid_ask, has_volume;
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

typedef enum { TIME_OK, TIME_BAD_SHAPE, TIME_NO_SUCH_DATE, TIME_SUBSECOND } TimeParse;

// "YYYYMMDD HH:MM"
static bool shape_lean(const char **p, CivilTime *t) {
  return utc_read_digits(p, 4, &t->year) && utc_read_digits(p, 2, &t->month) && utc_read_digits(p, 2, &t->day) &&
         *(*p)++ == ' ' && utc_read_digits(p, 2, &t->hour) && *(*p)++ == ':' && utc_read_digits(p, 2, &t->minute);
}

// "YYYY-MM-DD[( |T)HH:MM[:SS]]"
static bool shape_iso(const char **p, CivilTime *t) {
  if (!(utc_read_digits(p, 4, &t->year) && *(*p)++ == '-' && utc_read_digits(p, 2, &t->month) && *(*p)++ == '-' &&
        utc_read_digits(p, 2, &t->day)))
    return false;
  if (**p != ' ' && **p != 'T') return true;
  (*p)++;
  if (!(utc_read_digits(p, 2, &t->hour) && *(*p)++ == ':' && utc_read_digits(p, 2, &t->minute))) return false;
  if (**p != ':') return true;
  (*p)++;
  return utc_read_digits(p, 2, &t->second);
}

// "DD.MM.YYYY HH:MM:SS[.fff]"; *millis gets the fraction's value (any number of digits)
static bool shape_dukascopy(const char **p, CivilTime *t, bool *fraction) {
  if (!(utc_read_digits(p, 2, &t->day) && *(*p)++ == '.' && utc_read_digits(p, 2, &t->month) && *(*p)++ == '.' &&
        utc_read_digits(p, 4, &t->year) && *(*p)++ == ' ' && utc_read_digits(p, 2, &t->hour) && *(*p)++ == ':' &&
        utc_read_digits(p, 2, &t->minute) && *(*p)++ == ':' && utc_read_digits(p, 2, &t->second)))
    return false;
  *fraction = false;
  if (**p == '.') {
    (*p)++;
    if (**p < '0' || **p > '9') return false;
    for (; **p >= '0' && **p <= '9'; (*p)++)
      if (**p != '0') *fraction = true;
  }
  return true;
}

// Each shape reader stops at the first mismatch; reading never passes the terminating NUL because a
// NUL fails every digit and separator test before the pointer moves past it.
static TimeParse parse_time(const char *s, bool lean_only, int64_t *out) {
  CivilTime t = {0, 0, 0, 0, 0, 0};
  const char *p = s;
  bool fraction = false;
  bool shaped = shape_lean(&p, &t) && *p == '\0';
  if (!shaped && !lean_only) {
    memset(&t, 0, sizeof t), p = s;
    shaped = shape_iso(&p, &t) && *p == '\0';
  }
  if (!shaped && !lean_only) {
    memset(&t, 0, sizeof t), p = s;
    shaped = shape_dukascopy(&p, &t, &fraction) && *p == '\0';
  }
  if (!shaped) return TIME_BAD_SHAPE;
  if (!utc_civil_valid(&t)) return TIME_NO_SUCH_DATE;
  if (fraction) return TIME_SUBSECOND;
  *out = utc_from_civil(&t);
  return TIME_OK;
}

static int field_error(const LineReader *r, const char *column, const char *value, const char *reason,
                       const char *allowed) {
  char shown[256];
  error_set("%s:%lld: column %s = '%s': %s (allowed: %s)", r->path, (long long)r->line_no, column,
            market_text_show(value, shown, sizeof shown), reason, allowed);
  return -1;
}

// Parses one data line (already split) into bar. 0, or -1 and the message.
static int parse_row(const LineReader *r, const Layout *layout, char **fields, MarketBar *bar) {
  static const double nan_value = NAN;
  *bar = (MarketBar){0,         nan_value, nan_value, nan_value, nan_value, nan_value, nan_value,
                     nan_value, nan_value, nan_value, nan_value, nan_value, nan_value, nan_value};
  bool lean = layout->format != MARKET_FORMAT_CSV;
  for (int c = 0; c < layout->n_columns; c++) {
    const char *name = layout->names[c];
    const char *text = fields[c];
    ColumnKind kind = layout->kinds[c];
    if (kind == COL_TIME) {
      switch (parse_time(text, lean, &bar->ts)) {
        case TIME_OK:
          break;
        case TIME_BAD_SHAPE:
          return field_error(
              r, name, text, "not a timestamp",
              lean ? "YYYYMMDD HH:MM" : "YYYY-MM-DD[ HH:MM[:SS]], DD.MM.YYYY HH:MM:SS[.000], YYYYMMDD HH:MM");
        case TIME_NO_SUCH_DATE:
          return field_error(r, name, text, "no such date or time", "a calendar date, hours 00-23, minutes 00-59");
        case TIME_SUBSECOND:
          return field_error(r, name, text, "fractions of a second are not supported", "whole seconds, e.g. .000");
      }
      continue;
    }
    double value;
    const char *why = parse_number(text, &value);
    bool is_size = kind == COL_VOLUME || kind == COL_BID_SIZE || kind == COL_ASK_SIZE;
    const char *allowed = is_size ? "a finite decimal number >= 0" : "a finite decimal number > 0";
    if (why) return field_error(r, name, text, why, allowed);
    if (is_size ? !(value >= 0) : !(value > 0))
      return field_error(r, name, text, is_size ? "must not be negative" : "prices must be positive", allowed);
    if (!is_size && kind != COL_ADJ_CLOSE)
      value /= layout->price_divisor;  // a division, so 973100 gives the double nearest 97.31
    double *slot = bar_slot(bar, kind);
    if (slot) *slot = value;
  }
  if (layout->has_bid_ask) {
    bar->open = (bar->bid_open + bar->ask_open) / 2;
    bar->high = (bar->bid_high + bar->ask_high) / 2;
    bar->low = (bar->bid_low + bar->ask_low) / 2;
    bar->close = (bar->bid_close + bar->ask_close) / 2;
  }
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

static int column_kind_from_name(const char *name) {
  char norm[40];
  size_t len = strlen(name);
  if (len >= sizeof norm) return -1;
  for (size_t i = 0; i <= len; i++) {
    char c = name[i];
    norm[i] = (c == ' ' || c == '-') ? '_' : (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
  }
  static const char *const time_names[] = {"time", "date", "datetime", "timestamp", "gmt_time", "date_time"};
  for (size_t k = 0; k < sizeof time_names / sizeof time_names[0]; k++)
    if (strcmp(norm, time_names[k]) == 0) return COL_TIME;
  for (int k = COL_OPEN; k < COL_KINDS; k++)
    if (strcmp(norm, column_names[k]) == 0) return k;
  if (strcmp(norm, "adjclose") == 0) return COL_ADJ_CLOSE;
  return -1;
}

// The header line (already split into n fields) defines the columns.
static int layout_from_header(const LineReader *r, char **fields, int n, Layout *layout) {
  memset(layout, 0, sizeof *layout);
  layout->format = MARKET_FORMAT_CSV;
  layout->price_divisor = 1.0;
  layout->header_line = r->line_no;
  layout->n_columns = n;
  int seen[COL_KINDS];
  for (int k = 0; k < COL_KINDS; k++) seen[k] = 0;
  char shown[256];
  for (int c = 0; c < n; c++) {
    int kind = column_kind_from_name(fields[c]);
    if (kind < 0) {
      error_set("%s:%lld: unknown column '%s' (column %d) (recognised, case-insensitive: " CSV_RECOGNISED ")", r->path,
                (long long)r->line_no, market_text_show(fields[c], shown, sizeof shown), c + 1);
      return -1;
    }
    if (seen[kind]) {
      error_set("%s:%lld: column '%s' (column %d) repeats column %d ('%s' names the same column)", r->path,
                (long long)r->line_no, market_text_show(fields[c], shown, sizeof shown), c + 1, seen[kind],
                column_names[kind]);
      return -1;
    }
    seen[kind] = c + 1;
    layout->kinds[c] = (ColumnKind)kind;
    market_copy_text(layout->names[c], sizeof layout->names[c], fields[c]);
  }
  if (!seen[COL_TIME]) {
    error_set("%s:%lld: no time column (name one time, date, datetime, timestamp or gmt_time)", r->path,
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
  return 0;
}

static bool looks_like_lean_time(const char *s) {
  CivilTime t;
  const char *p = s;
  return shape_lean(&p, &t) && *p == '\0';
}

// Decides the layout from the first non-blank line (auto) or checks the forced one. For csv the
// header is consumed; for LEAN the line stays in r->line as the first data row.
static int layout_detect(LineReader *r, MarketFormat format, Layout *layout) {
  // A UTF-8 byte-order mark (spreadsheet exports) goes before the detection reads the first field.
  if (r->line_no == 1 && (unsigned char)r->line[0] == 0xEF && (unsigned char)r->line[1] == 0xBB &&
      (unsigned char)r->line[2] == 0xBF)
    memmove(r->line, r->line + 3, strlen(r->line + 3) + 1);
  int n = count_columns(r->line);
  if (format == MARKET_FORMAT_AUTO) {
    size_t first_len = strcspn(r->line, ",");
    char first[64];
    size_t keep = first_len < sizeof first - 1 ? first_len : sizeof first - 1;
    memcpy(first, r->line, keep);
    first[keep] = '\0';
    char *field = trim(first);
    char shown[256];
    if (looks_like_lean_time(field)) {
      if (n != 11 && n != 6) {
        error_set(
            "%s:%lld: %d columns, expected 11 (lean-quote: time, bid OHLC, bid size, ask OHLC, ask size) or 6 "
            "(lean-equity: time, OHLC, volume)",
            r->path, (long long)r->line_no, n);
        return -1;
      }
      format = n == 11 ? MARKET_FORMAT_LEAN_QUOTE : MARKET_FORMAT_LEAN_EQUITY;
    } else if (strchr("0123456789+-.", field[0]) && field[0] != '\0') {
      error_set(
          "%s:%lld: unknown format: the first field '%s' is data but not a LEAN time (YYYYMMDD HH:MM) "
          "(allowed: lean-quote or lean-equity rows without a header, or a header line naming the columns)",
          r->path, (long long)r->line_no, market_text_show(field, shown, sizeof shown));
      return -1;
    } else {
      format = MARKET_FORMAT_CSV;
    }
  }
  if (format != MARKET_FORMAT_CSV) {
    layout_lean(layout, format);
    return 0;
  }
  if (n > CSV_MAX_COLUMNS) {
    error_set("%s:%lld: %d columns in the header, at most %d expected (recognised: " CSV_RECOGNISED ")", r->path,
              (long long)r->line_no, n, CSV_MAX_COLUMNS);
    return -1;
  }
  char *fields[CSV_MAX_COLUMNS];
  split_fields(r->line, n, fields);
  return layout_from_header(r, fields, n, layout);
}

// --- the loader -----------------------------------------------------------------------------------------

typedef struct {
  MarketBar *bars;
  int64_t count, capacity;
} BarList;

static void bar_list_push(BarList *list, const MarketBar *bar) {
  if (list->count == list->capacity) {
    int64_t cap = list->capacity ? list->capacity * 2 : 4096;
    MarketBar *grown = realloc(list->bars, (size_t)cap * sizeof *grown);
    CHECK(grown != NULL, "out of memory while loading bars");
    list->bars = grown, list->capacity = cap;
  }
  list->bars[list->count++] = *bar;
}

static int load_rows(LineReader *r, MarketFormat format, Layout *layout, BarList *list) {
  int got = reader_next_nonblank(r);
  if (got < 0) return -1;
  if (got == 0) {
    error_set("%s:%lld: empty file (no header and no data)", r->path, (long long)(r->line_no ? r->line_no : 1));
    return -1;
  }
  if (layout_detect(r, format, layout) != 0) return -1;
  bool have_line = layout->format != MARKET_FORMAT_CSV;  // a LEAN first line is data
  int64_t prev_line = 0;
  char *fields[CSV_MAX_COLUMNS];
  char reason[512], when[40], before[40];
  for (;;) {
    if (!have_line) {
      got = reader_next_nonblank(r);
      if (got < 0) return -1;
      if (got == 0) break;
    }
    have_line = false;
    int n = count_columns(r->line);
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
    split_fields(r->line, n, fields);
    MarketBar bar;
    if (parse_row(r, layout, fields, &bar) != 0) return -1;
    if (market_bar_check(&bar, layout->has_bid_ask, layout->has_volume, false, reason, sizeof reason)) {
      error_set("%s:%lld: %s", r->path, (long long)r->line_no, reason);
      return -1;
    }
    if (list->count > 0) {
      int64_t last = list->bars[list->count - 1].ts;
      if (bar.ts == last) {
        error_set("%s:%lld: duplicate timestamp %s (also on line %lld)", r->path, (long long)r->line_no,
                  market_time_format(bar.ts, when, sizeof when), (long long)prev_line);
        return -1;
      }
      if (bar.ts < last) {
        error_set("%s:%lld: timestamp %s is before %s on line %lld (timestamps must strictly increase)", r->path,
                  (long long)r->line_no, market_time_format(bar.ts, when, sizeof when),
                  market_time_format(last, before, sizeof before), (long long)prev_line);
        return -1;
      }
    }
    prev_line = r->line_no;
    bar_list_push(list, &bar);
  }
  if (list->count == 0) {
    error_set("%s:%lld: no data rows (only a header)", r->path, (long long)layout->header_line);
    return -1;
  }
  return 0;
}

MarketData *market_data_load_csv(const char *path, MarketFormat format) {
  LineReader reader;
  if (reader_open(&reader, path) != 0) return NULL;
  Layout layout;
  BarList list = {NULL, 0, 0};
  int status = load_rows(&reader, format, &layout, &list);
  reader_close(&reader);
  if (status != 0) {
    free(list.bars);
    return NULL;
  }
  MarketData *data = market_data_new(list.count);
  for (int64_t i = 0; i < list.count; i++) market_bar_put(data, i, &list.bars[i]);
  free(list.bars);
  data->has_bid_ask = layout.has_bid_ask;
  data->has_volume = layout.has_volume;
  data->bar_seconds = market_data_bar_seconds(data->ts, data->rows);
  market_symbol_from_path(path, data->symbol, sizeof data->symbol);
  market_copy_text(data->timezone, sizeof data->timezone, "UTC");
  market_copy_text(data->source, sizeof data->source, market_path_base(path));
  market_copy_text(data->source_format, sizeof data->source_format, market_format_name(layout.format));
  return data;
}
