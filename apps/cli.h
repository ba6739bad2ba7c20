// apps/cli.h: command-line helpers the programs share (header-only: each main() file includes it).
// Options take their value as "--opt VALUE" or "--opt=VALUE".
#ifndef PPO_APPS_CLI_H
#define PPO_APPS_CLI_H

#include <stdbool.h>
#include <string.h>

// Is arg the option `name`, alone or as "name=value"?
static inline bool cli_is_option(const char *arg, const char *name) {
  size_t len = strlen(name);
  return strncmp(arg, name, len) == 0 && (arg[len] == '\0' || arg[len] == '=');
}

// The value of option argv[*i] (`name`): after '=', or the next argument (then *i advances).
// NULL when it is missing or empty: no option takes an empty value (an empty --run-dir was the
// filesystem's root).
static inline const char *cli_option_value(int argc, char **argv, int *i, const char *name) {
  size_t len = strlen(name);
  const char *v = NULL;
  if (strncmp(argv[*i], name, len) == 0 && argv[*i][len] == '=')
    v = argv[*i] + len + 1;
  else if (*i + 1 < argc)
    v = argv[++*i];
  return v && *v ? v : NULL;
}

#endif
