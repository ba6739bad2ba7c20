// test/test_eval.c: evaluation passes and ppo-eval (TRADING_ENV.md sections 8-10, issue 7).
//
// Library (ppo/backtest.h) on the shipped data: buy-and-hold traded through the env at zero cost
// against the reference table of data/README.md; the fill and trade ledgers explain the equity
// (rebuilt independently from the fills, costs and financing on); determinism for a seed; the
// oracle bound, flat, and costs that only ever lower the equity. Programs: ppo-eval on a freshly
// trained synthetic run (every output file, ledger = equity, the same bytes twice, exit status 2 on
// bad input with nothing written), and ppo-eval --walk-forward on a ppo-train --walk-forward run.
#include <criterion/criterion.h>
#include <ctype.h>
#include <dirent.h>
#include <hdf5.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "nn/backend.h"
#include "nn/policy.h"
#include "ppo/backtest.h"
#include "ppo/config.h"
#include "ppo/eval_run.h"
#include "program_util.h"
#include "test/h5_test_util.h"
#include "trading_test_util.h"

#define TRAIN_BIN PPO_BIN_DIR "/ppo-train"
#define EVAL_BIN PPO_BIN_DIR "/ppo-eval"

typedef struct {
  MarketData *data;
  Features *features;
  TradingContext ctx;
} Market;

static void market_open(Market *m, const char *file, TradingParams p) {
  m->data = load_shipped(file);
  m->features = features_for(m->data);
  cr_assert_eq(trading_context_init(&m->ctx, m->data, m->features, &p), 0, "%s", error_message());
}

static void market_close(Market *m) {
  features_free(m->features);
  market_data_free(m->data);
}

static Report report_of(const BacktestPass *p) {
  Report r;
  ReportOptions o = report_options_default();
  o.bootstrap_samples = 0;
  cr_assert_eq(report_compute(&r, &p->input, &o), 0, "%s", error_message());
  return r;
}

// data/README.md: buy-and-hold of the mid close over the test splits. Traded through the env the
// span starts one bar later (the fill is at the next open) and ends at the open after the last
// decision bar, so the figures agree to the printed digit except Sharpe, within 0.01.
Test(backtest, buy_and_hold_through_the_env_matches_the_readme_table) {
  const struct {
    const char *file;
    double total, sharpe, mdd;  // %, plain, %
  } rows[] = {{"XAUUSD_1H.h5", 15.4, 0.73, 14.6}, {"EURUSD_1H.h5", 9.6, 0.67, 10.6}};
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    Market m;
    market_open(&m, rows[k].file, trading_params_default());
    BacktestSetup setup = {.base = &m.ctx, .split = TRADING_SPLIT_TEST};
    BacktestPassSpec specs[2] = {{BT_BUY_AND_HOLD, 0, 0.0}, {BT_BUY_AND_HOLD, 0, 1.0}};
    BacktestPass passes[2];
    cr_assert_eq(backtest_run(&setup, specs, 2, passes), 0, "%s", error_message());
    Report r0 = report_of(&passes[0]), r1 = report_of(&passes[1]);
    cr_expect_float_eq(100 * r0.m.total_return, rows[k].total, 0.05, "%s total %.4f %%", rows[k].file,
                       100 * r0.m.total_return);
    cr_expect_float_eq(100 * r0.m.max_drawdown, rows[k].mdd, 0.05, "%s mdd %.4f %%", rows[k].file,
                       100 * r0.m.max_drawdown);
    cr_expect_float_eq(r0.m.sharpe, rows[k].sharpe, 0.01, "%s sharpe %.4f", rows[k].file, r0.m.sharpe);
    cr_expect_eq(r0.n_trades, 1);
    cr_expect_eq(r0.cost_total, 0.0);
    // The reported position is w = q M / E at each row's close (TRADING_ENV.md section 3), so between
    // the entry and the forced close w E / M gives back the units held, the same at every row.
    const BacktestPass *b = &passes[0];
    const double units = b->position[1] * b->equity[1] / b->price[1];
    cr_assert_gt(units, 0.0);
    for (int64_t i = 2; i < b->n; i++)
      cr_assert_float_eq(b->position[i] * b->equity[i] / b->price[i], units, 1e-12 * units,
                         "%s row %lld: w E / M = %.15g units, %.15g held", rows[k].file, (long long)i,
                         b->position[i] * b->equity[i] / b->price[i], units);
    // The same pass with the instrument's costs: one entry and one exit paid, nothing else.
    cr_expect_lt(r1.m.total_return, r0.m.total_return);
    cr_expect_gt(r1.cost_total, 0.0);
    cr_expect_lt(r1.cost_total, 0.002, "two fills of a few bp: %g", r1.cost_total);
    for (int i = 0; i < 2; i++) backtest_pass_free(&passes[i]);
    market_close(&m);
  }
}

// Random policies with every cost on (spread from the data, commission, fee, random slippage,
// financing both ways, cost x2): the ledgers must explain the equity to rounding.
Test(backtest, ledgers_explain_the_equity) {
  TradingParams p = trading_params_default();
  p.slippage_random_max_bps = 2.0;
  p.slippage_vol_k = 0.05;
  p.fee_fixed = 1e-5;
  p.financing_long_apr = 0.05;
  p.financing_short_apr = 0.03;
  p.action_mode = TRADING_ACTION_DISCRETE_K;
  p.n_levels = 5;
  Market m;
  market_open(&m, "XAUUSD_1H.h5", p);
  BacktestSetup setup = {.base = &m.ctx, .split = TRADING_SPLIT_VAL};
  enum { K = 4 };
  BacktestPassSpec specs[K] = {
      {BT_RANDOM, 11, 2.0}, {BT_RANDOM, 12, 1.0}, {BT_MA_RULE, 0, 2.0}, {BT_BUY_AND_HOLD, 0, 2.0}};
  BacktestPass passes[K];
  cr_assert_eq(backtest_run(&setup, specs, K, passes), 0, "%s", error_message());
  for (int k = 0; k < K; k++) {
    const BacktestPass *b = &passes[k];
    const char *what = backtest_strategy_name(b->spec.strategy);
    cr_expect_lt(backtest_ledger_check(b), 1e-12, "%s: equity rebuilt from the fills", what);
    double pnl = 0, trade_cost = 0, step_cost = 0;
    int64_t won = 0, held = 0;
    for (int64_t t = 0; t < b->n_trades; t++) {
      held += b->trades[t].bars;
      pnl += b->trades[t].net_pnl;
      trade_cost += b->trades[t].cost;
      won += b->trades[t].net_pnl > 0;
      cr_expect(b->trades[t].exit_step >= b->trades[t].entry_step);
    }
    for (int64_t i = 1; i <= b->n; i++)
      step_cost += b->cost_spread[i] + b->cost_slippage[i] + b->cost_commission[i] + b->cost_financing[i];
    // Flat between trades earns nothing, so the trades' P&L telescopes to E_N - E_0.
    cr_expect_float_eq(b->equity[0] + pnl, b->equity[b->n], 1e-12, "%s: E_0 + sum(pnl) %.15g vs E_N %.15g", what,
                       b->equity[0] + pnl, b->equity[b->n]);
    // Every cost is paid while some trade is open (or by its fills).
    cr_expect_float_eq(trade_cost, step_cost, 1e-12, "%s: trade costs %.15g vs step costs %.15g", what, trade_cost,
                       step_cost);
    cr_expect_gt(step_cost, 0.0, "%s pays costs", what);
    // The env's own counts (trading_env.c) agree with the ledger rebuilt here.
    cr_expect_eq(b->n_trades, b->env_trades_closed, "%s", what);
    cr_expect_eq(b->env_trades_opened, b->env_trades_closed, "%s: the forced close closes the last trade", what);
    cr_expect_eq(won, b->env_trades_won, "%s", what);
    cr_expect_eq((double)held, b->env_hold_bars, "%s: bars held, the forced close's last bar included", what);
  }
  // Buy-and-hold holds every bar of the pass: from the open after step 0's mark to the open after the last.
  cr_expect_eq(passes[3].n_trades, 1);
  cr_expect_eq(passes[3].trades[0].bars, passes[3].n, "buy-and-hold held %lld of %lld bars",
               (long long)passes[3].trades[0].bars, (long long)passes[3].n);
  cr_expect_gt(passes[0].n_trades, 100, "a random policy trades a lot: %lld", (long long)passes[0].n_trades);
  for (int k = 0; k < K; k++) backtest_pass_free(&passes[k]);
  market_close(&m);
}

// Each cost lands in its own category: one cost at a time switched on, the others stay exactly 0.
Test(backtest, costs_are_booked_by_category) {
  const struct {
    double spread, commission, slippage;  // bps
    int nonzero;                          // 0 spread, 1 slippage, 2 commission
  } cases[] = {{1.0, 0, 0, 0}, {0, 0, 1.0, 1}, {0, 1.0, 0, 2}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    TradingParams p = trading_params_default();
    p.use_data_spread = 0;
    p.half_spread_bps = cases[k].spread;
    p.commission_bps = cases[k].commission;
    p.slippage_bps = cases[k].slippage;
    Market m;
    market_open(&m, "EURUSD_1H.h5", p);
    BacktestSetup setup = {.base = &m.ctx, .split = TRADING_SPLIT_TEST};
    BacktestPassSpec specs[1] = {{BT_MA_RULE, 0, 1.0}};
    BacktestPass b;
    cr_assert_eq(backtest_run(&setup, specs, 1, &b), 0, "%s", error_message());
    Report r = report_of(&b);
    const double got[3] = {r.cost_spread, r.cost_slippage, r.cost_commission};
    double notional = 0;
    for (int64_t i = 1; i <= b.n; i++) notional += b.notional[i];
    for (int c = 0; c < 3; c++) {
      if (c == cases[k].nonzero)
        // 1 bp of the mid, capped to the bar's range: about 1 bp of the notional (1/(1 -+ 1e-4) of it).
        cr_expect(got[c] > 0.9e-4 * notional && got[c] <= 1.001e-4 * notional, "case %zu: %g of notional %g", k, got[c],
                  notional);
      else
        cr_expect_eq(got[c], 0.0, "case %zu category %d", k, c);
    }
    cr_expect_eq(r.cost_financing, 0.0);
    backtest_pass_free(&b);
    market_close(&m);
  }
}

Test(backtest, passes_are_deterministic_for_a_seed) {
  Market m;
  market_open(&m, "EURUSD_1H.h5", trading_params_default());
  BacktestSetup setup = {.base = &m.ctx, .split = TRADING_SPLIT_VAL};
  BacktestPassSpec specs[3] = {{BT_RANDOM, 5, 1.0}, {BT_RANDOM, 5, 1.0}, {BT_RANDOM, 6, 1.0}};
  BacktestPass a[3], b[3];
  cr_assert_eq(backtest_run(&setup, specs, 3, a), 0, "%s", error_message());
  cr_assert_eq(backtest_run(&setup, specs, 3, b), 0, "%s", error_message());
  const size_t bytes = (size_t)(a[0].n + 1) * sizeof(double);
  cr_expect_eq(memcmp(a[0].equity, b[0].equity, bytes), 0, "same seed, same run: same equity");
  cr_expect_eq(memcmp(a[0].equity, a[1].equity, bytes), 0, "two passes of one seed in one run");
  cr_expect_neq(memcmp(a[0].equity, a[2].equity, bytes), 0, "another seed, another path");
  for (int k = 0; k < 3; k++) backtest_pass_free(&a[k]), backtest_pass_free(&b[k]);
  market_close(&m);
}

Test(backtest, oracle_bounds_flat_stays_flat_costs_only_hurt) {
  Market m;
  market_open(&m, "XAUUSD_1H.h5", trading_params_default());
  BacktestSetup setup = {.base = &m.ctx, .split = TRADING_SPLIT_TEST};
  BacktestPassSpec specs[] = {{BT_ORACLE, 0, 1.0},  {BT_FLAT, 0, 1.0},    {BT_BUY_AND_HOLD, 0, 1.0},
                              {BT_MA_RULE, 0, 0.0}, {BT_MA_RULE, 0, 1.0}, {BT_MA_RULE, 0, 2.0},
                              {BT_RANDOM, 1, 1.0}};
  enum { K = sizeof specs / sizeof specs[0] };
  BacktestPass passes[K];
  cr_assert_eq(backtest_run(&setup, specs, K, passes), 0, "%s", error_message());
  Report r[K];
  for (int k = 0; k < K; k++) r[k] = report_of(&passes[k]);
  for (int k = 1; k < K; k++)
    cr_expect_gt(r[0].m.total_return, r[k].m.total_return, "the zero-cost oracle bounds %s",
                 backtest_strategy_name(specs[k].strategy));
  cr_expect_eq(r[0].cost_total, 0.0, "the oracle runs at zero cost whatever its multiplier");
  // Its open-to-open moves are known, not the marks at the closes in between: a high Sharpe, not 0 drawdown.
  cr_expect_gt(r[0].m.sharpe, 10.0, "oracle Sharpe %g", r[0].m.sharpe);
  for (int64_t i = 0; i <= passes[1].n; i++) cr_assert_eq(passes[1].equity[i], 1.0);
  cr_expect_eq(r[1].n_trades, 0);
  cr_expect_eq(r[1].exposure, 0.0);
  // The MA rule takes the same decisions at every multiplier; only what they cost changes.
  cr_expect_eq(r[3].n_trades, r[4].n_trades);
  cr_expect_gt(r[3].m.total_return, r[4].m.total_return);
  cr_expect_gt(r[4].m.total_return, r[5].m.total_return);
  // Twice the cost rates; a little less than twice the amount, as the equity they apply to shrinks faster.
  double ratio = r[5].cost_total / r[4].cost_total;
  cr_expect(ratio > 1.5 && ratio < 2.0, "cost x2 / cost x1 = %g", ratio);
  for (int k = 0; k < K; k++) backtest_pass_free(&passes[k]);
  market_close(&m);
}

