// envs/market_data_impl.h: what the market-data files share among themselves (not public).
//
// market_data.c owns the struct, validation and summaries; market_csv.c the CSV loaders;
// market_h5.c the HDF5 layout. They meet here: one bar as a row, the row check that every
// loader runs, and the message helpers that keep the error texts alike.
// Depends on market_data.h.
#ifndef PPO_ENVS_MARKET_DATA_IMPL_H
#define PPO_ENVS_MARKET_DATA_IMPL_H

#include "envs/market_data.h"

// One bar as a row (the loaders build rows, then transpose them into a MarketData).
typedef struct {
  int64_t ts;
  double open, high, low, close;
  double bid_open, bid_high, bid_low, bid_close;
  double ask_open, ask_high, ask_low, ask_close;
  double volume;
} MarketBar;

void market_bar_get(const MarketData *data, int64_t row, MarketBar *out);
void market_bar_put(MarketData *data, int64_t row, const MarketBar *bar);

// The mid prices of a bar with bid and ask: (bid + ask) / 2, field by field.
void market_bar_mid(MarketBar *bar);

// Checks one bar's prices and volume (finite, > 0, OHLC order on each side, ask >= bid, and with
// check_mid the mid equal to (bid + ask) / 2). Returns NULL when the bar is fine, else writes the
// reason with the values into buf and returns buf.
const char *market_bar_check(const MarketBar *bar, bool has_bid_ask, bool has_volume, bool check_mid, char *buf,
                             size_t capacity);

// Shortest "%.*g" text that reads back as the same double; returns buf.
char *market_number_format(double value, char *buf, size_t capacity);
// A field of a data file is quoted in a message through text_escape_cut (common/text.h), cut after
// this many characters.
#define MARKET_FIELD_SHOWN 48
// Bytes that always hold it: a character escapes to at most 8 (a C1 pair, \xc2\x9b), "...", NUL.
#define MARKET_FIELD_SHOWN_BYTES (MARKET_FIELD_SHOWN * 8 + 4)
// The last path component: "data/x.csv.gz" -> "x.csv.gz".
const char *market_path_base(const char *path);
// Copies src into dst (capacity bytes, always terminated); false when it did not fit.
bool market_copy_text(char *dst, size_t capacity, const char *src);

#endif
