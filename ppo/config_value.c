// ppo/config_value.c: text <-> value for each schema type (see config_value.h).
#include "ppo/config_value.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/time_utc.h"

// Integers that a double represents exactly; "1e6" is accepted only inside this range.
#define EXACT_INT_LIMIT 9007199254740992.0  // 2^53

static char *format_real(double x, char *buf, size_t capacity);

static void reason_set(char *reason, size_t capacity, const char *text) { snprintf(reason, capacity, "%s", text); }

// Copies `text` without digit-group underscores ("1_000_000"). Fails on an underscore that is
// not between two digits, or when the result does not fit.
static bool strip_underscores(const char *text, char *out, size_t capacity) {
  size_t n = 0;
  for (size_t i = 0; text[i]; i++) {
    if (text[i] == '_') {
      if (i == 0 || !isdigit((unsigned char)text[i - 1]) || !isdigit((unsigned char)text[i + 1])) return false;
      continue;
    }
    if (n + 1 >= capacity) return false;
    out[n++] = text[i];
  }
  out[n] = '\0';
  return true;
}

// The digits buffer of parse_real and parse_int: a number longer than this (digit-group
// underscores aside) is refused as too long, not misread as "not a number".
#define NUMBER_TEXT_MAX 128

// Whether `text`, written in a number's characters, would not fit a buffer of NUMBER_TEXT_MAX
// without its underscores (other long text is "not a number").
static bool number_too_long(const char *text) {
  size_t n = 0;
  for (const char *p = text; *p; p++) {
    if (!isdigit((unsigned char)*p) && !strchr("+-.eE_", *p)) return false;
    n += *p != '_';
  }
  return n >= NUMBER_TEXT_MAX;
}

static void reason_too_long(char *reason, size_t capacity, const char *what) {
  snprintf(reason, capacity, "%s of more than %d characters (digit-group underscores aside)", what,
           NUMBER_TEXT_MAX - 1);
}

// Only decimal notation: strtod alone would also take hex floats, "inf" and "nan".
static bool decimal_chars_only(const char *text) {
  for (const char *p = text; *p; p++)
    if (!isdigit((unsigned char)*p) && !strchr("+-.eE", *p)) return false;
  return true;
}

static bool is_non_finite_word(const char *text) {
  const char *p = text + (*text == '+' || *text == '-');
  return strncasecmp(p, "inf", 3) == 0 || strncasecmp(p, "nan", 3) == 0;
}

static int parse_real(const char *text, double *out, char *reason, size_t capacity) {
  char digits[NUMBER_TEXT_MAX];
  if (is_non_finite_word(text)) {
    reason_set(reason, capacity, "not a finite number");
    return -1;
  }
  if (number_too_long(text)) {
    reason_too_long(reason, capacity, "a number");
    return -1;
  }
  if (!strip_underscores(text, digits, sizeof digits) || !decimal_chars_only(digits) || digits[0] == '\0') {
    reason_set(reason, capacity, "not a number");
    return -1;
  }
  char *end = NULL;
  errno = 0;
  double x = strtod(digits, &end);
  if (end == digits || *end != '\0') {
    reason_set(reason, capacity, "not a number");
    return -1;
  }
  if (!isfinite(x)) {
    reason_set(reason, capacity, "not a finite number (too large for a double)");
    return -1;
  }
  *out = x;
  return 0;
}

