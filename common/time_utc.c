// common/time_utc.c: see time_utc.h. Algorithms from H. Hinnant, "chrono-Compatible Low-Level
// Date Algorithms" (days_from_civil, civil_from_days).
#include "time_utc.h"

#include <stdio.h>
#include <string.h>

int64_t utc_days_from_civil(int year, int month, int day) {
  int64_t y = (int64_t)year - (month <= 2);
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;                                             // [0, 399]
  int64_t doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;  // [0, 365]
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;                     // [0, 146096]
  return era * 146097 + doe - 719468;
}

int64_t utc_from_civil(const CivilTime *t) {
  return utc_days_from_civil(t->year, t->month, t->day) * 86400 + (int64_t)t->hour * 3600 + (int64_t)t->minute * 60 +
         t->second;
}

static int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

CivilTime utc_to_civil(int64_t seconds) {
  int64_t days = floor_div(seconds, 86400);
  int64_t rem = seconds % 86400;  // not seconds - days * 86400: that product overflows near INT64_MIN
  if (rem < 0) rem += 86400;
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  CivilTime t;
  t.day = (int)(doy - (153 * mp + 2) / 5 + 1);
  t.month = (int)(mp < 10 ? mp + 3 : mp - 9);
  t.year = (int)(yoe + era * 400 + (t.month <= 2));
  t.hour = (int)(rem / 3600);
  t.minute = (int)(rem / 60 % 60);
  t.second = (int)(rem % 60);
  return t;
}

static bool is_leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

bool utc_civil_valid(const CivilTime *t) {
  static const int month_days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (t->month < 1 || t->month > 12 || t->day < 1) return false;
  int days = month_days[t->month - 1] + (t->month == 2 && is_leap(t->year));
  return t->day <= days && t->hour >= 0 && t->hour <= 23 && t->minute >= 0 && t->minute <= 59 && t->second >= 0 &&
         t->second <= 59;
}

int utc_weekday(int64_t seconds) {
  int64_t days = floor_div(seconds, 86400);
  return (int)(((days % 7) + 7 + 3) % 7);  // 1970-01-01 was a Thursday (3)
}

bool utc_read_digits(const char **p, int width, int *out) {
  int v = 0;
  for (int i = 0; i < width; i++) {
    char c = (*p)[i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *p += width;
  *out = v;
  return true;
}

bool utc_parse_iso(const char *text, int64_t *out) {
  CivilTime t = {0, 0, 0, 0, 0, 0};
  const char *p = text;
  if (!utc_read_digits(&p, 4, &t.year) || *p++ != '-' || !utc_read_digits(&p, 2, &t.month) || *p++ != '-' ||
      !utc_read_digits(&p, 2, &t.day))
    return false;
  if (*p == ' ' || *p == 'T') {
    p++;
    if (!utc_read_digits(&p, 2, &t.hour) || *p++ != ':' || !utc_read_digits(&p, 2, &t.minute)) return false;
    if (*p == ':') {
      p++;
      if (!utc_read_digits(&p, 2, &t.second)) return false;
    }
  }
  if (*p != '\0' || !utc_civil_valid(&t)) return false;
  *out = utc_from_civil(&t);
  return true;
}

bool utc_in_four_digit_years(int64_t seconds) {
  return seconds >= utc_days_from_civil(0, 1, 1) * 86400 && seconds < utc_days_from_civil(10000, 1, 1) * 86400;
}

char *utc_format(int64_t seconds, bool date_only, char *buf, size_t capacity) {
  if (!utc_in_four_digit_years(seconds)) {
    snprintf(buf, capacity, "%lld seconds since 1970", (long long)seconds);
    return buf;
  }
  CivilTime t = utc_to_civil(seconds);
  if (date_only)
    snprintf(buf, capacity, "%04d-%02d-%02d", t.year, t.month, t.day);
  else
    snprintf(buf, capacity, "%04d-%02d-%02d %02d:%02d", t.year, t.month, t.day, t.hour, t.minute);
  return buf;
}