// TRADING_ENV.md section 9: every pass covers the same span. One that max_loss stops holds cash
// from there to the split's end (it was reported over its own shorter span: another N, Y and P
// than the benchmarks beside it).
Test(backtest, a_pass_stopped_by_max_loss_holds_cash_to_the_end) {
  TradingParams params = trading_params_default();
  params.max_loss = 0.02;  // a random policy pays costs on most bars: 2 % is lost within weeks
  Market m;
  market_open(&m, "XAUUSD_1H.h5", params);
  BacktestSetup setup = {.base = &m.ctx, .split = TRADING_SPLIT_TEST};
  BacktestPassSpec specs[] = {{BT_RANDOM, 1, 1.0}, {BT_FLAT, 0, 1.0}};
  BacktestPass passes[2];
  cr_assert_eq(backtest_run(&setup, specs, 2, passes), 0, "%s", error_message());
  const BacktestPass *bh = &passes[0], *flat = &passes[1];
  cr_assert(bh->terminated && !flat->terminated);
  cr_assert_lt(bh->stop_step, flat->n / 2, "stopped early: step %lld of %lld", (long long)bh->stop_step,
               (long long)flat->n);
  cr_expect(bh->equity[bh->stop_step] < 0.98 && bh->equity[bh->stop_step] > 0.97,
            "stopped at %g: just past 1 - max_loss, after the forced close", bh->equity[bh->stop_step]);
  cr_assert_eq(bh->n, flat->n, "the same N as the benchmark");
  cr_expect_eq(bh->ts[bh->n], flat->ts[flat->n], "and the same last timestamp");
  for (int64_t i = bh->stop_step + 1; i <= bh->n; i++) {
    cr_assert_eq(bh->equity[i], bh->equity[bh->stop_step], "step %lld", (long long)i);
    cr_assert(bh->position[i] == 0 && bh->turnover[i] == 0 && bh->cost_spread[i] == 0 && bh->cost_financing[i] == 0);
    cr_assert_eq(bh->ts[i], flat->ts[i]);
  }
  cr_expect_lt(backtest_ledger_check(bh), 1e-12);
  Report r = report_of(bh), rf = report_of(flat);
  cr_expect_float_eq(r.m.total_return, bh->equity[bh->stop_step] - 1.0, 1e-15);
  cr_expect(r.m.periods_per_year == rf.m.periods_per_year && r.m.years == rf.m.years,
            "annualised over the benchmark's span");
  for (int k = 0; k < 2; k++) backtest_pass_free(&passes[k]);
  market_close(&m);
}

// Buy-and-hold is one entry and the forced close, with continuous actions too: a fixed target of
// L re-levered at every drift past the no-trade band (158 fills on this span at L = 2).
Test(backtest, buy_and_hold_holds_its_units_with_continuous_actions) {
  TradingParams p = trading_params_default();
  p.action_mode = TRADING_ACTION_CONTINUOUS, p.max_leverage = 2;
  Market m;
  market_open(&m, "XAUUSD_1H.h5", p);
  BacktestSetup setup = {.base = &m.ctx, .split = TRADING_SPLIT_TEST};
  BacktestPassSpec specs[] = {{BT_BUY_AND_HOLD, 0, 1.0}};
  BacktestPass pass;
  cr_assert_eq(backtest_run(&setup, specs, 1, &pass), 0, "%s", error_message());
  int64_t forced = 0;
  for (int64_t f = 0; f < pass.n_fills; f++) forced += pass.fills[f].forced;
  cr_expect_eq(forced, 1);
  cr_expect_leq(pass.n_fills - forced, 10, "%lld fills before the close (deleveraging past L only)",
                (long long)(pass.n_fills - forced));
  cr_expect_gt(pass.position[1], 1.99, "entered at L");
  backtest_pass_free(&pass);
  market_close(&m);
}

// With exec = close the oracle fills at the decision bar's close and is marked at the next close, so
// at zero cost every step earns L |close[t+1] / close[t] - 1| >= 0: its equity never falls.
// Continuous long-only actions map a target w to a = 2 w / L - 1 (trading_env.h), so flat (a = -1)
// holds cash, buy-and-hold (a = 1) holds L.
Test(backtest, exec_close_oracle_never_loses_and_long_only_continuous_flat_holds_cash) {
  TradingParams p = trading_params_default();
  p.exec = TRADING_EXEC_CLOSE;
  Market m;
  market_open(&m, "SPY_1D.h5", p);
  BacktestSetup setup = {.base = &m.ctx, .split = TRADING_SPLIT_TEST};
  BacktestPassSpec oracle_spec[] = {{BT_ORACLE, 0, 1.0}};
  BacktestPass oracle;
  cr_assert_eq(backtest_run(&setup, oracle_spec, 1, &oracle), 0, "%s", error_message());
  for (int64_t i = 1; i <= oracle.n; i++)
    cr_assert_geq(oracle.equity[i], oracle.equity[i - 1] * (1 - 1e-12), "step %lld: %.17g after %.17g", (long long)i,
                  oracle.equity[i], oracle.equity[i - 1]);
  cr_expect_gt(oracle.equity[oracle.n], 1.5);
  backtest_pass_free(&oracle);
  market_close(&m);

  p = trading_params_default();
  p.action_mode = TRADING_ACTION_CONTINUOUS, p.long_only = true, p.max_leverage = 1;
  market_open(&m, "SPY_1D.h5", p);
  setup.base = &m.ctx;
  BacktestPassSpec specs[] = {{BT_FLAT, 0, 1.0}, {BT_BUY_AND_HOLD, 0, 1.0}};
  BacktestPass passes[2];
  cr_assert_eq(backtest_run(&setup, specs, 2, passes), 0, "%s", error_message());
  for (int64_t i = 0; i <= passes[0].n; i++) cr_assert_eq(passes[0].equity[i], 1.0, "flat at step %lld", (long long)i);
  cr_expect_eq(passes[0].n_fills, 0);
  cr_expect_float_eq(passes[1].position[1], 1.0, 0.01, "buy-and-hold enters at L = 1");
  backtest_pass_free(&passes[0]);
  backtest_pass_free(&passes[1]);
  market_close(&m);
}

// report.h: a trade's entry price is the volume-weighted price of its opening legs. Continuous
// buy-and-hold at L = 2 only sells after its entry (a weight drifted past L is traded back: SPY's
// test split holds March 2020), so its one trade keeps the first fill's price.
Test(backtest, reducing_a_position_keeps_the_entry_price) {
  TradingParams p = trading_params_default();
  p.action_mode = TRADING_ACTION_CONTINUOUS, p.max_leverage = 2;
  Market m;
  market_open(&m, "SPY_1D.h5", p);
  BacktestSetup setup = {.base = &m.ctx, .split = TRADING_SPLIT_TEST};
  BacktestPassSpec specs[] = {{BT_BUY_AND_HOLD, 0, 1.0}};
  BacktestPass pass;
  cr_assert_eq(backtest_run(&setup, specs, 1, &pass), 0, "%s", error_message());
  cr_assert_eq(pass.n_trades, 1);
  cr_assert_gt(pass.n_fills, 2, "some deleveraging fills between the entry and the close");
  cr_expect_gt(pass.fills[0].units, 0);
  for (int64_t f = 1; f < pass.n_fills; f++) cr_expect_lt(pass.fills[f].units, 0, "fill %lld sells", (long long)f);
  cr_expect_eq(pass.trades[0].entry_price, pass.fills[0].price);
  cr_expect_eq(pass.trades[0].exit_price, pass.fills[pass.n_fills - 1].price);
  backtest_pass_free(&pass);
  market_close(&m);
}

// TRADING_ENV.md section 9: a bar's turnover is |w post-fill - w pre-fill|, the weights at the
// decision bar's mark: |units| M / E with M that bar's close (the pass's price[i - 1]) and E the
// equity marked there (equity[i - 1]).
Test(backtest, turnover_is_the_weight_traded_at_the_decision_mark) {
  Market m;
  market_open(&m, "XAUUSD_1H.h5", trading_params_default());
  BacktestSetup setup = {.base = &m.ctx, .split = TRADING_SPLIT_TEST};
  BacktestPassSpec specs[] = {{BT_RANDOM, 5, 1.0}};
  BacktestPass pass;
  cr_assert_eq(backtest_run(&setup, specs, 1, &pass), 0, "%s", error_message());
  int64_t f = 0, traded = 0;
  const int64_t last = pass.terminated ? pass.stop_step : pass.n;  // adds the forced close
  for (int64_t i = 1; i < last; i++) {
    double want = 0;
    for (; f < pass.n_fills && pass.fills[f].step == i; f++)
      want += fabs(pass.fills[f].units) * pass.price[i - 1] / pass.equity[i - 1];
    traded += want > 0;
    cr_assert_float_eq(pass.turnover[i], want, 1e-12 * (1 + want), "step %lld: %.17g, want %.17g", (long long)i,
                       pass.turnover[i], want);
  }
  cr_expect_gt(traded, 100);
  backtest_pass_free(&pass);
  market_close(&m);
}

// The random baseline's continuous actions are uniform in [-1, 1] (w = L a): long and short alike
// over a split, not long only.
Test(backtest, random_continuous_actions_go_both_ways) {
  TradingParams p = trading_params_default();
  p.action_mode = TRADING_ACTION_CONTINUOUS, p.max_loss = 1;
  Market m;
  market_open(&m, "XAUUSD_1H.h5", p);
  BacktestSetup setup = {.base = &m.ctx, .split = TRADING_SPLIT_TEST};
  BacktestPassSpec specs[] = {{BT_RANDOM, 3, 1.0}};
  BacktestPass pass;
  cr_assert_eq(backtest_run(&setup, specs, 1, &pass), 0, "%s", error_message());
  Report r = report_of(&pass);
  cr_expect(r.long_share > 0.3 && r.short_share > 0.3, "long %g, short %g of the bars", r.long_share, r.short_share);
  backtest_pass_free(&pass);
  market_close(&m);
}

Test(backtest, refuses_an_agent_pass_without_a_policy) {
  Market m;
  market_open(&m, "SPY_1D.h5", trading_params_default());
  BacktestSetup setup = {.base = &m.ctx, .split = TRADING_SPLIT_TEST};
  BacktestPassSpec specs[1] = {{BT_AGENT_GREEDY, 0, 1.0}};
  BacktestPass passes[1];
  cr_expect_eq(backtest_run(&setup, specs, 1, passes), -1);
  cr_expect(strstr(error_message(), "needs a policy"), "%s", error_message());
  specs[0] = (BacktestPassSpec){BT_FLAT, 0, -1.0};
  cr_expect_eq(backtest_run(&setup, specs, 1, passes), -1);
  cr_expect(strstr(error_message(), "cost multiplier -1"), "%s", error_message());
  market_close(&m);
  // toggle2 without long_only holds -L or +L: target 0 was the level -L, a "flat" pass fully short
  TradingParams p = trading_params_default();
  p.action_mode = TRADING_ACTION_TOGGLE2;
  market_open(&m, "SPY_1D.h5", p);
  specs[0] = (BacktestPassSpec){BT_FLAT, 0, 1.0};
  cr_expect_eq(backtest_run(&setup, specs, 1, passes), -1);
  cr_expect(strstr(error_message(), "toggle2 without long_only has no flat action, so the flat pass"), "%s",
            error_message());
  specs[0] = (BacktestPassSpec){BT_BUY_AND_HOLD, 0, 1.0};
  cr_assert_eq(backtest_run(&setup, specs, 1, passes), 0, "buy-and-hold needs no flat level: %s", error_message());
  backtest_pass_free(&passes[0]);
  market_close(&m);
}

// Two passes hold the same record: every per-step array, the fills, the trades and the counts.
static void expect_same_pass(const BacktestPass *a, const BacktestPass *b, const char *when, int k) {
  cr_assert_eq(a->n, b->n, "%s, pass %d: steps", when, k);
  cr_assert(a->n_fills == b->n_fills && a->n_trades == b->n_trades,
            "%s, pass %d: fills %lld / %lld, trades %lld / %lld", when, k, (long long)a->n_fills, (long long)b->n_fills,
            (long long)a->n_trades, (long long)b->n_trades);
  cr_assert(a->terminated == b->terminated && a->stop_step == b->stop_step, "%s, pass %d: stop", when, k);
  cr_assert(a->env_trades_opened == b->env_trades_opened && a->env_trades_closed == b->env_trades_closed &&
                a->env_trades_won == b->env_trades_won,
            "%s, pass %d: the env's trade counts", when, k);
  const size_t n = (size_t)a->n + 1;
  cr_assert(memcmp(a->ts, b->ts, n * sizeof *a->ts) == 0, "%s, pass %d: ts", when, k);
  const double *da[] = {a->price,       a->equity,        a->position,        a->turnover,      a->notional,
                        a->cost_spread, a->cost_slippage, a->cost_commission, a->cost_financing};
  const double *db[] = {b->price,       b->equity,        b->position,        b->turnover,      b->notional,
                        b->cost_spread, b->cost_slippage, b->cost_commission, b->cost_financing};
  for (int j = 0; j < 9; j++)
    cr_assert(memcmp(da[j], db[j], n * sizeof(double)) == 0, "%s, pass %d: array %d", when, k, j);
  cr_assert(memcmp(a->fills, b->fills, (size_t)a->n_fills * sizeof *a->fills) == 0, "%s, pass %d: fills", when, k);
  cr_assert(memcmp(a->trades, b->trades, (size_t)a->n_trades * sizeof *a->trades) == 0, "%s, pass %d: trades", when, k);
  cr_assert(a->input.n == b->input.n && a->input.n_trades == b->input.n_trades, "%s, pass %d: report view", when, k);
}

