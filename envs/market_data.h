// envs/market_data.h: bar data for the trading environments, and its loaders.
//
// A MarketData holds R bars as a structure of arrays. The struct and all its columns live in ONE
// allocation (STYLE rule 3): market_data_free() releases everything, and the columns are
// read-only for everyone else, so one copy serves every env (DESIGN section 5).
//
// Sources, all validated the same way at load (a hard error, never a warning):
//   - LEAN quote bars (lean-quote): 11 columns, no header, "YYYYMMDD HH:MM", bid OHLC + size,
//     ask OHLC + size. Mid prices are (bid + ask) / 2 per field; volume is absent (NaN): the sizes
//     are quoted sizes, not traded volume, and are only checked to be numbers >= 0.
//   - LEAN equity daily (lean-equity): 6 columns, no header, prices in 1/10000 USD, volume.
//   - CSV with a header (csv): fields separated by ',' (or, when the header has no comma, by tabs or
//     ';'); column names case-insensitive, spaces, '-' and '_' alike, MetaTrader's <NAME> and
//     quotes around a name or field dropped:
//       time | date | datetime | date_time | timestamp | gmt_time | open_time  (required, one of them;
//                                          or a date column and a time column: MetaTrader's <DATE>,<TIME>)
//       open, high, low, close                                                (trade or single-side prices)
//       bid_open, bid_high, bid_low, bid_close, ask_open, ask_high, ask_low, ask_close  (all eight or none)
//       volume (or vol), adj_close, bid_size, ask_size, tickvol, spread       (optional; the last four are
//                                                                              checked, not kept)
//     Either open..close or the eight bid/ask columns must be present, not both. An adj_close
//     column adjusts open..close by adj_close / close row by row (yfinance's auto_adjust: splits and
//     dividends), unless MarketCsvOptions.raw_prices keeps them (adj_close is then checked only).
//     Timestamps: a date "YYYY-MM-DD" (or '.' or '/' between the parts, or "DD.MM.YYYY", or
//     "YYYYMMDD"), optionally followed by ' ' or 'T' and "HH:MM[:SS[.000]]" and a UTC offset ('Z',
//     "+HH:MM", "-HHMM", " UTC": the time is converted to UTC); "YYYYMMDD HH:MM" (LEAN); Unix time in
//     seconds (9-10 digits), milliseconds (12-13) or microseconds (15-16, Binance). A nonzero fraction
//     of a second is refused.
//   - HDF5 written by market_data_save_h5 (layout below).
// CSV input may be gzip-compressed (read through zlib), may use CRLF, and its last line need not end
// with '\n' (the LEAN files do not). Blank lines are skipped. A line longer than
// MARKET_LINE_MAX bytes is an error naming the line. What a real file needs beyond that is asked
// for by a flag (MarketCsvOptions; ppo-data import's options), never guessed: rows in another
// order, repeated rows, rows without prices (Yahoo's 'null' rows), columns to leave out.
//
// Validation (every row; the first failure is reported and loading stops):
//   - every field parses (numbers: finite decimals; timestamps: real calendar dates);
//   - prices > 0; volume and sizes >= 0;
//   - on each side (bid, ask, and the mid/trade prices): low <= open, close <= high, low <= high;
//   - ask >= bid at the open and at the close; the mid equals (bid + ask) / 2 (HDF5 only: the CSV
//     loaders compute it);
//   - timestamps strictly increase (a duplicate or a step back names both lines);
//   - lean-equity prices are whole numbers (of 1/10000 USD): a header-less file of decimal prices
//     is not taken for one.
// Gaps are counted (market_data_gaps), never filled.
//
// Time: ts is the bar's start in seconds since 1970-01-01, read with the UTC calendar. For UTC
// sources (all intraday files shipped) that is true UTC. For other sources (SPY daily:
// America/New_York) it is the source's wall-clock time; `timezone` names the zone. A CSV's UTC
// offsets are applied, and MarketCsvOptions.local_zone converts a zone's wall clock to UTC; no
// other conversion is done.
//
// HDF5 layout (format_version 1):
//   /bars/ts                       int64   (R,)  deflate level 6 + shuffle, like every dataset here
//   /bars/open, high, low, close   float64 (R,)  mid (or trade) prices
//   /bars/bid_open .. ask_close    float64 (R,)  8 datasets, present only when has_bid_ask = 1
//   /bars/volume                   float64 (R,)  NaN where the source has no volume
//   attributes on /bars: format_version (int64, = 1), rows (int64), bar_seconds (int64),
//     has_bid_ask (int64 0/1), has_volume (int64 0/1), symbol, timezone, source (input file name),
//     source_format (lean-quote | lean-equity | csv | synthetic ...) (strings).
//
// Errors: every function that can fail on user input returns NULL or -1 and sets the message
// (error.h) as "FILE:LINE: column NAME = 'VALUE': reason (allowed: ...)" or
// "FILE:LINE: reason with the values" (CSV); "FILE: dataset /bars/NAME ...", "FILE: /bars attribute
// NAME = VALUE ..." or "FILE: row R (TIME): reason" (HDF5). Running out of memory exits through check.h.
// Depends on common/ (error, check, time_utc, h5io), zlib and HDF5.
#ifndef PPO_ENVS_MARKET_DATA_H
#define PPO_ENVS_MARKET_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MARKET_SYMBOL_MAX 64
#define MARKET_TIMEZONE_MAX 64
#define MARKET_SOURCE_MAX 256
#define MARKET_FORMAT_NAME_MAX 32
#define MARKET_LINE_MAX (1 << 20)  // longest accepted CSV line, in bytes
#define MARKET_H5_FORMAT_VERSION 1
#define MARKET_WEEKEND_GAP_SECONDS (36 * 3600)  // a gap missing >= 36 h counts as a weekend (or holiday) closure

