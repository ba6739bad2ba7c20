// common/time_utc.h: UTC calendar arithmetic without the C library's time zones.
//
// Timestamps are int64 seconds since 1970-01-01 00:00 UTC (bar starts in market data, split
// dates in the configuration). Conversion uses Hinnant's days-from-civil algorithm (proleptic
// Gregorian calendar, any year), so results never depend on TZ or on timegm() being available.
// Depends on nothing.
#ifndef PPO_COMMON_TIME_UTC_H
#define PPO_COMMON_TIME_UTC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  int year, month, day;      // month 1..12, day 1..31
  int hour, minute, second;  // 0..23, 0..59, 0..59
} CivilTime;

int64_t utc_days_from_civil(int year, int month, int day);  // days since 1970-01-01
int64_t utc_from_civil(const CivilTime *t);                 // seconds since the epoch
CivilTime utc_to_civil(int64_t seconds);                    // inverse of utc_from_civil (any int64; the year
                                                            // fits an int for |seconds| < 6.7e16)
bool utc_in_four_digit_years(int64_t seconds);              // within 0000-01-01 .. 9999-12-31 23:59:59?
bool utc_civil_valid(const CivilTime *t);                   // month/day/hour ranges, leap years
int utc_weekday(int64_t seconds);                           // 0 = Monday .. 6 = Sunday
// Parses "YYYY-MM-DD", "YYYY-MM-DD HH:MM", "YYYY-MM-DD HH:MM:SS" or the same with 'T'.
// Returns true and sets *out; false on any other text or an impossible date.
bool utc_parse_iso(const char *text, int64_t *out);
// Reads exactly `width` decimal digits at *p into *out and advances *p; false (nothing advanced)
// when any of them is not a digit. The building block of every timestamp shape the loaders accept.
bool utc_read_digits(const char **p, int width, int *out);
// Writes "YYYY-MM-DD HH:MM" (or "YYYY-MM-DD" when date_only); returns buf. A time outside the
// four-digit years (a damaged file's int64, say) is written as "N seconds since 1970" instead.
char *utc_format(int64_t seconds, bool date_only, char *buf, size_t capacity);

#endif
