// ppo/config.h: the run configuration (params.ini) as a typed, checked value.
//
// One schema table (ppo/config_schema.c) lists every key once: section, key, type, default text,
// allowed range or choices, one line of documentation and where the value lives in Config. The
// parser, the defaults, the range checks, the printer and the --help-config listing all walk that
// table, so a key is added in exactly one place (plus its field in the structs below, whose name
// is the key's name).
//
// Resolution order: defaults, then the INI file, then each `--set section.key=value`, then the
// cross-key checks (ema_fast < ema_slow, split dates in order, batch_size within the rollout).
// Every value remembers where it came from (default, FILE:LINE or --set); config_write_ini prints
// that next to each key, and the printed text parses back to the same values (it is what run
// directories and checkpoints store).
//
// Ownership: Config is a plain value with no pointers to free (fixed-size strings and lists), so
// it can be copied with `=` and stored in other structs. Nothing here allocates beyond the call.
// Failure: the load functions collect every user error (up to CONFIG_ERRORS_MAX), return -1 and
// set error.h's message to one line per error, each "FILE:LINE: [section] key = value: reason
// (allowed: ...)" or "command line: --set ARG: ...". Warnings (e.g. a rollout that is not a
// multiple of batch_size, as SB3 warns) go through log_warn and do not fail the load.
// Depends on common/ (error, log, time_utc) and inih (libinih-dev).
#ifndef PPO_CONFIG_H
#define PPO_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CONFIG_STRING_MAX \
  150  // longest string or path value: keeps every printed line (key, value, comment) under inih's 200
#define CONFIG_LIST_MAX 8     // most entries in an int list (hidden layers)
#define CONFIG_KEY_MAX 160    // capacity of the provenance array; the schema holds fewer keys
#define CONFIG_ERRORS_MAX 20  // errors reported per load; the rest are counted

// --- value types that are not plain C scalars -------------------------------------------------------

typedef struct {
  bool is_auto;  // true: the env resolves a per-instrument default (TRADING_ENV.md sections 2-8)
  double value;  // meaningful only when !is_auto
} ConfigAutoReal;

typedef struct {
  bool is_auto;
  int64_t value;
} ConfigAutoInt;

typedef struct {
  bool is_auto;  // true: on when the data has bid/ask (use_data_spread)
  bool value;
} ConfigAutoBool;

typedef struct {
  bool is_none;  // true: the feature is off (clip_range_vf, target_kl, reward_clip)
  double value;
} ConfigOptionalReal;

typedef struct {
  bool is_auto;     // true: the instrument's default split (TRADING_ENV.md section 2)
  int64_t seconds;  // UTC midnight of the date (common/time_utc.h)
} ConfigDate;

typedef struct {
  int count;                    // 1..CONFIG_LIST_MAX
  int values[CONFIG_LIST_MAX];  // values[0..count)
} ConfigIntList;

// --- choices (stored as enum values; the schema lists their INI names in this order) ---------------

typedef enum { CONFIG_DEVICE_AUTO, CONFIG_DEVICE_CPU, CONFIG_DEVICE_CUDA } ConfigDevice;
typedef enum { CONFIG_PRECISION_FP32, CONFIG_PRECISION_FP16, CONFIG_PRECISION_BF16 } ConfigPrecision;
typedef enum { CONFIG_ENV_TRADING, CONFIG_ENV_CARTPOLE, CONFIG_ENV_SYNTHETIC } ConfigEnvType;
typedef enum { CONFIG_EXEC_NEXT_OPEN, CONFIG_EXEC_CLOSE } ConfigExec;
typedef enum {
  CONFIG_ACTION_DISCRETE3,
  CONFIG_ACTION_DISCRETE_K,
  CONFIG_ACTION_CONTINUOUS,
  CONFIG_ACTION_TOGGLE2,
} ConfigActionMode;
typedef enum {
  CONFIG_REWARD_LOG_RETURN,
  CONFIG_REWARD_PNL,
  CONFIG_REWARD_DSR,
  CONFIG_REWARD_D3R,
  CONFIG_REWARD_VOL_TARGET,
} ConfigReward;
typedef enum { CONFIG_SYNTHETIC_GBM, CONFIG_SYNTHETIC_REGIME, CONFIG_SYNTHETIC_AR1 } ConfigSyntheticModel;
typedef enum { CONFIG_LR_CONSTANT, CONFIG_LR_LINEAR } ConfigLrSchedule;
typedef enum { CONFIG_ACTIVATION_TANH, CONFIG_ACTIVATION_RELU } ConfigActivation;
typedef enum { CONFIG_SPLIT_VAL, CONFIG_SPLIT_TEST } ConfigSplit;
typedef enum {
  CONFIG_METRIC_SHARPE,
  CONFIG_METRIC_SORTINO,
  CONFIG_METRIC_TOTAL_RETURN,
  CONFIG_METRIC_CALMAR,
} ConfigMetric;

