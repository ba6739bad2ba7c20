// apps/ppo_data.c: ppo-data, the market-data tool (thin: parse the command line, call envs/, exit).
//
//   ppo-data import INPUT.csv[.gz] OUTPUT.h5 [--format F] [--symbol S] [--timezone TZ] [--raw-prices]
//                   [--skip-null-rows] [--sort] [--drop-duplicates] [--ignore-columns NAMES] [--to-utc]
//                   [--ask ASK.csv[.gz]]
//   ppo-data info FILE.h5|FILE.csv[.gz]
//   ppo-data features FILE.h5|FILE.csv[.gz] --out FEATURES.csv
//
// Exit status: 0 success; 2 bad usage or bad data (the message names file, line, column, value);
// 1 a failure at run time (check.h).
#include <ctype.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apps/cli.h"
#include "build_info.h"  // PPO_BUILD_INFO (generated)
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/log.h"
#include "common/text.h"
#include "envs/features.h"
#include "envs/market_data.h"

static const char usage_text[] =
    "usage: ppo-data import INPUT.csv[.gz] OUTPUT.h5 [--format auto|lean-quote|lean-equity|csv]\n"
    "                      [--symbol SYMBOL] [--timezone TZ] [--raw-prices] [--skip-null-rows] [--sort]\n"
    "                      [--drop-duplicates] [--ignore-columns NAME[,NAME...]] [--to-utc]\n"
    "                      [--ask ASK.csv[.gz]]\n"
    "       ppo-data info FILE.h5|FILE.csv[.gz]\n"
    "       ppo-data features FILE.h5|FILE.csv[.gz] --out FEATURES.csv\n"
    "       ppo-data --help | --version\n";

static const char help_text[] =
    "\n"
    "import   reads a CSV of bars (plain or gzip), validates every row and writes compressed HDF5\n"
    "         atomically (on any error nothing is left at OUTPUT). Layouts (--format, default auto):\n"
    "           lean-quote   QuantConnect LEAN quote bars: YYYYMMDD HH:MM, bid OHLC, size, ask OHLC, size\n"
    "           lean-equity  LEAN equity daily bars: YYYYMMDD HH:MM, OHLC in 1/10000 USD, volume\n"
    "           csv          a header naming the columns (time/date, open..close or bid_/ask_ OHLC, volume;\n"
    "                        separated by ',', or by tabs or ';'); docs/GUIDE.md lists names and time formats\n"
    "         A csv with an adj_close column is adjusted: open..close times adj_close / close, row by row\n"
    "         (splits and dividends, as yfinance's auto_adjust); --raw-prices keeps the prices as they are.\n"
    "         What a file needs beyond the strict default is asked for, never guessed:\n"
    "           --skip-null-rows   drop rows without prices (every field but the time empty, null, nan or n/a)\n"
    "           --sort             sort the rows by time (newest-first files, concatenated downloads)\n"
    "           --drop-duplicates  drop a row equal in every field to the one before it (same time)\n"
    "           --ignore-columns   leave out these header columns (comma-separated names)\n"
    "         --symbol defaults to the file name's first part (XAUUSD_OANDA_1H_BIDASK.csv -> XAUUSD);\n"
    "         --timezone names the source's clock (default UTC; SPY daily: America/New_York); the times are\n"
    "         kept as they are unless --to-utc converts them from that zone's wall clock to UTC (intraday\n"
    "         files in local time: the hour repeated when daylight saving ends is told apart by order,\n"
    "         an hour it skips is refused; rows oldest first).\n"
    "         --ask ASK.csv joins two files of one side each (Dukascopy's BID and ASK exports): INPUT is\n"
    "         the bid side; both are read with the same options and must hold the same bars, row by row;\n"
    "         the output has bid_/ask_ prices, mid (bid + ask) / 2, volume the two sides' sum.\n"
    "info     prints rows, time range, bar size, gaps (weekend: >= 36 h missing), bid/ask and spread, the\n"
    "         close's range and its largest one-bar move (an unadjusted split or a bad price shows there);\n"
    "         the file's source and timezone with control characters escaped (\\n, \\x1b, \\\\).\n"
    "features writes the trading env's feature matrix (what the agent sees, before the window and the agent\n"
    "         state) as CSV: a time column and one column per feature, default parameters for the bar size;\n"
    "         written atomically (on any error nothing is left at FEATURES.csv).\n"
    "\n"
    "Exit status: 0 ok, 2 bad usage or bad data (the message says file, line, column and value), 1 runtime failure.\n";

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "ppo-data: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n%s", usage_text);
  return EXIT_BAD_INPUT;
}