static int stop_calls = 0;
static bool stop_at_the_second_poll(void) { return ++stop_calls >= 2; }

// A workspace run again (ppo-train's evaluation every K iterations), also after a run a stop
// abandoned half-way, records what a fresh backtest_run records: nothing of the last run is left
// (a fill or trade count carried over would also run past the arrays). Costs of every kind, random
// slippage, and max_loss 3 % so that most passes end early and pad to the split's end.
Test(backtest, a_workspace_run_again_records_what_a_fresh_run_records) {
  TradingParams p = trading_params_default();
  p.slippage_random_max_bps = 2.0;
  p.fee_fixed = 1e-5;
  p.financing_long_apr = 0.05;
  p.action_mode = TRADING_ACTION_DISCRETE_K;
  p.n_levels = 5;
  p.max_loss = 0.03;
  Market m;
  market_open(&m, "XAUUSD_1H.h5", p);
  BacktestSetup setup = {.base = &m.ctx, .split = TRADING_SPLIT_VAL};
  enum { K = 7 };
  const BacktestPassSpec specs[K] = {{BT_RANDOM, 11, 2.0},      {BT_RANDOM, 12, 1.0}, {BT_MA_RULE, 0, 2.0},
                                     {BT_BUY_AND_HOLD, 0, 2.0}, {BT_FLAT, 0, 1.0},    {BT_ORACLE, 0, 0.0},
                                     {BT_RANDOM, 13, 5.0}};
  BacktestPass fresh[K];
  cr_assert_eq(backtest_run(&setup, specs, K, fresh), 0, "%s", error_message());
  int ended_early = 0;
  for (int k = 0; k < K; k++) ended_early += fresh[k].terminated;
  cr_assert_geq(ended_early, 2, "max_loss ends some passes early (%d did)", ended_early);
  BacktestWorkspace *ws = backtest_workspace_new(&setup, specs, K);
  cr_assert_not_null(ws, "%s", error_message());
  const char *runs[] = {"first run", "stopped", "after the stop", "again"};
  for (int r = 0; r < 4; r++) {
    BacktestSetup run = setup;
    if (r == 1) run.stop = stop_at_the_second_poll;
    int rc = backtest_workspace_run(ws, &run);
    if (r == 1) {
      cr_assert_eq(rc, 1, "the stop abandons the run");
      continue;
    }
    cr_assert_eq(rc, 0, "%s", error_message());
    for (int k = 0; k < K; k++) expect_same_pass(&fresh[k], &backtest_workspace_passes(ws)[k], runs[r], k);
  }
  backtest_workspace_free(ws);
  for (int k = 0; k < K; k++) backtest_pass_free(&fresh[k]);
  market_close(&m);
}

// A sampled agent pass depends on its seed only, not on the passes batched with it: a pass's
// uniforms and actions are its own row's (categorical: one of each per row; Gaussian: 2 A and A).
// One OpenMP thread: with two, each bar's actor and critic passes fork onto both (lanes), and two
// such tests at once (Criterion's --jobs 2 on 2 cores) spun against each other: 96 s each instead
// of 0.15 s.
static void sampled_pass_is_independent_of_its_batch(PolicyHead head, TradingParams p) {
  omp_set_num_threads(1);
  Market m;
  market_open(&m, "EURUSD_1H.h5", p);
  Backend *be = backend_open("cpu");
  cr_assert_not_null(be, "%s", error_message());
  PolicySpec ps = {.obs_dim = m.ctx.obs_dim,
                   .action_dim = head == POLICY_HEAD_CATEGORICAL ? m.ctx.n_levels : 1,
                   .head = head,
                   .n_pi = 1,
                   .pi_layers = {8},
                   .n_vf = 1,
                   .vf_layers = {8},
                   .activation = NN_ACT_TANH,
                   .dtype = NN_F32,
                   .max_batch = 4,
                   .seed = 3};
  Policy *pol = policy_init(be, &ps);
  cr_assert_not_null(pol, "%s", error_message());
  BacktestSetup setup = {.base = &m.ctx, .split = TRADING_SPLIT_VAL, .policy = pol, .sample_subsequence = 5};
  BacktestPassSpec alone[1] = {{BT_AGENT_SAMPLED, 7, 1.0}};
  BacktestPassSpec batched[4] = {
      {BT_AGENT_GREEDY, 0, 1.0}, {BT_AGENT_SAMPLED, 9, 1.0}, {BT_AGENT_SAMPLED, 7, 1.0}, {BT_AGENT_SAMPLED, 8, 1.0}};
  BacktestPass a, b[4];
  cr_assert_eq(backtest_run(&setup, alone, 1, &a), 0, "%s", error_message());
  cr_assert_eq(backtest_run(&setup, batched, 4, b), 0, "%s", error_message());
  cr_assert_eq(a.n, b[2].n);
  cr_expect_eq(memcmp(a.equity, b[2].equity, (size_t)(a.n + 1) * sizeof(double)), 0,
               "seed 7's pass alone and as the third agent row");
  cr_expect_gt(a.env_trades_opened, 10, "a random network samples trades: %lld", (long long)a.env_trades_opened);
  cr_expect_neq(memcmp(b[1].equity, b[2].equity, (size_t)(a.n + 1) * sizeof(double)), 0, "seeds 9 and 7 differ");
  backtest_pass_free(&a);
  for (int k = 0; k < 4; k++) backtest_pass_free(&b[k]);
  policy_free(pol);
  backend_close(be);
  market_close(&m);
}

// The greedy agent takes the most probable action: its first step's level is the argmax of the
// policy's logits for the split's first observation (an env of the same evaluation parameters,
// reset), here over the discrete3 levels {-L, 0, L}.
Test(backtest, the_greedy_agent_takes_the_argmax_action) {
  omp_set_num_threads(1);
  TradingParams p = trading_params_default();
  p.max_loss = 1;
  Market m;
  market_open(&m, "EURUSD_1H.h5", p);
  Backend *be = backend_open("cpu");
  cr_assert_not_null(be, "%s", error_message());
  int decided[3] = {0};
  for (uint64_t seed = 1; seed <= 12; seed++) {
    PolicySpec ps = {.obs_dim = m.ctx.obs_dim,
                     .action_dim = m.ctx.n_levels,
                     .head = POLICY_HEAD_CATEGORICAL,
                     .n_pi = 1,
                     .pi_layers = {8},
                     .n_vf = 1,
                     .vf_layers = {8},
                     .activation = NN_ACT_TANH,
                     .dtype = NN_F32,
                     .max_batch = 1,
                     .init = POLICY_INIT_TORCH,
                     .seed = seed};
    Policy *pol = policy_init(be, &ps);
    cr_assert_not_null(pol, "%s", error_message());
    TradingParams ep = m.ctx.params;
    ep.eval = true, ep.eval_split = TRADING_SPLIT_VAL, ep.eval_offset = 0, ep.cost_mult = 1.0;
    TradingContext ctx;
    cr_assert_eq(trading_context_init(&ctx, m.data, m.features, &ep), 0, "%s", error_message());
    TradingEnv env;
    Rng rng;
    rng_seed(&rng, 1);
    static float obs[1 << 14];
    float logits[8];
    cr_assert_leq(ctx.obs_dim, 1 << 14);
    trading_env_init(&env, &ctx, 0, 1, rng);
    trading_env_reset(&env, obs);
    float *obs_dev = backend_alloc(be, (size_t)ctx.obs_dim * sizeof(float));
    backend_upload(be, obs_dev, obs, (size_t)ctx.obs_dim * sizeof(float));
    policy_forward(pol, obs_dev, 1);
    backend_download(be, logits, policy_head_out(pol), 3 * sizeof(float));
    backend_free(be, obs_dev);
    int best = 0;
    for (int a = 1; a < 3; a++)
      if (logits[a] > logits[best]) best = a;
    BacktestSetup setup = {.base = &m.ctx, .split = TRADING_SPLIT_VAL, .policy = pol};
    BacktestPassSpec spec[1] = {{BT_AGENT_GREEDY, 0, 1.0}};
    BacktestPass pass;
    cr_assert_eq(backtest_run(&setup, spec, 1, &pass), 0, "%s", error_message());
    const double w = pass.position[1];
    const int level = w < -0.5 ? 0 : w > 0.5 ? 2 : 1;
    cr_expect_eq(level, best, "seed %llu: logits %g %g %g, first position %g", (unsigned long long)seed, logits[0],
                 logits[1], logits[2], w);
    decided[best]++;
    backtest_pass_free(&pass);
    policy_free(pol);
  }
  cr_expect((decided[0] > 0) + (decided[1] > 0) + (decided[2] > 0) >= 2,
            "networks preferring different levels: %d %d %d", decided[0], decided[1], decided[2]);
  backend_close(be);
  market_close(&m);
}

Test(backtest, a_sampled_categorical_pass_is_independent_of_its_batch) {
  sampled_pass_is_independent_of_its_batch(POLICY_HEAD_CATEGORICAL, trading_params_default());
}

Test(backtest, a_sampled_gaussian_pass_is_independent_of_its_batch) {
  TradingParams p = trading_params_default();
  p.action_mode = TRADING_ACTION_CONTINUOUS;
  sampled_pass_is_independent_of_its_batch(POLICY_HEAD_GAUSSIAN, p);
}

// A sampled Gaussian pass's step k draws its action from words 2k and 2k + 1 of Philox(seed,
// sample_subsequence) (A = 1: two uniforms per step, nn/backend.h's Box-Muller, cosine branch). An
// all-zero network (mean 0, log_std 0) samples a = eps_k itself; with no trade band and no costs the
// position after step k has the sign of eps_k. The expected signs come from common/rng.h's Philox
// here, not from the backtest; a stream read at offset k instead of 2 k (consecutive steps sharing a
// uniform) disagrees on about half the steps.
Test(backtest, a_sampled_gaussian_pass_draws_two_words_per_step) {
  omp_set_num_threads(1);
  TradingParams p = trading_params_default();
  p.action_mode = TRADING_ACTION_CONTINUOUS;
  p.no_trade_band = 0;
  p.max_loss = 1;
  Market m;
  market_open(&m, "EURUSD_1H.h5", p);
  Backend *be = backend_open("cpu");
  cr_assert_not_null(be, "%s", error_message());
  PolicySpec ps = {.obs_dim = m.ctx.obs_dim,
                   .action_dim = 1,
                   .head = POLICY_HEAD_GAUSSIAN,
                   .n_pi = 1,
                   .pi_layers = {8},
                   .n_vf = 1,
                   .vf_layers = {8},
                   .activation = NN_ACT_TANH,
                   .dtype = NN_F32,
                   .max_batch = 1,
                   .init = POLICY_INIT_ZERO,
                   .seed = 3};
  Policy *pol = policy_init(be, &ps);
  cr_assert_not_null(pol, "%s", error_message());
  const uint64_t seed = 11, subsequence = 5;
  BacktestSetup setup = {.base = &m.ctx, .split = TRADING_SPLIT_VAL, .policy = pol, .sample_subsequence = subsequence};
  BacktestPassSpec spec[1] = {{BT_AGENT_SAMPLED, seed, 0.0}};
  BacktestPass pass;
  cr_assert_eq(backtest_run(&setup, spec, 1, &pass), 0, "%s", error_message());
  cr_assert(!pass.terminated, "no costs, leverage 1: the pass runs to the split's end");
  cr_assert_gt(pass.n, 1000);
  int64_t checked = 0, wrong = 0, first_wrong = -1;
  for (int64_t k = 0; k < pass.n - 1; k++) {
    double u1 = rng_uniform_from_u32(philox_u32(seed, subsequence, 2 * (uint64_t)k));
    double u2 = rng_uniform_from_u32(philox_u32(seed, subsequence, 2 * (uint64_t)k + 1));
    double c = cos(6.283185307179586 * u2);
    if (fabs(c) < 1e-4) continue;  // eps too near 0 for its sign to be sure in float
    double eps = sqrt(-2 * log(u1)) * c, w = pass.position[k + 1];
    checked++;
    if ((eps > 0) != (w > 0) || w == 0) {
      wrong++;
      if (first_wrong < 0) first_wrong = k;
    }
  }
  cr_expect_eq(wrong, 0, "%lld of %lld steps hold the wrong side; the first at step %lld (position %g)",
               (long long)wrong, (long long)checked, (long long)first_wrong,
               first_wrong >= 0 ? pass.position[first_wrong + 1] : 0.0);
  cr_expect_gt(checked, pass.n - 10);
  backtest_pass_free(&pass);
  policy_free(pol);
  backend_close(be);
  market_close(&m);
}

// --- the programs ---------------------------------------------------------------------------------

static char tmp_root[256];

static void setup(void) {
  snprintf(tmp_root, sizeof tmp_root, "/tmp/ppo_test_eval_XXXXXX");
  cr_assert_not_null(mkdtemp(tmp_root));
}

static void teardown(void) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
  cr_expect_eq(system(cmd), 0);
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

