// apps/ppo_train.c: ppo-train, the training front end (thin: parse, call, exit).
//
//   ppo-train CONFIG.ini [--set section.key=value]... [--print-config] [--help-config[=markdown]] [--help]
//
// Today it resolves and checks the configuration, prints it, and opens the env's market as training
// will (bars, features, splits and every "auto" key resolved), so a wrong path, a broken file or an
// impossible split is reported now; the training loop arrives with the PPO issue. Exit status: 0 success, 2 bad usage, configuration or data (common/error.h).
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "envs/market_data.h"
#include "ppo/env_config.h"
#include "ppo/config.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: ppo-train CONFIG.ini [--set section.key=value]... [--print-config]\n"
          "       ppo-train --help-config[=markdown] | --help\n"
          "\n"
          "  CONFIG.ini            the run's configuration (INI; see configs/default.ini)\n"
          "  --set SECTION.KEY=V   override one key after the file (repeatable), e.g. --set ppo.gamma=0.995\n"
          "  --print-config        print the resolved configuration (every key, defaults marked) and exit\n"
          "  --help-config         list every configuration key with its type, default and allowed values\n"
          "                        (=markdown: the same as Markdown tables, as in docs/CONFIG.md)\n"
          "  --help                this text\n");
}

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "ppo-train: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n\n");
  usage(stderr);
  return EXIT_BAD_INPUT;
}

int main(int argc, char **argv) {
  const char *config_path = NULL;
  bool print_config = false;
  // At most one --set per argument, so argc bounds the count.
  const char **overrides = calloc((size_t)argc + 1, sizeof *overrides);
  int n_overrides = 0;
  if (!overrides) {
    fprintf(stderr, "ppo-train: out of memory\n");
    return EXIT_RUNTIME;
  }
  int status = EXIT_OK;
  for (int i = 1; i < argc && status == EXIT_OK; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      usage(stdout);
      free(overrides);
      return EXIT_OK;
    } else if (strcmp(arg, "--help-config") == 0) {
      config_write_help(stdout);
      free(overrides);
      return EXIT_OK;
    } else if (strcmp(arg, "--help-config=markdown") == 0) {
      config_write_markdown(stdout);  // docs/CONFIG.md
      free(overrides);
      return EXIT_OK;
    } else if (strcmp(arg, "--print-config") == 0) {
      print_config = true;
    } else if (strcmp(arg, "--set") == 0) {
      if (i + 1 >= argc)
        status = usage_error("%s needs an argument: --set section.key=value", arg);
      else
        overrides[n_overrides++] = argv[++i];
    } else if (strncmp(arg, "--set=", 6) == 0) {
      overrides[n_overrides++] = arg + 6;
    } else if (arg[0] == '-' && arg[1] != '\0') {
      status = usage_error("unknown option '%s'", arg);
    } else if (config_path) {
      status = usage_error("more than one configuration file ('%s')", arg);
    } else {
      config_path = arg;
    }
  }
  if (status == EXIT_OK && !config_path) status = usage_error("%s", "missing CONFIG.ini");
  if (status != EXIT_OK) {
    free(overrides);
    return status;
  }

  Config cfg;
  int loaded = config_load(&cfg, config_path, n_overrides, overrides);
  free(overrides);
  if (loaded != 0) {
    fprintf(stderr, "%s\n", error_message());
    return EXIT_BAD_INPUT;
  }
  if (print_config) {
    if (config_write_ini(&cfg, stdout) != 0) {
      fprintf(stderr, "ppo-train: %s\n", error_message());
      return EXIT_RUNTIME;
    }
    return EXIT_OK;
  }
  // STYLE rule 14: say what the run would use before anything else.
  if (config_write_ini(&cfg, stderr) != 0) {
    fprintf(stderr, "ppo-train: %s\n", error_message());
    return EXIT_RUNTIME;
  }
  if (cfg.env.type != CONFIG_ENV_CARTPOLE) {
    // Open the market exactly as training will: load or generate the bars, compute the features and
    // resolve every "auto" key and the splits, so a bad data file or split is reported today.
    EnvMarket market;
    if (env_market_open(&market, &cfg) != 0) {
      fprintf(stderr, "%s\n", error_message());
      return EXIT_BAD_INPUT;
    }
    const MarketData *data = market.data;
    const TradingContext *ctx = &market.context;
    char first[32], last[32];
    fprintf(stderr, "\nppo-train: market %s: %s, %lld bars %s .. %s, bar %lld s%s\n",
            cfg.env.type == CONFIG_ENV_TRADING ? cfg.env.data : "(synthetic)", data->symbol,
            (long long)data->rows, market_time_format(data->ts[0], first, sizeof first),
            market_time_format(data->ts[data->rows - 1], last, sizeof last), (long long)data->bar_seconds,
            data->has_bid_ask ? ", bid/ask" : "");
    for (int split = TRADING_SPLIT_TRAIN; split <= TRADING_SPLIT_TEST; split++) {
      int64_t lo = ctx->split_lo[split], hi = ctx->split_hi[split];
      fprintf(stderr, "ppo-train: %-5s split: %lld bars %s .. %s\n", trading_split_name((TradingSplit)split),
              (long long)(hi - lo), market_time_format(data->ts[lo], first, sizeof first),
              market_time_format(data->ts[hi - 1], last, sizeof last));
    }
    fprintf(stderr, "ppo-train: observation %d floats (window %d), %d actions\n", ctx->obs_dim, ctx->window,
            ctx->action_count);
    env_market_close(&market);
  }
  fprintf(stderr,
          "\nppo-train: configuration %s is valid. The training loop arrives with the PPO issue;\n"
          "ppo-train: nothing was trained and no run directory was written.\n",
          config_path);
  return EXIT_OK;
}
