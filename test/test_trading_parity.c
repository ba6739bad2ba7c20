// test/test_trading_parity.c: gym-anytrading parity (TRADING_ENV.md section 10, test 5).
//
// The env in TOGGLE2 + exec CLOSE + long_only with gym-anytrading's fee models (trading_env.h,
// TradingParity) replays fixed action sequences on the package's own data (STOCKS_GOOGL for
// stocks-v0, FOREX_EURUSD_1H_ASK for forex-v0, shipped in data/csv) and must reproduce the
// total_profit that gym-anytrading 2.0.0 computed (test/data/anytrading_expected.inc, written by
// test/make_anytrading_fixtures.py). Its max_possible_profit is reproduced by the env too, by
// feeding the peeking oracle from outside with the fees it uses (stocks: none; forex: trade_fee).
//
// Step mapping: gym-anytrading's step k (k = 1..K) trades at prices[start_tick + k], the close of
// that bar; the env in CLOSE mode at decision bar t fills at close[t], so env step k sits at bar
// start_tick + k, and the pass runs K - 1 steps: the K-th action cannot change total_profit (the
// truncation closes a long at the last price whatever the action), and the env's forced close at
// close[end_tick] does the same. Prices are gym-anytrading's float32 closes; it also accumulates the
// profit in float32 (NumPy 2 keeps float32 scalars float32), so the tolerance is relative 3e-7 per
// trade: the float32 rounding (2^-24 each) of its four operations per trade.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "trading_test_util.h"

typedef struct {
  const char *env_id, *sequence;
  uint64_t seed;
  int steps;                                               // K
  double total_profit, total_reward, max_possible_profit;  // total_reward: recorded, not compared (a pip count)
} Expected;

static const Expected expected[] = {
#include "data/anytrading_expected.inc"
};

typedef struct {
  MarketData *data;  // float32 closes as every OHLC price, no bid/ask
  Features *features;
  int start_tick, end_tick;  // gym-anytrading's
} Parity;

static Parity parity_open(const char *env_id) {
  bool stocks = strcmp(env_id, "stocks-v0") == 0;
  MarketData *raw = load_shipped(stocks ? "csv/STOCKS_GOOGL.csv.gz" : "csv/FOREX_EURUSD_1H_ASK.csv.gz");
  MarketData *d = market_data_new(raw->rows);
  snprintf(d->symbol, sizeof d->symbol, "%s", raw->symbol);
  snprintf(d->source, sizeof d->source, "%s", raw->source);
  for (int64_t i = 0; i < raw->rows; i++) {
    double p = (double)(float)raw->close[i];  // prices.astype(np.float32)
    d->ts[i] = raw->ts[i];
    d->open[i] = d->high[i] = d->low[i] = d->close[i] = p;
  }
  cr_assert_eq(market_data_validate(d, env_id), 0, "%s", error_message());
  market_data_free(raw);
  int window = stocks ? 30 : 24;
  return (Parity){d, features_for(d), window, (int)d->rows - 1};
}

static void parity_close(Parity *p) {
  features_free(p->features);
  market_data_free(p->data);
}

// The env for a pass from decision bar `first` to gym-anytrading's end_tick.
static void parity_context(TradingContext *c, const Parity *p, bool stocks, int64_t first, double fee_buy,
                           double fee_sell) {
  TradingParams tp = trading_params_default();
  tp.exec = TRADING_EXEC_CLOSE, tp.action_mode = TRADING_ACTION_TOGGLE2, tp.long_only = true;
  tp.parity = stocks ? TRADING_PARITY_ANYTRADING_STOCKS : TRADING_PARITY_ANYTRADING_FOREX;
  tp.parity_fee_buy = fee_buy, tp.parity_fee_sell = fee_sell;
  tp.max_loss = 1.0;  // gym-anytrading never stops on losses: only E <= 0 ends a pass
  tp.window = 1, tp.warmup = 0, tp.eval = true, tp.eval_split = TRADING_SPLIT_TRAIN, tp.eval_offset = first;
  int64_t last_day = p->data->ts[p->data->rows - 1] / 86400 * 86400;
  tp.val_start = last_day + 86400, tp.test_start = last_day + 2 * 86400, tp.test_end = tp.test_start;
  context_for(c, p->data, p->features, &tp);
  cr_assert_eq(c->eval_start, first);
  cr_assert_eq(c->eval_end, p->end_tick, "the pass must end at end_tick");
}

