// test/program_util.h: helpers for the suites that run the programs (header-only, static functions):
// run one with shell-quoted arguments and capture its output, read or write small text files, wait
// for a running one's log, and stop one with a signal.
#ifndef PPO_TEST_PROGRAM_UTIL_H
#define PPO_TEST_PROGRAM_UTIL_H

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

// The text file `path` holds exactly `expected` (`what` says why it should).
static inline void expect_file_text(const char *path, const char *expected, const char *what) {
  char *text = read_text(path, NULL);
  cr_assert_not_null(text, "%s", path);
  cr_expect_str_eq(text, expected, "%s", what);
  free(text);
}

// Waits, polling every 50 ms for at most `seconds`, until the text file `path` holds `lines` lines
// (a run that has logged two metrics rows has its signal handlers installed). Returns either way:
// the caller's next assertion says what did not happen.
static inline void wait_for_lines(const char *path, int lines, int seconds) {
  for (int tries = 0; tries < 20 * seconds; tries++) {
    char *text = read_text(path, NULL);
    int n = 0;
    for (const char *c = text; c && *c; c++) n += *c == '\n';
    free(text);
    if (n >= lines) return;
    nanosleep(&(struct timespec){0, 50000000}, NULL);
  }
}

// A new empty directory for one test, /tmp/ppo_test_NAME_ plus mkdtemp's six random characters,
// into out; scratch_dir_remove deletes it and everything in it.
static inline void scratch_dir(char *out, size_t capacity, const char *name) {
  cr_assert_lt(snprintf(out, capacity, "/tmp/ppo_test_%s_XXXXXX", name), (int)capacity);
  cr_assert_not_null(mkdtemp(out), "mkdtemp %s", out);
}

static inline void scratch_dir_remove(const char *dir) {
  char command[1100];
  snprintf(command, sizeof command, "rm -rf '%s'", dir);
  cr_expect_eq(system(command), 0, "%s", command);
}

// Signal `sig` to `pid`, then its end: it must exit, with status 0 (ppo-train checkpoints and returns 0).
static inline void signal_expect_exit_0(pid_t pid, int sig) {
  cr_assert_eq(kill(pid, sig), 0);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status), "killed by signal %d instead of exiting", sig);
  cr_expect_eq(WEXITSTATUS(status), 0);
}

static inline void terminate_expect_exit_0(pid_t pid) { signal_expect_exit_0(pid, SIGTERM); }

#endif
