// envs/trading_env.c: the trading simulator (see trading_env.h for the contract).
//
// Layout: parameter resolution (per-instrument "auto" values, splits) into the shared context, then
// the per-env reset / step / observe, then the EnvKind adapters. trading_env_step is the one
// accounting routine: fills, costs, financing, equity, reward, trade statistics and the log.
#include "envs/trading_env.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

#include "common/check.h"
#include "common/error.h"
#include "common/text.h"
#include "common/time_utc.h"

#define SECONDS_PER_DAY 86400
#define SECONDS_PER_YEAR (365.25 * 86400.0)
#define EQUITY0 1.0
#define RUIN_EQUITY 1e-12  // stands for E <= 0 in the log return

static const char *const trading_log_names[TRADING_LOG_SIZE] = {
    "episode_return", "episode_length", "total_return", "log_growth",    "sharpe",   "max_drawdown",
    "n_trades",       "turnover",       "hit_rate",     "avg_hold_bars", "cost_bps", "n"};

TradingParams trading_params_default(void) {
  return (TradingParams){
      .train_start = TRADING_DATE_AUTO,
      .val_start = TRADING_DATE_AUTO,
      .test_start = TRADING_DATE_AUTO,
      .test_end = TRADING_DATE_AUTO,
      .exec = TRADING_EXEC_NEXT_OPEN,
      .action_mode = TRADING_ACTION_DISCRETE3,
      .n_levels = 5,
      .max_leverage = 1.0,
      .long_only = false,
      .no_trade_band = 0.02,
      .reward = TRADING_REWARD_LOG_RETURN,
      .reward_scale = NAN,
      .dsr_eta = NAN,
      .vol_target_annual = 0.10,
      .reward_clip = 0.0,
      .use_data_spread = TRADING_AUTO_INT,
      .half_spread_bps = NAN,
      .commission_bps = NAN,
      .slippage_bps = NAN,
      .cost_mult = 1.0,
      .episode_length = TRADING_AUTO_INT,
      .window = TRADING_AUTO_INT,
      .warmup = TRADING_AUTO_INT,
      .max_loss = 0.5,
      .stratified_starts = true,
      .eval_split = TRADING_SPLIT_VAL,
  };
}

const char *trading_split_name(TradingSplit split) {
  return split == TRADING_SPLIT_TRAIN ? "train" : split == TRADING_SPLIT_VAL ? "val" : "test";
}

// --- resolving the parameters ------------------------------------------------------------------------

typedef struct {
  const char *symbol;
  TradingClass asset_class;
  double half_spread_bps;   // without bid/ask data
  int val_year, test_year;  // default split starts (January 1st); 0: the unknown-instrument rule
} Instrument;

// TRADING_ENV.md sections 2 and 7.
static const Instrument instruments[] = {
    {"XAUUSD", TRADING_CLASS_FX, 1.5, 2015, 2017},
    {"EURUSD", TRADING_CLASS_FX, 0.5, 2015, 2017},
    {"SPY", TRADING_CLASS_STOCK, 0.5, 2013, 2017},
    {"GOOGL", TRADING_CLASS_STOCK, 1.0, 0, 0},
};
#define UNKNOWN_HALF_SPREAD_BPS 1.0
#define UNKNOWN_VAL_SHARE 0.70   // unknown instruments: validation starts the day after the bar at 70% of rows
#define UNKNOWN_TEST_SHARE 0.85  // and test the day after the bar at 85%

static const Instrument *instrument_find(const char *symbol) {
  for (size_t i = 0; i < sizeof instruments / sizeof instruments[0]; i++) {
    const char *a = instruments[i].symbol, *b = symbol;
    while (*a && toupper((unsigned char)*b) == *a) a++, b++;
    if (!*a && !*b) return &instruments[i];
  }
  return NULL;
}

static int64_t day_floor(int64_t ts) {
  return (ts >= 0 ? ts / SECONDS_PER_DAY : -((-ts + SECONDS_PER_DAY - 1) / SECONDS_PER_DAY)) * SECONDS_PER_DAY;
}

static int64_t jan1(int year) { return utc_days_from_civil(year, 1, 1) * SECONDS_PER_DAY; }