// --- the configuration: one struct per INI section; field name = key name --------------------------

typedef struct {
  char name[CONFIG_STRING_MAX + 1];  // run name; the run writes to run_dir/name
  int64_t seed;                      // base seed of every RNG stream
  int64_t total_timesteps;           // env steps summed over all envs
  ConfigDevice device;
  int64_t threads;  // OpenMP threads; 0 = all cores
  ConfigPrecision precision;
  bool tf32;  // fp32 GEMMs on CUDA may use TF32 tensor cores
  char run_dir[CONFIG_STRING_MAX + 1];  // parent directory of run directories
  int64_t checkpoint_every;             // iterations; 0 = only at the end
  int64_t checkpoint_keep;              // newest checkpoints kept; 0 = all
  int64_t log_every;                    // iterations between log lines
  int64_t memory_limit;                 // bytes; 0 = no limit
} ConfigRun;

typedef struct {
  ConfigEnvType type;
  int64_t n_envs;
  // data and splits (TRADING_ENV.md sections 1-2)
  char data[CONFIG_STRING_MAX + 1];
  ConfigDate train_start, val_start, test_start, test_end;  // test_end inclusive
  // execution and actions (sections 3, 5)
  ConfigExec exec;
  ConfigActionMode action_mode;
  int64_t n_levels;
  double max_leverage;
  bool long_only;
  double no_trade_band;
  // rewards and shaping (section 6)
  ConfigReward reward;
  ConfigAutoReal reward_scale;
  ConfigAutoReal dsr_eta;
  double vol_target_annual;
  double shaping_turnover, shaping_drawdown, shaping_variance, shaping_flat;
  ConfigOptionalReal reward_clip;
  // costs (section 7)
  ConfigAutoBool use_data_spread;
  ConfigAutoReal half_spread_bps, commission_bps, slippage_bps;
  double fee_fixed, slippage_vol_k, slippage_random_max_bps;
  double financing_long_apr, financing_short_apr, impact_y, cost_mult;
  // episodes (section 8)
  ConfigAutoInt episode_length, window, warmup;
  double max_loss;
  bool random_initial_position, stratified_starts;
  // observation and features (section 4)
  bool position_onehot, episode_progress;
  ConfigAutoReal sigma_halflife;
  int64_t ema_fast, ema_slow;
  // synthetic markets (section 1)
  ConfigSyntheticModel synthetic_model;
  int64_t synthetic_bars, synthetic_bar_seconds, synthetic_seed;
  double synthetic_drift, synthetic_sigma, synthetic_rho;
  double synthetic_switch_prob, synthetic_drift2, synthetic_sigma2;
} ConfigEnv;

typedef struct {
  int64_t n_steps, batch_size, n_epochs;
  double learning_rate;
  ConfigLrSchedule lr_schedule;
  double gamma, gae_lambda, clip_range;
  ConfigOptionalReal clip_range_vf;
  bool normalize_advantage;
  double ent_coef, vf_coef, max_grad_norm;
  ConfigOptionalReal target_kl;
  double adam_beta1, adam_beta2, adam_eps;
} ConfigPpo;