static int parse_int(const char *text, int64_t *out, char *reason, size_t capacity) {
  char digits[NUMBER_TEXT_MAX];
  if (number_too_long(text)) {
    reason_too_long(reason, capacity, "an integer");
    return -1;
  }
  if (!strip_underscores(text, digits, sizeof digits) || !decimal_chars_only(digits) || digits[0] == '\0') {
    reason_set(reason, capacity, "not an integer");
    return -1;
  }
  const char *p = digits + (digits[0] == '+' || digits[0] == '-');
  if (*p && strspn(p, "0123456789") == strlen(p)) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(digits, &end, 10);
    if (errno == ERANGE) {
      reason_set(reason, capacity, "out of range of a 64-bit integer");
      return -1;
    }
    *out = (int64_t)v;
    return 0;
  }
  // Scientific notation: only when the number is an integer that a double holds exactly.
  char *end = NULL;
  double x = strtod(digits, &end);
  if (end == digits || *end != '\0' || !isfinite(x) || x != floor(x)) {
    reason_set(reason, capacity, "not an integer");
    return -1;
  }
  if (fabs(x) > EXACT_INT_LIMIT) {
    reason_set(reason, capacity, "not an exact integer (write the digits out above 2^53)");
    return -1;
  }
  *out = (int64_t)x;
  return 0;
}

static bool in_range(const ConfigKey *key, double x) {
  bool min_ok = (key->flags & CONFIG_FLAG_MIN_OPEN) ? x > key->min : x >= key->min;
  bool max_ok = (key->flags & CONFIG_FLAG_MAX_OPEN) ? x < key->max : x <= key->max;
  return min_ok && max_ok;
}

// long double holds every int64 exactly on the targets we build for; the bounds are far below 2^63.
static bool int_in_range(const ConfigKey *key, int64_t v) {
  long double x = (long double)v;
  return x >= (long double)key->min && x <= (long double)key->max;
}

static int check_int(const ConfigKey *key, int64_t v, char *reason, size_t capacity) {
  if (!int_in_range(key, v)) {
    reason_set(reason, capacity, "out of range");
    return -1;
  }
  if ((key->flags & CONFIG_FLAG_ODD) && v % 2 == 0) {
    reason_set(reason, capacity, "must be odd");
    return -1;
  }
  return 0;
}

static int check_real(const ConfigKey *key, double x, char *reason, size_t capacity) {
  if ((key->flags & CONFIG_FLAG_FLOAT) && x > 0 && x < key->min) {
    char least[40];
    snprintf(reason, capacity,
             "below %s, the least allowed: the key is used as a 32-bit float, where a positive value under "
             "FLT_MIN = %.9g is a denormal or 0",
             format_real(key->min, least, sizeof least), (double)FLT_MIN);
    return -1;
  }
  if (!in_range(key, x)) {
    reason_set(reason, capacity, "out of range");
    return -1;
  }
  return 0;
}

static int parse_bool(const char *text, bool *out) {
  static const char *const yes[] = {"true", "yes", "on", "1"};
  static const char *const no[] = {"false", "no", "off", "0"};
  for (int i = 0; i < 4; i++) {
    if (strcasecmp(text, yes[i]) == 0) {
      *out = true;
      return 0;
    }
    if (strcasecmp(text, no[i]) == 0) {
      *out = false;
      return 0;
    }
  }
  return -1;
}

// Text that config_write_ini can print and inih reads back unchanged: no control characters and
// no ';' where inih would start an inline comment (at the start or after whitespace).
static int check_text(const char *text, char *reason, size_t capacity) {
  if (strlen(text) > CONFIG_STRING_MAX) {
    snprintf(reason, capacity, "longer than %d characters", CONFIG_STRING_MAX);
    return -1;
  }
  for (const char *p = text; *p; p++) {
    if (iscntrl((unsigned char)*p)) {
      reason_set(reason, capacity, "contains a control character");
      return -1;
    }
    if (*p == ';' && (p == text || isspace((unsigned char)p[-1]))) {
      reason_set(reason, capacity, "contains ';' after a space, which INI reads as a comment");
      return -1;
    }
  }
  return 0;
}

static int parse_name(const char *text, char *out, char *reason, size_t capacity) {
  if (check_text(text, reason, capacity) != 0) return -1;
  for (const char *p = text; *p; p++) {
    if (!isalnum((unsigned char)*p) && !strchr("._-", *p)) {
      reason_set(reason, capacity, "contains a character other than letters, digits, '.', '_', '-'");
      return -1;
    }
  }
  if (text[0] == '.') {
    reason_set(reason, capacity, "starts with '.'");
    return -1;
  }
  memcpy(out, text, strlen(text) + 1);
  return 0;
}