static int64_t lower_bound(const int64_t *ts, int64_t n, int64_t x) {  // first row with ts >= x
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (ts[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static double auto_real(double value, double fallback) { return isnan(value) ? fallback : value; }
static int64_t auto_int(int64_t value, int64_t fallback) { return value == TRADING_AUTO_INT ? fallback : value; }
static int64_t max3(int64_t a, int64_t b, int64_t c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }

static int check_range(const char *name, double value, double lo, double hi) {
  if (value >= lo && value <= hi) return 0;
  error_set("trading: %s = %g: must lie in [%g, %g]", name, value, lo, hi);
  return -1;
}

// The split dates of p over d, autos resolved in p: 0, or -1 and the message when they do not increase.
// The message says where each auto date came from: a built-in instrument's preset (the split of the
// data shipped for it) is the usual culprit when someone's own file carries that symbol.
static int resolve_split_dates(const MarketData *d, TradingParams *p, const Instrument *inst) {
  const int64_t T = d->rows;
  const bool preset = inst && inst->val_year;
  const bool was_auto[4] = {p->train_start == TRADING_DATE_AUTO, p->val_start == TRADING_DATE_AUTO,
                            p->test_start == TRADING_DATE_AUTO, p->test_end == TRADING_DATE_AUTO};
  if (was_auto[0]) p->train_start = day_floor(d->ts[0]);
  if (was_auto[3]) p->test_end = day_floor(d->ts[T - 1]);
  if (was_auto[1])
    p->val_start = preset ? jan1(inst->val_year)
                          : day_floor(d->ts[(int64_t)(UNKNOWN_VAL_SHARE * (double)(T - 1))]) + SECONDS_PER_DAY;
  if (was_auto[2])
    p->test_start = preset ? jan1(inst->test_year)
                           : day_floor(d->ts[(int64_t)(UNKNOWN_TEST_SHARE * (double)(T - 1))]) + SECONDS_PER_DAY;
  if (!(p->train_start < p->val_start && p->val_start < p->test_start && p->test_start <= p->test_end)) {
    char date[4][32], origin[4][96] = {"", "", "", ""};
    const int64_t dates[4] = {p->train_start, p->val_start, p->test_start, p->test_end};
    for (int k = 0; k < 4; k++) utc_format(dates[k], true, date[k], sizeof date[k]);
    if (was_auto[0]) snprintf(origin[0], sizeof origin[0], " (auto: the data's first day)");
    if (was_auto[3]) snprintf(origin[3], sizeof origin[3], " (auto: the data's last day)");
    for (int k = 1; k <= 2; k++)
      if (was_auto[k] && preset)
        snprintf(origin[k], sizeof origin[k], " (auto: the %s preset)", inst->symbol);
      else if (was_auto[k])
        snprintf(origin[k], sizeof origin[k], " (auto: the day after the bar at %.0f %% of the rows)",
                 100 * (k == 1 ? UNKNOWN_VAL_SHARE : UNKNOWN_TEST_SHARE));
    error_set(
        "trading: split dates train_start %s%s, val_start %s%s, test_start %s%s, test_end %s%s: must increase "
        "(test_end may equal test_start)",
        date[0], origin[0], date[1], origin[1], date[2], origin[2], date[3], origin[3]);
    return -1;
  }
  return 0;
}

int trading_check_split_dates(const MarketData *data, const TradingParams *params) {
  if (!data || data->rows < 1) {
    error_set("trading: split dates need market data");
    return -1;
  }
  TradingParams p = *params;
  return resolve_split_dates(data, &p, instrument_find(data->symbol));
}

bool trading_split_preset(const char *symbol, int64_t *val_start, int64_t *test_start) {
  const Instrument *inst = instrument_find(symbol);
  if (!inst || !inst->val_year) return false;
  *val_start = jan1(inst->val_year);
  *test_start = jan1(inst->test_year);
  return true;
}

static int resolve_splits(TradingContext *c, TradingParams *p, const Instrument *inst) {
  const MarketData *d = c->data;
  const int64_t T = d->rows;
  if (resolve_split_dates(d, p, inst) != 0) return -1;
  const int64_t bounds[4] = {p->train_start, p->val_start, p->test_start, p->test_end + SECONDS_PER_DAY};
  for (int s = 0; s < 3; s++) {
    c->split_lo[s] = lower_bound(d->ts, T, bounds[s]);
    c->split_hi[s] = lower_bound(d->ts, T, bounds[s + 1]);
  }
  return 0;
}

int trading_context_init(TradingContext *c, const MarketData *data, const Features *features,
                         const TradingParams *params) {
  memset(c, 0, sizeof *c);
  if (!data || !features || features->rows != data->rows || data->rows < 3) {
    error_set("trading: needs market data of >= 3 bars and its features (got %lld bars, %lld feature rows)",
              data ? (long long)data->rows : 0LL, features ? (long long)features->rows : 0LL);
    return -1;
  }
  c->data = data;
  c->features = features;
  TradingParams p = *params;
  const Instrument *inst = instrument_find(data->symbol);
  c->daily = features->params.daily;
  c->asset_class = inst ? inst->asset_class : c->daily ? TRADING_CLASS_STOCK : TRADING_CLASS_FX;
  const bool fx = c->asset_class == TRADING_CLASS_FX;
  if (resolve_splits(c, &p, inst) != 0) return -1;

  // Per-instrument defaults (sections 4, 6, 7, 8).
  // Return-like rewards (log return, PnL, vol-targeted) are of a bar's return, ~1e-3: scaled to ~0.1-1;
  // the differential Sharpe ratios are in units of the return's standard deviation already (clipped
  // to +-10): scaled by 1, where 100 made hourly rewards of up to +-1000.
  const bool sharpe_like = p.reward == TRADING_REWARD_DSR || p.reward == TRADING_REWARD_D3R;
  p.reward_scale = auto_real(p.reward_scale, sharpe_like ? 1.0 : c->daily ? 10.0 : 100.0);
  p.dsr_eta = auto_real(p.dsr_eta, c->daily ? 1.0 / 63.0 : 1.0 / 500.0);
  if (p.use_data_spread == TRADING_AUTO_INT) p.use_data_spread = data->has_bid_ask;
  // A symbol without defaults of its own gets generic guesses (its class from the bar size): said,
  // so that a run on a user's own instrument does not pass them off as its costs.
  if (!inst) {
    if (isnan(p.half_spread_bps) && !p.use_data_spread) c->generic_costs |= TRADING_GENERIC_HALF_SPREAD;
    if (isnan(p.commission_bps)) c->generic_costs |= TRADING_GENERIC_COMMISSION;
    if (isnan(p.slippage_bps)) c->generic_costs |= TRADING_GENERIC_SLIPPAGE;
  }
  p.half_spread_bps = auto_real(p.half_spread_bps, inst ? inst->half_spread_bps : UNKNOWN_HALF_SPREAD_BPS);
  p.commission_bps = auto_real(p.commission_bps, fx ? 0.35 : 0.5);
  p.slippage_bps = auto_real(p.slippage_bps, fx ? 0.5 : 1.0);
  p.episode_length = auto_int(p.episode_length, c->daily ? 252 : 2048);
  p.window = auto_int(p.window, c->daily ? 30 : 32);
  const bool warmup_auto = p.warmup == TRADING_AUTO_INT;
  p.warmup = auto_int(p.warmup, 3 * features->lookback);

  // The configuration's ranges (ppo/config_schema.c) are these, so a bad value is refused there,
  // naming its own file and line. reward_scale stops at 1e6: a log-return reward of at most 1 per
  // bar then keeps returns near 1e8 and the squared value loss far inside fp32. cost_mult stops at
  // 200: the configuration allows 100 and ppo-eval's cost stress doubles it.
  if (check_range("max_leverage", p.max_leverage, 1e-9, 100) || check_range("no_trade_band", p.no_trade_band, 0, 1) ||
      check_range("reward_scale", p.reward_scale, 1e-12, 1e6) || check_range("dsr_eta", p.dsr_eta, 1e-9, 1) ||
      check_range("vol_target_annual", p.vol_target_annual, 1e-9, 10) ||
      check_range("shaping_turnover", p.shaping_turnover, 0, HUGE_VAL) ||
      check_range("shaping_drawdown", p.shaping_drawdown, 0, HUGE_VAL) ||
      check_range("shaping_variance", p.shaping_variance, 0, HUGE_VAL) ||
      check_range("shaping_flat", p.shaping_flat, 0, HUGE_VAL) ||
      check_range("reward_clip", p.reward_clip, 0, HUGE_VAL) ||
      check_range("half_spread_bps", p.half_spread_bps, 0, 10000) ||
      check_range("commission_bps", p.commission_bps, 0, 10000) ||
      check_range("slippage_bps", p.slippage_bps, 0, 10000) || check_range("fee_fixed", p.fee_fixed, 0, HUGE_VAL) ||
      check_range("slippage_vol_k", p.slippage_vol_k, 0, HUGE_VAL) ||
      check_range("slippage_random_max_bps", p.slippage_random_max_bps, 0, 10000) ||
      check_range("financing_long_apr", p.financing_long_apr, -1, 1) ||
      check_range("financing_short_apr", p.financing_short_apr, -1, 1) ||
      check_range("cost_mult", p.cost_mult, 0, 200) || check_range("max_loss", p.max_loss, 1e-12, 1) ||
      check_range("window", (double)p.window, 1, 10000) || check_range("warmup", (double)p.warmup, 0, 1e9) ||
      check_range("episode_length", (double)p.episode_length, 1, 1e9))
    return -1;
  if (p.impact_y != 0) {
    error_set(
        "trading: impact_y = %g: market impact is not modelled (the square-root law needs ADV in units of the "
        "account's capital, which the data and the E_0 = 1 accounting lack); set impact_y = 0",
        p.impact_y);
    return -1;
  }
  if (p.use_data_spread && !data->has_bid_ask) {
    c->refused_key = "use_data_spread";
    char source[4 * MARKET_SOURCE_MAX];
    error_set("trading: use_data_spread = true but %s has no bid/ask columns (set it to auto or false)",
              text_escape(data->source, source, sizeof source));
    return -1;
  }
  const struct {
    const char *name;
    int value, count;
  } choices[] = {{"exec", (int)p.exec, TRADING_EXEC_COUNT},
                 {"action_mode", (int)p.action_mode, TRADING_ACTION_COUNT},
                 {"reward", (int)p.reward, TRADING_REWARD_COUNT},
                 {"eval_split", (int)p.eval_split, TRADING_SPLIT_TEST + 1}};
  for (size_t k = 0; k < sizeof choices / sizeof choices[0]; k++) {
    if (choices[k].value < 0 || choices[k].value >= choices[k].count) {  // a caller's enum out of step
      error_set("trading: %s = %d out of range (0..%d)", choices[k].name, choices[k].value, choices[k].count - 1);
      return -1;
    }
  }

  if (p.parity != TRADING_PARITY_NONE) {
    if (p.exec != TRADING_EXEC_CLOSE || p.action_mode != TRADING_ACTION_TOGGLE2 || !p.long_only ||
        (int)p.parity > TRADING_PARITY_ANYTRADING_FOREX || !(p.parity_fee_buy >= 0 && p.parity_fee_buy < 1) ||
        !(p.parity_fee_sell >= 0)) {
      error_set("trading: parity mode %d needs exec close, action_mode toggle2, long_only and fees in [0, 1)",
                (int)p.parity);
      return -1;
    }
    p.use_data_spread = 0;  // gym-anytrading's fees replace every cost of this model
    c->generic_costs = 0;
    p.half_spread_bps = p.commission_bps = p.slippage_bps = p.slippage_vol_k = p.slippage_random_max_bps = 0;
    p.fee_fixed = p.financing_long_apr = p.financing_short_apr = 0;
  }

  // Levels of the discrete modes.
  const double L = p.max_leverage, lo = p.long_only ? 0.0 : -L;
  int K = p.action_mode == TRADING_ACTION_DISCRETE3    ? 3
          : p.action_mode == TRADING_ACTION_DISCRETE_K ? p.n_levels
          : p.action_mode == TRADING_ACTION_TOGGLE2    ? 2
                                                       : 0;
  if (p.action_mode == TRADING_ACTION_DISCRETE_K && (K < 3 || K > TRADING_LEVELS_MAX || K % 2 == 0)) {
    error_set("trading: n_levels = %d: must be odd and in [3, %d]", K, TRADING_LEVELS_MAX);
    return -1;
  }
  c->n_levels = K;
  for (int i = 0; i < K; i++) c->levels[i] = lo + (L - lo) * (double)i / (double)(K - 1);
  if (K > 0 && !p.long_only && K % 2 == 1) c->levels[(K - 1) / 2] = 0.0;  // exactly flat
  // The level held at a flat start; TOGGLE2 without long_only has no flat level: -1, so the first action trades.
  c->flat_level = K == 0 ? 0 : p.long_only ? 0 : K % 2 == 1 ? (K - 1) / 2 : -1;
  if (p.position_onehot && K == 0) {
    error_set("trading: position_onehot needs discrete levels, not continuous actions");
    return -1;
  }

  // Costs as fractions, stressed by cost_mult.
  const double m = p.cost_mult;
  c->half_spread = p.half_spread_bps * 1e-4 * m;
  c->commission = p.commission_bps * 1e-4 * m;
  c->slippage = p.slippage_bps * 1e-4 * m;
  c->slippage_random_max = p.slippage_random_max_bps * 1e-4 * m;
  c->slippage_vol_k = p.slippage_vol_k * m;
  c->fee = p.fee_fixed * m;
  c->financing_long = p.financing_long_apr * m;
  c->financing_short = p.financing_short_apr * m;
  const MarketData *d = data;
  double years = (double)(d->ts[d->rows - 1] - d->ts[0]) / SECONDS_PER_YEAR;
  c->periods_per_year = years > 0 ? (double)(d->rows - 1) / years : 1.0;
  c->sigma_target_bar = p.vol_target_annual / sqrt(c->periods_per_year);
  c->log_eta_bars = floor(1.0 / p.dsr_eta + 0.5);

  // Episode ranges.
  c->window = (int)p.window;
  const int64_t first_valid = p.warmup > c->window - 1 ? p.warmup : c->window - 1;
  c->start_lo = c->split_lo[0] > first_valid ? c->split_lo[0] : first_valid;
  // Bars needed after the last decision bar: the mark (t+1) and, with NEXT_OPEN, the forced close's open.
  const int64_t tail = p.exec == TRADING_EXEC_NEXT_OPEN ? 2 : 1;
  int64_t room = c->split_hi[0] - tail - c->start_lo;  // longest episode from start_lo
  c->episode_length = p.episode_length < room ? p.episode_length : room;
  c->start_hi = c->split_hi[0] - tail - c->episode_length;
  const int s = p.eval_split;
  c->eval_start = max3(c->split_lo[s], first_valid, 0) + p.eval_offset;
  c->eval_end = c->split_hi[s] - tail;
  char when[32];
  if (!p.eval && c->episode_length < 1) {
    char cause[200] = "lower warmup";
    c->refused_key = warmup_auto ? NULL : "warmup";  // the key that sets the first start (NULL: the data's length)
    if (c->window - 1 > p.warmup) {                  // the observation's history, not the warm-up, sets the first start
      c->refused_key = "window";
      snprintf(cause, sizeof cause, "shorten window (%d bars: an observation needs window - 1 bars before it)",
               c->window);
    } else if (warmup_auto)
      snprintf(cause, sizeof cause,
               "warmup is auto, 3 x the longest feature lookback (%lld bars: ema_slow, sigma_halflife, the "
               "longest return horizon): shorten those or set warmup",
               (long long)features->lookback);
    error_set(
        "trading: the train split (rows %lld..%lld) has no room for an episode after the warm-up (first valid "
        "start row %lld = max(warmup %lld, window - 1)); move val_start later, or %s",
        (long long)c->split_lo[0], (long long)c->split_hi[0], (long long)first_valid, (long long)p.warmup, cause);
    return -1;
  }
  if (p.eval && (p.eval_offset < 0 || c->eval_end - c->eval_start < 1)) {
    error_set(
        "trading: evaluation on the %s split (rows %lld..%lld, from %s) with eval_offset %lld leaves no bars",
        trading_split_name(p.eval_split), (long long)c->split_lo[s], (long long)c->split_hi[s],
        utc_format(c->split_lo[s] < d->rows ? d->ts[c->split_lo[s]] : d->ts[d->rows - 1], true, when, sizeof when),
        (long long)p.eval_offset);
    return -1;
  }
  c->obs_dim =
      c->window * features->count + TRADING_AGENT_STATE + (p.position_onehot ? K : 0) + (p.episode_progress ? 1 : 0);
  c->action_count = K;
  c->params = p;
  return 0;
}

// --- one env ---------------------------------------------------------------------------------------

static inline double sigma_at(const TradingContext *c, int64_t t) {
  double s = c->features->sigma[t];
  return s > 0 ? s : 0.0;  // NaN (t = 0) and flat prices: no volatility known
}

static inline int sign_of(double x) { return (x > 0) - (x < 0); }

// Fill price for a trade of sign(dq) at bar b's open (at_open) or close, with slippage fraction s;
// *mid receives the mid price at that point. Capped to bar b's range on the side traded.
static double fill_price(const TradingContext *c, int64_t b, bool at_open, double dq, double s, double *mid) {
  const MarketData *d = c->data;
  const double m = at_open ? d->open[b] : d->close[b], k = c->params.cost_mult;
  *mid = m;
  double price;
  if (c->params.use_data_spread) {
    if (dq > 0) {
      double ask = at_open ? d->ask_open[b] : d->ask_close[b];
      price = (m + k * (ask - m)) * (1.0 + s);
      return price < d->ask_high[b] ? price : d->ask_high[b];
    }
    double bid = at_open ? d->bid_open[b] : d->bid_close[b];
    price = (m - k * (m - bid)) * (1.0 - s);
    return price > d->bid_low[b] ? price : d->bid_low[b];
  }
  if (dq > 0) {
    price = m * (1.0 + c->half_spread + s);
    return price < d->high[b] ? price : d->high[b];
  }
  price = m * (1.0 - c->half_spread - s);
  return price > d->low[b] ? price : d->low[b];
}

static double slippage_draw(TradingEnv *e, double sigma) {
  const TradingContext *c = e->ctx;
  double s = c->slippage + c->slippage_vol_k * sigma;
  if (c->slippage_random_max > 0) s += c->slippage_random_max * rng_uniform(&e->rng);
  return s;
}

// Price and commission of a fill of dq units at bar b (its open or close); *mid gets the mid there.
// The gym-anytrading parity models replace the commission (stocks: fee_buy of the equity invested,
// fee_sell of the proceeds) or the sell price (forex, unit_side left: trade_fee below the price).
// *spread receives the spread's share of the cost: dq (price without slippage - mid), the same caps.
static double fill_execute(TradingEnv *e, int64_t b, bool at_open, double dq, double sigma, double *mid,
                           double *commission, double *spread) {
  const TradingContext *c = e->ctx;
  const TradingParams *p = &c->params;
  double price = fill_price(c, b, at_open, dq, slippage_draw(e, sigma), mid);
  *spread = dq * (fill_price(c, b, at_open, dq, 0.0, mid) - *mid);
  switch (p->parity) {
    case TRADING_PARITY_ANYTRADING_STOCKS:
      *commission =
          dq > 0 ? p->parity_fee_buy / (1.0 - p->parity_fee_buy) * dq * price : p->parity_fee_sell * -dq * price;
      break;
    case TRADING_PARITY_ANYTRADING_FOREX:
      if (dq < 0) price -= p->parity_fee_sell;
      *commission = 0.0;
      break;
    default:
      *commission = c->commission * fabs(dq) * price;
      break;
  }
  return price;
}

static void trading_observe(const TradingEnv *e, float *obs) {
  const TradingContext *c = e->ctx;
  const int W = c->window, F = c->features->count;
  memcpy(obs, c->features->values + (size_t)(e->t - W + 1) * F, (size_t)W * F * sizeof(float));
  float *tail = obs + (size_t)W * F;
  const double M = c->data->close[e->t], E = e->equity, sigma = sigma_at(c, e->t);
  tail[0] = (float)(e->q * M / E);
  tail[1] = (float)(e->q != 0 && sigma > 0 ? sign_of(e->q) * log(M / e->entry_price) / sigma : 0.0);
  tail[2] = (float)((e->bars_in_position < 500 ? e->bars_in_position : 500) / 100.0);
  tail[3] = (float)(1.0 - E / e->equity_peak);
  tail[4] = (float)e->last_cost_bp;
  int k = TRADING_AGENT_STATE;
  if (c->params.position_onehot)
    for (int i = 0; i < c->n_levels; i++) tail[k++] = i == e->level ? 1.0f : 0.0f;
  if (c->params.episode_progress) tail[k] = (float)((double)e->steps / (double)(e->end - e->start));
}

void trading_env_init(TradingEnv *e, const TradingContext *ctx, int env_index, int num_envs, Rng rng) {
  *e = (TradingEnv){.ctx = ctx, .rng = rng, .env_index = env_index, .num_envs = num_envs};
}

void trading_env_reset(TradingEnv *e, float *obs) {
  const TradingContext *c = e->ctx;
  const TradingParams *p = &c->params;
  const MarketData *d = c->data;
  int64_t start, end;
  if (p->eval) {
    start = c->eval_start;
    end = c->eval_end;
  } else {
    const int64_t span = c->start_hi - c->start_lo + 1;
    if (!e->started && p->stratified_starts && e->num_envs > 1) {
      int64_t lo = span * e->env_index / e->num_envs, hi = span * (e->env_index + 1) / e->num_envs;
      if (hi <= lo) hi = lo + 1;
      start = c->start_lo + lo + (int64_t)rng_below(&e->rng, (uint64_t)(hi - lo));
    } else {
      start = c->start_lo + (int64_t)rng_below(&e->rng, (uint64_t)span);
    }
    end = start + c->episode_length;
  }
  Rng rng = e->rng;
  const int32_t index = e->env_index, count = e->num_envs;
  *e = (TradingEnv){.ctx = c, .rng = rng, .env_index = index, .num_envs = count, .started = true};
  e->t = e->start = start;
  e->end = end;
  e->cash = e->equity = e->equity_peak = e->prev_equity = e->exit_equity = EQUITY0;
  e->level = c->flat_level;
  if (p->random_initial_position && !p->eval) {  // a holding handed over at the mid, no cost
    double w;
    if (c->n_levels > 0) {
      e->level = (int32_t)rng_below(&e->rng, (uint64_t)c->n_levels);
      w = c->levels[e->level];
    } else {
      double lo = p->long_only ? 0.0 : -p->max_leverage;
      w = lo + (p->max_leverage - lo) * rng_uniform(&e->rng);
    }
    const double M = d->close[start];
    e->q = w * EQUITY0 / M;
    e->cash = EQUITY0 - e->q * M;
    e->entry_price = M;
    e->trade_entry_equity = EQUITY0;
    e->trades_opened += e->q != 0;  // a trade like any other: its close is counted (hit rate, holding time)
  }
  if (p->reward == TRADING_REWARD_DSR || p->reward == TRADING_REWARD_D3R) {
    // Warm A and B on the buy-and-hold returns of the 1/eta bars before the start (plain means).
    int64_t n = (int64_t)c->log_eta_bars < start ? (int64_t)c->log_eta_bars : start;
    double a = 0, b = 0;
    for (int64_t i = start - n + 1; i <= start; i++) {
      double r = d->close[i] / d->close[i - 1] - 1.0;
      double sq = p->reward == TRADING_REWARD_DSR ? r * r : (r < 0 ? r * r : 0.0);
      a += r, b += sq;
    }
    e->dsr = n > 0 ? (DsrState){a / (double)n, b / (double)n} : (DsrState){0, 0};
  }
  trading_observe(e, obs);
}

double trading_env_position(const TradingEnv *e) { return e->q * e->ctx->data->close[e->t] / e->equity; }

// The trade that `q_old -> q_old + dq` closes and/or opens; `equity_at_fill` is K + q_old mid before
// the fill, `fill_cost` the whole fill's cost (the closing leg pays its share |q_old|/|dq|).
static void book_trades(TradingEnv *e, double q_old, double dq, double equity_at_fill, double fill_cost, double price) {
  const double q_new = q_old + dq;
  const int s_old = sign_of(q_old), s_new = sign_of(q_new);
  double exit_cost = s_old != 0 && s_new != s_old ? fill_cost * fabs(q_old) / fabs(dq) : 0.0;
  if (s_old != 0 && s_new != s_old) {
    double pnl = equity_at_fill - exit_cost - e->trade_entry_equity;
    e->trades_closed++;
    e->trades_won += pnl > 0;
    e->hold_bars_sum += e->bars_in_position;
    e->bars_in_position = 0;
  }
  if (s_new != 0 && s_new != s_old) {
    e->trade_entry_equity = equity_at_fill - exit_cost;
    e->trades_opened++;
    e->entry_price = price;
    e->bars_in_position = 0;
  } else if (s_new != 0 && fabs(q_new) > fabs(q_old)) {
    e->entry_price = (fabs(q_old) * e->entry_price + fabs(dq) * price) / fabs(q_new);
  }
}

// Books the forced close at the next open (CLOSE mode: this close) and writes the episode log.
// peak_before and max_dd_before: the equity peak and the largest drawdown over E_0..E_{N-1}, before
// the last step folded E_N in (the log's curve replaces E_N by the exit equity).
static void trading_finish(TradingEnv *e, float *out, double peak_before, double max_dd_before) {
  const TradingContext *c = e->ctx;
  const MarketData *d = c->data;
  double exit_equity = e->equity;
  if (e->q != 0) {
    const bool next_open = c->params.exec == TRADING_EXEC_NEXT_OPEN;
    const int64_t b = next_open ? e->t + 1 : e->t;
    double mid, dq = -e->q;
    double commission, spread, price = fill_execute(e, b, next_open, dq, sigma_at(c, e->t), &mid, &commission, &spread);
    double fill_cost = dq * (price - mid) + commission + c->fee;
    double equity_at_fill = e->cash + e->q * mid;
    book_trades(e, e->q, dq, equity_at_fill, fill_cost, price);
    exit_equity = equity_at_fill - fill_cost;  // = cash + q price - commission - fee
    e->cost_sum += fill_cost;
    e->exit_fill = (TradingFill){.units = dq,
                                 .price = price,
                                 .mid = mid,
                                 .commission = commission,
                                 .fee = c->fee,
                                 .spread = spread,
                                 .cost = fill_cost};
  }
  e->exit_equity = exit_equity;
  const int64_t n = e->steps;
  // The curve E_0..E_N with E_N replaced by the exit equity.
  double r_exit = exit_equity / e->prev_equity - 1.0;
  double sum = e->ret_sum - e->last_ret + r_exit, sq = e->ret_sq_sum - e->last_ret * e->last_ret + r_exit * r_exit;
  double sharpe = 0.0;
  if (n >= 2) {
    double mean = sum / (double)n, var = (sq - (double)n * mean * mean) / (double)(n - 1);
    double years = (double)(d->ts[e->t] - d->ts[e->start]) / SECONDS_PER_YEAR;
    if (var > 0 && years > 0) sharpe = mean / sqrt(var) * sqrt((double)n / years);
  }
  double peak = peak_before > exit_equity ? peak_before : exit_equity;
  double max_dd = max_dd_before > 1.0 - exit_equity / peak ? max_dd_before : 1.0 - exit_equity / peak;
  out[ENV_LOG_EPISODE_RETURN] = (float)e->reward_sum;
  out[ENV_LOG_EPISODE_LENGTH] = (float)n;
  out[2] = (float)(exit_equity / EQUITY0 - 1.0);
  out[3] = (float)log(exit_equity > 0 ? exit_equity / EQUITY0 : RUIN_EQUITY);
  out[4] = (float)sharpe;
  out[5] = (float)max_dd;
  out[6] = (float)e->trades_opened;
  out[7] = (float)(n > 0 ? e->turnover_sum / (double)n : 0.0);
  // Hit rate and holding time are undefined without a closed trade: NaN, as the backtest report's
  // (0 read as "every trade lost" and pulled the logged means down for policies that rarely trade;
  // vecenv_log_mean skips NaN).
  out[8] = (float)(e->trades_closed > 0 ? (double)e->trades_won / e->trades_closed : NAN);
  out[9] = (float)(e->trades_closed > 0 ? e->hold_bars_sum / e->trades_closed : NAN);
  out[10] = (float)(e->cost_sum / EQUITY0 * 1e4);
  out[11] = (float)n;
}

void trading_env_step(TradingEnv *e, const void *action, float *obs, float *reward, uint8_t *terminated,
                      uint8_t *truncated, float *episode_log) {
  const TradingContext *c = e->ctx;
  const TradingParams *p = &c->params;
  const MarketData *d = c->data;
  const int64_t t = e->t;
  CHECK(t < e->end, "trading: step after the episode ended; reset first (VecEnv does)");
  const double M_t = d->close[t], E_t = e->equity, sigma = sigma_at(c, t), L = p->max_leverage;
  const double w_now = e->q * M_t / E_t;

  // 1. The target position.
  double w_target;
  int32_t level = e->level;
  bool trade;
  if (c->n_levels > 0) {
    level = *(const int32_t *)action;
    CHECK(level >= 0 && level < c->n_levels, "trading: a discrete action must lie in 0..n_levels-1");
    w_target = c->levels[level];
    trade = level != e->level;
  } else {
    double a = *(const float *)action;
    a = a > 1.0 ? 1.0 : a < -1.0 ? -1.0 : a;
    // NaN: flat (with long_only, a = 0 is a half position, so flat is set after the mapping)
    w_target = a != a ? 0.0 : p->long_only ? L * (a + 1.0) * 0.5 : L * a;
    trade = true;  // decided by the band below, after vol scaling
  }
  if (p->reward == TRADING_REWARD_VOL_TARGET) {
    double k = sigma > 0 ? c->sigma_target_bar / sigma : 1.0;
    w_target *= k;
    double lo = p->long_only ? 0.0 : -L;
    w_target = w_target > L ? L : w_target < lo ? lo : w_target;
  }
  if (c->n_levels == 0) trade = fabs(w_target - w_now) >= p->no_trade_band;
  // Stocks parity buys all-in net of the fee: spend w E_t, fee included (gym-anytrading's shares).
  const double invest = p->parity == TRADING_PARITY_ANYTRADING_STOCKS && w_target > 0 ? 1.0 - p->parity_fee_buy : 1.0;
  const double dq = trade ? w_target * E_t * invest / M_t - e->q : 0.0;

  // 2. The fill at the next open (CLOSE: at this close).
  double step_cost = 0.0;
  e->fill_units = e->fill_price = e->fill_commission = e->fill_fee = e->fill_cost = 0.0;
  e->fill_mid = e->fill_spread = 0.0;
  e->exit_fill = (TradingFill){0};
  if (dq != 0) {
    const bool next_open = p->exec == TRADING_EXEC_NEXT_OPEN;
    double mid, commission, spread;
    double price = fill_execute(e, next_open ? t + 1 : t, next_open, dq, sigma, &mid, &commission, &spread);
    double fill_cost = dq * (price - mid) + commission + c->fee;  // spread + slippage + commission + fee
    book_trades(e, e->q, dq, e->cash + e->q * mid, fill_cost, price);
    e->cash -= dq * price + commission + c->fee;
    e->q += dq;
    e->turnover_sum += fabs(dq) * M_t / E_t;
    step_cost += fill_cost;
    e->fill_units = dq, e->fill_price = price, e->fill_commission = commission, e->fill_fee = c->fee;
    e->fill_cost = fill_cost;
    e->fill_mid = mid, e->fill_spread = spread;
  }
  if (e->q == 0) e->entry_price = 0.0;

  // 3. Financing over t -> t+1, by the timestamps (weekends charged).
  double rate = e->q > 0 ? c->financing_long : c->financing_short;
  double financing = e->q != 0 ? fabs(e->q) * M_t * rate * (double)(d->ts[t + 1] - d->ts[t]) / SECONDS_PER_YEAR : 0.0;
  e->cash -= financing;
  e->fill_financing = financing;
  step_cost += financing;

  // 4. Mark to market at the mid close of bar t+1.
  const double E1 = e->cash + e->q * d->close[t + 1];
  e->t = t + 1;
  e->steps++;
  if (e->q != 0) e->bars_in_position++;
  e->level = level;

  // 5. Reward from the same equity.
  const double R = E1 / E_t - 1.0, log_return = log((E1 > 0 ? E1 : RUIN_EQUITY * EQUITY0) / E_t);
  double base = NAN;
  switch (p->reward) {  // no default: -Wswitch names a reward added to the enum and not here
    case TRADING_REWARD_LOG_RETURN:
    case TRADING_REWARD_VOL_TARGET:  // its target is in the position size (step 2), its reward the log return
      base = log_return;
      break;
    case TRADING_REWARD_PNL:
      base = (E1 - E_t) / EQUITY0;
      break;
    case TRADING_REWARD_DSR:
      base = dsr_step(&e->dsr, R, p->dsr_eta, sigma);
      break;
    case TRADING_REWARD_D3R:
      base = d3r_step(&e->dsr, R, p->dsr_eta, sigma);
      break;
    case TRADING_REWARD_COUNT:
      break;  // trading_context_init refuses it
  }
  const double dd_before = 1.0 - E_t / e->equity_peak;
  const double peak_before = e->equity_peak, max_dd_before = e->max_dd;  // over E_0..E_t, for the log
  if (E1 > e->equity_peak) e->equity_peak = E1;
  const double dd_after = 1.0 - E1 / e->equity_peak;
  const double w_post = e->q * M_t / E_t;
  double r = base * p->reward_scale - p->shaping_turnover * fabs(dq) * M_t / E_t -
             p->shaping_drawdown * (dd_after > dd_before ? dd_after - dd_before : 0.0) -
             p->shaping_variance * (w_post * sigma) * (w_post * sigma) - p->shaping_flat * (e->q == 0);
  if (p->reward_clip > 0) r = r > p->reward_clip ? p->reward_clip : r < -p->reward_clip ? -p->reward_clip : r;

  // 6. Episode statistics.
  e->reward_sum += r;
  e->ret_sum += R;
  e->ret_sq_sum += R * R;
  e->last_ret = R;
  e->prev_equity = E_t;
  if (dd_after > e->max_dd) e->max_dd = dd_after;
  e->cost_sum += step_cost;
  e->last_cost_bp = step_cost / E_t * 1e4;
  e->equity = E1;

  e->reward_exact = r;
  *reward = (float)r;
  *terminated = E1 <= (1.0 - p->max_loss) * EQUITY0;
  *truncated = e->t >= e->end;
  // The observation of E_N's state first: the forced close the log books resets the bars held, and
  // a truncated episode's final observation is what its value bootstrap reads.
  if (E1 > 0)
    trading_observe(e, obs);
  else {  // ruin: an equity-relative observation is undefined; the episode ends here anyway
    e->equity = RUIN_EQUITY * EQUITY0;
    trading_observe(e, obs);
    e->equity = E1;
  }
  if (*terminated | *truncated) trading_finish(e, episode_log, peak_before, max_dd_before);
}

// --- the EnvKind adapters ------------------------------------------------------------------------

static int trading_kind_describe(EnvSpec *spec, const void *params, const void *shared) {
  (void)params;  // everything lives in the shared TradingContext
  if (!shared) {
    error_set("the trading env needs its TradingContext as the shared context (trading_context_init)");
    return -1;
  }
  const TradingContext *c = shared;
  const bool discrete = c->n_levels > 0;
  *spec = (EnvSpec){
      .obs_dim = c->obs_dim,
      .action_kind = discrete ? ENV_ACTION_DISCRETE : ENV_ACTION_CONTINUOUS,
      .action_count = discrete ? c->n_levels : 0,
      .action_dim = 1,
      .action_low = discrete ? 0.0f : -1.0f,
      .action_high = discrete ? (float)(c->n_levels - 1) : 1.0f,
      .state_size = (sizeof(TradingEnv) + 7) / 8 * 8,
      .log_size = TRADING_LOG_SIZE,
  };
  for (int i = 0; i < TRADING_LOG_SIZE; i++) spec->log_names[i] = trading_log_names[i];
  return 0;
}

static void trading_kind_init(void *env, const void *params, const void *shared, int env_index, int num_envs, Rng rng) {
  (void)params;
  trading_env_init(env, shared, env_index, num_envs, rng);
}

static void trading_kind_reset(void *env, float *obs) { trading_env_reset(env, obs); }

static void trading_kind_step(void *env, const void *action, float *obs, float *reward, uint8_t *terminated,
                              uint8_t *truncated, float *episode_log) {
  trading_env_step(env, action, obs, reward, terminated, truncated, episode_log);
}

static void trading_kind_close(void *env) { (void)env; }  // borrows the context, owns nothing

static void trading_kind_rebind(void *env, const void *shared) { ((TradingEnv *)env)->ctx = shared; }

// A loaded state's bars and level index must lie inside this run's data: window - 1 <= start <= t
// <= end <= rows - 1, and end <= rows - 2 with next-open fills (the observation reads W bars up to t,
// a next-open fill bar t + 1 <= end, and the episode's forced close the open after end).
static int trading_kind_check_state(const void *env, const void *fresh, const void *shared) {
  const TradingEnv *e = env;
  const TradingEnv *own = fresh;
  const TradingContext *c = shared;
  // The stratified first start reads these (a reset of an env not yet started); read the flag's
  // byte, since a bool holding another value may not be read as one.
  unsigned char started;
  memcpy(&started, &e->started, 1);
  if (e->env_index != own->env_index || e->num_envs != own->num_envs || started > 1) {
    error_set("env index %d of %d (started %u), but it is env %d of %d in this run: the checkpoint is damaged",
              (int)e->env_index, (int)e->num_envs, started, (int)own->env_index, (int)own->num_envs);
    return -1;
  }
  const int64_t rows = c->data->rows, last = rows - 1 - (c->params.exec == TRADING_EXEC_NEXT_OPEN);
  if (!(c->window - 1 <= e->start && e->start <= e->t && e->t <= e->end && e->end <= last)) {
    error_set(
        "bars start %lld, t %lld, end %lld do not fit this run's market of %lld bars (window %d): the "
        "checkpoint is damaged or was trained on other data",
        (long long)e->start, (long long)e->t, (long long)e->end, (long long)rows, c->window);
    return -1;
  }
  if (!(e->level == c->flat_level || (e->level >= 0 && e->level < c->n_levels)) || !isfinite(e->equity)) {
    error_set("position level %d or equity %g out of range: the checkpoint is damaged", (int)e->level, e->equity);
    return -1;
  }
  // The account and the episode's running sums: finite, and the counts not negative. A NaN here
  // would reach every later reward and episode metric of the env.
  // The last step's fill and the forced close are read by the episode logs and the ledger.
  const struct {
    const char *name;
    double value;
  } sums[] = {{"q", e->q},
              {"cash", e->cash},
              {"equity_peak", e->equity_peak},
              {"entry_price", e->entry_price},
              {"last_cost_bp", e->last_cost_bp},
              {"prev_equity", e->prev_equity},
              {"exit_equity", e->exit_equity},
              {"fill_units", e->fill_units},
              {"fill_price", e->fill_price},
              {"fill_commission", e->fill_commission},
              {"fill_fee", e->fill_fee},
              {"fill_financing", e->fill_financing},
              {"fill_cost", e->fill_cost},
              {"fill_mid", e->fill_mid},
              {"fill_spread", e->fill_spread},
              {"exit_fill.units", e->exit_fill.units},
              {"exit_fill.price", e->exit_fill.price},
              {"exit_fill.mid", e->exit_fill.mid},
              {"exit_fill.commission", e->exit_fill.commission},
              {"exit_fill.fee", e->exit_fill.fee},
              {"exit_fill.spread", e->exit_fill.spread},
              {"exit_fill.cost", e->exit_fill.cost},
              {"reward_exact", e->reward_exact},
              {"dsr.a", e->dsr.a},
              {"dsr.b", e->dsr.b},
              {"reward_sum", e->reward_sum},
              {"ret_sum", e->ret_sum},
              {"ret_sq_sum", e->ret_sq_sum},
              {"last_ret", e->last_ret},
              {"max_dd", e->max_dd},
              {"turnover_sum", e->turnover_sum},
              {"cost_sum", e->cost_sum},
              {"trade_entry_equity", e->trade_entry_equity},
              {"hold_bars_sum", e->hold_bars_sum}};
  for (size_t k = 0; k < sizeof sums / sizeof sums[0]; k++)
    if (!isfinite(sums[k].value)) {
      error_set("%s = %g: must be finite (the checkpoint is damaged)", sums[k].name, sums[k].value);
      return -1;
    }
  const struct {
    const char *name;
    int32_t value;
  } counts[] = {{"steps", e->steps},
                {"bars_in_position", e->bars_in_position},
                {"trades_opened", e->trades_opened},
                {"trades_closed", e->trades_closed},
                {"trades_won", e->trades_won}};
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
    if (counts[k].value < 0) {
      error_set("%s = %d: must not be negative (the checkpoint is damaged)", counts[k].name, (int)counts[k].value);
      return -1;
    }
  return 0;
}

const EnvKind trading_kind = {
    .name = "trading",
    .describe = trading_kind_describe,
    .init = trading_kind_init,
    .reset = trading_kind_reset,
    .step = trading_kind_step,
    .close = trading_kind_close,
    .rebind = trading_kind_rebind,
    .check_state = trading_kind_check_state,
};

const EnvKind synthetic_kind = {
    .name = "synthetic",
    .describe = trading_kind_describe,
    .init = trading_kind_init,
    .reset = trading_kind_reset,
    .step = trading_kind_step,
    .close = trading_kind_close,
    .rebind = trading_kind_rebind,
    .check_state = trading_kind_check_state,
};
