// envs/market_data.c: the MarketData slab, row validation, summaries and the loader dispatch
// (see market_data.h). The CSV and HDF5 formats live in market_csv.c and market_h5.c.
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/error.h"
#include "common/file_check.h"
#include "common/text.h"
#include "common/time_utc.h"
#include "envs/market_data_impl.h"

enum { MARKET_DOUBLE_COLUMNS = 13 };  // open..close, bid x4, ask x4, volume

static const char *const market_format_names[] = {"auto", "lean-quote", "lean-equity", "csv"};

const char *market_format_name(MarketFormat format) {
  if ((unsigned)format < sizeof market_format_names / sizeof market_format_names[0]) return market_format_names[format];
  return "?";
}

int market_format_parse(const char *name, MarketFormat *out) {
  for (int i = 0; i < (int)(sizeof market_format_names / sizeof market_format_names[0]); i++) {
    if (strcmp(name, market_format_names[i]) == 0) {
      *out = (MarketFormat)i;
      return 0;
    }
  }
  char shown[MARKET_FIELD_SHOWN_BYTES];
  error_set("--format = '%s': unknown format (allowed: auto, lean-quote, lean-equity, csv)",
            text_escape_cut(name, MARKET_FIELD_SHOWN, shown, sizeof shown));
  return -1;
}

// --- the slab --------------------------------------------------------------------------------------

#define MARKET_HEAD_BYTES ((sizeof(MarketData) + 63) / 64 * 64)  // columns start on a cache line
#define MARKET_ROW_BYTES (sizeof(int64_t) + MARKET_DOUBLE_COLUMNS * sizeof(double))

size_t market_data_bytes(int64_t rows) {
  if (rows < 0 || (uint64_t)rows > (SIZE_MAX - MARKET_HEAD_BYTES) / MARKET_ROW_BYTES) return SIZE_MAX;
  return MARKET_HEAD_BYTES + (size_t)rows * MARKET_ROW_BYTES;
}

MarketData *market_data_new(int64_t rows) {
  CHECK(rows >= 0, "a MarketData needs a non-negative row count");
  size_t head = MARKET_HEAD_BYTES, bytes = market_data_bytes(rows);
  CHECK(bytes != SIZE_MAX, "too many bars for this machine's address space");
  size_t n = (size_t)rows;
  char *slab = CHECK_ALLOC(bytes, "market data");
  MarketData *data = (MarketData *)slab;
  memset(data, 0, sizeof *data);
  data->rows = rows;
  data->ts = (int64_t *)(slab + head);
  memset(data->ts, 0, n * sizeof(int64_t));
  double *col = (double *)(slab + head + n * sizeof(int64_t));
  double **columns[MARKET_DOUBLE_COLUMNS] = {&data->open,     &data->high,     &data->low,     &data->close,
                                             &data->bid_open, &data->bid_high, &data->bid_low, &data->bid_close,
                                             &data->ask_open, &data->ask_high, &data->ask_low, &data->ask_close,
                                             &data->volume};
  for (int c = 0; c < MARKET_DOUBLE_COLUMNS; c++) {
    *columns[c] = col + (size_t)c * n;
    for (size_t i = 0; i < n; i++) (*columns[c])[i] = NAN;
  }
  return data;
}

