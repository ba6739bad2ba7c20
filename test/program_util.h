// test/program_util.h: helpers for the suites that run the programs (header-only, static functions):
// run one with shell-quoted arguments and capture its output, and read or write small text files.
#ifndef PPO_TEST_PROGRAM_UTIL_H
#define PPO_TEST_PROGRAM_UTIL_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

// Runs `bin` with `args` (shell words), stdout and stderr together in `out`; returns the exit status.
static inline int run_program(const char *bin, const char *args, char *out, size_t capacity) {
  char command[8192];
  snprintf(command, sizeof command, "'%s' %s 2>&1", bin, args);
  FILE *pipe = popen(command, "r");
  cr_assert(pipe, "popen %s", command);
  size_t n = fread(out, 1, capacity - 1, pipe);
  out[n] = '\0';
  int status = pclose(pipe);
  cr_assert(WIFEXITED(status), "%s did not exit normally", command);
  return WEXITSTATUS(status);
}

static inline void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "%s", path);
  fputs(text, f);
  fclose(f);
}

// The whole file, NUL-terminated (free it); NULL when it cannot be opened. *length (optional) gets its size.
static inline char *read_text(const char *path, size_t *length) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  cr_assert_not_null(buf);
  size_t got = fread(buf, 1, (size_t)n, f);
  buf[got] = '\0';
  fclose(f);
  if (length) *length = got;
  return buf;
}

#endif
