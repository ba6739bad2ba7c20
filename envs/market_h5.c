// envs/market_h5.c: MarketData as HDF5 (layout in market_data.h), written atomically through h5io.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/file_check.h"
#include "common/h5io.h"
#include "common/host_memory.h"
#include "common/text.h"
#include "envs/market_data_impl.h"

// Deflate level 6 with a Fletcher32 checksum per chunk: a changed byte is refused on load, naming
// the dataset, instead of training on altered prices (files written before the checksums, in the
// earlier HDF5 formats, load too).
enum { MARKET_H5_FILTERS = 6 | H5IO_CHECKSUM };

typedef struct {
  const char *name;  // dataset under /bars
  size_t offset;     // of the column pointer in MarketData
  bool bid_ask;      // present only when has_bid_ask
} ColumnSpec;

static const ColumnSpec price_columns[] = {
    {"open", offsetof(MarketData, open), false},        {"high", offsetof(MarketData, high), false},
    {"low", offsetof(MarketData, low), false},          {"close", offsetof(MarketData, close), false},
    {"bid_open", offsetof(MarketData, bid_open), true}, {"bid_high", offsetof(MarketData, bid_high), true},
    {"bid_low", offsetof(MarketData, bid_low), true},   {"bid_close", offsetof(MarketData, bid_close), true},
    {"ask_open", offsetof(MarketData, ask_open), true}, {"ask_high", offsetof(MarketData, ask_high), true},
    {"ask_low", offsetof(MarketData, ask_low), true},   {"ask_close", offsetof(MarketData, ask_close), true},
    {"volume", offsetof(MarketData, volume), false},
};
enum { N_PRICE_COLUMNS = sizeof price_columns / sizeof price_columns[0] };

static double *column_of(const MarketData *data, const ColumnSpec *spec) {
  return *(double *const *)((const char *)data + spec->offset);
}

static int write_all(hid_t file, const MarketData *data) {
  hsize_t dims[1] = {(hsize_t)data->rows};
  if (h5io_write(file, "bars/ts", H5IO_INT64, 1, dims, data->ts, MARKET_H5_FILTERS) != 0) return -1;
  for (int c = 0; c < N_PRICE_COLUMNS; c++) {
    if (price_columns[c].bid_ask && !data->has_bid_ask) continue;
    char name[64];
    snprintf(name, sizeof name, "bars/%s", price_columns[c].name);
    if (h5io_write(file, name, H5IO_FLOAT64, 1, dims, column_of(data, &price_columns[c]), MARKET_H5_FILTERS)) return -1;
  }
  if (h5io_attr_write_int64(file, "bars", "format_version", MARKET_H5_FORMAT_VERSION) ||
      h5io_attr_write_int64(file, "bars", "rows", data->rows) ||
      h5io_attr_write_int64(file, "bars", "bar_seconds", data->bar_seconds) ||
      h5io_attr_write_int64(file, "bars", "has_bid_ask", data->has_bid_ask) ||
      h5io_attr_write_int64(file, "bars", "has_volume", data->has_volume) ||
      h5io_attr_write_string(file, "bars", "symbol", data->symbol) ||
      h5io_attr_write_string(file, "bars", "timezone", data->timezone) ||
      h5io_attr_write_string(file, "bars", "source", data->source) ||
      h5io_attr_write_string(file, "bars", "source_format", data->source_format))
    return -1;
  return 0;
}

int market_data_save_h5(const MarketData *data, const char *path) {
  if (data->rows < 1) {
    error_set("%s: no bars to write", path);
    return -1;
  }
  H5ioWriter writer;
  if (h5io_create(&writer, path) != 0) return -1;
  if (write_all(writer.file, data) != 0) {
    h5io_abort(&writer);
    return -1;
  }
  return h5io_commit(&writer);
}

// Reads a 0/1 flag attribute.
static int read_flag(hid_t file, const char *path, const char *attr, bool *out) {
  int64_t value;
  if (h5io_attr_read_int64(file, "bars", attr, &value) != 0) return -1;
  if (value != 0 && value != 1) {
    error_set("%s: /bars attribute %s = %lld (allowed: 0 or 1)", path, attr, (long long)value);
    return -1;
  }
  *out = value == 1;
  return 0;
}