static int parse_int_list(const ConfigKey *key, const char *text, ConfigIntList *out, char *reason, size_t capacity) {
  ConfigIntList list = {0, {0}};
  const char *p = text;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    char item[64];
    while (n > 0 && isspace((unsigned char)*p)) p++, n--;
    while (n > 0 && isspace((unsigned char)p[n - 1])) n--;
    if (list.count == CONFIG_LIST_MAX) {
      snprintf(reason, capacity, "more than %d entries", CONFIG_LIST_MAX);
      return -1;
    }
    if (n == 0) {
      snprintf(reason, capacity, "entry %d is empty", list.count + 1);
      return -1;
    }
    if (n >= sizeof item) {
      snprintf(reason, capacity, "entry %d is not an integer", list.count + 1);
      return -1;
    }
    memcpy(item, p, n);
    item[n] = '\0';
    int64_t v;
    char why[96];
    if (parse_int(item, &v, why, sizeof why) != 0 || check_int(key, v, why, sizeof why) != 0) {
      snprintf(reason, capacity, "entry %d (%s) is %s", list.count + 1, item,
               strcmp(why, "out of range") == 0 ? "out of range" : why);
      return -1;
    }
    list.values[list.count++] = (int)v;
    if (!comma) break;
    p = comma + 1;
  }
  *out = list;
  return 0;
}

// "8G", "512M", "1.5GiB", "4096": K/M/G/T and KiB..TiB are powers of 1024, KB..TB of 1000.
static int parse_bytes(const ConfigKey *key, const char *text, int64_t *out, char *reason, size_t capacity) {
  static const struct {
    const char *suffix;
    double multiplier;
  } units[] = {
      {"", 1.0},   {"b", 1.0},    {"k", 0x1p10},   {"kib", 0x1p10}, {"kb", 1e3},   {"m", 0x1p20},   {"mib", 0x1p20},
      {"mb", 1e6}, {"g", 0x1p30}, {"gib", 0x1p30}, {"gb", 1e9},     {"t", 0x1p40}, {"tib", 0x1p40}, {"tb", 1e12},
  };
  size_t n = strspn(text, "0123456789._");
  char number[64];
  if (n == 0 || n >= sizeof number) {
    reason_set(reason, capacity, "not a size");
    return -1;
  }
  memcpy(number, text, n);
  number[n] = '\0';
  const char *suffix = text + n;
  while (*suffix == ' ') suffix++;
  double multiplier = -1;
  for (size_t i = 0; i < sizeof units / sizeof *units; i++)
    if (strcasecmp(suffix, units[i].suffix) == 0) multiplier = units[i].multiplier;
  double x;
  char why[96];
  if (multiplier < 0) {
    reason_set(reason, capacity, "not a size");
    return -1;
  }
  if (!strchr(number, '.')) {  // a whole number in integers: a double holds them exactly only to 2^53
    int64_t v, unit = (int64_t)multiplier;
    if (parse_int(number, &v, why, sizeof why) != 0) {
      reason_set(reason, capacity, strncmp(why, "out of range", 12) == 0 ? "out of range" : "not a size");
      return -1;
    }
    // the maximum in integers (a double of 2^60 equals 2^60 + 128 too)
    const int64_t max_bytes = key->max >= 0x1p63 ? INT64_MAX : (int64_t)key->max;
    if (v > INT64_MAX / unit || v * unit > max_bytes) {
      reason_set(reason, capacity, "out of range");
      return -1;
    }
    *out = v * unit;
    return 0;
  }
  if (parse_real(number, &x, why, sizeof why) != 0) {
    reason_set(reason, capacity, "not a size");
    return -1;
  }
  double bytes = x * multiplier;
  if (!(bytes <= key->max)) {
    reason_set(reason, capacity, "out of range");
    return -1;
  }
  if (bytes != floor(bytes)) {
    reason_set(reason, capacity, "not a whole number of bytes");
    return -1;
  }
  *out = (int64_t)bytes;
  return 0;
}