// A synthetic AR(1) market with costs, a small network, [eval] every iteration (best.h5).
static const char *train_config =
    "[run]\nname = ev\nseed = 5\ndevice = cpu\nthreads = 1\ntotal_timesteps = 1024\ncheckpoint_every = 0\n"
    "[env]\ntype = synthetic\nsynthetic_model = ar1\nsynthetic_bars = 6000\nsynthetic_rho = 0.1\n"
    "n_envs = 2\nepisode_length = 100\nwindow = 4\nuse_data_spread = false\nhalf_spread_bps = 1\n"
    "commission_bps = 0.5\nslippage_bps = 0.5\nfinancing_long_apr = 0.02\n"
    "[ppo]\nn_steps = 256\nbatch_size = 128\nn_epochs = 2\n"
    "[policy]\npi_layers = 16\nvf_layers = 16\n"
    "[normalize]\nobs = true\n"
    "[eval]\nevery = 1\n";

// The value after the first `"key": ` following `after` in a JSON text.
static double json_number_after(const char *text, const char *after, const char *key) {
  const char *p = strstr(text, after);
  cr_assert_not_null(p, "no %s in report.json", after);
  char pattern[128];
  snprintf(pattern, sizeof pattern, "\"%s\": ", key);
  p = strstr(p, pattern);
  cr_assert_not_null(p, "no %s after %s", key, after);
  p += strlen(pattern);
  if (strncmp(p, "null", 4) == 0) return NAN;
  return strtod(p, NULL);
}

// The last line's field `col` (0-based) of a CSV, and the sum of field `sum_col` over the rows.
static void csv_scan(const char *text, int col, double *last, int sum_col, double *sum, int *rows) {
  *sum = 0;
  *rows = 0;
  const char *line = strchr(text, '\n');  // skip the header
  while (line && line[1]) {
    line++;
    const char *f = line;
    for (int c = 0; c < col; c++) f = strchr(f, ',') + 1;
    *last = strtod(f, NULL);
    if (sum_col >= 0) {
      f = line;
      for (int c = 0; c < sum_col; c++) f = strchr(f, ',') + 1;
      *sum += strtod(f, NULL);
    }
    (*rows)++;
    line = strchr(line, '\n');
  }
}

// train_config's run of 512 steps (2 iterations) without [eval], into tmp_root/run: the checkpoint
// most ppo-eval tests read. cfg and run receive the configuration file's and the run's paths.
static void train_small_run(char *cfg, size_t cfg_capacity, char *run, size_t run_capacity) {
  static char out[1 << 16];
  char args[2600];
  snprintf(cfg, cfg_capacity, "%s/ev.ini", tmp_root);
  snprintf(run, run_capacity, "%s/run", tmp_root);
  write_text(cfg, train_config);
  snprintf(args, sizeof args, "'%s' --run-dir '%s' --quiet --set run.total_timesteps=512 --set eval.every=0", cfg, run);
  cr_assert_eq(run_program(TRAIN_BIN, args, out, sizeof out), 0, "%s", out);
}

// Every [env] key of the schema has a ppo-eval --set rule (eval_set_kind): a key added without one
// was taken by default, and one that only concerns training then did nothing in an evaluation.
// The keys the rule's text names as refused are refused.
Test(eval_set, every_env_key_has_an_eval_rule) {
  int count = 0;
  const ConfigKey *rows = config_schema(&count);
  int env_keys = 0;
  for (int i = 0; i < count; i++) {
    if (strcmp(rows[i].section, "env") != 0) continue;
    env_keys++;
    cr_expect_neq(eval_set_kind("env", rows[i].key), EVAL_SET_UNLISTED,
                  "[env] %s has no ppo-eval --set rule: add it to eval_set_kind's env_taken or env_training "
                  "(ppo/eval_run.c), and to EVAL_SET_RULE and GUIDE section 6 if training only",
                  rows[i].key);
  }
  cr_expect_gt(env_keys, 40);
  static const char *const refused[] = {
      "n_envs",  "episode_length", "random_initial_position", "stratified_starts", "reward_scale",
      "dsr_eta", "reward_clip"};
  for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
    cr_expect(strstr(EVAL_SET_RULE, refused[k]), "the rule's text does not name %s", refused[k]);
    cr_expect_neq(eval_set_kind("env", refused[k]), EVAL_SET_TAKEN, "%s", refused[k]);
  }
  cr_expect(strstr(EVAL_SET_RULE, "shaping_*"));
  cr_expect_eq(eval_set_kind("env", "shaping_flat"), EVAL_SET_TRAINING);
  cr_expect_eq(eval_set_kind("env", "cost_mult"), EVAL_SET_TAKEN);
}

Test(eval_cli, backtests_a_checkpoint_into_every_output, .init = setup, .fini = teardown, .timeout = 240) {
  static char out[1 << 16];
  char cfg[512], run[512], args[4096], path[1024], dir1[512], dir2[512];
  snprintf(cfg, sizeof cfg, "%s/ev.ini", tmp_root);
  snprintf(run, sizeof run, "%s/run", tmp_root);
  write_text(cfg, train_config);
  snprintf(args, sizeof args, "'%s' --run-dir '%s' --quiet", cfg, run);
  cr_assert_eq(run_program(TRAIN_BIN, args, out, sizeof out), 0, "%s", out);
  // [eval] every = 1 logs the evaluation's metrics besides the one that picks best.h5.
  snprintf(path, sizeof path, "%s/metrics.csv", run);
  char *metrics = read_text(path, NULL);
  cr_assert_not_null(metrics);
  cr_expect(strstr(metrics, "eval/sharpe,eval/total_return,eval/cagr,eval/sortino,eval/max_drawdown,eval/calmar"),
            "%.300s", metrics);
  free(metrics);

  snprintf(dir1, sizeof dir1, "%s/eval1", tmp_root);
  snprintf(args, sizeof args, "--checkpoint '%s/best.h5' --split val --out '%s' --seeds 3 --random-seeds 4", run, dir1);
  cr_assert_eq(run_program(EVAL_BIN, args, out, sizeof out), 0, "%s", out);
  cr_expect(strstr(out, "agent greedy") && strstr(out, "buy and hold") && strstr(out, "oracle (zero cost)"), "%s", out);

  const char *files[] = {"report.json", "equity.csv", "trades.csv", "fills.csv", "equity.gp"};
  for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
    snprintf(path, sizeof path, "%s/%s", dir1, files[k]);
    cr_expect(exists(path), "%s", path);
  }
  if (system("command -v gnuplot > /dev/null 2>&1") == 0) {
    snprintf(path, sizeof path, "%s/equity.png", dir1);
    size_t len = 0;
    char *png = read_text(path, &len);
    cr_assert_not_null(png, "gnuplot is installed: %s expected", path);
    cr_expect(len > 1000 && memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0, "a PNG file");
    free(png);
  } else {
    cr_expect(strstr(out, "no equity.png: gnuplot is not installed"), "%s", out);
  }

  snprintf(path, sizeof path, "%s/report.json", dir1);
  char *report = read_text(path, NULL);
  cr_assert_not_null(report);
  for (const char *key = "\"format\": \"ppo-engine backtest report\""; key; key = NULL) cr_expect(strstr(report, key));
  const char *sections[] = {
      "\"checkpoint\"",          "\"fnv1a64\"",   "\"data\"",   "\"split\": \"val\"", "\"execution\"",
      "\"exec\": \"next_open\"", "\"cost_mult\"", "\"agent\"",  "\"sampled\"",        "\"baselines\"",
      "\"buy_and_hold\"",        "\"flat\"",      "\"random\"", "\"ma_rule\"",        "\"oracle_zero_cost\"",
      "\"cost_stress\"",         "\"psr0\"",      "\"dsr\"",    "\"sharpe_ci_lo\"",   "\"cost_spread_pct\"",
      "\"precision\": \"fp32\""};
  for (size_t k = 0; k < sizeof sections / sizeof sections[0]; k++)
    cr_expect(strstr(report, sections[k]), "report.json lacks %s", sections[k]);
  double total = json_number_after(report, "\"greedy\"", "total_return");
  double ledger_error = json_number_after(report, "\"greedy\"", "ledger_equity_max_abs_error");
  double n_trades = json_number_after(report, "\"greedy\"", "n_trades");
  cr_expect_lt(ledger_error, 1e-12);
  double bh_commission = json_number_after(report, "\"buy_and_hold\"", "cost_commission_pct");
  cr_expect_gt(bh_commission, 0.0);

  // equity.csv ends at E_N = 1 + total return; trades.csv's P&L adds up to the same.
  snprintf(path, sizeof path, "%s/equity.csv", dir1);
  char *equity = read_text(path, NULL);
  double last_equity, unused, pnl, last_pnl;
  int bars, trades;
  csv_scan(equity, 3, &last_equity, -1, &unused, &bars);
  cr_expect_float_eq(last_equity, 1.0 + total, 1e-12, "equity.csv %.15g, report %.15g", last_equity, 1.0 + total);
  snprintf(path, sizeof path, "%s/trades.csv", dir1);
  char *ledger = read_text(path, NULL);
  csv_scan(ledger, 9, &last_pnl, 9, &pnl, &trades);
  cr_expect_eq(trades, (int)n_trades);
  cr_expect_float_eq(1.0 + pnl, last_equity, 1e-12, "1 + sum of trades' net_pnl %.15g vs E_N %.15g", 1.0 + pnl,
                     last_equity);
  free(equity);
  free(ledger);

  // The same checkpoint, split and seeds give the same bytes.
  snprintf(dir2, sizeof dir2, "%s/eval2", tmp_root);
  snprintf(args, sizeof args,
           "--checkpoint '%s/best.h5' --split val --out '%s' --seeds 3 --random-seeds 4 --quiet "
           "--no-plot",
           run, dir2);
  cr_assert_eq(run_program(EVAL_BIN, args, out, sizeof out), 0, "%s", out);
  snprintf(path, sizeof path, "%s/report.json", dir2);
  expect_file_text(path, report, "evaluation is deterministic");
  free(report);
  snprintf(path, sizeof path, "%s/equity.png", dir2);
  cr_expect(!exists(path), "--no-plot");
  // --no-plot into dir1: its earlier equity.gp (and equity.png, here a stand-in where gnuplot is
  // missing) would not match the new report, and are removed.
  snprintf(path, sizeof path, "%s/equity.png", dir1);
  if (!exists(path)) write_text(path, "an earlier evaluation's picture");
  snprintf(args, sizeof args,
           "--checkpoint '%s/best.h5' --split val --out '%s' --seeds 3 --random-seeds 4 --quiet --no-plot", run, dir1);
  cr_assert_eq(run_program(EVAL_BIN, args, out, sizeof out), 0, "%s", out);
  cr_expect(!exists(path), "--no-plot removes the earlier equity.png");
  snprintf(path, sizeof path, "%s/equity.gp", dir1);
  cr_expect(!exists(path), "--no-plot removes the earlier equity.gp");
  snprintf(path, sizeof path, "%s/report.json", dir1);
  cr_expect(exists(path), "%s", path);

  // --config: the market and costs of another file (here 3 bp commission), the network of the checkpoint.
  char other[512], dir3[512];
  snprintf(other, sizeof other, "%s/other.ini", tmp_root);
  const char *at = strstr(train_config, "commission_bps = 0.5\n");
  cr_assert_not_null(at);
  char text[2048];
  snprintf(text, sizeof text, "%.*scommission_bps = 3\nslippage_vol_k = 0.25\nslippage_random_max_bps = 2\n%s",
           (int)(at - train_config), train_config, at + strlen("commission_bps = 0.5\n"));
  write_text(other, text);
  snprintf(dir3, sizeof dir3, "%s/eval3", tmp_root);
  snprintf(args, sizeof args,
           "--checkpoint '%s/best.h5' --config '%s' --split val --out '%s' --seeds 0 "
           "--random-seeds 1 --bootstrap 0 --quiet --no-plot --set run.memory_limit=1G",  // a limit it fits
           run, other, dir3);
  cr_assert_eq(run_program(EVAL_BIN, args, out, sizeof out), 0, "%s", out);
  snprintf(path, sizeof path, "%s/report.json", dir3);
  char *third = read_text(path, NULL);
  cr_assert_not_null(third);
  cr_expect_eq(json_number_after(third, "\"execution\"", "commission_bps"), 3.0);
  cr_expect_eq(json_number_after(third, "\"execution\"", "slippage_vol_k"), 0.25);  // every cost key is recorded
  cr_expect_eq(json_number_after(third, "\"execution\"", "slippage_random_max_bps"), 2.0);
  // Buy-and-hold takes the same two fills: 3 bp instead of 0.5 bp of commission on them.
  double ratio = json_number_after(third, "\"buy_and_hold\"", "cost_commission_pct") / bh_commission;
  cr_expect(ratio > 5.9 && ratio < 6.1, "commission 3 bp / 0.5 bp: %g", ratio);
  // The features are the training's (the other file changed costs only): recorded resolved.
  cr_expect_eq(json_number_after(third, "\"features\"", "count"), FEATURES_COUNT);
  cr_expect_eq(json_number_after(third, "\"features\"", "window"), 4);
  cr_expect_eq(json_number_after(third, "\"features\"", "ema_fast"), 12, "auto: 12 hourly");
  cr_expect(strstr(third, "\"as_trained\": true"), "%s", third);
  free(third);
  // Features computed otherwise than in training (an EMA span of --set) are warned of and recorded:
  // they were taken silently, the policy fed observations it was not trained on.
  snprintf(dir3, sizeof dir3, "%s/eval4", tmp_root);
  snprintf(args, sizeof args,
           "--checkpoint '%s/best.h5' --split val --out '%s' --seeds 0 --random-seeds 1 --bootstrap 0 --no-plot "
           "--set env.ema_fast=5",
           run, dir3);
  cr_assert_eq(run_program(EVAL_BIN, args, out, sizeof out), 0, "%s", out);
  cr_expect(strstr(out,
                   "[warn] ppo-eval: command line: --set #1: [env] ema_fast = 5 differs from the checkpoint's "
                   "12: the policy's observations are computed with it, not as in its training"),
            "%s", out);
  snprintf(path, sizeof path, "%s/report.json", dir3);
  third = read_text(path, NULL);
  cr_assert_not_null(third);
  cr_expect_eq(json_number_after(third, "\"features\"", "ema_fast"), 5);
  cr_expect(strstr(third, "\"as_trained\": false"), "%s", third);
  free(third);

  // The default output directory is the run's eval/<checkpoint>_<split>. --quiet prints no [info]
  // line either (device = auto on the CPU: an empty CUDA_VISIBLE_DEVICES hides any GPU).
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  for (int quiet = 0; quiet < 2; quiet++) {  // without --quiet first: the line is there to drop
    snprintf(args, sizeof args,
             "--checkpoint '%s/checkpoints/last.h5' %s --no-plot --seeds 0 --random-seeds 1 "
             "--bootstrap 0 --set run.device=auto",
             run, quiet ? "--quiet" : "");
    cr_assert_eq(run_program(EVAL_BIN, args, out, sizeof out), 0, "%s", out);
    if (quiet)
      cr_expect(!strstr(out, "[info]"), "--quiet printed an [info] line:\n%s", out);
    else
      cr_expect(strstr(out, "[info] device = auto"), "without --quiet, the device line:\n%s", out);
  }
  unsetenv("CUDA_VISIBLE_DEVICES");
  snprintf(path, sizeof path, "%s/eval/last_test/report.json", run);
  cr_expect(exists(path), "%s", path);
}

