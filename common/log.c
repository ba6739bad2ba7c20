// common/log.c: see log.h.
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int log_level = -1;         // -1: not read from the environment yet
static bool log_level_from_env;    // PPO_LOG_LEVEL named a level
static int log_progress_open = 0;  // an in-place line is on screen

static const char *const log_level_names[] = {"error", "warn", "info", "debug"};

int log_level_parse(const char *name) {
  for (int i = 0; i < 4; i++)
    if (strcmp(name, log_level_names[i]) == 0) return i;
  return -1;
}

LogLevel log_get_level(void) {
  if (log_level < 0) {
    const char *env = getenv("PPO_LOG_LEVEL");  // empty: unset
    int parsed = env && *env ? log_level_parse(env) : -1;
    log_level_from_env = parsed >= 0;
    log_level = parsed >= 0 ? parsed : LOG_LEVEL_INFO;
    if (env && *env && parsed < 0)  // said once: the level is read once
      log_warn(
          "PPO_LOG_LEVEL = '%.64s': not a log level (allowed: error, warn, info, debug); ignored (info, or "
          "warn with --quiet)",
          env);
  }
  return (LogLevel)log_level;
}

void log_set_level(LogLevel level) { log_level = (int)level; }

void log_quiet(void) {
  if (log_get_level() > LOG_LEVEL_WARN && !log_level_from_env) log_set_level(LOG_LEVEL_WARN);
}

bool log_is_tty(void) { return isatty(fileno(stderr)) == 1; }

void log_write(LogLevel level, const char *fmt, ...) {
  if ((int)level > (int)log_get_level()) return;
  char line[2048];
  va_list args;
  va_start(args, fmt);
  vsnprintf(line, sizeof line, fmt, args);
  va_end(args);
  // A pending progress line is cleared first so that messages never interleave with it.
  fprintf(stderr, "%s[%s] %s\n", log_progress_open ? "\r\033[K" : "", log_level_names[level], line);
  log_progress_open = 0;
}

void log_progress(const char *fmt, ...) {
  if (!log_is_tty()) return;
  char line[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(line, sizeof line, fmt, args);
  va_end(args);
  fprintf(stderr, "\r\033[K%s", line);
  fflush(stderr);
  log_progress_open = 1;
}

void log_progress_end(void) {
  if (log_progress_open) fputc('\n', stderr);
  log_progress_open = 0;
}
