// apps/cli.h: command-line helpers the programs share (header-only: each main() file includes it).
// Options take their value as "--opt VALUE" or "--opt=VALUE".
#ifndef PPO_APPS_CLI_H
#define PPO_APPS_CLI_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"

// Opens /dev/null on whichever of stdin, stdout and stderr the program was started without
// (`ppo-train ... 2>&-`): otherwise the first file the program opens takes that descriptor, and
// every message meant for stderr lands in it (the run directory's .lock took fd 2 and filled with
// the progress lines). The first call in every main().
static inline void cli_standard_streams(void) {
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    int opened = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (opened >= 0 && opened != fd) {  // a lower descriptor was free too: it is taken in its own turn
      dup2(opened, fd);
      close(opened);
    }
  }
}

// The end of a program whose standard output is what was asked for (ppo-data info, ppo-eval's
// summary): output it could not write (a full disk: `> /dev/full`) fails the program with exit
// status 1, said on stderr; it exited 0 with the output lost, since stdio reports the error only at
// the flush. A reader that went away (EPIPE) is no failure. Returns the exit status to return.
static inline int cli_finish_stdout(const char *prog, int status) {
  errno = 0;
  if ((fflush(stdout) != 0 || ferror(stdout)) && errno != EPIPE) {
    fprintf(stderr, "%s: cannot write standard output: %s\n", prog, errno ? strerror(errno) : "write error");
    return status == EXIT_OK ? EXIT_RUNTIME : status;
  }
  return status;
}

// Is arg the option `name`, alone or as "name=value"?
static inline bool cli_is_option(const char *arg, const char *name) {
  size_t len = strlen(name);
  return strncmp(arg, name, len) == 0 && (arg[len] == '\0' || arg[len] == '=');
}

// The value of option argv[*i] (`name`): after '=', or the next argument (then *i advances).
// NULL when it is missing or empty: no option takes an empty value (an empty --run-dir was the
// filesystem's root). A next argument that is an option ("--...") is not taken as the value: a
// forgotten value made `--run-dir --plan` train into a directory named --plan. Such a value can
// still be given as --opt=VALUE or ./--VALUE.
static inline const char *cli_option_value(int argc, char **argv, int *i, const char *name) {
  size_t len = strlen(name);
  const char *v = NULL;
  if (strncmp(argv[*i], name, len) == 0 && argv[*i][len] == '=')
    v = argv[*i] + len + 1;
  else if (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2) != 0)
    v = argv[++*i];
  return v && *v ? v : NULL;
}

// The options a command line has given so far: a repeated option is refused, where the last one
// silently winning hid mistakes (two --resume files, two --checkpoint files).
#define CLI_SEEN_MAX 16
typedef struct {
  char names[CLI_SEEN_MAX][32];
  int count;
} CliSeen;

// Whether `option` ("--resume") was seen before; notes it otherwise.
static inline bool cli_repeated(CliSeen *seen, const char *option) {
  for (int k = 0; k < seen->count; k++)
    if (strcmp(seen->names[k], option) == 0) return true;
  if (seen->count < CLI_SEEN_MAX) snprintf(seen->names[seen->count++], sizeof seen->names[0], "%s", option);
  return false;
}

// text as a whole decimal number in [lo, hi] into *out; false (and *out untouched) for anything
// else: empty, trailing characters, out of range, or past long long. Callers name the option, the
// text and the range in their message.
static inline bool cli_parse_integer(const char *text, long long lo, long long hi, long long *out) {
  if (!text || !*text) return false;
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (*end != '\0' || errno == ERANGE || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// "PROG: OPTION 'VALUE': ALLOWED" on stderr; returns EXIT_BAD_INPUT.
static inline int cli_bad_value(const char *prog, const char *option, const char *value, const char *allowed) {
  fprintf(stderr, "%s: %s '%s': %s\n", prog, option, value ? value : "", allowed);
  return EXIT_BAD_INPUT;
}

// A --set value must hold its '=' (section.key=value): "--set ppo.gamma 0.99" took 0.99 for another
// argument (ppo-train: a second configuration file). EXIT_OK, or the message naming the value and
// EXIT_BAD_INPUT.
static inline int cli_check_set(const char *prog, const char *value) {
  if (strchr(value, '=')) return EXIT_OK;
  fprintf(stderr, "%s: --set '%s': expected section.key=value, in one argument (--set %s=VALUE)\n", prog, value, value);
  return EXIT_BAD_INPUT;
}

#endif