// ppo-eval under mpirun (or srun) is refused before it reads anything: each copy ran the whole
// backtest into the same output directory (found by the MPI helper).
Test(eval_cli, copies_started_by_a_launcher_are_refused) {
  static char out[4096];
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  int status = run_program(EVAL_BIN, "--checkpoint /nonexistent/last.h5 --no-plot", out, sizeof out);
  unsetenv("OMPI_COMM_WORLD_SIZE");
  cr_expect_eq(status, 2, "%s", out);
  cr_expect(strstr(out, "ppo-eval: mpirun started 2 processes; ppo-eval runs in one process"), "%s", out);
  cr_expect(!strstr(out, "nonexistent"), "refused before the checkpoint is read: %s", out);
}

// A Gaussian policy (continuous actions) and the discrete_k mode go through the same passes.
Test(eval_cli, continuous_and_discrete_k_policies, .init = setup, .fini = teardown, .timeout = 240) {
  static char out[1 << 16];
  char cfg[512], args[4096], path[1024];
  snprintf(cfg, sizeof cfg, "%s/ev.ini", tmp_root);
  write_text(cfg, train_config);
  const char *modes[] = {"--set env.action_mode=continuous", "--set env.action_mode=discrete_k --set env.n_levels=5"};
  for (int k = 0; k < 2; k++) {
    char run[512], dir[512];
    snprintf(run, sizeof run, "%s/run%d", tmp_root, k);
    snprintf(dir, sizeof dir, "%s/eval%d", tmp_root, k);
    snprintf(args, sizeof args, "'%s' --run-dir '%s' --quiet --set run.total_timesteps=512 %s", cfg, run, modes[k]);
    cr_assert_eq(run_program(TRAIN_BIN, args, out, sizeof out), 0, "%s", out);
    snprintf(args, sizeof args,
             "--checkpoint '%s/checkpoints/last.h5' --split val --out '%s' --seeds 2 "
             "--random-seeds 2 --bootstrap 50 --no-plot",
             run, dir);
    cr_assert_eq(run_program(EVAL_BIN, args, out, sizeof out), 0, "%s: %s", modes[k], out);
    snprintf(path, sizeof path, "%s/report.json", dir);
    char *report = read_text(path, NULL);
    cr_assert_not_null(report);
    cr_expect(strstr(report, k == 0 ? "\"action_mode\": \"continuous\"" : "\"action_mode\": \"discrete_k\""));
    const char *passes[] = {"\"greedy\"", "\"buy_and_hold\"", "\"ma_rule\"", "\"oracle_zero_cost\""};
    for (int j = 0; j < 4; j++)
      cr_expect_lt(json_number_after(report, passes[j], "ledger_equity_max_abs_error"), 1e-12, "%s %s", modes[k],
                   passes[j]);
    // Buy-and-hold holds the top level all along: one trade, exposure 1.
    cr_expect_eq(json_number_after(report, "\"buy_and_hold\"", "n_trades"), 1.0, "%s", modes[k]);
    cr_expect_eq(json_number_after(report, "\"buy_and_hold\"", "long_share"), 1.0, "%s", modes[k]);
    free(report);
    if (k == 0) {  // a finite log std beyond +-40 is refused, by index
      char bad[600], last[600], bad_dir[600];
      snprintf(last, sizeof last, "%s/checkpoints/last.h5", run);
      snprintf(bad, sizeof bad, "%s/huge_log_std.h5", tmp_root);
      snprintf(bad_dir, sizeof bad_dir, "%s/eval_bad", tmp_root);
      copy_with_element(last, bad, "params/log_std", 0, 3e38);
      snprintf(args, sizeof args, "--checkpoint '%s' --out '%s' --no-plot", bad, bad_dir);
      cr_expect_eq(run_program(EVAL_BIN, args, out, sizeof out), 2, "%s", out);
      cr_expect(strstr(out, "params/log_std[0] = 3e+38: allowed -40 .. 40"), "%s", out);
      cr_expect(!exists(bad_dir), "nothing written");
    }
  }
}

Test(eval_cli, bad_input_exits_2_and_writes_nothing, .init = setup, .fini = teardown, .timeout = 240) {
  static char out[1 << 16];
  char cfg[512], run[512], args[4096], dir[512];
  snprintf(dir, sizeof dir, "%s/out", tmp_root);
  train_small_run(cfg, sizeof cfg, run, sizeof run);
  char fifo[600];  // opening one blocked ppo-eval forever
  snprintf(fifo, sizeof fifo, "%s/fifo", run);
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  // train_config's networks (16 | 16, 3 actions) over a window of 8 bars of FEATURES_COUNT features
  // and the 5 agent-state entries, counted by hand (policy_parameter_count builds the message):
  // actor O x 16 + 16 and 16 x 3 + 3, critic O x 16 + 16 and 16 + 1 (4356 at 16 features)
  const int obs8 = 8 * FEATURES_COUNT + 5, params8 = 2 * (obs8 * 16 + 16) + (16 * 3 + 3) + (16 + 1);
  char window8[200];
  snprintf(window8, sizeof window8, "parameters, this configuration's %d (the evaluated [env] gives %d observations",
           params8, obs8);
  const struct {
    const char *args, *message;
  } cases[] = {
      {"--checkpoint '%s/nope.h5' --out '%s'", "nope.h5"},
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --split holdout", "--split holdout: train, val or test"},
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --seeds many", "--seeds many"},
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --set env.type=cartpole",
       "--set #1: [env] type = cartpole: the evaluation's env is cartpole, the checkpoint's ("},
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --config " PPO_SOURCE_DIR "/configs/cartpole.ini",
       "cartpole.ini:20: [env] type = cartpole: the evaluation's env is cartpole"},
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --set env.window=8", window8},
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --set env.nosuchkey=1", "nosuchkey"},
      // a space instead of '=': the value was taken for an argument of its own
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --set env.cost_mult 2",
       "ppo-eval: --set 'env.cost_mult': expected section.key=value"},
      // the network and its normalisation are the checkpoint's: these were silently ignored
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --set policy.activation=relu",
       "--set policy.activation=relu: the network ([policy], [run] precision), its normalisation ([normalize], [env] "
       "n_envs) and [ppo] come from the checkpoint"},
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --set policy.pi_layers=32,32",
       "--set policy.pi_layers=32,32: the network"},
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --set normalize.obs=false", "--set normalize.obs=false: the"},
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --set run.precision=fp16", "--set run.precision=fp16: the"},
      {"--walk-forward '%s' --out '%s' --set ppo.gamma=0.9", "--set ppo.gamma=0.9: the network"},
      // a space before the section passed the check, and the key was ignored
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --set ' policy.activation=relu'",
       "--set  policy.activation=relu: the network"},
      // keys of training alone were taken and had no effect
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --set run.name=x",
       "--set run.name=x: [run] name only concerns training and has no effect on an evaluation; " EVAL_SET_RULE},
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --set run.total_timesteps=5",
       "--set run.total_timesteps=5: [run] total_timesteps only concerns training"},
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --set amp.init_scale=2", "[amp] init_scale only concerns"},
      {"--walk-forward '%s' --out '%s' --set walk_forward.max_folds=2", "[walk_forward] max_folds only concerns"},
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --set eval.split=val",
       "[eval] split only concerns training and has no effect on an evaluation (the split evaluated is --split's)"},
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --set env.shaping_flat=1", "[env] shaping_flat only concerns"},
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --set env.episode_length=10",
       "[env] episode_length only concerns"},
      {"--checkpoint '%s/config.ini' --out '%s'", "config.ini"},
      {"--checkpoint '%s' --out '%s'", "is a directory: give a checkpoint file, e.g. RUN/best.h5"},
      {"--checkpoint '%s/fifo' --out '%s'", "fifo: is a FIFO (named pipe): a checkpoint must be a regular file"},
      {"--walk-forward '%s' --out '%s'", "no fold_NN directories"},
      {"--walk-forward '%s' --out '%s' --config configs/default.ini", "--config does not go with --walk-forward"},
      {"--walk-forward '%s' --out '%s' --set env.test_start=2018-01-02", "each fold's own"},
      {"--walk-forward '%s' --out '%s' --split val", "--split val does not go with --walk-forward"},
      {"--checkpoint '%s/checkpoints/last.h5' --out=", "--out needs a value"},
      {"--checkpoint '%s/checkpoints/last.h5' --out --quiet", "--out needs a value"},  // not a directory --quiet
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --out=elsewhere", "--out is given twice; give it once"},
      // [run] memory_limit applies to the evaluation's memory as to a training run's plan: it was
      // taken and ignored (only a synthetic market's bars were checked against it)
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --set run.memory_limit=2M",
       "--set #1: [run] memory_limit = 2MiB: the evaluation needs "},
      // a million passes over the longest split: terabytes, more than any machine running this
      {"--checkpoint '%s/checkpoints/last.h5' --out '%s' --split train --random-seeds 1000000",
       "GiB of memory available (fewer "},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char a[2048];
    snprintf(a, sizeof a, cases[k].args, run, dir);
    cr_expect_eq(run_program(EVAL_BIN, a, out, sizeof out), 2, "%s: %s", a, out);
    cr_expect(strstr(out, cases[k].message), "%s: expected \"%s\" in: %s", a, cases[k].message, out);
    cr_expect(!exists(dir), "%s: nothing written", a);
  }
  // A million sampled passes are refused before their policy batch is allocated: under a 1.5 GiB
  // address-space limit (their 1,000,005-row batch alone is about 2 GiB) the refusal still comes,
  // where the old order died in the policy's allocation (exit 1); and 20,000 passes, which this
  // machine's memory would hold, are refused too, for the limit (host_memory_info counts it: they
  // died in a CHECK, exit 1, on any machine). ASan's shadow memory cannot run under such a limit.
#ifndef __SANITIZE_ADDRESS__
  snprintf(args, sizeof args, "--as=1610612736 '%s' --checkpoint '%s/checkpoints/last.h5' --out '%s' --seeds 1000000",
           EVAL_BIN, run, dir);
  cr_expect_eq(run_program("prlimit", args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "1000046 passes of") && strstr(out, "(fewer passes: ppo-eval --seeds"), "%s", out);
  cr_expect(!exists(dir), "nothing written");
  snprintf(args, sizeof args, "--as=1610612736 '%s' --checkpoint '%s/checkpoints/last.h5' --out '%s' --seeds 20000",
           EVAL_BIN, run, dir);
  cr_expect_eq(run_program("prlimit", args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "20046 passes of") && strstr(out, "GiB of memory available"), "%s", out);
  cr_expect(!exists(dir), "nothing written");