typedef struct {
  ConfigIntList pi_layers, vf_layers;
  ConfigActivation activation;
  double log_std_init;
  bool ortho_init;
} ConfigPolicy;

typedef struct {
  bool obs, reward;
  double clip_obs, clip_reward, epsilon;
} ConfigNormalize;

typedef struct {
  double init_scale, growth_factor, backoff_factor;
  int64_t growth_interval;
} ConfigAmp;

typedef struct {
  int64_t every;  // iterations; 0 = no periodic evaluation
  ConfigSplit split;
  ConfigMetric metric;
  bool deterministic;
  double risk_free_rate, min_acceptable_return;
  int64_t n_trials;
} ConfigEval;

// Rolling walk-forward folds (TRADING_ENV.md section 2; ppo/walk_forward.h). 0 = auto: the spec's
// lengths for the data's bar size (intraday 36/6/6 months, daily 96/12/12; step = test_months).
typedef struct {
  int64_t train_months, val_months, test_months, step_months;
  int64_t max_folds;  // 0 = every fold that fits the data
} ConfigWalkForward;

typedef enum { CONFIG_ORIGIN_DEFAULT, CONFIG_ORIGIN_FILE, CONFIG_ORIGIN_SET } ConfigOriginKind;

typedef struct {
  ConfigOriginKind kind;
  int line;  // FILE: the line in Config.source; SET: the 1-based position of the --set argument
} ConfigOrigin;

typedef struct {
  ConfigRun run;
  ConfigEnv env;
  ConfigPpo ppo;
  ConfigPolicy policy;
  ConfigNormalize normalize;
  ConfigAmp amp;
  ConfigEval eval;
  ConfigWalkForward walk_forward;
  char source[CONFIG_STRING_MAX + 1];   // the file (or text name) the values were read from; "" for none
  ConfigOrigin origin[CONFIG_KEY_MAX];  // per schema row, in schema order
} Config;

// --- the schema -------------------------------------------------------------------------------

typedef enum {
  CONFIG_TYPE_INT,            // int64_t; accepts 1_000_000 and exact 1e6
  CONFIG_TYPE_REAL,           // double, finite
  CONFIG_TYPE_BOOL,           // true/false/yes/no/on/off/1/0
  CONFIG_TYPE_NAME,           // letters, digits, '.', '_', '-', not '.' first (used as a directory name)
  CONFIG_TYPE_PATH,           // any printable text
  CONFIG_TYPE_CHOICE,         // one of the row's choices, stored as the index (an enum value, as int)
  CONFIG_TYPE_INT_LIST,       // ConfigIntList: "2048,1024,512"
  CONFIG_TYPE_DATE,           // ConfigDate: YYYY-MM-DD or auto
  CONFIG_TYPE_AUTO_REAL,      // ConfigAutoReal: a real or auto
  CONFIG_TYPE_AUTO_INT,       // ConfigAutoInt: an int or auto
  CONFIG_TYPE_AUTO_BOOL,      // ConfigAutoBool: a bool or auto
  CONFIG_TYPE_OPTIONAL_REAL,  // ConfigOptionalReal: a real or none
  CONFIG_TYPE_BYTES,          // int64_t bytes: 0, 4096, 512M, 8G, 1.5GiB (K/M/G/T and KiB.. = 1024^n; KB.. = 1000^n)
} ConfigType;

enum {
  CONFIG_FLAG_MIN_OPEN = 1u << 0,  // the range excludes its minimum (value > min)
  CONFIG_FLAG_MAX_OPEN = 1u << 1,  // the range excludes its maximum (value < max)
  CONFIG_FLAG_ODD = 1u << 2,       // integers must be odd
  CONFIG_FLAG_FLOAT = 1u << 3,     // a real used as a 32-bit float (or clipping one): min is CONFIG_FLOAT_MIN
};

// The least value of a positive key used as a 32-bit float: the shortest decimal at or above FLT_MIN
// (1.17549435e-38). Below FLT_MIN the float is a denormal or 0, which breaks the key's "> 0": an
// adam_eps of 4.9e-324 was a zero epsilon, a max_grad_norm of 1e-320 switched the clipping off.
#define CONFIG_FLOAT_MIN 1.2e-38