typedef enum {
  MARKET_FORMAT_AUTO = 0,     // detect from the first line (CSV) or the HDF5 signature
  MARKET_FORMAT_LEAN_QUOTE,   // "lean-quote"
  MARKET_FORMAT_LEAN_EQUITY,  // "lean-equity"
  MARKET_FORMAT_CSV,          // "csv": a header row names the columns
} MarketFormat;

typedef struct {
  int64_t rows;         // R, >= 1 for anything a loader returns
  int64_t bar_seconds;  // most common positive ts difference (ties: the smaller); 0 when R < 2
  bool has_bid_ask;     // bid_* / ask_* hold data; NaN otherwise
  bool has_volume;      // volume holds data; NaN otherwise
  char symbol[MARKET_SYMBOL_MAX];
  char timezone[MARKET_TIMEZONE_MAX];                 // IANA name of the source's clock, e.g. "UTC", "America/New_York"
  char source[MARKET_SOURCE_MAX];                     // the input file's name (no directory)
  char source_format[MARKET_FORMAT_NAME_MAX];         // "lean-quote", "lean-equity", "csv", ...
  int64_t *ts;                                        // (R,) bar start, seconds since the epoch, strictly increasing
  double *open, *high, *low, *close;                  // (R,) mid prices, or trade prices without bid/ask
  double *bid_open, *bid_high, *bid_low, *bid_close;  // (R,) NaN when !has_bid_ask
  double *ask_open, *ask_high, *ask_low, *ask_close;  // (R,) NaN when !has_bid_ask
  double *volume;                                     // (R,) NaN when !has_volume
} MarketData;

typedef struct {
  int64_t count;            // consecutive bars more than bar_seconds apart
  int64_t weekend;          // of those, gaps missing >= MARKET_WEEKEND_GAP_SECONDS (weekends, long holidays)
  int64_t other;            // the rest (daily breaks, single missing bars or days)
  int64_t largest_seconds;  // the largest ts difference among gaps; 0 when none
  int64_t largest_at;       // ts of the bar before the largest gap
} MarketGaps;

// --- formats -------------------------------------------------------------------------------------
const char *market_format_name(MarketFormat format);           // "auto", "lean-quote", ...
int market_format_parse(const char *name, MarketFormat *out);  // 0, or -1 and the message (lists the names)

// --- loading and saving ----------------------------------------------------------------------------
// Each returns a new MarketData (free with market_data_free), or NULL and sets the message.
MarketData *market_data_load_csv(const char *path, MarketFormat format);  // plain or .gz; AUTO detects the layout

// What a CSV load may do beyond the strict default (each off by default, ppo-data import's flags).
typedef struct {
  MarketFormat format;         // AUTO detects the layout
  bool raw_prices;             // keep open..close as they are when the file has an adj_close column
  bool skip_null_rows;         // drop rows whose every field but the time is empty, null, nan or n/a
  bool sort;                   // rows in any order: sorted by time (then by line) before the order check
  bool drop_duplicates;        // drop a row equal in every field (after any adjustment) to the row before
  const char *ignore_columns;  // comma-separated header names whose fields are not read (NULL: none)
  const char *local_zone;      // the file's times are this IANA zone's wall clock: converted to UTC (NULL: none;
                               // intraday times without an offset, oldest first, not with sort: a time in the
                               // hour repeated when daylight saving ends is its first pass unless it is not
                               // after the row before; a time the zone skips is refused)
} MarketCsvOptions;

typedef struct {
  int64_t null_rows, duplicate_rows;  // rows dropped by skip_null_rows and drop_duplicates
  int64_t moved_rows;                 // rows that sorting moved (0: the file was in order)
  bool adjusted;                      // open..close were multiplied by adj_close / close
  double factor_min, factor_max;      // the smallest and largest of those factors
  int ignored_columns;                // header columns left out by ignore_columns
  int64_t zoned_rows;                 // rows whose time carried a UTC offset or was Unix time (stored as UTC)
  int64_t ambiguous_rows;             // local_zone: rows whose wall clock falls in a repeated hour
  int64_t repeated_hours;             // of those, the rows read as its second (standard) pass
} MarketCsvSummary;