#endif
  // --out so long that report.json's path fits but its temporary name does not: refused before the
  // backtest (it failed writing after it, exit 1, and an abort could remove the cut-off name).
  static char long_dir[4100], long_args[4700];
  int n = snprintf(long_dir, sizeof long_dir, "%s", tmp_root);
  while (n < 4080 - 201) n += snprintf(long_dir + n, sizeof long_dir - (size_t)n, "/%0200d", 0);
  n += snprintf(long_dir + n, sizeof long_dir - (size_t)n, "/%0*d", 4080 - n - 1, 0);
  cr_assert_eq(n, 4080);
  snprintf(long_args, sizeof long_args, "--checkpoint '%s/checkpoints/last.h5' --out '%s'", run, long_dir);
  cr_expect_eq(run_program(EVAL_BIN, long_args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "ppo-eval: path too long for a temporary name beside it (at most 4064 characters): /tmp/"),
            "%s", out);
  // --out naming a file, not a directory: refused (mkdir's EEXIST was taken for a directory, and
  // the write after the whole backtest failed with exit 1).
  char plain[600];
  snprintf(plain, sizeof plain, "%s/plain.txt", tmp_root);
  write_text(plain, "notes\n");
  snprintf(args, sizeof args, "--checkpoint '%s/checkpoints/last.h5' --out '%s'", run, plain);
  cr_expect_eq(run_program(EVAL_BIN, args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "plain.txt: exists and is not a directory (--out)"), "%s", out);
  snprintf(args, sizeof args, "--checkpoint '%s/checkpoints/last.h5' --out '%s/sub/dir'", run, plain);
  cr_expect_eq(run_program(EVAL_BIN, args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "plain.txt/sub/dir: cannot create directory: Not a directory (--out)"), "%s", out);
  cr_expect(!strstr(out, "agent greedy"), "refused before the backtest: %s", out);
  // A damaged checkpoint (a NaN weight) is named as such, without the window/action_mode hint that
  // only a network of another size calls for (it was appended to every loading error).
  char bad[600];
  snprintf(bad, sizeof bad, "%s/nan.h5", tmp_root);
  char last[600];
  snprintf(last, sizeof last, "%s/checkpoints/last.h5", run);
  copy_with_element(last, bad, "params/pi/bias0", 0, NAN);
  snprintf(args, sizeof args, "--checkpoint '%s' --out '%s'", bad, dir);
  cr_expect_eq(run_program(EVAL_BIN, args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "params/pi/bias0[0] = nan") && strstr(out, "a damaged checkpoint"), "%s", out);
  cr_expect(!strstr(out, "must be the training run's"), "%s", out);
  // Counters the report would show as read: refused as a resume refuses them (one iteration of
  // 256 steps x 2 envs), and root attributes that were never read.
  const struct {
    const char *attr;
    int64_t value;
    const char *message;
  } counters[] = {
      {"iteration", INT64_MIN, "iteration = -9223372036854775808: allowed 0 .."},
      {"timesteps", -1, "timesteps = -1: allowed 0 .."},
      {"timesteps", 1000, "timesteps = 1000 with 256 vector steps: must be vector steps x [env] n_envs x ranks"},
      {"vector_steps", 3, "root attributes vector_steps = 3"},
      {"obs_dim", 1, "root attributes obs_dim = 1"},
      {"ranks", -5, "ranks = -5: allowed 1 .."},
  };
  for (size_t k = 0; k < sizeof counters / sizeof counters[0]; k++) {
    snprintf(bad, sizeof bad, "%s/counter_%zu.h5", tmp_root, k);
    snprintf(args, sizeof args, "cp -L '%s' '%s'", last, bad);
    cr_assert_eq(system(args), 0);
    hid_t h = H5Fopen(bad, H5F_ACC_RDWR, H5P_DEFAULT);
    cr_assert_geq(h, 0);
    if (H5Aexists(h, counters[k].attr) > 0) cr_assert_geq(H5Adelete(h, counters[k].attr), 0);
    cr_assert_eq(h5io_attr_write_int64(h, "/", counters[k].attr, counters[k].value), 0);
    H5Fclose(h);
    snprintf(args, sizeof args, "--checkpoint '%s' --out '%s'", bad, dir);
    cr_expect_eq(run_program(EVAL_BIN, args, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, counters[k].message) && strstr(out, "a damaged checkpoint"), "%s: %s", counters[k].message,
              out);
    cr_expect(!exists(dir), "nothing written");
  }
}

// text with every run of white space made one space (in place); returns text.
static char *collapse_spaces(char *text) {
  char *w = text;
  for (const char *r = text; *r; r++)
    if (!isspace((unsigned char)*r))
      *w++ = *r;
    else if (w > text && w[-1] != ' ')
      *w++ = ' ';
  *w = '\0';
  return text;
}

// ppo-eval's --set rule is one: --help gave a deny list and the refusal an allow list that did not
// match it (and neither matched what ran). --help and docs/GUIDE.md section 6 state the refusal's words.
Test(eval_cli, the_set_rule_is_stated_alike_in_help_and_guide) {
  static char out[1 << 16];
  cr_assert_eq(run_program(EVAL_BIN, "--help", out, sizeof out), 0, "%s", out);
  cr_expect(strstr(collapse_spaces(out), EVAL_SET_RULE), "--help lacks \"%s\":\n%s", EVAL_SET_RULE, out);
  char *guide = read_text(PPO_SOURCE_DIR "/docs/GUIDE.md", NULL);
  cr_assert_not_null(guide);
  cr_expect(strstr(collapse_spaces(guide), EVAL_SET_RULE), "docs/GUIDE.md lacks \"%s\"", EVAL_SET_RULE);
  free(guide);
}

// ppo-eval reads from a checkpoint only what acting needs: the configuration, the parameters, the
// normalisation statistics and the counters its report shows (GUIDE 6). A checkpoint damaged only
// in the optimiser's moments, the loss scaler, the env states or the sampling seed evaluates as the
// undamaged one does, while ppo-train --resume refuses it.
Test(eval_cli, a_checkpoint_damaged_only_in_training_state_evaluates, .init = setup, .fini = teardown, .timeout = 240) {
  static char out[1 << 16];
  char cfg[512], run[512], args[4096], last[600], bad[700], dir[700], path[800];
  train_small_run(cfg, sizeof cfg, run, sizeof run);
  snprintf(last, sizeof last, "%s/checkpoints/last.h5", run);
  const char *options = "--seeds 1 --random-seeds 1 --bootstrap 0 --quiet --no-plot";
  snprintf(args, sizeof args, "--checkpoint '%s' --out '%s/whole' %s", last, tmp_root, options);
  cr_assert_eq(run_program(EVAL_BIN, args, out, sizeof out), 0, "%s", out);
  snprintf(path, sizeof path, "%s/whole/equity.csv", tmp_root);
  char *equity = read_text(path, NULL);
  cr_assert_not_null(equity);
  const struct {
    const char *dataset;
    double value;
  } damage[] = {{"optim/m", NAN},  {"optim/v", -1.0},          {"scaler/scale", -1.0}, {"scaler/growth_tracker", -1},
                {"envs/obs", NAN}, {"envs/episode_starts", 7}, {"rng/sample_seed", 5}};
  for (size_t k = 0; k < sizeof damage / sizeof damage[0]; k++) {
    snprintf(bad, sizeof bad, "%s/checkpoints/damaged_%zu.h5", run, k);
    copy_with_element(last, bad, damage[k].dataset, 0, damage[k].value);
    snprintf(dir, sizeof dir, "%s/eval_%zu", tmp_root, k);
    snprintf(args, sizeof args, "--checkpoint '%s' --out '%s' %s", bad, dir, options);
    cr_expect_eq(run_program(EVAL_BIN, args, out, sizeof out), 0, "%s: %s", damage[k].dataset, out);
    snprintf(path, sizeof path, "%s/equity.csv", dir);
    expect_file_text(path, equity, damage[k].dataset);
    snprintf(args, sizeof args, "--resume '%s' --quiet", bad);
    cr_expect_eq(run_program(TRAIN_BIN, args, out, sizeof out), 2, "%s: %s", damage[k].dataset, out);
    cr_expect(strstr(out, damage[k].dataset), "--resume names %s: %s", damage[k].dataset, out);
  }
  free(equity);
}

// The names in dir (dot files too, not . and ..), comma-separated, into out.
static void list_entries(const char *dir, char *out, size_t capacity) {
  out[0] = '\0';
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "%s", dir);
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && n < capacity)
      n += (size_t)snprintf(out + n, capacity - n, "%s%s", n ? "," : "", e->d_name);
  closedir(d);
}

// A directory (or a FIFO) where ppo-eval writes one of its files is bad input found before the
// backtest: it failed the rename after the whole evaluation with exit 1, report.json published
// when a CSV was the directory; equity.png's and equity.gp's were warnings after it.
Test(eval_cli, a_directory_at_an_output_file_is_refused_before_the_backtest, .init = setup, .fini = teardown,
     .timeout = 240) {
  static char out[1 << 16];
  char cfg[512], run[512], args[4096], dir[600], path[700], names[1024];
  train_small_run(cfg, sizeof cfg, run, sizeof run);
  const char *files[] = {"report.json", "equity.csv", "trades.csv", "fills.csv", "equity.gp", "equity.png"};
  for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
    snprintf(dir, sizeof dir, "%s/out_%zu", tmp_root, k);
    snprintf(path, sizeof path, "%s/%s", dir, files[k]);
    cr_assert_eq(make_directories(path), 0, "%s", error_message());
    snprintf(args, sizeof args,
             "--checkpoint '%s/checkpoints/last.h5' --out '%s' --seeds 1 --random-seeds 1 --bootstrap 0", run, dir);
    cr_expect_eq(run_program(EVAL_BIN, args, out, sizeof out), 2, "%s: %s", files[k], out);
    char message[900];
    snprintf(message, sizeof message,
             "ppo-eval: %s: is a directory, not a regular file: an output of ppo-eval is written there; move it "
             "away (--out)\n",
             path);
    cr_expect(strstr(out, message), "expected \"%s\" in: %s", message, out);
    cr_expect(!strstr(out, "agent greedy"), "refused before the backtest: %s", out);
    list_entries(dir, names, sizeof names);
    cr_expect_str_eq(names, files[k], "%s: nothing written", files[k]);
  }
  // Without the plot, equity.gp and equity.png are not written: a directory there is let be.
  snprintf(args, sizeof args,
           "--checkpoint '%s/checkpoints/last.h5' --out '%s/out_5' --seeds 1 --random-seeds 1 --bootstrap 0 --quiet "
           "--no-plot",
           run, tmp_root);
  cr_expect_eq(run_program(EVAL_BIN, args, out, sizeof out), 0, "%s", out);
  // A FIFO (mkfifo: no privileges needed) is refused alike; a symbolic link is replaced as a file is.
  snprintf(dir, sizeof dir, "%s/out_fifo", tmp_root);
  cr_assert_eq(make_directories(dir), 0, "%s", error_message());
  snprintf(path, sizeof path, "%s/fills.csv", dir);
  cr_assert_eq(mkfifo(path, 0600), 0);
  snprintf(args, sizeof args, "--checkpoint '%s/checkpoints/last.h5' --out '%s' --no-plot", run, dir);
  cr_expect_eq(run_program(EVAL_BIN, args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "fills.csv: is a FIFO (named pipe), not a regular file"), "%s", out);
  cr_expect(unlink(path) == 0 && symlink("elsewhere.csv", path) == 0, "%s", path);
  snprintf(args, sizeof args,
           "--checkpoint '%s/checkpoints/last.h5' --out '%s' --seeds 1 --random-seeds 1 --bootstrap 0 --quiet "
           "--no-plot",
           run, dir);
  cr_expect_eq(run_program(EVAL_BIN, args, out, sizeof out), 0, "%s", out);
  struct stat st;
  cr_expect(lstat(path, &st) == 0 && S_ISREG(st.st_mode), "the link is replaced by the file");
}

static long file_size(const char *path) {
  struct stat st;
  cr_assert_eq(stat(path, &st), 0, "%s", path);
  return (long)st.st_size;
}

// `args` for ppo-eval with RLIMIT_FSIZE at `limit` bytes and SIGXFSZ ignored: a write past it fails
// with EFBIG, as one on a full disk fails with ENOSPC, and the program goes on to handle it.
static int run_eval_with_file_limit(long limit, const char *args, char *out, size_t capacity) {
  static char command[6144];
  snprintf(command, sizeof command, "-c 'trap \"\" XFSZ; exec \"$@\"' sh prlimit --fsize=%ld '%s' %s", limit, EVAL_BIN,
           args);
  return run_program("/bin/sh", command, out, capacity);
}

// ppo-eval's files are one set: when one of them cannot be written (here equity.csv, past a file
// size limit, after trades.csv and fills.csv were), none is published and no temporary file is
// left; the output directory keeps the earlier evaluation's files as they were. report.json was
// written and published first, then the CSVs failed, leaving a report that its CSVs did not match.
Test(eval_cli, the_output_files_are_published_all_or_none, .init = setup, .fini = teardown, .timeout = 240) {
  static char out[1 << 16];
  char cfg[512], run[512], args[4096], dir[600], path[700], before[1024], after[1024];
  train_small_run(cfg, sizeof cfg, run, sizeof run);
  snprintf(dir, sizeof dir, "%s/out", tmp_root);
  snprintf(args, sizeof args,
           "--checkpoint '%s/checkpoints/last.h5' --out '%s' --seeds 1 --random-seeds 1 --bootstrap 0 --quiet "
           "--no-plot",
           run, dir);
  cr_assert_eq(run_program(EVAL_BIN, args, out, sizeof out), 0, "%s", out);
  list_entries(dir, before, sizeof before);
  snprintf(path, sizeof path, "%s/report.json", dir);
  char *report = read_text(path, NULL);
  cr_assert_not_null(report);
  long report_bytes = (long)strlen(report);
  snprintf(path, sizeof path, "%s/equity.csv", dir);
  long equity_bytes = file_size(path);  // the greedy agent's: the same with --seeds 2
  snprintf(path, sizeof path, "%s/trades.csv", dir);
  long trades_bytes = file_size(path);
  snprintf(path, sizeof path, "%s/fills.csv", dir);
  long fills_bytes = file_size(path);
  cr_assert(report_bytes < equity_bytes && trades_bytes < equity_bytes && fills_bytes < equity_bytes,
            "the case needs equity.csv the largest: %ld, %ld, %ld, %ld", report_bytes, equity_bytes, trades_bytes,
            fills_bytes);

  // Another evaluation (two sampled seeds: another report.json) into the same directory, with
  // every file but equity.csv within the limit.
  snprintf(args, sizeof args,
           "--checkpoint '%s/checkpoints/last.h5' --out '%s' --seeds 2 --random-seeds 1 --bootstrap 0 --quiet "
           "--no-plot",
           run, dir);
  cr_expect_eq(run_eval_with_file_limit(equity_bytes - 1, args, out, sizeof out), 1, "%s", out);
  cr_expect(strstr(out, "equity.csv: write failed: File too large"), "%s", out);
  list_entries(dir, after, sizeof after);
  cr_expect_str_eq(after, before, "the same files, no temporary one");
  snprintf(path, sizeof path, "%s/report.json", dir);
  expect_file_text(path, report, "the earlier report.json stays");
  free(report);

  // Into a new directory: nothing in it.
  snprintf(dir, sizeof dir, "%s/fresh", tmp_root);
  snprintf(args, sizeof args,
           "--checkpoint '%s/checkpoints/last.h5' --out '%s' --seeds 1 --random-seeds 1 --bootstrap 0 --quiet", run,
           dir);
  cr_expect_eq(run_eval_with_file_limit(equity_bytes - 1, args, out, sizeof out), 1, "%s", out);
  list_entries(dir, after, sizeof after);
  cr_expect_str_eq(after, "", "nothing published");
}