int config_value_parse(const ConfigKey *key, const char *text, void *dst, char *reason, size_t capacity) {
  reason[0] = '\0';
  bool is_auto = strcasecmp(text, "auto") == 0;
  switch (key->type) {
    case CONFIG_TYPE_INT: {
      int64_t v;
      if (parse_int(text, &v, reason, capacity) != 0 || check_int(key, v, reason, capacity) != 0) return -1;
      *(int64_t *)dst = v;
      return 0;
    }
    case CONFIG_TYPE_REAL: {
      double x;
      if (parse_real(text, &x, reason, capacity) != 0 || check_real(key, x, reason, capacity) != 0) return -1;
      *(double *)dst = x;
      return 0;
    }
    case CONFIG_TYPE_BOOL: {
      bool b;
      if (parse_bool(text, &b) != 0) {
        reason_set(reason, capacity, "not a boolean");
        return -1;
      }
      *(bool *)dst = b;
      return 0;
    }
    case CONFIG_TYPE_NAME:
      return parse_name(text, dst, reason, capacity);
    case CONFIG_TYPE_PATH:
      if (check_text(text, reason, capacity) != 0) return -1;
      memcpy(dst, text, strlen(text) + 1);
      return 0;
    case CONFIG_TYPE_CHOICE:
      for (int i = 0; key->choices[i]; i++) {
        if (strcasecmp(text, key->choices[i]) == 0) {
          *(int *)dst = i;
          return 0;
        }
      }
      reason_set(reason, capacity, "not one of the choices");
      return -1;
    case CONFIG_TYPE_INT_LIST:
      return parse_int_list(key, text, dst, reason, capacity);
    case CONFIG_TYPE_DATE: {
      ConfigDate d = {true, 0};
      // Dates only: split boundaries are whole days, and a date prints back exactly.
      if (!is_auto && (strlen(text) != 10 || !utc_parse_iso(text, &d.seconds))) {
        reason_set(reason, capacity, "not a date");
        return -1;
      }
      d.is_auto = is_auto;
      *(ConfigDate *)dst = d;
      return 0;
    }
    case CONFIG_TYPE_AUTO_REAL: {
      ConfigAutoReal v = {true, 0.0};
      if (!is_auto) {
        if (parse_real(text, &v.value, reason, capacity) != 0) {
          reason_set(reason, capacity, "not a number or auto");
          return -1;
        }
        if (check_real(key, v.value, reason, capacity) != 0) return -1;
        v.is_auto = false;
      }
      *(ConfigAutoReal *)dst = v;
      return 0;
    }
    case CONFIG_TYPE_AUTO_INT: {
      ConfigAutoInt v = {true, 0};
      if (!is_auto) {
        if (parse_int(text, &v.value, reason, capacity) != 0) {
          reason_set(reason, capacity, "not an integer or auto");
          return -1;
        }
        if (check_int(key, v.value, reason, capacity) != 0) return -1;
        v.is_auto = false;
      }
      *(ConfigAutoInt *)dst = v;
      return 0;
    }
    case CONFIG_TYPE_AUTO_BOOL: {
      ConfigAutoBool v = {true, false};
      if (!is_auto) {
        if (parse_bool(text, &v.value) != 0) {
          reason_set(reason, capacity, "not a boolean or auto");
          return -1;
        }
        v.is_auto = false;
      }
      *(ConfigAutoBool *)dst = v;
      return 0;
    }
    case CONFIG_TYPE_OPTIONAL_REAL: {
      ConfigOptionalReal v = {true, 0.0};
      if (strcasecmp(text, "none") != 0) {
        if (parse_real(text, &v.value, reason, capacity) != 0) {
          reason_set(reason, capacity, "not a number or none");
          return -1;
        }
        if (check_real(key, v.value, reason, capacity) != 0) return -1;
        v.is_none = false;
      }
      *(ConfigOptionalReal *)dst = v;
      return 0;
    }
    case CONFIG_TYPE_BYTES:
      return parse_bytes(key, text, dst, reason, capacity);
  }
  reason_set(reason, capacity, "unknown type");
  return -1;
}