// Symbols and zone names end up in file attributes and log lines: keep them plain.
// The output path names the input file itself (after links and ..): writing would destroy it.
static bool same_file(const char *input, const char *output) {
  struct stat a, b;
  return stat(input, &a) == 0 && stat(output, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// The output names a file (not a directory, and a temporary name can be made beside it) in a
// directory that exists and is writable: otherwise it is bad input (exit 2), found before the input
// is read; a write that fails later (disk full) is a runtime failure (exit 1). `what` names it.
static bool output_ok(const char *output, const char *what) {
  char copy[PATH_MAX];
  struct stat st;
  if (atomic_file_check_path(output) != 0) {
    fprintf(stderr, "ppo-data: %s (%s)\n", error_message(), what);
    return false;
  }
  if (stat(output, &st) == 0 && S_ISDIR(st.st_mode)) {
    fprintf(stderr, "ppo-data: %s '%s' is a directory; name the file to write\n", what, output);
    return false;
  }
  snprintf(copy, sizeof copy, "%s", output);
  const char *dir = dirname(copy);
  if (access(dir, W_OK | X_OK) == 0) return true;
  fprintf(stderr, "ppo-data: %s: the directory %s is missing or not writable (%s)\n", output, dir, what);
  return false;
}

// The zone is a label (timestamps are stored as the file gives them), but it ends up in every file
// and report: a name the system's zone database (TZDIR or /usr/share/zoneinfo) lacks is refused,
// so "America/NewYork" is caught. Without a database (a minimal image without tzdata) only the
// characters are checked.
static bool zone_known(const char *name) {
  const char *dir = getenv("TZDIR") && *getenv("TZDIR") ? getenv("TZDIR") : "/usr/share/zoneinfo";
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return true;
  char path[PATH_MAX];
  if (name[0] == '/' || snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return false;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void format_bar_size(int64_t seconds, char *buf, size_t capacity) {
  if (seconds > 0 && seconds % 86400 == 0)
    snprintf(buf, capacity, "%lld s (%lld d)", (long long)seconds, (long long)(seconds / 86400));
  else if (seconds > 0 && seconds % 3600 == 0)
    snprintf(buf, capacity, "%lld s (%lld h)", (long long)seconds, (long long)(seconds / 3600));
  else if (seconds > 0 && seconds % 60 == 0)
    snprintf(buf, capacity, "%lld s (%lld min)", (long long)seconds, (long long)(seconds / 60));
  else
    snprintf(buf, capacity, "%lld s", (long long)seconds);
}

// What the import's options did, one line each (nothing when they did nothing).
static void print_import_summary(const MarketCsvSummary *s) {
  if (s->adjusted)
    printf("  adjusted open/high/low/close by adj_close / close (factors %.6g .. %.6g; --raw-prices keeps them)\n",
           s->factor_min, s->factor_max);
  if (s->null_rows) printf("  skipped %lld rows without prices (--skip-null-rows)\n", (long long)s->null_rows);
  if (s->moved_rows) printf("  sorted by time: %lld rows moved (--sort)\n", (long long)s->moved_rows);
  if (s->duplicate_rows) printf("  dropped %lld repeated rows (--drop-duplicates)\n", (long long)s->duplicate_rows);
  if (s->ignored_columns) printf("  left out %d columns (--ignore-columns)\n", s->ignored_columns);
}

// The conversion's line; and a warning when rows fell in a repeated hour but none was read as its
// second pass: a file that holds only one pass of that hour, or a gap inside it, is read by order
// alone, and an hour read wrongly would sit an hour off.
static void print_conversion(const char *input, const MarketCsvOptions *o, const MarketCsvSummary *s) {
  if (!o->local_zone) return;
  printf("  converted from %s to UTC (%lld rows in a repeated hour, %lld of them read as its second pass)\n",
         o->local_zone, (long long)s->ambiguous_rows, (long long)s->repeated_hours);
  if (s->ambiguous_rows > 0 && s->repeated_hours == 0)
    fprintf(stderr,
            "ppo-data: warning: %s: %lld rows fell in an hour %s repeats and none stepped back in time, so all were "
            "read as its first pass (daylight time); check the file around that hour\n",
            input, (long long)s->ambiguous_rows, o->local_zone);
}

// The zone database's fixed-offset zones Etc/GMT+N and GMT+N are N hours behind UTC (POSIX's sign,
// the opposite of "GMT+2" in a broker's server time, which is Etc/GMT-2): warned of, with the zone
// that is meant otherwise. Returns whether it warned.
static bool warn_posix_gmt_sign(const char *zone) {
  const char *p = strncmp(zone, "Etc/", 4) == 0 ? zone + 4 : zone;
  if (strncmp(p, "GMT", 3) != 0 || (p[3] != '+' && p[3] != '-')) return false;
  char *end;
  long hours = strtol(p + 4, &end, 10);
  if (*end != '\0' || end == p + 4 || hours == 0) return false;
  fprintf(stderr,
          "ppo-data: warning: --timezone %s is UTC%c%ld, %ld hours %s UTC: the zone database's GMT%cN zones take "
          "POSIX's sign, the opposite of the usual notation; a clock %ld hours %s UTC (a broker's \"GMT%c%ld\" "
          "server time) is Etc/GMT%c%ld\n",
          zone, p[3] == '+' ? '-' : '+', hours, hours, p[3] == '+' ? "behind" : "ahead of", p[3], hours,
          p[3] == '+' ? "ahead of" : "behind", p[3], hours, p[3] == '+' ? '-' : '+', hours);
  return true;
}

static void format_move(const MarketMoves *m, char *buf, size_t capacity) {
  char at[40];
  snprintf(buf, capacity, "%+.1f %% at %s (close %.6g -> %.6g)", 100.0 * m->largest_move,
           market_time_format(m->largest_at, at, sizeof at), m->largest_from,
           m->largest_from * (1.0 + m->largest_move));
}

// A one-bar move no market makes (past MARKET_SUSPECT_MOVE_LOG) is most often an unadjusted split or a
// mistyped price, which a backtest would book as a windfall: said, not refused (crashes happen).
// Likewise a close that mostly does not move: prices rounded to too few decimals (0.0001 printed to
// 4 places) leave the features, the spread and the slippage at zero, and nothing to learn from.
static bool mostly_unchanged(const MarketData *data, const MarketMoves *m) {
  return data->rows > 20 && (double)m->unchanged > MARKET_SUSPECT_UNCHANGED * (double)(data->rows - 1);
}

static void warn_suspect_prices(const char *input, const MarketData *data) {
  if (data->rows < 2) return;
  MarketMoves m = market_data_moves(data);
  if (fabs(log1p(m.largest_move)) > MARKET_SUSPECT_MOVE_LOG) {
    char move[160];
    format_move(&m, move, sizeof move);
    fprintf(stderr,
            "ppo-data: warning: %s: the close moves %s in one bar: an unadjusted split or a bad price? (an "
            "adj_close column adjusts for splits; check the source)\n",
            input, move);
  }
  if (mostly_unchanged(data, &m))
    fprintf(stderr,
            "ppo-data: warning: %s: the close is unchanged on %lld of %lld bars: prices rounded to too few decimals? "
            "(the features and costs see no movement there)\n",
            input, (long long)m.unchanged, (long long)(data->rows - 1));
}

// "BID" or "ASK" when one of the file name's '_', '-', '.' or ' '-separated words says a quote side
// (Dukascopy's EURUSD_Candlestick_1_Hour_BID_..., gym-anytrading's FOREX_EURUSD_1H_ASK.csv), else NULL.
static const char *quote_side_in_name(const char *path) {
  const char *base = strrchr(path, '/');
  for (const char *p = base ? base + 1 : path; *p;) {
    size_t n = strcspn(p, "_-. ");
    if (n == 3 && (strncasecmp(p, "BID", 3) == 0 || strncasecmp(p, "ASK", 3) == 0))
      return toupper((unsigned char)p[0]) == 'B' ? "BID" : "ASK";
    p += n;
    if (*p) p++;
  }
  return NULL;
}

// The import's bars: INPUT's, or with --ask the two sides joined (market_data_merge_bid_ask). Both
// files are read with the same options. NULL after printing the message (bad data).
static MarketData *import_load(const char *input, const char *ask_path, const MarketCsvOptions *options,
                               MarketCsvSummary *summary, MarketCsvSummary *ask_summary) {
  MarketData *data = market_data_load_csv_with(input, options, summary);
  if (data && ask_path) {
    MarketData *bid = data, *ask = market_data_load_csv_with(ask_path, options, ask_summary);
    data = NULL;
    if (ask && (summary->adjusted || ask_summary->adjusted))
      error_set("%s: has an adj_close column, and bid and ask quotes are not adjusted: give --raw-prices",
                summary->adjusted ? input : ask_path);
    else if (ask)
      data = market_data_merge_bid_ask(bid, input, ask, ask_path);
    market_data_free(bid), market_data_free(ask);
  }
  if (!data) fprintf(stderr, "ppo-data: %s\n", error_message());
  return data;
}

static int command_import(int argc, char **argv) {
  const char *positional[2] = {NULL, NULL};
  int n_positional = 0;
  const char *format_name = "auto", *symbol = NULL, *timezone = "UTC", *ask_path = NULL;
  MarketCsvOptions options = market_csv_options_default();
  CliSeen seen = {.count = 0};
  bool to_utc = false, timezone_given = false;
  static const char *const flag_names[] = {"--raw-prices", "--skip-null-rows", "--sort", "--drop-duplicates",
                                           "--to-utc"};
  bool *flags[] = {&options.raw_prices, &options.skip_null_rows, &options.sort, &options.drop_duplicates, &to_utc};
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    const char **target = NULL, *name = NULL;
    if (cli_is_option(arg, "--format"))
      target = &format_name, name = "--format";
    else if (cli_is_option(arg, "--symbol"))
      target = &symbol, name = "--symbol";
    else if (cli_is_option(arg, "--timezone"))
      target = &timezone, name = "--timezone", timezone_given = true;
    else if (cli_is_option(arg, "--ignore-columns"))
      target = &options.ignore_columns, name = "--ignore-columns";
    else if (cli_is_option(arg, "--ask"))
      target = &ask_path, name = "--ask";
    int flag = -1;
    for (int f = 0; f < 5; f++)
      if (strcmp(arg, flag_names[f]) == 0) flag = f;
    if (flag >= 0) {
      if (cli_repeated(&seen, flag_names[flag])) return usage_error("%s is given twice; give it once", arg);
      *flags[flag] = true;
    } else if (target) {
      if (cli_repeated(&seen, name)) return usage_error("%s is given twice; give it once", name);
      if (!(*target = cli_option_value(argc, argv, &i, name))) return usage_error("%s needs a value", name);
    } else if (strncmp(arg, "--", 2) == 0) {
      return usage_error("unknown option '%s'", arg);
    } else if (n_positional < 2) {
      positional[n_positional++] = arg;
    } else {
      return usage_error("unexpected argument '%s' (import takes INPUT and OUTPUT)", arg);
    }
  }
  if (n_positional < 2) return usage_error("%s", "import needs INPUT.csv and OUTPUT.h5");
  MarketFormat format;
  if (market_format_parse(format_name, &format) != 0) return usage_error("%s", error_message());
  if (symbol && !market_symbol_ok(symbol))
    return usage_error("--symbol '%s': 1 to 63 letters, digits or . _ - /", symbol);
  char derived[MARKET_SYMBOL_MAX];  // the loader's symbol from the file name, held to the same rule
  market_symbol_from_path(positional[0], derived, sizeof derived);
  if (!symbol && derived[0] && !market_symbol_ok(derived)) {
    fprintf(stderr,
            "ppo-data: the symbol '%s' taken from the name '%s' is not 1 to 63 letters, digits or . _ - /: pass "
            "--symbol\n",
            derived, positional[0]);
    return EXIT_BAD_INPUT;
  }
  if (!market_name_ok(timezone, MARKET_TIMEZONE_MAX, "_-+/") || !zone_known(timezone))
    return usage_error(
        "--timezone '%s': an IANA zone name such as UTC or America/New_York (the system's zone "
        "database lists them: /usr/share/zoneinfo)",
        timezone);

  if (same_file(positional[0], positional[1]))
    return usage_error("OUTPUT.h5 '%s' is the input file itself", positional[1]);
  if (ask_path && same_file(ask_path, positional[1]))
    return usage_error("OUTPUT.h5 '%s' is the --ask file itself", positional[1]);
  if (ask_path && same_file(ask_path, positional[0]))
    return usage_error("--ask '%s' is INPUT itself: give the bid side as INPUT and the ask side with --ask", ask_path);
  if (!output_ok(positional[1], "OUTPUT.h5")) return EXIT_BAD_INPUT;
  options.format = format;
  if (to_utc && options.sort)
    return usage_error(
        "%s", "--to-utc needs the rows oldest first: give --sort in a first import, or sort the file, then convert");
  if (to_utc && !timezone_given)
    return usage_error("%s", "--to-utc needs --timezone ZONE, the zone whose wall clock the file's times are in");
  if (to_utc) options.local_zone = timezone;
  warn_posix_gmt_sign(timezone);
  MarketCsvSummary summary, ask_summary;
  MarketData *data = import_load(positional[0], ask_path, &options, &summary, &ask_summary);
  if (!data) return EXIT_BAD_INPUT;
  if (symbol) strcpy(data->symbol, symbol);
  if (!data->symbol[0]) {
    market_data_free(data);
    return usage_error("cannot derive a symbol from the name '%s': pass --symbol", positional[0]);
  }
  if ((summary.zoned_rows > 0 || (ask_path && ask_summary.zoned_rows > 0)) && strcmp(timezone, "UTC") != 0 && !to_utc) {
    market_data_free(data);  // the offsets made them UTC: the zone would mislabel them
    return usage_error(
        "--timezone %s: the file's times carry UTC offsets (or are Unix times) and are stored as UTC; "
        "leave --timezone out",
        timezone);
  }
  strcpy(data->timezone, to_utc ? "UTC" : timezone);
  if (market_data_save_h5(data, positional[1]) != 0) {
    fprintf(stderr, "ppo-data: %s\n", error_message());
    market_data_free(data);
    return EXIT_RUNTIME;
  }
  char first[40], last[40], bar[48];
  format_bar_size(data->bar_seconds, bar, sizeof bar);
  printf("%s: %s, %lld bars %s .. %s (%s), bar %s, %s, from %s (%s)\n", positional[1], data->symbol,
         (long long)data->rows, market_time_format(data->ts[0], first, sizeof first),
         market_time_format(data->ts[data->rows - 1], last, sizeof last), data->timezone, bar,
         data->has_bid_ask ? "bid/ask" : "no bid/ask", data->source, data->source_format);
  if (ask_path) printf("  %s: bid side\n", positional[0]);
  print_import_summary(&summary);
  print_conversion(positional[0], &options, &summary);
  if (ask_path) {
    printf("  %s: ask side\n", ask_path);
    print_import_summary(&ask_summary);
    print_conversion(ask_path, &options, &ask_summary);
  }
  warn_suspect_prices(positional[0], data);
  const char *side = ask_path ? NULL : quote_side_in_name(positional[0]);
  if (side && !data->has_bid_ask)
    fprintf(stderr,
            "ppo-data: warning: %s: the name says %s prices, one side of the quote; they are stored as the mid "
            "(half a spread off it) and the simulator models the spread ([env] half_spread_bps); with both sides "
            "the fills pay the real one: ppo-data import BID.csv OUT.h5 --ask ASK.csv\n",
            positional[0], side);
  market_data_free(data);
  return EXIT_OK;
}

static int command_info(int argc, char **argv) {
  for (int i = 0; i < argc; i++)
    if (strncmp(argv[i], "--", 2) == 0) return usage_error("info: unknown option '%s' (info takes one FILE)", argv[i]);
  if (argc != 1) return usage_error("%s", "info takes exactly one FILE");
  MarketData *data = market_data_load(argv[0]);
  if (!data) {
    fprintf(stderr, "ppo-data: %s\n", error_message());
    return EXIT_BAD_INPUT;
  }
  char first[40], last[40], at[40], bar[48];
  MarketGaps gaps = market_data_gaps(data);
  format_bar_size(data->bar_seconds, bar, sizeof bar);
  printf("file           %s\n", argv[0]);
  printf("symbol         %s\n", data->symbol);
  // 4 characters a byte at most (\xHH): room for the whole text
  char source[4 * MARKET_SOURCE_MAX + 8], source_format[4 * MARKET_FORMAT_NAME_MAX + 8],
      timezone[4 * MARKET_TIMEZONE_MAX + 8];
  printf("source         %s (%s)\n", text_escape(data->source, source, sizeof source),
         text_escape(data->source_format, source_format, sizeof source_format));
  printf("timezone       %s\n", text_escape(data->timezone, timezone, sizeof timezone));
  printf("rows           %lld\n", (long long)data->rows);
  printf("first          %s\n", market_time_format(data->ts[0], first, sizeof first));
  printf("last           %s\n", market_time_format(data->ts[data->rows - 1], last, sizeof last));
  printf("bar size       %s\n", bar);
  printf("gaps           %lld (weekend %lld, other %lld)\n", (long long)gaps.count, (long long)gaps.weekend,
         (long long)gaps.other);
  if (gaps.count > 0)
    printf("largest gap    %.1f h after the bar at %s\n", (double)gaps.largest_seconds / 3600.0,
           market_time_format(gaps.largest_at, at, sizeof at));
  printf("bid/ask        %s\n", data->has_bid_ask ? "yes" : "no");
  if (data->has_bid_ask) printf("median spread  %.2f bp (at the close)\n", market_data_median_spread_bp(data));
  int64_t zero_volume = 0;  // MetaTrader's <VOL> of an FX export: 0 on every bar (the tick count is <TICKVOL>)
  for (int64_t i = 0; data->has_volume && i < data->rows; i++) zero_volume += data->volume[i] == 0.0;
  printf("volume         %s\n", !data->has_volume           ? "no"
                                : zero_volume == data->rows ? "yes, but 0 on every bar"
                                                            : "yes");
  MarketMoves moves = market_data_moves(data);
  printf("close range    %.10g .. %.10g\n", moves.close_min, moves.close_max);
  if (data->rows > 1) {
    char move[160];
    format_move(&moves, move, sizeof move);
    printf("largest move   %s%s\n", move,
           fabs(log1p(moves.largest_move)) > MARKET_SUSPECT_MOVE_LOG ? "  <- a split or a bad price?" : "");
    printf("unchanged      %lld of %lld bars (%.1f %%)%s\n", (long long)moves.unchanged, (long long)(data->rows - 1),
           100.0 * (double)moves.unchanged / (double)(data->rows - 1),
           mostly_unchanged(data, &moves) ? "  <- prices rounded too coarsely?" : "");
  }
  market_data_free(data);
  return EXIT_OK;
}

static int command_features(int argc, char **argv) {
  const char *input = NULL, *output = NULL;
  for (int i = 0; i < argc; i++) {
    if (cli_is_option(argv[i], "--out")) {
      if (output) return usage_error("%s", "--out is given twice; give it once");
      if (!(output = cli_option_value(argc, argv, &i, "--out"))) return usage_error("%s", "--out needs a value");
    } else if (strncmp(argv[i], "--", 2) == 0) {
      return usage_error("unknown option '%s'", argv[i]);
    } else if (!input) {
      input = argv[i];
    } else {
      return usage_error("unexpected argument '%s' (features takes one FILE)", argv[i]);
    }
  }
  if (!input || !output) return usage_error("%s", "features needs FILE and --out FEATURES.csv");
  if (same_file(input, output)) return usage_error("--out '%s' is the input file itself", output);
  if (!output_ok(output, "--out")) return EXIT_BAD_INPUT;
  MarketData *data = market_data_load(input);
  if (!data) {
    fprintf(stderr, "ppo-data: %s\n", error_message());
    return EXIT_BAD_INPUT;
  }
  FeatureParams params = features_params_default();
  if (features_params_resolve(&params, data) != 0) {
    fprintf(stderr, "ppo-data: %s: %s\n", input, error_message());
    market_data_free(data);
    return EXIT_BAD_INPUT;
  }
  Features *features = features_compute(data, &params);
  AtomicFile af;
  int status = EXIT_OK;
  if (!atomic_file_open(&af, output)) {  // the atomic file's messages name the path
    status = EXIT_BAD_INPUT;
  } else if (features_write_csv(features, data, af.stream) != 0) {  // a failed write (disk full): runtime
    atomic_file_abort(&af);
    error_prepend("%s: ", output);
    status = EXIT_RUNTIME;
  } else if (atomic_file_commit(&af) != 0) {
    status = EXIT_RUNTIME;
  }
  if (status != EXIT_OK)
    fprintf(stderr, "ppo-data: %s\n", error_message());
  else
    printf("%s: %lld bars x %d features (%s data, sigma half-life %g bars)\n", output, (long long)features->rows,
           features->count, params.daily ? "daily" : "intraday", params.sigma_halflife);
  features_free(features);
  market_data_free(data);
  return status;
}

int main(int argc, char **argv) {
  cli_standard_streams();
  log_get_level();                  // a bad PPO_LOG_LEVEL is warned of now, whatever the command prints
  atomic_file_remove_on_signals();  // Ctrl-C or a kill leaves no half-written temporary file behind
  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    printf("%s%s", usage_text, help_text);
    return EXIT_OK;
  }
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    printf("ppo-data: %s\n", PPO_BUILD_INFO);
    return EXIT_OK;
  }
  if (argc < 2) return usage_error("%s", "no command given");
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      printf("%s%s", usage_text, help_text);
      return EXIT_OK;
    }
  }
  if (strcmp(argv[1], "import") == 0) return cli_finish_stdout("ppo-data", command_import(argc - 2, argv + 2));
  if (strcmp(argv[1], "info") == 0) return cli_finish_stdout("ppo-data", command_info(argc - 2, argv + 2));
  if (strcmp(argv[1], "features") == 0) return cli_finish_stdout("ppo-data", command_features(argc - 2, argv + 2));
  return usage_error("unknown command '%s' (allowed: import, info, features)", argv[1]);
}