typedef struct {
  const char *section;
  const char *key;
  ConfigType type;
  const char *default_text;    // parsed like user input by config_set_defaults
  double min, max;             // numbers and list entries; +-HUGE_VAL for none
  unsigned flags;              // CONFIG_FLAG_*
  const char *const *choices;  // CHOICE: NULL-terminated INI names, index = enum value
  const char *doc;             // one line
  size_t offset;               // of the value inside Config
} ConfigKey;

const ConfigKey *config_schema(int *count);                  // the table, in print order; *count rows
int config_key_index(const char *section, const char *key);  // row index, -1 when unknown
// The row of a --set argument "section.key=value" (section and key trimmed as --set reads them); -1
// when it is not of that form or names no key.
int config_override_index(const char *arg);
// The INI name of a choice key's enum value ("cuda" for run.device = CONFIG_DEVICE_CUDA): the
// schema's one table, for every message and report that names one; "?" for no such key or value.
const char *config_choice_name(const char *section, const char *key, int value);
// Whether an [env] type runs on market data (trading, synthetic) or not (cartpole): the one place
// that says so, for the trainer, ppo-eval, walk-forward and the market loader (a switch without a
// default: -Wswitch names a type added and not decided here).
bool config_env_has_market(ConfigEnvType type);
// Which [env] keys a type reads: NULL when it reads `key` (the name within [env]: "n_levels"), else
// why it does not ("CartPole has no market"), for the "has no effect" warnings. The one list per
// type, a switch without a default as above.
const char *config_env_key_unread(ConfigEnvType type, const char *key);

// --- resolving ------------------------------------------------------------------------------

void config_set_defaults(Config *cfg);  // every key to its default, origins DEFAULT, source ""

// Defaults, then the file at `path` (NULL: no file), then `overrides` ("section.key=value" each),
// then the cross-key checks. Returns 0, or -1 with every error in error_message(); *cfg is then
// partly filled and must not be used.
int config_load(Config *cfg, const char *path, int n_overrides, const char *const *overrides);
// config_load of a file alone, its warnings not printed (errors are returned as by config_load): a
// file this command has reported on already, or one an earlier run wrote, read to compare with.
int config_load_quietly(Config *cfg, const char *path);

// Same, reading INI text from memory. `source_name` stands for the file name in messages and
// provenance.
int config_load_text(Config *cfg, const char *text, size_t length, const char *source_name, int n_overrides,
                     const char *const *overrides);
// A checkpoint's stored configuration, with --set overrides: as config_load_text, but it warns only
// of rules an override takes part in (the run that stored the text was told of the rest; a resume
// or an evaluation of it would repeat them every time).
int config_load_stored(Config *cfg, const char *text, size_t length, const char *source_name, int n_overrides,
                       const char *const *overrides);

// --- printing and comparing ----------------------------------------------------------------------

// The resolved configuration as INI: every key, each with "; default", "; FILE:LINE" or
// "; --set" after it; reals as the shortest text that reads back exactly. Returns 0, or -1 and
// sets the error message when the stream reports a write error.
int config_write_ini(const Config *cfg, FILE *out);
void config_write_help(FILE *out);      // every key: type, default, allowed values, doc
void config_write_markdown(FILE *out);  // the same reference as Markdown tables (docs/CONFIG.md is this output)
bool config_values_equal(const Config *a, const Config *b);  // same values for every key (origins ignored)
// One key's value as INI text (what config_write_ini prints after "key = "); returns buf.
char *config_value_text(const Config *cfg, int key_index, char *buf, size_t capacity);
// "FILE:LINE: [section] key = value" ("command line: --set #N: ..." or "default: ..." when not from
// the file): the prefix for an error about a value that passed the schema but fails later, such
// as a data file that does not load. The key must exist in the schema. Returns buf.
char *config_describe_key(const Config *cfg, const char *section, const char *key, char *buf, size_t capacity);

#endif