static uint64_t fnv1a(uint64_t h, const void *bytes, size_t n) {
  const unsigned char *b = bytes;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

uint64_t market_data_hash(const MarketData *data) {
  uint64_t h = fnv1a(14695981039346656037ull, &data->rows, sizeof data->rows);
  size_t n = (size_t)data->rows;
  h = fnv1a(h, data->ts, n * sizeof *data->ts);
  const double *columns[] = {data->open,     data->high,      data->low,       data->close,    data->bid_open,
                             data->bid_high, data->bid_low,   data->bid_close, data->ask_open, data->ask_high,
                             data->ask_low,  data->ask_close, data->volume};
  for (size_t k = 0; k < sizeof columns / sizeof columns[0]; k++) h = fnv1a(h, columns[k], n * sizeof(double));
  return h;
}

void market_data_free(MarketData *data) { free(data); }  // one allocation: the struct heads the slab

void market_bar_get(const MarketData *d, int64_t i, MarketBar *b) {
  b->ts = d->ts[i];
  b->open = d->open[i], b->high = d->high[i], b->low = d->low[i], b->close = d->close[i];
  b->bid_open = d->bid_open[i], b->bid_high = d->bid_high[i], b->bid_low = d->bid_low[i];
  b->bid_close = d->bid_close[i];
  b->ask_open = d->ask_open[i], b->ask_high = d->ask_high[i], b->ask_low = d->ask_low[i];
  b->ask_close = d->ask_close[i];
  b->volume = d->volume[i];
}

void market_bar_put(MarketData *d, int64_t i, const MarketBar *b) {
  d->ts[i] = b->ts;
  d->open[i] = b->open, d->high[i] = b->high, d->low[i] = b->low, d->close[i] = b->close;
  d->bid_open[i] = b->bid_open, d->bid_high[i] = b->bid_high, d->bid_low[i] = b->bid_low;
  d->bid_close[i] = b->bid_close;
  d->ask_open[i] = b->ask_open, d->ask_high[i] = b->ask_high, d->ask_low[i] = b->ask_low;
  d->ask_close[i] = b->ask_close;
  d->volume[i] = b->volume;
}

// --- text helpers ------------------------------------------------------------------------------------

char *market_number_format(double value, char *buf, size_t capacity) {
  if (!buf || capacity == 0) return buf;  // also keeps GCC's -Wformat-truncation quiet under UBSan
  // Start at the number of integer digits, so 20 prints as "20", not "2e+01".
  int first = isfinite(value) && fabs(value) >= 1 && fabs(value) < 1e15 ? (int)log10(fabs(value)) + 1 : 1;
  for (int precision = first; precision <= 17; precision++) {
    snprintf(buf, capacity, "%.*g", precision, value);
    if (strtod(buf, NULL) == value) return buf;
  }
  return buf;  // NaN never compares equal: "%.17g" of it reads "nan"
}

const char *market_path_base(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

bool market_copy_text(char *dst, size_t capacity, const char *src) {
  size_t len = strlen(src);
  if (len >= capacity) {
    memcpy(dst, src, capacity - 1);
    dst[capacity - 1] = '\0';
    return false;
  }
  memcpy(dst, src, len + 1);
  return true;
}

char *market_time_format(int64_t ts, char *buf, size_t capacity) {
  if (!utc_in_four_digit_years(ts)) return utc_format(ts, false, buf, capacity);  // the number of seconds
  CivilTime t = utc_to_civil(ts);
  if (t.second != 0)
    snprintf(buf, capacity, "%04d-%02d-%02d %02d:%02d:%02d", t.year, t.month, t.day, t.hour, t.minute, t.second);
  else
    snprintf(buf, capacity, "%04d-%02d-%02d %02d:%02d", t.year, t.month, t.day, t.hour, t.minute);
  return buf;
}

// --- the row check ---------------------------------------------------------------------------------------

static bool price_ok(double p) { return isfinite(p) && p > 0; }

// low <= open, close <= high (which implies low <= high; checked first for the clearer message).
static const char *check_side(const char *side, double o, double h, double l, double c, char *buf, size_t cap) {
  char a[32], b[32];
  const char *rule = "need low <= open, close <= high";
  if (!(l <= h))
    snprintf(buf, cap, "%s low %s > high %s (%s)", side, market_number_format(l, a, sizeof a),
             market_number_format(h, b, sizeof b), rule);
  else if (!(l <= o))
    snprintf(buf, cap, "%s open %s < low %s (%s)", side, market_number_format(o, a, sizeof a),
             market_number_format(l, b, sizeof b), rule);
  else if (!(o <= h))
    snprintf(buf, cap, "%s open %s > high %s (%s)", side, market_number_format(o, a, sizeof a),
             market_number_format(h, b, sizeof b), rule);
  else if (!(l <= c))
    snprintf(buf, cap, "%s close %s < low %s (%s)", side, market_number_format(c, a, sizeof a),
             market_number_format(l, b, sizeof b), rule);
  else if (!(c <= h))
    snprintf(buf, cap, "%s close %s > high %s (%s)", side, market_number_format(c, a, sizeof a),
             market_number_format(h, b, sizeof b), rule);
  else
    return NULL;
  return buf;
}

void market_bar_mid(MarketBar *bar) {
  bar->open = (bar->bid_open + bar->ask_open) / 2;
  bar->high = (bar->bid_high + bar->ask_high) / 2;
  bar->low = (bar->bid_low + bar->ask_low) / 2;
  bar->close = (bar->bid_close + bar->ask_close) / 2;
}

const char *market_bar_check(const MarketBar *bar, bool has_bid_ask, bool has_volume, bool check_mid, char *buf,
                             size_t capacity) {
  struct {
    const char *name;
    double value;
  } prices[] = {{"open", bar->open},         {"high", bar->high},           {"low", bar->low},
                {"close", bar->close},       {"bid_open", bar->bid_open},   {"bid_high", bar->bid_high},
                {"bid_low", bar->bid_low},   {"bid_close", bar->bid_close}, {"ask_open", bar->ask_open},
                {"ask_high", bar->ask_high}, {"ask_low", bar->ask_low},     {"ask_close", bar->ask_close}};
  int n_prices = has_bid_ask ? 12 : 4;
  char a[32], b[32];
  for (int k = 0; k < n_prices; k++) {
    if (!price_ok(prices[k].value)) {
      snprintf(buf, capacity, "%s = %s: prices must be finite and > 0", prices[k].name,
               market_number_format(prices[k].value, a, sizeof a));
      return buf;
    }
  }
  if (has_volume ? !(isfinite(bar->volume) && bar->volume >= 0) : !isnan(bar->volume)) {
    snprintf(buf, capacity, "volume = %s: %s", market_number_format(bar->volume, a, sizeof a),
             has_volume ? "volume must be finite and >= 0" : "volume must be NaN when the data has no volume");
    return buf;
  }
  if (has_bid_ask) {
    if (check_side("bid", bar->bid_open, bar->bid_high, bar->bid_low, bar->bid_close, buf, capacity)) return buf;
    if (check_side("ask", bar->ask_open, bar->ask_high, bar->ask_low, bar->ask_close, buf, capacity)) return buf;
    if (bar->ask_open < bar->bid_open) {
      snprintf(buf, capacity, "ask_open %s < bid_open %s (need ask >= bid)",
               market_number_format(bar->ask_open, a, sizeof a), market_number_format(bar->bid_open, b, sizeof b));
      return buf;
    }
    if (bar->ask_close < bar->bid_close) {
      snprintf(buf, capacity, "ask_close %s < bid_close %s (need ask >= bid)",
               market_number_format(bar->ask_close, a, sizeof a), market_number_format(bar->bid_close, b, sizeof b));
      return buf;
    }
    if (check_mid) {
      for (int k = 0; k < 4; k++) {
        double mid = (prices[4 + k].value + prices[8 + k].value) / 2;
        if (prices[k].value != mid) {
          snprintf(buf, capacity, "%s %s != (%s + %s) / 2 = %s (the mid must be the mean of bid and ask)",
                   prices[k].name, market_number_format(prices[k].value, a, sizeof a), prices[4 + k].name,
                   prices[8 + k].name, market_number_format(mid, b, sizeof b));
          return buf;
        }
      }
    }
  } else {
    for (int k = 4; k < 12; k++) {
      if (!isnan(prices[k].value)) {
        snprintf(buf, capacity, "%s = %s: must be NaN when the data has no bid/ask", prices[k].name,
                 market_number_format(prices[k].value, a, sizeof a));
        return buf;
      }
    }
  }
  return check_side(has_bid_ask ? "mid" : "price", bar->open, bar->high, bar->low, bar->close, buf, capacity);
}

static int compare_int64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int64_t market_data_bar_seconds(const int64_t *ts, int64_t rows) {
  if (rows < 2) return 0;
  int64_t n = 0;
  int64_t *diff = CHECK_ALLOC((size_t)(rows - 1) * sizeof *diff, "timestamp differences");
  for (int64_t i = 1; i < rows; i++)
    if (ts[i] > ts[i - 1]) diff[n++] = ts[i] - ts[i - 1];
  qsort(diff, (size_t)n, sizeof *diff, compare_int64);
  int64_t best = 0, best_count = 0;
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    while (j < n && diff[j] == diff[i]) j++;
    if (j - i > best_count) best = diff[i], best_count = j - i;  // ascending order: ties keep the smaller
    i = j;
  }
  free(diff);
  return best;
}

int market_data_validate(MarketData *data, const char *where) {
  char reason[512], when[40], before[40];
  // Years 0000-9999, what a CSV's four-digit years can say: an HDF5 file's int64 seconds could
  // hold anything, and differences of such values overflow.
  const int64_t ts_lo = utc_days_from_civil(0, 1, 1) * 86400, ts_hi = utc_days_from_civil(10000, 1, 1) * 86400 - 1;
  for (int64_t i = 0; i < data->rows; i++) {
    if (data->ts[i] < ts_lo || data->ts[i] > ts_hi) {
      error_set("%s: row %lld: timestamp %lld seconds since 1970 (allowed: %lld .. %lld, the years 0000 to 9999)",
                where, (long long)i, (long long)data->ts[i], (long long)ts_lo, (long long)ts_hi);
      return -1;
    }
    MarketBar bar;
    market_bar_get(data, i, &bar);
    if (market_bar_check(&bar, data->has_bid_ask, data->has_volume, true, reason, sizeof reason)) {
      error_set("%s: row %lld (%s): %s", where, (long long)i, market_time_format(bar.ts, when, sizeof when), reason);
      return -1;
    }
    if (i > 0 && data->ts[i] <= data->ts[i - 1]) {
      error_set("%s: row %lld: timestamp %s %s row %lld's %s (timestamps must strictly increase)", where, (long long)i,
                market_time_format(data->ts[i], when, sizeof when),
                data->ts[i] == data->ts[i - 1] ? "repeats" : "is before", (long long)(i - 1),
                market_time_format(data->ts[i - 1], before, sizeof before));
      return -1;
    }
  }
  data->bar_seconds = market_data_bar_seconds(data->ts, data->rows);
  return 0;
}

// --- joining the two sides ------------------------------------------------------------------------------

MarketData *market_data_merge_bid_ask(const MarketData *bid, const char *bid_name, const MarketData *ask,
                                      const char *ask_name) {
  const MarketData *sides[2] = {bid, ask};
  const char *names[2] = {bid_name, ask_name}, *roles[2] = {"bid", "ask"};
  for (int k = 0; k < 2; k++) {
    if (sides[k]->has_bid_ask) {
      error_set(
          "%s: has bid_/ask_ columns already; the %s side must be a file of one side's open, high, low and close "
          "(a Dukascopy BID or ASK export)",
          names[k], roles[k]);
      return NULL;
    }
  }
  char a[40], b[40];
  for (int64_t i = 0; i < bid->rows && i < ask->rows; i++) {
    if (bid->ts[i] != ask->ts[i]) {
      error_set(
          "%s has a bar at %s where %s has %s (bar %lld of each, counting from 1): the two sides must hold the same "
          "bars, row by row (export both with the same range, bar size and filters)",
          ask_name, market_time_format(ask->ts[i], a, sizeof a), bid_name, market_time_format(bid->ts[i], b, sizeof b),
          (long long)i + 1);
      return NULL;
    }
  }
  if (bid->rows != ask->rows) {
    const bool bid_longer = bid->rows > ask->rows;
    const int64_t shorter = bid_longer ? ask->rows : bid->rows;
    error_set(
        "%s has %lld bars and %s %lld: the two sides must hold the same bars (the first %lld agree; %s goes on from "
        "%s)",
        bid_name, (long long)bid->rows, ask_name, (long long)ask->rows, (long long)shorter,
        bid_longer ? bid_name : ask_name, market_time_format((bid_longer ? bid : ask)->ts[shorter], a, sizeof a));
    return NULL;
  }
  MarketData *data = market_data_new(bid->rows);
  data->has_bid_ask = true;
  data->has_volume = bid->has_volume && ask->has_volume;
  // Each side passed its own checks (naming FILE:LINE); a bar the two make together can still fail
  // (an ask below the bid): the first such bar is named by its number and time, with how many fail.
  int64_t bad = 0, first_bad = -1;
  char reason[256];
  for (int64_t i = 0; i < bid->rows; i++) {
    MarketBar bar = {.ts = bid->ts[i],
                     .bid_open = bid->open[i],
                     .bid_high = bid->high[i],
                     .bid_low = bid->low[i],
                     .bid_close = bid->close[i],
                     .ask_open = ask->open[i],
                     .ask_high = ask->high[i],
                     .ask_low = ask->low[i],
                     .ask_close = ask->close[i],
                     .volume = data->has_volume ? bid->volume[i] + ask->volume[i] : NAN};
    market_bar_mid(&bar);
    market_bar_put(data, i, &bar);
    char why[256];
    if (market_bar_check(&bar, true, data->has_volume, true, why, sizeof why)) {
      if (bad == 0) first_bad = i, snprintf(reason, sizeof reason, "%s", why);
      bad++;
    }
  }
  if (bad > 0) {
    error_set("%s + %s: bar %lld of each, counting from 1 (%s): %s; %lld of the %lld bars fail so%s", bid_name,
              ask_name, (long long)first_bad + 1, market_time_format(data->ts[first_bad], a, sizeof a), reason,
              (long long)bad, (long long)data->rows,
              bad == data->rows ? " (the bid side comes first, the ask side second: are the two swapped?)" : "");
    market_data_free(data);
    return NULL;
  }
  market_copy_text(data->symbol, sizeof data->symbol, bid->symbol);
  market_copy_text(data->timezone, sizeof data->timezone, bid->timezone);
  if (snprintf(data->source, sizeof data->source, "%s + %s", bid->source, ask->source) >= (int)sizeof data->source)
    market_copy_text(data->source, sizeof data->source, bid->source);  // no room for both names
  if (snprintf(data->source_format, sizeof data->source_format, "%s bid + ask", bid->source_format) >=
      (int)sizeof data->source_format)
    market_copy_text(data->source_format, sizeof data->source_format, "bid + ask");
  // Nothing is left to validate: every bar was checked above, and the timestamps are each side's,
  // validated with it and equal bar for bar.
  data->bar_seconds = market_data_bar_seconds(data->ts, data->rows);
  return data;
}

// --- summaries -------------------------------------------------------------------------------------------

MarketGaps market_data_gaps(const MarketData *data) {
  MarketGaps gaps = {0, 0, 0, 0, 0};
  if (data->bar_seconds <= 0) return gaps;
  for (int64_t i = 1; i < data->rows; i++) {
    int64_t step = data->ts[i] - data->ts[i - 1];
    if (step <= data->bar_seconds) continue;
    gaps.count++;
    if (step - data->bar_seconds >= MARKET_WEEKEND_GAP_SECONDS)
      gaps.weekend++;
    else
      gaps.other++;
    if (step > gaps.largest_seconds) gaps.largest_seconds = step, gaps.largest_at = data->ts[i - 1];
  }
  return gaps;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double market_data_median_spread_bp(const MarketData *data) {
  if (!data->has_bid_ask || data->rows == 0) return NAN;
  double *spread = CHECK_ALLOC((size_t)data->rows * sizeof *spread, "spreads");
  for (int64_t i = 0; i < data->rows; i++) spread[i] = (data->ask_close[i] - data->bid_close[i]) / data->close[i] * 1e4;
  qsort(spread, (size_t)data->rows, sizeof *spread, compare_double);
  int64_t m = data->rows / 2;
  double median = data->rows % 2 ? spread[m] : (spread[m - 1] + spread[m]) / 2;
  free(spread);
  return median;
}

MarketMoves market_data_moves(const MarketData *data) {
  MarketMoves m = {data->close[0], data->close[0], 0.0, 0, NAN, 0};
  double largest = -1.0;
  for (int64_t i = 1; i < data->rows; i++) {
    double c = data->close[i], size = fabs(log(c / data->close[i - 1]));
    if (c < m.close_min) m.close_min = c;
    if (c > m.close_max) m.close_max = c;
    m.unchanged += c == data->close[i - 1];
    if (size > largest) {
      largest = size;
      m.largest_move = c / data->close[i - 1] - 1.0;
      m.largest_at = data->ts[i];
      m.largest_from = data->close[i - 1];
    }
  }
  return m;
}

bool market_name_ok(const char *s, size_t capacity, const char *extra) {
  size_t len = strlen(s);
  if (len == 0 || len >= capacity) return false;
  for (; *s; s++) {
    bool alnum = (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9');
    if (!alnum && !strchr(extra, *s)) return false;
  }
  return true;
}

bool market_symbol_ok(const char *symbol) { return market_name_ok(symbol, MARKET_SYMBOL_MAX, "._-/"); }

// A '-'-separated part of a file name that says the bar size or the period rather than the
// instrument: 1h, 15m, 1d (digits, then s/m/h/d/w), H1, M15, D1 (a letter, then digits), a year,
// or one of the words below. BTCUSDT-1h-2023-01 names BTCUSDT; BRK-B keeps its B.
static bool period_word(const char *w, size_t n) {
  static const char *const words[] = {"DAILY", "HOURLY", "MINUTE", "WEEKLY", "TICK", "BARS", "KLINES"};
  size_t digits = strspn(w, "0123456789");
  if (digits > n) digits = n;
  if (digits == 4 && n == 4) return true;                                                   // a year
  if (digits > 0 && n == digits + 1 && strchr("SMHDW", w[digits])) return true;             // 1H, 15M
  if (n >= 2 && strchr("MHDW", w[0]) && strspn(w + 1, "0123456789") >= n - 1) return true;  // H1, M15
  for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
    if (strlen(words[k]) == n && strncmp(w, words[k], n) == 0) return true;
  return false;
}

void market_symbol_from_path(const char *path, char *out, size_t capacity) {
  static const char *const category_words[] = {"FOREX", "FX",  "STOCKS", "STOCK", "EQUITY", "CFD", "CRYPTO",
                                               "INDEX", "CSV", "GZ",     "H5",    "HDF5",   "TXT"};
  const char *p = market_path_base(path);
  out[0] = '\0';
  while (*p) {
    size_t len = strcspn(p, "_.");
    if (len > 0 && len < capacity) {
      char word[MARKET_SYMBOL_MAX];
      size_t n = len < sizeof word - 1 ? len : sizeof word - 1;
      for (size_t i = 0; i < n; i++) word[i] = (char)toupper((unsigned char)p[i]);
      word[n] = '\0';
      bool category = false;
      for (size_t k = 0; k < sizeof category_words / sizeof category_words[0]; k++)
        if (strcmp(word, category_words[k]) == 0) category = true;
      if (!category && n == len) {
        for (char *dash = strchr(word, '-'); dash; dash = strchr(dash + 1, '-')) {
          const char *next = dash + 1;
          if (dash > word && period_word(next, strcspn(next, "-"))) {  // the rest is the bar size, dates
            *dash = '\0';
            break;
          }
        }
        market_copy_text(out, capacity, word);
        return;
      }
    }
    p += len;
    if (*p) p++;
  }
}

// --- dispatch ----------------------------------------------------------------------------------------------

MarketData *market_data_load(const char *path) {
  static const unsigned char signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  unsigned char head[8] = {0};
  if (file_check_regular(path, "market data") != 0) return NULL;
  FILE *f = fopen(path, "rb");
  if (f) {
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    if (got == sizeof head && memcmp(head, signature, sizeof head) == 0) return market_data_load_h5(path);
    // A name ending in .h5 or .hdf5 without the signature is a damaged or misnamed file: read as
    // CSV it would be refused for its "first column", which names the wrong problem.
    size_t n = strlen(path);
    if ((n >= 3 && strcmp(path + n - 3, ".h5") == 0) || (n >= 5 && strcmp(path + n - 5, ".hdf5") == 0)) {
      error_set("%s: not an HDF5 file (its first bytes lack HDF5's signature; damaged, or a CSV misnamed)", path);
      return NULL;
    }
  }
  return market_data_load_csv(path, MARKET_FORMAT_AUTO);  // reports a file it cannot open
}