static int32_t sequence_action(const Expected *x, int k, int32_t previous) {
  uint64_t state = (x->seed << 32) + (uint64_t)k;
  uint64_t h = splitmix64_next(&state);
  if (strcmp(x->sequence, "random") == 0) return (int32_t)(h & 1);
  if (strcmp(x->sequence, "sticky") == 0) return k == 1 ? 1 : previous ^ (h % 20 == 0);
  return 1;  // all_buy
}

Test(parity, total_profit_matches_gym_anytrading) {
  for (size_t n = 0; n < sizeof expected / sizeof expected[0]; n++) {
    const Expected *x = &expected[n];
    bool stocks = strcmp(x->env_id, "stocks-v0") == 0;
    Parity p = parity_open(x->env_id);
    cr_assert_eq(p.end_tick - p.start_tick, x->steps, "%s: K", x->env_id);
    TradingContext c;
    parity_context(&c, &p, stocks, p.start_tick + 1, stocks ? 0.005 : 0.0, stocks ? 0.01 : 0.0003);
    float *obs = calloc((size_t)c.obs_dim, sizeof(float)), reward, log[TRADING_LOG_SIZE];
    uint8_t terminated = 0, truncated = 0;
    TradingEnv e;
    env_start(&e, &c, obs);
    int32_t a = 1;
    for (int k = 1; k < x->steps; k++) {
      cr_assert(!(terminated | truncated), "%s %s: ended early at step %d", x->env_id, x->sequence, k);
      a = sequence_action(x, k, a);
      trading_env_step(&e, &a, obs, &reward, &terminated, &truncated, log);
    }
    cr_assert(truncated, "the pass ends with the last step");
    const double *price = p.data->close;
    double profit =
        stocks ? e.exit_equity : e.equity * (price[p.start_tick - 1] - 0.0003) / price[p.end_tick];  // base units
    int trades = (int)log[6] + 1;
    cr_assert_float_eq(profit, x->total_profit, 3e-7 * trades * fabs(x->total_profit),
                       "%s %s seed %llu: env %.10g, gym-anytrading %.10g (%d trades)", x->env_id, x->sequence,
                       (unsigned long long)x->seed, profit, x->total_profit, trades);
    free(obs);
    parity_close(&p);
  }
}

// max_possible_profit: the oracle long on every rising run (ties rise) from start_tick - 1.
Test(parity, max_possible_profit_is_the_fed_oracle) {
  for (int s = 0; s < 2; s++) {
    bool stocks = s == 0;
    const Expected *x = &expected[stocks ? 0 : sizeof expected / sizeof expected[0] - 1];
    Parity p = parity_open(stocks ? "stocks-v0" : "forex-v0");
    const int64_t first = p.start_tick - 1;
    const double fee = stocks ? 0.0 : 0.0003, *price = p.data->close;
    TradingContext c;
    parity_context(&c, &p, stocks, first, 0.0, fee);
    float *obs = calloc((size_t)c.obs_dim, sizeof(float)), reward, log[TRADING_LOG_SIZE];
    uint8_t terminated = 0, truncated = 0;
    TradingEnv e;
    env_start(&e, &c, obs);
    while (!(terminated | truncated)) {
      int32_t a = price[e.t + 1] >= price[e.t];
      trading_env_step(&e, &a, obs, &reward, &terminated, &truncated, log);
    }
    double best;
    if (stocks) {
      best = e.exit_equity;
    } else {  // in base units from 1 unit at start_tick - 1; a first falling run sells that unit with the fee
      best = e.equity * price[first] / price[p.end_tick];
      if (price[first + 1] < price[first]) best *= (price[first] - fee) / price[first];
    }
    int trades = (int)log[6] + 1;
    cr_assert_float_eq(best, x->max_possible_profit, 3e-7 * trades * x->max_possible_profit,
                       "%s: oracle %.10g, max_possible_profit %.10g (%d trades)", x->env_id, best,
                       x->max_possible_profit, trades);
    free(obs);
    parity_close(&p);
  }
}

Test(parity, needs_its_labelled_modes) {
  Parity p = parity_open("stocks-v0");
  TradingParams tp = trading_params_default();
  tp.parity = TRADING_PARITY_ANYTRADING_STOCKS;  // with exec next_open: refused
  TradingContext c;
  cr_assert_eq(trading_context_init(&c, p.data, p.features, &tp), -1);
  cr_assert_not_null(strstr(error_message(), "exec close"), "%s", error_message());
  parity_close(&p);
}