// equity.png is drawn by gnuplot after the set is published: ppo-eval stopped while it draws (here
// a stand-in gnuplot sends ppo-eval SIGTERM) left the earlier evaluation's equity.png beside the new
// report.json and equity.csv. The earlier picture is removed before the new set is published: no
// equity.png then, and no temporary file.
Test(eval_cli, a_stop_while_plotting_leaves_no_earlier_equity_png, .init = setup, .fini = teardown, .timeout = 240) {
  static char out[1 << 16];
  static char command[6144];
  char cfg[512], run[512], args[4096], dir[600], path[700], bin[600], names[1024];
  train_small_run(cfg, sizeof cfg, run, sizeof run);
  snprintf(dir, sizeof dir, "%s/out", tmp_root);
  snprintf(args, sizeof args,
           "--checkpoint '%s/checkpoints/last.h5' --out '%s' --seeds 1 --random-seeds 1 --bootstrap 0 --quiet", run,
           dir);
  cr_assert_eq(run_program(EVAL_BIN, args, out, sizeof out), 0, "%s", out);
  snprintf(path, sizeof path, "%s/equity.png", dir);
  if (!exists(path)) write_text(path, "an earlier evaluation's picture");  // gnuplot missing: a stand-in
  snprintf(bin, sizeof bin, "%s/bin", tmp_root);
  cr_assert_eq(mkdir(bin, 0777), 0);
  snprintf(path, sizeof path, "%s/gnuplot", bin);
  write_text(path, "#!/bin/sh\nkill -TERM $PPID\nsleep 30\n");
  cr_assert_eq(chmod(path, 0755), 0);
  // Another evaluation (twice the costs: another equity.csv) into the same directory.
  snprintf(command, sizeof command,
           "-c 'PATH=\"%s:$PATH\" \"$@\"; echo \"status $?\"' sh '%s' --checkpoint '%s/checkpoints/last.h5' --out '%s' "
           "--seeds 1 --random-seeds 1 --bootstrap 0 --quiet --set env.cost_mult=2",
           bin, EVAL_BIN, run, dir);
  cr_assert_eq(run_program("/bin/sh", command, out, sizeof out), 0, "%s", out);
  cr_expect(strstr(out, "status 143"), "ppo-eval ended by SIGTERM: %s", out);
  snprintf(path, sizeof path, "%s/report.json", dir);
  char *report = read_text(path, NULL);
  cr_assert_not_null(report);
  cr_expect_eq(json_number_after(report, "\"execution\"", "cost_mult"), 2.0, "the new report.json");
  free(report);
  snprintf(path, sizeof path, "%s/equity.png", dir);
  cr_expect(!exists(path), "the earlier equity.png is gone");
  list_entries(dir, names, sizeof names);
  cr_expect(!strstr(names, ".tmp."), "no temporary file: %s", names);
}

// Whether `text` holds a whitespace-separated word that printf makes of a NaN or an infinity.
static bool has_nan_word(const char *text) {
  static const char *const words[] = {"nan", "-nan", "inf", "-inf", "+inf", "+nan"};
  for (const char *p = text; *p;) {
    size_t n = strcspn(p, " \t\n,");
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
      if (n == strlen(words[k]) && strncasecmp(p, words[k], n) == 0) return true;
    p += n;
    if (*p) p++;
  }
  return false;
}

// Trains the tiny configuration `ini` (written as NAME.ini) for one iteration into tmp_root/run,
// then runs ppo-eval on its last checkpoint into tmp_root/eval (one sampled and one random seed, no
// bootstrap, no plot); ppo-eval's output in out, the evaluation directory in dir.
static void train_and_evaluate(const char *name, const char *ini, char *out, size_t capacity, char *dir,
                               size_t dir_capacity) {
  char cfg[512], run[512], args[4096];
  snprintf(cfg, sizeof cfg, "%s/%s.ini", tmp_root, name);
  write_text(cfg, ini);
  snprintf(run, sizeof run, "%s/run", tmp_root);
  snprintf(args, sizeof args, "'%s' --run-dir '%s' --quiet", cfg, run);
  cr_assert_eq(run_program(TRAIN_BIN, args, out, capacity), 0, "%s", out);
  snprintf(dir, dir_capacity, "%s/eval", tmp_root);
  snprintf(args, sizeof args,
           "--checkpoint '%s/checkpoints/last.h5' --out '%s' --seeds 1 --random-seeds 1 --bootstrap 0 --no-plot", run,
           dir);
  cr_assert_eq(run_program(EVAL_BIN, args, out, capacity), 0, "%s", out);
}

// Trains and evaluates on a flat price series (3000 hourly bars at 1.0) with no spread, commission
// or slippage, and `extra_env` lines in [env].
static void flat_market_run(const char *name, const char *extra_env, char *out, size_t capacity, char *dir,
                            size_t dir_capacity) {
  char csv[512], text[1024];
  snprintf(csv, sizeof csv, "%s/FLAT_1H.csv", tmp_root);
  FILE *f = fopen(csv, "w");
  cr_assert_not_null(f);
  fputs("time,open,high,low,close,volume\n", f);
  for (int i = 0; i < 3000; i++) {  // hourly bars from 2019-01-01, all at 1.0
    int64_t ts = 1546300800 + 3600LL * i;
    fprintf(f, "%s,1.0,1.0,1.0,1.0,100\n", utc_format(ts, false, text, sizeof text));
  }
  fclose(f);
  snprintf(text, sizeof text,
           "[run]\nname = %s\nseed = 5\ndevice = cpu\nthreads = 1\ntotal_timesteps = 256\ncheckpoint_every = 0\n"
           "[env]\ntype = trading\ndata = %s\nn_envs = 2\nepisode_length = 100\nwindow = 4\n"
           "use_data_spread = false\nhalf_spread_bps = 0\ncommission_bps = 0\nslippage_bps = 0\n%s"
           "[ppo]\nn_steps = 128\nbatch_size = 128\nn_epochs = 1\n[policy]\npi_layers = 8\nvf_layers = 8\n",
           name, csv, extra_env);
  train_and_evaluate(name, text, out, capacity, dir, dir_capacity);
}

// A flat price series at zero cost: every return is 0, so no Sharpe and no Sortino (report.json
// has null). The summary says n/a for them everywhere, the cost-stress lines included (they printed
// "Sharpe -nan").
Test(eval_cli, a_flat_market_prints_n_a_for_undefined_metrics, .init = setup, .fini = teardown, .timeout = 240) {
  static char out[1 << 16];
  char dir[512], text[1024];
  flat_market_run("flat", "", out, sizeof out, dir, sizeof dir);
  cr_expect(strstr(out, "cost x1    agent greedy: total 0.00 %, Sharpe n/a\n"), "%s", out);
  cr_expect(!has_nan_word(out), "printf's nan or inf in: %s", out);
  snprintf(text, sizeof text, "%s/report.json", dir);
  char *report = read_text(text, NULL);
  cr_assert_not_null(report);
  cr_expect(isnan(json_number_after(report, "\"cost_stress\"", "sharpe")), "null in report.json");
  free(report);
}

// [env] cost_mult = 0: the stress factors 0, 1 and 2 all scale no cost, so the summary prints one
// stress line and says why (it printed "cost x0" three times).
Test(eval_cli, no_cost_prints_one_cost_stress_line, .init = setup, .fini = teardown, .timeout = 240) {
  static char out[1 << 16];
  char dir[512];
  flat_market_run("nocost", "cost_mult = 0\n", out, sizeof out, dir, sizeof dir);
  const char *first = strstr(out, "cost x0    agent greedy:");
  cr_assert(first, "%s", out);
  cr_expect(!strstr(first + 1, "cost x0    agent greedy:"), "a second cost x0 line: %s", out);
  cr_expect(strstr(out, "note: [env] cost_mult = 0: the cost stress has no cost to scale\n"), "%s", out);
}

// Minute bars: the zero-cost oracle's CAGR over a test split of a few hours is astronomical but
// finite (about 1e90 %). The table gives it in exponent notation and every row keeps the header's
// width (the 91 digits pushed the rest of the oracle's row out of line); report.json keeps it exact.
Test(eval_cli, a_huge_metric_keeps_the_table_aligned, .init = setup, .fini = teardown, .timeout = 240) {
  static char out[1 << 16];
  char dir[512], path[1024];
  train_and_evaluate(
      "minute",
      "[run]\nname = minute\nseed = 5\ndevice = cpu\nthreads = 1\ntotal_timesteps = 256\n"
      "checkpoint_every = 0\n"
      "[env]\ntype = synthetic\nsynthetic_model = gbm\nsynthetic_bars = 6000\nsynthetic_bar_seconds = 60\n"
      "synthetic_sigma = 0.0005\nn_envs = 2\nepisode_length = 100\nwindow = 4\n"
      "[ppo]\nn_steps = 128\nbatch_size = 128\nn_epochs = 1\n[policy]\npi_layers = 8\nvf_layers = 8\n",
      out, sizeof out, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/report.json", dir);
  char *report = read_text(path, NULL);
  cr_assert_not_null(report);
  double cagr = json_number_after(report, "\"oracle_zero_cost\"", "cagr");
  free(report);
  cr_assert_gt(cagr, 1e20, "the case needs a huge CAGR: %g", cagr);  // as a fraction in report.json
  const char *header = strstr(out, "strategy ");
  cr_assert_not_null(header, "%s", out);
  const size_t width = strcspn(header, "\n");
  const char *rows[] = {"agent greedy ", "agent sampled (mean) ", "buy and hold ", "flat ", "random (mean) ",
                        "MA rule ",      "oracle (zero cost) "};
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    char start[64];
    snprintf(start, sizeof start, "\n%s", rows[k]);
    const char *line = strstr(out, start);
    cr_assert_not_null(line, "no row %s in: %s", rows[k], out);
    line++;
    cr_expect_eq(strcspn(line, "\n"), width, "not as wide as the header: %.*s\n%s", (int)strcspn(line, "\n"), line,
                 out);
  }
  cr_expect(strstr(strstr(out, "\noracle (zero cost) "), "e+"), "exponent notation: %s", out);
}

// A symbol without cost defaults (SYNTH-GBM): the summary and report.json say which auto costs are
// generic guesses and which key sets each; the commission the configuration set is not one.
Test(eval_cli, generic_cost_defaults_are_reported, .init = setup, .fini = teardown, .timeout = 240) {
  static char out[1 << 16];
  char dir[512], path[1024];
  train_and_evaluate("generic",
                     "[run]\nname = generic\nseed = 5\ndevice = cpu\nthreads = 1\ntotal_timesteps = 256\n"
                     "checkpoint_every = 0\n"
                     "[env]\ntype = synthetic\nsynthetic_model = gbm\nsynthetic_bars = 3000\ncommission_bps = 0.2\n"
                     "n_envs = 2\nepisode_length = 100\nwindow = 4\n"
                     "[ppo]\nn_steps = 128\nbatch_size = 128\nn_epochs = 1\n[policy]\npi_layers = 8\nvf_layers = 8\n",
                     out, sizeof out, dir, sizeof dir);
  cr_expect(strstr(out,
                   "\nnote: half spread 1 bp is a generic default for an unknown symbol (SYNTH-GBM has no cost "
                   "defaults of its own): set [env] half_spread_bps to this instrument's cost\n") &&
                strstr(out, "\nnote: slippage 0.5 bp is a generic default for an unknown symbol (SYNTH-GBM") &&
                strstr(out, "set [env] slippage_bps to this instrument's cost\n") && !strstr(out, "commission 0.2"),
            "%s", out);
  snprintf(path, sizeof path, "%s/report.json", dir);
  char *report = read_text(path, NULL);
  cr_assert_not_null(report);
  cr_expect(strstr(report, "\"generic_cost_defaults\": [\n      \"half_spread_bps\",\n      \"slippage_bps\"\n    ]"),
            "%s", report);
  free(report);
}

// Three one-month folds of a synthetic market (as in test_walk_forward.c), then the walk-forward
// report: one row per fold, the chained curve starts at 1 and ends at the product of the folds'
// growth, and its report.json.
// Column `col` (0-based) of every row of a CSV text (the header skipped) into out; the row count.
static int csv_column(const char *text, int col, double *out, int capacity) {
  int rows = 0;
  for (const char *line = strchr(text, '\n'); line && line[1] && rows < capacity; line = strchr(line, '\n')) {
    const char *f = ++line;
    for (int c = 0; c < col; c++) f = strchr(f, ',') + 1;
    out[rows++] = strtod(f, NULL);
  }
  return rows;
}