// The shortest text that strtod turns back into exactly x: whole numbers as digits ("10", not
// "1e+01"), others as the shortest %g with a plain exponent ("1e-5", not "1e-05").
static char *format_real(double x, char *buf, size_t capacity) {
  if (!buf || capacity == 0) return buf;  // also keeps GCC's -Wformat-truncation quiet under UBSan
  if (x == floor(x) && fabs(x) < 1e16) {
    snprintf(buf, capacity, "%.0f", x);
    if (strtod(buf, NULL) == x && strlen(buf) <= 9) return buf;  // 1e9 and beyond read better as %g
  }
  for (int precision = 1; precision <= 17; precision++) {
    snprintf(buf, capacity, "%.*g", precision, x);
    if (strtod(buf, NULL) == x) break;
  }
  char *e = strchr(buf, 'e');
  if (e) {
    char *digits = e + 1 + (e[1] == '-' || e[1] == '+');
    char *first = digits;
    while (*first == '0' && first[1]) first++;
    char sign = e[1] == '-' ? '-' : 0;
    memmove(e + 1 + (sign != 0), first, strlen(first) + 1);
    if (sign) e[1] = '-';
  }
  return buf;
}

static char *format_bytes(int64_t bytes, char *buf, size_t capacity) {
  static const char *const units[] = {"TiB", "GiB", "MiB", "KiB"};
  for (int i = 0; i < 4; i++) {
    int64_t unit = (int64_t)1 << (10 * (4 - i));
    if (bytes != 0 && bytes % unit == 0) {
      snprintf(buf, capacity, "%" PRId64 "%s", bytes / unit, units[i]);
      return buf;
    }
  }
  snprintf(buf, capacity, "%" PRId64, bytes);
  return buf;
}

char *config_value_format(const ConfigKey *key, const void *src, char *buf, size_t capacity) {
  switch (key->type) {
    case CONFIG_TYPE_INT:
      snprintf(buf, capacity, "%" PRId64, *(const int64_t *)src);
      break;
    case CONFIG_TYPE_REAL:
      format_real(*(const double *)src, buf, capacity);
      break;
    case CONFIG_TYPE_BOOL:
      snprintf(buf, capacity, "%s", *(const bool *)src ? "true" : "false");
      break;
    case CONFIG_TYPE_NAME:
    case CONFIG_TYPE_PATH:
      snprintf(buf, capacity, "%s", (const char *)src);
      break;
    case CONFIG_TYPE_CHOICE:
      snprintf(buf, capacity, "%s", key->choices[*(const int *)src]);
      break;
    case CONFIG_TYPE_INT_LIST: {
      const ConfigIntList *list = src;
      size_t used = 0;
      buf[0] = '\0';
      for (int i = 0; i < list->count && used < capacity; i++)
        used += (size_t)snprintf(buf + used, capacity - used, "%s%d", i ? "," : "", list->values[i]);
      break;
    }
    case CONFIG_TYPE_DATE: {
      const ConfigDate *d = src;
      if (d->is_auto)
        snprintf(buf, capacity, "auto");
      else
        utc_format(d->seconds, true, buf, capacity);
      break;
    }
    case CONFIG_TYPE_AUTO_REAL: {
      const ConfigAutoReal *v = src;
      if (v->is_auto)
        snprintf(buf, capacity, "auto");
      else
        format_real(v->value, buf, capacity);
      break;
    }
    case CONFIG_TYPE_AUTO_INT: {
      const ConfigAutoInt *v = src;
      if (v->is_auto)
        snprintf(buf, capacity, "auto");
      else
        snprintf(buf, capacity, "%" PRId64, v->value);
      break;
    }
    case CONFIG_TYPE_AUTO_BOOL: {
      const ConfigAutoBool *v = src;
      snprintf(buf, capacity, "%s", v->is_auto ? "auto" : v->value ? "true" : "false");
      break;
    }
    case CONFIG_TYPE_OPTIONAL_REAL: {
      const ConfigOptionalReal *v = src;
      if (v->is_none)
        snprintf(buf, capacity, "none");
      else
        format_real(v->value, buf, capacity);
      break;
    }
    case CONFIG_TYPE_BYTES:
      format_bytes(*(const int64_t *)src, buf, capacity);
      break;
  }
  return buf;
}