static int read_all(hid_t file, const char *path, MarketData **out) {
  int64_t version, rows, bar_seconds;
  if (!h5io_exists(file, "bars")) {
    error_set("%s: no /bars group (not a market data file; make one with ppo-data import)", path);
    return -1;
  }
  if (h5io_attr_read_int64(file, "bars", "format_version", &version) != 0) return -1;
  if (version != MARKET_H5_FORMAT_VERSION) {
    error_set("%s: /bars attribute format_version = %lld (allowed: %d; re-import the CSV with this ppo-data)", path,
              (long long)version, MARKET_H5_FORMAT_VERSION);
    return -1;
  }
  if (h5io_attr_read_int64(file, "bars", "rows", &rows) != 0 ||
      h5io_attr_read_int64(file, "bars", "bar_seconds", &bar_seconds) != 0)
    return -1;
  if (rows < 1) {
    error_set("%s: /bars attribute rows = %lld (allowed: >= 1)", path, (long long)rows);
    return -1;
  }
  bool has_bid_ask, has_volume;
  if (read_flag(file, path, "has_bid_ask", &has_bid_ask) || read_flag(file, path, "has_volume", &has_volume)) return -1;
  // Check every dataset's length against `rows` before allocating anything of that size.
  hsize_t dims[1];
  const char *names[1 + N_PRICE_COLUMNS];
  int n_names = 0;
  names[n_names++] = "ts";
  for (int c = 0; c < N_PRICE_COLUMNS; c++)
    if (!price_columns[c].bid_ask || has_bid_ask) names[n_names++] = price_columns[c].name;
  for (int k = 0; k < n_names; k++) {
    char name[64];
    snprintf(name, sizeof name, "bars/%s", names[k]);
    if (!h5io_exists(file, name)) {
      error_set("%s: dataset /bars/%s is missing%s", path, names[k],
                strncmp(names[k], "bid_", 4) == 0 || strncmp(names[k], "ask_", 4) == 0
                    ? " (has_bid_ask = 1 needs all eight bid_/ask_ datasets)"
                    : "");
      return -1;
    }
    int rank = h5io_shape(file, name, 1, dims);
    if (rank < 0) return -1;
    if (rank != 1 || dims[0] != (hsize_t)rows) {
      error_set(
          "%s: dataset /bars/%s has %s%llu elements, but the rows attribute says %lld (every /bars dataset "
          "holds one value per bar)",
          path, names[k], rank != 1 ? "rank != 1 and " : "", rank == 1 ? (unsigned long long)dims[0] : 0ULL,
          (long long)rows);
      return -1;
    }
  }
  size_t available, total;  // a rows attribute no machine could hold is the file's fault: exit 2
  if (host_memory_info(&available, &total) == 0 && market_data_bytes(rows) > total) {
    error_set(
        "%s: /bars attribute rows = %lld would need %.1f GiB, more than this machine's %.1f GiB (or this "
        "process's address-space limit)",
        path, (long long)rows, (double)market_data_bytes(rows) / 1073741824.0, (double)total / 1073741824.0);
    return -1;
  }
  MarketData *data = market_data_new(rows);
  *out = data;
  dims[0] = (hsize_t)rows;
  if (h5io_read(file, "bars/ts", H5IO_INT64, 1, dims, data->ts) != 0) return -1;
  for (int c = 0; c < N_PRICE_COLUMNS; c++) {
    if (price_columns[c].bid_ask && !has_bid_ask) continue;
    char name[64];
    snprintf(name, sizeof name, "bars/%s", price_columns[c].name);
    if (h5io_read(file, name, H5IO_FLOAT64, 1, dims, column_of(data, &price_columns[c])) != 0) return -1;
  }
  data->has_bid_ask = has_bid_ask;
  data->has_volume = has_volume;
  if (h5io_attr_read_string(file, "bars", "symbol", data->symbol, sizeof data->symbol) ||
      h5io_attr_read_string(file, "bars", "timezone", data->timezone, sizeof data->timezone) ||
      h5io_attr_read_string(file, "bars", "source", data->source, sizeof data->source) ||
      h5io_attr_read_string(file, "bars", "source_format", data->source_format, sizeof data->source_format))
    return -1;
  if (!market_symbol_ok(data->symbol)) {
    char shown[4 * MARKET_SYMBOL_MAX];
    error_set(
        "%s: /bars attribute symbol = '%s': must be 1 to %d letters, digits or . _ - / (re-import the data "
        "with ppo-data import --symbol)",
        path, text_escape(data->symbol, shown, sizeof shown), MARKET_SYMBOL_MAX - 1);
    return -1;
  }
  if (market_data_validate(data, path) != 0) return -1;
  if (data->bar_seconds != bar_seconds) {
    error_set("%s: /bars attribute bar_seconds = %lld, but the timestamps give %lld", path, (long long)bar_seconds,
              (long long)data->bar_seconds);
    return -1;
  }
  return 0;
}

MarketData *market_data_load_h5(const char *path) {
  if (file_check_regular(path, "market data") != 0) return NULL;
  hid_t file = h5io_open_read(path);
  if (file < 0) return NULL;
  MarketData *data = NULL;
  int status = read_all(file, path, &data);
  h5io_close(file);
  if (status != 0) {
    market_data_free(data);
    return NULL;
  }
  return data;
}