// The chained out-of-sample files of a walk-forward against its folds' own evaluations, from the
// definition "a fold starts at the previous fold's final equity": fold k's bar j is at
// E_k[j] * start_k / E_k[0] (start_k: the chain's equity where fold k begins), and so is every
// amount of money (costs, notional, a trade's net P&L) fold k booked; the drawdown columns are
// 1 - E / (running peak of E) of their own equity columns.
static void expect_chain_of_folds(const char *run, int folds, const char *chain_report) {
  enum { CAP = 1 << 14 };
  static double oos[4][CAP], eq[CAP], bh[CAP], pnl[CAP];
  char path[1024];
  snprintf(path, sizeof path, "%s/walk_forward/oos_equity.csv", run);
  char *text = read_text(path, NULL);
  cr_assert_not_null(text, "%s", path);
  int n = csv_column(text, 3, oos[0], CAP);
  csv_column(text, 4, oos[1], CAP);
  csv_column(text, 5, oos[2], CAP);
  csv_column(text, 6, oos[3], CAP);
  free(text);
  double peak = oos[0][0], bh_peak = oos[2][0];
  for (int i = 0; i < n; i++) {
    if (oos[0][i] > peak) peak = oos[0][i];
    if (oos[2][i] > bh_peak) bh_peak = oos[2][i];
    cr_expect_float_eq(oos[1][i], 1.0 - oos[0][i] / peak, 1e-9, "row %d: drawdown", i);
    cr_expect_float_eq(oos[3][i], 1.0 - oos[2][i] / bh_peak, 1e-9, "row %d: buy-and-hold drawdown", i);
  }
  const char *cost_keys[4] = {"cost_spread_pct", "cost_slippage_pct", "cost_commission_pct", "cost_financing_pct"};
  double cost_pct[4] = {0}, notional = 0, equity_sum = 0, wins = 0, losses = 0;
  double start = oos[0][0], bh_start = oos[2][0];
  int row = 0, trades = 0;
  for (int k = 0; k < folds; k++) {
    snprintf(path, sizeof path, "%s/fold_%02d/eval/test/equity.csv", run, k);
    text = read_text(path, NULL);
    cr_assert_not_null(text, "%s", path);
    int m = csv_column(text, 3, eq, CAP);
    csv_column(text, 10, bh, CAP);
    free(text);
    const double scale = start / eq[0], bh_scale = bh_start / bh[0];
    for (int j = k == 0 ? 0 : 1; j < m; j++, row++) {
      cr_assert_lt(row, n, "oos_equity.csv has fewer rows than the folds' equity.csv");
      cr_expect_float_eq(oos[0][row], eq[j] * scale, 1e-9 * scale, "fold %d bar %d: equity", k, j);
      cr_expect_float_eq(oos[2][row], bh[j] * bh_scale, 1e-9 * bh_scale, "fold %d bar %d: buy-and-hold", k, j);
    }
    double fold_equity_sum = 0;
    for (int j = 0; j < m; j++) fold_equity_sum += eq[j];
    snprintf(path, sizeof path, "%s/fold_%02d/eval/test/report.json", run, k);
    text = read_text(path, NULL);
    cr_assert_not_null(text, "%s", path);
    for (int c = 0; c < 4; c++) cost_pct[c] += json_number_after(text, "\"greedy\"", cost_keys[c]) * start / oos[0][0];
    // notional_turnover = sum of notional / mean equity (its N + 1 points)
    notional += json_number_after(text, "\"greedy\"", "notional_turnover") * fold_equity_sum / m * scale;
    free(text);
    snprintf(path, sizeof path, "%s/fold_%02d/eval/test/trades.csv", run, k);
    text = read_text(path, NULL);
    cr_assert_not_null(text, "%s", path);
    int t = csv_column(text, 9, pnl, CAP);
    free(text);
    for (int j = 0; j < t; j++) *(pnl[j] > 0 ? &wins : &losses) += pnl[j] * scale;
    trades += t;
    start = eq[m - 1] * scale;
    bh_start = bh[m - 1] * bh_scale;
  }
  cr_expect_eq(row, n, "the chain is the folds' bars");
  for (int i = 0; i < n; i++) equity_sum += oos[0][i];
  for (int c = 0; c < 4; c++)
    cr_expect_float_eq(json_number_after(chain_report, "\"agent_greedy\"", cost_keys[c]), cost_pct[c],
                       1e-9 * (1 + fabs(cost_pct[c])), "chained %s", cost_keys[c]);
  cr_expect_float_eq(json_number_after(chain_report, "\"agent_greedy\"", "notional_turnover"),
                     notional / (equity_sum / n), 1e-9 * (1 + notional), "chained notional_turnover");
  cr_expect_eq(json_number_after(chain_report, "\"agent_greedy\"", "n_trades"), trades);
  cr_assert(trades > 0 && wins > 0 && losses < 0, "the agent traded with wins and losses (%d trades)", trades);
  cr_expect_float_eq(json_number_after(chain_report, "\"agent_greedy\"", "profit_factor"), wins / -losses,
                     1e-9 * (wins / -losses), "chained profit_factor");
}

Test(eval_cli, walk_forward_chains_the_folds_out_of_sample, .init = setup, .fini = teardown, .timeout = 300) {
  static char out[1 << 17];
  char cfg[512], run[512], args[4096], path[1024];
  snprintf(cfg, sizeof cfg, "%s/wf.ini", tmp_root);
  snprintf(run, sizeof run, "%s/run", tmp_root);
  write_text(cfg,
             "[run]\nname = wf\nseed = 3\ndevice = cpu\nthreads = 1\ntotal_timesteps = 256\n"
             "[env]\ntype = synthetic\nsynthetic_bars = 4700\nn_envs = 2\nepisode_length = 50\nwindow = 4\n"
             "[ppo]\nn_steps = 64\nbatch_size = 64\nn_epochs = 1\n"
             "[policy]\npi_layers = 8\nvf_layers = 8\n"
             "[walk_forward]\ntrain_months = 2\nval_months = 1\ntest_months = 1\nstep_months = 1\n");
  snprintf(args, sizeof args, "--walk-forward '%s' --run-dir '%s' --quiet", cfg, run);
  cr_assert_eq(run_program(TRAIN_BIN, args, out, sizeof out), 0, "%s", out);
  // device = auto on the CPU (an empty CUDA_VISIBLE_DEVICES hides any GPU): said once, not per fold
  snprintf(args, sizeof args, "--walk-forward '%s' --seeds 1 --random-seeds 2 --bootstrap 100 --set run.device=auto",
           run);
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  cr_assert_eq(run_program(EVAL_BIN, args, out, sizeof out), 0, "%s", out);
  unsetenv("CUDA_VISIBLE_DEVICES");
  cr_expect(strstr(out, "walk-forward (3 folds"), "%s", out);
  const char *said = strstr(out, "[info] device = auto: the CPU backend");
  cr_expect(said && !strstr(said + 1, "[info] device = auto"), "the device line once:\n%s", out);

  snprintf(path, sizeof path, "%s/walk_forward/folds.csv", run);
  char *folds = read_text(path, NULL);
  cr_assert_not_null(folds, "%s", path);
  double growth = 1.0;
  int rows = 0;
  for (const char *line = strchr(folds, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
    const char *f = line + 1;
    for (int c = 0; c < 5; c++) f = strchr(f, ',') + 1;  // total_return is column 5
    growth *= 1.0 + strtod(f, NULL);
    rows++;
  }
  cr_expect_eq(rows, 3, "%s", folds);
  cr_expect(strstr(folds, "fold_00,") && strstr(folds, "fold_02,"), "%s", folds);
  free(folds);

  snprintf(path, sizeof path, "%s/walk_forward/oos_equity.csv", run);
  char *oos = read_text(path, NULL);
  cr_assert_not_null(oos, "%s", path);
  const char *first = strchr(oos, '\n') + 1;
  for (int c = 0; c < 3; c++) first = strchr(first, ',') + 1;
  cr_expect_eq(strtod(first, NULL), 1.0, "the chain starts at 1");
  double last, unused;
  int bars;
  csv_scan(oos, 3, &last, -1, &unused, &bars);
  cr_expect_float_eq(last, growth, 1e-8, "chained end %.12g vs product of fold growths %.12g", last, growth);
  free(oos);
  for (int k = 0; k < 3; k++) {
    snprintf(path, sizeof path, "%s/fold_%02d/eval/test/report.json", run, k);
    cr_expect(exists(path), "%s", path);
  }
  snprintf(path, sizeof path, "%s/walk_forward/report.json", run);
  char *report = read_text(path, NULL);
  cr_assert_not_null(report);
  cr_expect_float_eq(json_number_after(report, "\"agent_greedy\"", "total_return"), growth - 1.0, 1e-8);
  expect_chain_of_folds(run, 3, report);
  // The chained metrics use [eval]'s risk-free rate, as each fold's do (they used the defaults):
  // Sharpe = mean(r - rf/P) / sd(r) sqrt(P), so the excess return lowers it by rf / (sd(r) sqrt(P)) = rf / vol.
  double sharpe0 = json_number_after(report, "\"buy_and_hold\"", "sharpe");
  double vol = json_number_after(report, "\"buy_and_hold\"", "ann_vol");
  free(report);
  snprintf(args, sizeof args,
           "--walk-forward '%s' --seeds 1 --random-seeds 2 --bootstrap 100 --quiet --out '%s/rf' --set "
           "eval.risk_free_rate=0.2",
           run, tmp_root);
  cr_assert_eq(run_program(EVAL_BIN, args, out, sizeof out), 0, "%s", out);
  snprintf(path, sizeof path, "%s/rf/report.json", tmp_root);
  report = read_text(path, NULL);
  cr_assert_not_null(report, "%s", path);
  double sharpe_rf = json_number_after(report, "\"buy_and_hold\"", "sharpe");
  cr_expect_float_eq(sharpe0 - sharpe_rf, 0.2 / vol, 1e-9, "Sharpe %g at rf 0, %g at rf 0.2, volatility %g", sharpe0,
                     sharpe_rf, vol);
  // The walk-forward's files are one set too: oos_equity.csv past a file size limit publishes none,
  // folds.csv (whose Sharpe ratios a risk-free rate of 0 changes) included.
  char rf_dir[600], names_before[512], names_after[512];
  snprintf(rf_dir, sizeof rf_dir, "%s/rf", tmp_root);
  snprintf(path, sizeof path, "%s/folds.csv", rf_dir);
  char *folds_rf = read_text(path, NULL);
  cr_assert_not_null(folds_rf);
  snprintf(path, sizeof path, "%s/oos_equity.csv", rf_dir);
  list_entries(rf_dir, names_before, sizeof names_before);
  snprintf(args, sizeof args,
           "--walk-forward '%s' --seeds 1 --random-seeds 2 --bootstrap 100 --quiet --no-plot --out '%s'", run, rf_dir);
  cr_expect_eq(run_eval_with_file_limit(file_size(path) - 1, args, out, sizeof out), 1, "%s", out);
  cr_expect(strstr(out, "oos_equity.csv: write failed: File too large"), "%s", out);
  list_entries(rf_dir, names_after, sizeof names_after);
  cr_expect_str_eq(names_after, names_before, "the same files, no temporary one");
  snprintf(path, sizeof path, "%s/folds.csv", rf_dir);
  expect_file_text(path, folds_rf, "folds.csv as the risk-free run wrote it");
  free(folds_rf);
  snprintf(path, sizeof path, "%s/report.json", rf_dir);
  char *report_after = read_text(path, NULL);
  cr_assert_not_null(report_after);
  cr_expect_eq(json_number_after(report_after, "\"buy_and_hold\"", "sharpe"), sharpe_rf, "report.json unchanged");
  free(report_after);
  free(report);
  // A fold linked under a later name would chain fold 0's test bars a second time: refused.
  char link[1024];
  snprintf(link, sizeof link, "%s/fold_03", run);
  cr_assert_eq(symlink("fold_00", link), 0, "cannot link %s", link);
  snprintf(args, sizeof args, "--walk-forward '%s' --seeds 1 --random-seeds 2 --bootstrap 100 --quiet --out '%s/dup'",
           run, tmp_root);
  cr_expect_eq(run_program(EVAL_BIN, args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "fold_03's test window starts at") && strstr(out, "the folds overlap"), "%s", out);
  cr_assert_eq(unlink(link), 0);
  // A directory where the last fold's evaluation writes trades.csv: refused before the first fold
  // is evaluated (it failed after two folds' backtests, with exit 1).
  snprintf(path, sizeof path, "%s/fold_02/eval/test/trades.csv", run);
  cr_assert_eq(unlink(path), 0, "%s", path);
  cr_assert_eq(mkdir(path, 0777), 0, "%s", path);
  snprintf(args, sizeof args, "--walk-forward '%s' --seeds 1 --random-seeds 2 --bootstrap 100 --quiet --out '%s/dir'",
           run, tmp_root);
  cr_expect_eq(run_program(EVAL_BIN, args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "fold_02/eval/test/trades.csv: is a directory, not a regular file") &&
                strstr(out, "(fold fold_02's evaluation)"),
            "%s", out);
  snprintf(path, sizeof path, "%s/dir", tmp_root);
  cr_expect(!exists(path), "refused before anything is written: %s", path);
}