// An integer's digits, in groups of three from 10,000 up: 4096, 10_000, 1_000_000_000.
static void format_grouped(int64_t v, char *buf, size_t capacity) {
  char digits[32];
  snprintf(digits, sizeof digits, "%lld", (long long)(v < 0 ? -v : v));
  size_t n = strlen(digits), used = 0;
  if (v < 0 && used + 1 < capacity) buf[used++] = '-';
  for (size_t i = 0; i < n && used + 2 < capacity; i++) {
    if (n > 4 && i > 0 && (n - i) % 3 == 0) buf[used++] = '_';
    buf[used++] = digits[i];
  }
  buf[used] = '\0';
}

// "0 <= value <= 1", "value > 0", "odd, 3 <= value <= 101".
static char *format_range(const ConfigKey *key, char *buf, size_t capacity) {
  char lo[40], hi[40];
  format_real(key->min, lo, sizeof lo);
  format_real(key->max, hi, sizeof hi);
  // An integer key's bounds with their digits written out, grouped as the parser accepts them
  // (1_000_000): "<= 1e18" read as an invitation to write 1e18, which it refuses above 2^53.
  if (key->type == CONFIG_TYPE_INT || key->type == CONFIG_TYPE_INT_LIST || key->type == CONFIG_TYPE_AUTO_INT) {
    if (isfinite(key->min) && fabs(key->min) < 9.2e18) format_grouped((int64_t)key->min, lo, sizeof lo);
    if (isfinite(key->max) && fabs(key->max) < 9.2e18) format_grouped((int64_t)key->max, hi, sizeof hi);
  }
  const char *lo_op = (key->flags & CONFIG_FLAG_MIN_OPEN) ? "<" : "<=";
  const char *hi_op = (key->flags & CONFIG_FLAG_MAX_OPEN) ? "<" : "<=";
  const char *odd = (key->flags & CONFIG_FLAG_ODD) ? "odd, " : "";
  if (isinf(key->max))
    snprintf(buf, capacity, "%svalue %s %s", odd, (key->flags & CONFIG_FLAG_MIN_OPEN) ? ">" : ">=", lo);
  else
    snprintf(buf, capacity, "%s%s %s value %s %s", odd, lo, lo_op, hi_op, hi);
  return buf;
}

char *config_value_allowed(const ConfigKey *key, char *buf, size_t capacity) {
  char range[128];
  switch (key->type) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_REAL:
      return format_range(key, buf, capacity);
    case CONFIG_TYPE_BOOL:
      snprintf(buf, capacity, "true, false, yes, no, on, off, 1, 0");
      break;
    case CONFIG_TYPE_NAME:
      snprintf(buf, capacity, "letters, digits, '.', '_', '-', not starting with '.'; at most %d characters",
               CONFIG_STRING_MAX);
      break;
    case CONFIG_TYPE_PATH:
      snprintf(buf, capacity, "a path of at most %d characters", CONFIG_STRING_MAX);
      break;
    case CONFIG_TYPE_CHOICE: {
      size_t used = 0;
      buf[0] = '\0';
      for (int i = 0; key->choices[i] && used < capacity; i++)
        used += (size_t)snprintf(buf + used, capacity - used, "%s%s", i ? ", " : "", key->choices[i]);
      break;
    }
    case CONFIG_TYPE_INT_LIST:
      snprintf(buf, capacity, "1 to %d comma-separated integers, each %s", CONFIG_LIST_MAX,
               format_range(key, range, sizeof range));
      break;
    case CONFIG_TYPE_DATE:
      snprintf(buf, capacity, "YYYY-MM-DD or auto");
      break;
    case CONFIG_TYPE_AUTO_REAL:
    case CONFIG_TYPE_AUTO_INT:
      snprintf(buf, capacity, "auto or %s", format_range(key, range, sizeof range));
      break;
    case CONFIG_TYPE_AUTO_BOOL:
      snprintf(buf, capacity, "auto, true, false, yes, no, on, off, 1, 0");
      break;
    case CONFIG_TYPE_OPTIONAL_REAL:
      snprintf(buf, capacity, "none or %s", format_range(key, range, sizeof range));
      break;
    case CONFIG_TYPE_BYTES:
      snprintf(buf, capacity, "0 (no limit) or a size such as 4096, 512M, 8G, 1.5GiB (K = 1024, KB = 1000)");
      break;
  }
  return buf;
}