MarketCsvOptions market_csv_options_default(void);  // format AUTO, every flag off
// market_data_load_csv with options; summary (may be NULL) says what they did.
MarketData *market_data_load_csv_with(const char *path, const MarketCsvOptions *options, MarketCsvSummary *summary);
MarketData *market_data_load_h5(const char *path);                        // validates layout and rows
MarketData *market_data_load(const char *path);  // HDF5 when the file has the HDF5 signature, else CSV (AUTO)
// Writes `data` to `path` atomically (h5io): on failure nothing is left behind. 0, or -1 and the message.
int market_data_save_h5(const MarketData *data, const char *path);
void market_data_free(MarketData *data);  // NULL is fine
// One file with bid and ask from two files of one side each (Dukascopy exports its BID and ASK
// sides separately): the same bars, row by row, or an error naming the first row that differs.
// The mid is (bid + ask) / 2 per field, as the CSV loaders compute it; volume is the sum of the two
// sides' volumes when both have one (Dukascopy's per-side volume), else absent. Symbol and time
// zone come from `bid`; source is "BID + ASK"; source_format "FORMAT bid + ask". The result is
// validated like a loaded file (ask >= bid at open and close). The names go into the messages.
// A new MarketData, or NULL and the message.
MarketData *market_data_merge_bid_ask(const MarketData *bid, const char *bid_name, const MarketData *ask,
                                      const char *ask_name);
// 64-bit FNV-1a of the rows, timestamps and every price and volume column (bit patterns, NaN
// included): a checkpoint records it so that a resume on other data is refused.
uint64_t market_data_hash(const MarketData *data);

// --- building (synthetic generators, tests) -----------------------------------------------------------
// A MarketData of `rows` bars: ts zero, prices and volume NaN, metadata empty, has_* false.
// The caller fills it, then calls market_data_validate. Never NULL (exits when out of memory).
MarketData *market_data_new(int64_t rows);
// The bytes market_data_new(rows) allocates (SIZE_MAX past the address space): checked against
// the available memory before a configured size is built.
size_t market_data_bytes(int64_t rows);
// Checks every row as the loaders do and recomputes bar_seconds. `where` prefixes the message
// (a file name or "synthetic"). 0, or -1 and "WHERE: row R (TIME): reason".
int market_data_validate(MarketData *data, const char *where);
int64_t market_data_bar_seconds(const int64_t *ts, int64_t rows);  // the mode of the positive differences

// --- summaries ---------------------------------------------------------------------------------------
MarketGaps market_data_gaps(const MarketData *data);
double market_data_median_spread_bp(
    const MarketData *data);  // median (ask-bid)/mid at the close, bp; NaN without bid/ask

typedef struct {
  double close_min, close_max;  // the smallest and largest close
  double largest_move;          // close / previous close - 1 of the bar whose |log| of that ratio is largest
  int64_t largest_at;           // that bar's ts; 0 with fewer than 2 bars
  double largest_from;          // the close before it
  int64_t unchanged;            // bars whose close equals the one before (prices rounded too coarsely show here)
} MarketMoves;
// The close's range and its largest one-bar move: an unadjusted split or a mistyped price shows as
// a move no market makes (ppo-data import warns past MARKET_SUSPECT_MOVE_LOG).
MarketMoves market_data_moves(const MarketData *data);
#define MARKET_SUSPECT_MOVE_LOG 0.4054651081081644  // ln 1.5: +50 % or -33.3 % in one bar (a 3:2 split)
#define MARKET_SUSPECT_UNCHANGED 0.5                // more than half the bars with an unchanged close: warned too
// The default symbol for an input file: the first '_'/'.'-separated part of its name that is not a
// category word (FOREX, STOCKS, CFD, ...), upper-cased: "XAUUSD_OANDA_1H_BIDASK.csv" -> "XAUUSD",
// "STOCKS_GOOGL.csv" -> "GOOGL"; within it, a '-' before a bar size, a year or a period word ends
// it: "BTCUSDT-1h-2023-01.csv" -> "BTCUSDT", while "BRK-B.csv" -> "BRK-B". Writes "" when nothing fits.
void market_symbol_from_path(const char *path, char *out, size_t capacity);
// Whether s is 1 to capacity - 1 letters, digits or characters of `extra` (ppo-data import's rule for
// a symbol and a time zone).
bool market_name_ok(const char *s, size_t capacity, const char *extra);
// A symbol is 1 to MARKET_SYMBOL_MAX - 1 letters, digits or . _ - / (ppo-data import's rule; the
// HDF5 loader holds a file's symbol to it, so no newline or separator reaches a report line).
bool market_symbol_ok(const char *symbol);
// "YYYY-MM-DD HH:MM" plus ":SS" when the seconds are not zero; returns buf. Outside the years
// 0000-9999 (a damaged checkpoint's data_first_ts, say): "N seconds since 1970" (utc_format).
char *market_time_format(int64_t ts, char *buf, size_t capacity);

#endif
