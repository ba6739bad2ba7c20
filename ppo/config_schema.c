// ppo/config_schema.c: the one table of configuration keys (see config.h).
//
// Defaults come from PPO_SEMANTICS.md (section 1: SB3's PPO; section 5: torch GradScaler;
// section 6: VecNormalize) and TRADING_ENV.md (sections 2-8). "auto" marks per-instrument
// defaults that the env resolves from the data (hourly vs daily, FX/gold vs stocks).
// Each row's field is checked against its C type at compile time (FIELD below), so a row cannot
// point at a field of another type.
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ppo/config.h"

// offsetof(Config, sec.key), and a compile error unless that field has type `ctype`.
#define FIELD(sec, key, ctype) \
  (offsetof(Config, sec.key) + 0 * sizeof(char[_Generic(((Config *)0)->sec.key, ctype : 1, default : -1)]))
// Enums have no single C type to name; they are stored and read as int.
#define ENUM_FIELD(sec, key) \
  (offsetof(Config, sec.key) + 0 * sizeof(char[sizeof(((Config *)0)->sec.key) == sizeof(int) ? 1 : -1]))

#define INF HUGE_VAL
#define ROW(sec, key, type, def, lo, hi, flags, choices, doc, offset) \
  { #sec, #key, type, def, lo, hi, flags, choices, doc, offset }
#define K_INT(sec, key, def, lo, hi, doc) \
  ROW(sec, key, CONFIG_TYPE_INT, def, lo, hi, 0, NULL, doc, FIELD(sec, key, int64_t))
#define K_INT_ODD(sec, key, def, lo, hi, doc) \
  ROW(sec, key, CONFIG_TYPE_INT, def, lo, hi, CONFIG_FLAG_ODD, NULL, doc, FIELD(sec, key, int64_t))
#define K_REAL(sec, key, def, lo, hi, flags, doc) \
  ROW(sec, key, CONFIG_TYPE_REAL, def, lo, hi, flags, NULL, doc, FIELD(sec, key, double))
#define K_BOOL(sec, key, def, doc) ROW(sec, key, CONFIG_TYPE_BOOL, def, 0, 0, 0, NULL, doc, FIELD(sec, key, bool))
#define K_NAME(sec, key, def, doc) ROW(sec, key, CONFIG_TYPE_NAME, def, 0, 0, 0, NULL, doc, FIELD(sec, key, char *))
#define K_PATH(sec, key, def, doc) ROW(sec, key, CONFIG_TYPE_PATH, def, 0, 0, 0, NULL, doc, FIELD(sec, key, char *))
#define K_CHOICE(sec, key, def, choices, doc) \
  ROW(sec, key, CONFIG_TYPE_CHOICE, def, 0, 0, 0, choices, doc, ENUM_FIELD(sec, key))
#define K_LIST(sec, key, def, lo, hi, doc) \
  ROW(sec, key, CONFIG_TYPE_INT_LIST, def, lo, hi, 0, NULL, doc, FIELD(sec, key, ConfigIntList))
#define K_DATE(sec, key, doc) ROW(sec, key, CONFIG_TYPE_DATE, "auto", 0, 0, 0, NULL, doc, FIELD(sec, key, ConfigDate))
#define K_AUTO_REAL(sec, key, lo, hi, flags, doc) \
  ROW(sec, key, CONFIG_TYPE_AUTO_REAL, "auto", lo, hi, flags, NULL, doc, FIELD(sec, key, ConfigAutoReal))
#define K_AUTO_INT(sec, key, lo, hi, doc) \
  ROW(sec, key, CONFIG_TYPE_AUTO_INT, "auto", lo, hi, 0, NULL, doc, FIELD(sec, key, ConfigAutoInt))
#define K_AUTO_BOOL(sec, key, doc) \
  ROW(sec, key, CONFIG_TYPE_AUTO_BOOL, "auto", 0, 0, 0, NULL, doc, FIELD(sec, key, ConfigAutoBool))
#define K_NONE_REAL(sec, key, lo, hi, flags, doc) \
  ROW(sec, key, CONFIG_TYPE_OPTIONAL_REAL, "none", lo, hi, flags, NULL, doc, FIELD(sec, key, ConfigOptionalReal))
#define K_BYTES(sec, key, def, hi, doc) \
  ROW(sec, key, CONFIG_TYPE_BYTES, def, 0, hi, 0, NULL, doc, FIELD(sec, key, int64_t))

#define MIN_OPEN CONFIG_FLAG_MIN_OPEN
#define MAX_OPEN CONFIG_FLAG_MAX_OPEN
#define BOTH_OPEN (CONFIG_FLAG_MIN_OPEN | CONFIG_FLAG_MAX_OPEN)
// Positive reals the trainer rounds to float, or clips a float with: at least CONFIG_FLOAT_MIN.
#define F32 CONFIG_FLAG_FLOAT
#define F32_MIN CONFIG_FLOAT_MIN

// Choice names, in enum order (the static asserts keep the two in step).
static const char *const device_names[] = {"auto", "cpu", "cuda", NULL};
static const char *const precision_names[] = {"fp32", "fp16", "bf16", NULL};
static const char *const env_type_names[] = {"trading", "cartpole", "synthetic", NULL};
static const char *const exec_names[] = {"next_open", "close", NULL};
static const char *const action_mode_names[] = {"discrete3", "discrete_k", "continuous", "toggle2", NULL};
static const char *const reward_names[] = {"log_return", "pnl", "dsr", "d3r", "vol_target", NULL};
static const char *const synthetic_model_names[] = {"gbm", "regime", "ar1", NULL};
static const char *const lr_schedule_names[] = {"constant", "linear", NULL};
static const char *const activation_names[] = {"tanh", "relu", NULL};
static const char *const split_names[] = {"val", "test", NULL};
static const char *const metric_names[] = {"sharpe", "sortino", "total_return", "calmar", NULL};

#define NAMES_MATCH(names, last) _Static_assert(sizeof names / sizeof *names == (last) + 2, #names " out of step")
NAMES_MATCH(device_names, CONFIG_DEVICE_CUDA);
NAMES_MATCH(precision_names, CONFIG_PRECISION_BF16);
NAMES_MATCH(env_type_names, CONFIG_ENV_SYNTHETIC);
NAMES_MATCH(exec_names, CONFIG_EXEC_CLOSE);
NAMES_MATCH(action_mode_names, CONFIG_ACTION_TOGGLE2);
NAMES_MATCH(reward_names, CONFIG_REWARD_VOL_TARGET);
NAMES_MATCH(synthetic_model_names, CONFIG_SYNTHETIC_AR1);
NAMES_MATCH(lr_schedule_names, CONFIG_LR_LINEAR);
NAMES_MATCH(activation_names, CONFIG_ACTIVATION_RELU);
NAMES_MATCH(split_names, CONFIG_SPLIT_TEST);
NAMES_MATCH(metric_names, CONFIG_METRIC_CALMAR);

static const ConfigKey config_keys[] = {
    // --- [run] ---------------------------------------------------------------------------------
    K_NAME(run, name, "default", "run name; the run writes to run_dir/name"),
    K_INT(run, seed, "1", 0, 1e18, "base seed of every random stream (envs, sampling, minibatches, init)"),
    K_INT(run, total_timesteps, "1_000_000", 1, 1e15, "env steps to train, summed over all envs"),
    K_CHOICE(run, device, "auto", device_names, "compute backend; auto = cuda when a GPU is usable, else cpu"),
    K_INT(run, threads, "0", 0, 4096, "CPU threads for the envs and the CPU backend; 0 = all cores"),
    K_CHOICE(run, precision, "fp32", precision_names,
             "compute precision; fp16/bf16 keep FP32 master weights, fp16 adds loss scaling ([amp])"),
    K_BOOL(run, tf32, "false",
           "cuda, precision fp32: GEMMs may round their inputs to TF32 (10-bit mantissa) on the tensor cores; "
           "no effect on the cpu"),
    K_PATH(run, run_dir, "runs", "parent directory of run directories"),
    K_INT(run, checkpoint_every, "10", 0, 1e9, "iterations between checkpoints; 0 = only at the end"),
    K_INT(run, checkpoint_keep, "3", 0, 1e6,
          "newest checkpoints kept (periodic, final and stop ones alike); 0 = keep all"),
    K_INT(run, log_every, "1", 1, 1e9,
          "iterations between log lines and metrics rows (an iteration with an [eval] pass is logged too)"),
    K_BYTES(run, memory_limit, "0", 1152921504606846976.0 /* 1 EiB */,
            "refuse to start when the memory plan exceeds this; 0 = no limit (free device memory still applies)"),

    // --- [env] ---------------------------------------------------------------------------------
    K_CHOICE(env, type, "trading", env_type_names,
             "trading = the simulator on market data; synthetic = the simulator on a generated market; "
             "cartpole = Gymnasium's CartPole-v1 (no market)"),
    K_INT(env, n_envs, "32", 1, 4096,
          "parallel envs; 32 = the headline run (TRADING_ENV.md 8: each env's first start in its own 32nd of the train "
          "span)"),
    K_PATH(env, data, "data/XAUUSD_1H.h5", "market data: HDF5 written by ppo-data import, or a CSV"),
    K_DATE(env, train_start, "first day of the train split; auto = the instrument's default split"),
    K_DATE(env, val_start, "first day of the validation split (the train split ends the day before)"),
    K_DATE(env, test_start, "first day of the test split (the validation split ends the day before)"),
    K_DATE(env, test_end, "last day of the test split, inclusive"),
    K_CHOICE(env, exec, "next_open", exec_names,
             "fill at the next bar's open; close = cheat-on-close, for parity tests only"),
    K_CHOICE(env, action_mode, "discrete3", action_mode_names,
             "discrete3 = short/flat/long; discrete_k = n_levels targets; continuous = Gaussian; toggle2 = parity"),
    K_INT_ODD(env, n_levels, "5", 3, 101, "target levels of discrete_k, evenly spaced in [-L, L]; odd so flat is one"),
    K_REAL(env, max_leverage, "1.0", 1e-9, 100, 0, "largest |target position| L, as a fraction of equity"),
    K_BOOL(env, long_only, "false", "targets in [0, L] only (stocks)"),
    K_REAL(env, no_trade_band, "0.02", 0, 1, 0, "continuous actions: no trade when |w* - w| is below this"),
    K_CHOICE(env, reward, "log_return", reward_names, "per-step reward, from the same equity as the reports"),
    K_AUTO_REAL(env, reward_scale, 1e-12, 1e6, 0,
                "reward multiplier; auto = 100 hourly, 10 daily, 1 for reward = dsr or d3r"),
    K_AUTO_REAL(env, dsr_eta, 1e-9, 1, MAX_OPEN, "dsr/d3r adaptation rate; auto = 1/500 hourly, 1/63 daily"),
    K_REAL(env, vol_target_annual, "0.10", 1e-9, 10, 0,
           "vol_target reward: annualised volatility target sigma_tgt the position is scaled to"),
    K_REAL(env, shaping_turnover, "0", 0, INF, 0, "shaping: subtract this times |dw| (changes the optimum)"),
    K_REAL(env, shaping_drawdown, "0", 0, INF, 0, "shaping: subtract this times the increase in drawdown"),
    K_REAL(env, shaping_variance, "0", 0, INF, 0, "shaping: subtract this times (w sigma_t)^2"),
    K_REAL(env, shaping_flat, "0", 0, INF, 0, "shaping: subtract this on every flat bar (cash penalty)"),
    K_NONE_REAL(env, reward_clip, F32_MIN, INF, F32, "clip the scaled reward to [-c, c]; none = no clip"),
    K_AUTO_BOOL(env, use_data_spread, "fill at the data's bid/ask; auto = on when the data has bid/ask"),
    K_AUTO_REAL(env, half_spread_bps, 0, 10000, 0,
                "half spread without bid/ask data; auto = XAUUSD 1.5, EURUSD 0.5, SPY 0.5, GOOGL 1.0, other symbols "
                "1.0 (a guess)"),
    K_AUTO_REAL(
        env, commission_bps, 0, 10000, 0,
        "commission per side on notional; auto = 0.35 FX/gold, 0.5 stocks (other symbols: by bar size, a guess)"),
    K_REAL(env, fee_fixed, "0", 0, INF, 0, "fixed fee per trade, in units of the initial equity (E_0 = 1)"),
    K_AUTO_REAL(env, slippage_bps, 0, 10000, 0,
                "slippage per fill; auto = 0.5 FX/gold, 1.0 stocks (other symbols: by bar size, a guess)"),
    K_REAL(env, slippage_vol_k, "0", 0, INF, 0, "extra slippage: this times sigma_t"),
    K_REAL(env, slippage_random_max_bps, "0", 0, 10000, 0, "extra slippage drawn uniformly in [0, this]; 0 = off"),
    K_REAL(env, financing_long_apr, "0", -1, 1, 0, "financing charged on long notional per year (negative = earned)"),
    K_REAL(env, financing_short_apr, "0", -1, 1, 0, "financing charged on short notional per year (borrow fee)"),
    K_REAL(env, impact_y, "0", 0, 0, 0, "square-root market impact coefficient Y; only 0 (off): not modelled yet"),
    K_REAL(env, cost_mult, "1.0", 0, 100, 0, "multiplies every cost (stress tests)"),
    K_AUTO_INT(env, episode_length, 1, 1e9,
               "training episode length in bars; auto = 2048 hourly, 252 daily (cartpole: its step limit, auto = 500)"),
    K_AUTO_INT(env, window, 1, 10000, "bars of features in one observation; auto = 32 hourly, 30 daily"),
    K_AUTO_INT(env, warmup, 0, 1e9, "bars before the first valid episode start; auto = 3x the longest lookback"),
    K_REAL(env, max_loss, "0.5", 1e-12, 1, 0, "terminate when equity falls to (1 - max_loss) of the start"),
    K_BOOL(env, random_initial_position, "false", "training episodes start from a random level, not flat"),
    K_BOOL(env, stratified_starts, "true",
           "first reset of env i starts inside the i-th of n_envs equal parts of the train span's start bars"),
    K_BOOL(env, position_onehot, "false", "add a one-hot of the current discrete level to the observation"),
    K_BOOL(env, episode_progress, "false", "add the episode's elapsed fraction to the observation"),
    K_AUTO_REAL(env, sigma_halflife, 0, 1e6, MIN_OPEN,
                "half-life in bars of the EWMA volatility; auto = 48 hourly, 20 daily"),
    K_INT(env, ema_fast, "12", 1, 100000, "fast EMA span in bars (x_fast, x_strategy features)"),
    K_INT(env, ema_slow, "48", 1, 100000, "slow EMA span in bars (x_slow, x_strategy features); above ema_fast"),
    K_CHOICE(env, synthetic_model, "ar1", synthetic_model_names,
             "generated market; ar1 has a known optimum (sign policy Sharpe), the learnability test"),
    K_INT(env, synthetic_bars, "100_000", 100, 1e9, "bars in the generated market"),
    K_INT(env, synthetic_bar_seconds, "3600", 1, 31536000, "bar length of the generated market, in seconds"),
    K_INT(env, synthetic_seed, "0", 0, 1e18,
          "seed of the generated prices; separate from run.seed, so runs can share a market"),
    K_REAL(env, synthetic_drift, "0", -1, 1, BOTH_OPEN, "mean log return per bar (regime 1 for regime)"),
    K_REAL(env, synthetic_sigma, "0.001", 0, 1, BOTH_OPEN, "std of log returns per bar (regime 1 for regime)"),
    K_REAL(env, synthetic_rho, "0.1", -1, 1, BOTH_OPEN, "ar1: autocorrelation of returns"),
    K_REAL(env, synthetic_switch_prob, "0.01", 0, 1, 0, "regime: probability per bar of switching regimes"),
    K_REAL(env, synthetic_drift2, "0", -1, 1, BOTH_OPEN, "regime: mean log return per bar in regime 2"),
    K_REAL(env, synthetic_sigma2, "0.003", 0, 1, BOTH_OPEN, "regime: std of log returns per bar in regime 2"),

    // --- [ppo]: SB3's PPO defaults exactly -----------------------------------------------------------
    K_INT(ppo, n_steps, "2048", 1, 1e8, "rollout steps per env per iteration; buffer = n_steps x n_envs"),
    K_INT(ppo, batch_size, "64", 1, 1e9,
          "minibatch size; at most n_steps x n_envs, and at least 2 with normalize_advantage; one that does not "
          "divide n_steps x n_envs is only warned about, as SB3 does: each epoch then ends with a smaller minibatch"),
    K_INT(ppo, n_epochs, "10", 1, 10000, "passes over the rollout per iteration"),
    K_REAL(ppo, learning_rate, "3e-4", F32_MIN, 1, F32, "Adam learning rate (start value of the schedule)"),
    K_CHOICE(ppo, lr_schedule, "constant", lr_schedule_names, "linear = decay to 0 with progress, as SB3's linear"),
    K_REAL(ppo, gamma, "0.99", 0, 1, 0, "discount factor"),
    K_REAL(ppo, gae_lambda, "0.95", 0, 1, 0, "GAE lambda"),
    K_REAL(ppo, clip_range, "0.2", F32_MIN, INF, F32, "policy ratio clip"),
    K_NONE_REAL(ppo, clip_range_vf, F32_MIN, INF, F32, "clip the value prediction around the old value; none = off"),
    K_BOOL(ppo, normalize_advantage, "true", "normalise advantages per minibatch"),
    K_REAL(ppo, ent_coef, "0.0", 0, INF, 0, "entropy bonus coefficient"),
    K_REAL(ppo, vf_coef, "0.5", 0, INF, 0, "value loss coefficient"),
    K_REAL(ppo, max_grad_norm, "0.5", F32_MIN, INF, F32, "global gradient norm clip over both networks"),
    K_NONE_REAL(ppo, target_kl, 0, INF, MIN_OPEN, "stop the epochs when approx_kl > 1.5 x this; none = never"),
    K_REAL(ppo, adam_beta1, "0.9", 0, 1, MAX_OPEN, "Adam beta1"),
    K_REAL(ppo, adam_beta2, "0.999", 0, 1, MAX_OPEN, "Adam beta2"),
    K_REAL(ppo, adam_eps, "1e-5", F32_MIN, 1, F32, "Adam epsilon (SB3 sets 1e-5, not torch's 1e-8)"),

    // --- [policy] ------------------------------------------------------------------------------
    K_LIST(policy, pi_layers, "64,64", 1, 65536, "hidden layer widths of the policy MLP"),
    K_LIST(policy, vf_layers, "64,64", 1, 65536, "hidden layer widths of the value MLP"),
    K_CHOICE(policy, activation, "tanh", activation_names, "hidden activation"),
    K_REAL(policy, log_std_init, "0.0", -20, 20, 0, "initial log std of the Gaussian policy (continuous actions)"),
    K_BOOL(policy, ortho_init, "true", "true: orthogonal, gains sqrt(2) / 0.01 / 1; false: torch.nn.Linear's init"),

    // --- [normalize]: SB3 VecNormalize -----------------------------------------------------------
    K_BOOL(normalize, obs, "false", "normalise observations with running statistics"),
    K_BOOL(normalize, reward, "false", "scale rewards by the running std of the discounted return"),
    K_REAL(normalize, clip_obs, "10.0", F32_MIN, INF, F32, "clip normalised observations to [-c, c]"),
    K_REAL(normalize, clip_reward, "10.0", F32_MIN, INF, F32, "clip normalised rewards to [-c, c]"),
    K_REAL(normalize, epsilon, "1e-8", 0, 1, BOTH_OPEN, "added to the variance before the square root"),

    // --- [amp]: torch.amp.GradScaler ---------------------------------------------------------------
    K_REAL(amp, init_scale, "65536.0", F32_MIN, 1e30, F32, "initial loss scale (fp16)"),
    K_REAL(amp, growth_factor, "2.0", 1, 1e6, MIN_OPEN, "scale multiplier after growth_interval clean steps"),
    K_REAL(amp, backoff_factor, "0.5", 0, 1, BOTH_OPEN, "scale multiplier after a step with inf/NaN gradients"),
    K_INT(amp, growth_interval, "2000", 1, 1e9, "clean steps between scale growths"),

    // --- [eval] --------------------------------------------------------------------------------
    K_INT(eval, every, "0", 0, 1e9, "iterations between evaluations (best.h5 by metric); 0 = off"),
    K_CHOICE(eval, split, "val", split_names, "split evaluated during training; model selection belongs on val"),
    K_CHOICE(eval, metric, "sharpe", metric_names, "metric that picks best.h5"),
    K_BOOL(eval, deterministic, "true", "greedy actions (argmax or the mean) for the metric; false = sampled"),
    K_REAL(eval, risk_free_rate, "0", -1, 1, 0, "annual risk-free rate rf in the Sharpe ratio (rf/P per bar)"),
    K_REAL(eval, min_acceptable_return, "0", -1, 1, 0, "annual minimum acceptable return of the Sortino ratio"),
    K_INT(eval, n_trials, "1", 1, 1e9, "configurations tried, for the deflated Sharpe ratio"),

    // --- [walk_forward]: ppo-train --walk-forward (TRADING_ENV.md section 2) ---------------------------
    K_INT(walk_forward, train_months, "0", 0, 1200,
          "train window of each fold in months; 0 = auto: 36 intraday, 96 daily"),
    K_INT(walk_forward, val_months, "0", 0, 1200,
          "validation window of each fold in months; 0 = auto: 6 intraday, 12 daily"),
    K_INT(walk_forward, test_months, "0", 0, 1200,
          "test window of each fold in months; 0 = auto: 6 intraday, 12 daily"),
    K_INT(walk_forward, step_months, "0", 0, 1200,
          "months between the starts of consecutive folds, at least test_months (test windows never overlap); 0 = "
          "test_months"),
    K_INT(walk_forward, max_folds, "0", 0, 1000,
          "train at most this many folds (the earliest); 0 = every fold that fits"),
};

#define CONFIG_KEY_COUNT ((int)(sizeof config_keys / sizeof *config_keys))
_Static_assert(sizeof config_keys / sizeof *config_keys <= CONFIG_KEY_MAX, "raise CONFIG_KEY_MAX");

const ConfigKey *config_schema(int *count) {
  *count = CONFIG_KEY_COUNT;
  return config_keys;
}

int config_key_index(const char *section, const char *key) {
  for (int i = 0; i < CONFIG_KEY_COUNT; i++)
    if (strcmp(config_keys[i].section, section) == 0 && strcmp(config_keys[i].key, key) == 0) return i;
  return -1;
}

bool config_env_has_market(ConfigEnvType type) {
  switch (type) {
    case CONFIG_ENV_TRADING:
    case CONFIG_ENV_SYNTHETIC:
      return true;
    case CONFIG_ENV_CARTPOLE:
      return false;
  }
  return false;
}

const char *config_env_key_unread(ConfigEnvType type, const char *key) {
  switch (type) {
    case CONFIG_ENV_CARTPOLE:
      return strcmp(key, "type") == 0 || strcmp(key, "n_envs") == 0 || strcmp(key, "episode_length") == 0
                 ? NULL
                 : "CartPole has no market";
    case CONFIG_ENV_TRADING:
      return strncmp(key, "synthetic_", 10) == 0 ? "only the synthetic market reads it" : NULL;
    case CONFIG_ENV_SYNTHETIC:
      return strcmp(key, "data") == 0 ? "the market is generated" : NULL;
  }
  return NULL;
}

const char *config_choice_name(const char *section, const char *key, int value) {
  int i = config_key_index(section, key);
  const char *const *names = i >= 0 ? config_keys[i].choices : NULL;
  for (int k = 0; names && names[k]; k++)
    if (k == value) return names[k];
  return "?";
}