bool config_value_equal(const ConfigKey *key, const void *a, const void *b) {
  switch (key->type) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_BYTES:
      return *(const int64_t *)a == *(const int64_t *)b;
    case CONFIG_TYPE_REAL:  // bitwise, so 0 and -0 differ: the round trip must be exact
      return memcmp(a, b, sizeof(double)) == 0;
    case CONFIG_TYPE_BOOL:
      return *(const bool *)a == *(const bool *)b;
    case CONFIG_TYPE_NAME:
    case CONFIG_TYPE_PATH:
      return strcmp(a, b) == 0;
    case CONFIG_TYPE_CHOICE:
      return *(const int *)a == *(const int *)b;
    case CONFIG_TYPE_INT_LIST: {
      const ConfigIntList *x = a, *y = b;
      return x->count == y->count && memcmp(x->values, y->values, (size_t)x->count * sizeof(int)) == 0;
    }
    case CONFIG_TYPE_DATE: {
      const ConfigDate *x = a, *y = b;
      return x->is_auto == y->is_auto && (x->is_auto || x->seconds == y->seconds);
    }
    case CONFIG_TYPE_AUTO_REAL: {
      const ConfigAutoReal *x = a, *y = b;
      return x->is_auto == y->is_auto && (x->is_auto || memcmp(&x->value, &y->value, sizeof(double)) == 0);
    }
    case CONFIG_TYPE_AUTO_INT: {
      const ConfigAutoInt *x = a, *y = b;
      return x->is_auto == y->is_auto && (x->is_auto || x->value == y->value);
    }
    case CONFIG_TYPE_AUTO_BOOL: {
      const ConfigAutoBool *x = a, *y = b;
      return x->is_auto == y->is_auto && (x->is_auto || x->value == y->value);
    }
    case CONFIG_TYPE_OPTIONAL_REAL: {
      const ConfigOptionalReal *x = a, *y = b;
      return x->is_none == y->is_none && (x->is_none || memcmp(&x->value, &y->value, sizeof(double)) == 0);
    }
  }
  return false;
}

const char *config_type_name(ConfigType type) {
  switch (type) {
    case CONFIG_TYPE_INT:
      return "int";
    case CONFIG_TYPE_REAL:
      return "real";
    case CONFIG_TYPE_BOOL:
      return "bool";
    case CONFIG_TYPE_NAME:
      return "name";
    case CONFIG_TYPE_PATH:
      return "path";
    case CONFIG_TYPE_CHOICE:
      return "choice";
    case CONFIG_TYPE_INT_LIST:
      return "int list";
    case CONFIG_TYPE_DATE:
      return "date or auto";
    case CONFIG_TYPE_AUTO_REAL:
      return "real or auto";
    case CONFIG_TYPE_AUTO_INT:
      return "int or auto";
    case CONFIG_TYPE_AUTO_BOOL:
      return "bool or auto";
    case CONFIG_TYPE_OPTIONAL_REAL:
      return "real or none";
    case CONFIG_TYPE_BYTES:
      return "bytes";
  }
  return "?";
}
