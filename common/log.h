// common/log.h: leveled logging to stderr, and a progress line shown only on a terminal.
//
// Messages go to stderr as "[level] text"; results go to files, never through here.
// The level comes from log_set_level() or, at first use, from the environment variable
// PPO_LOG_LEVEL (error, warn, info, debug; another value is warned of once and info is used; the
// programs read it at their start, so that it is said whatever they print). Progress lines (log_progress) are drawn in
// place with '\r' only when stderr is a terminal; on a headless cloud instance they are dropped, so log files hold
// plain lines. Thread-safe: each call writes one line with one fprintf. Depends on error.h (for the printf attribute).
#ifndef PPO_COMMON_LOG_H
#define PPO_COMMON_LOG_H

#include <stdbool.h>

#include "error.h"

typedef enum {
  LOG_LEVEL_ERROR = 0,
  LOG_LEVEL_WARN = 1,
  LOG_LEVEL_INFO = 2,
  LOG_LEVEL_DEBUG = 3,
} LogLevel;

void log_set_level(LogLevel level);     // messages above this level are dropped
LogLevel log_get_level(void);           // the level in force
int log_level_parse(const char *name);  // "error".."debug" -> LogLevel, -1 when unknown
// The programs' --quiet: [info] and [debug] lines dropped (warnings and errors still printed),
// unless PPO_LOG_LEVEL names a level, which then stays in force.
void log_quiet(void);
bool log_is_tty(void);                  // is stderr a terminal (progress lines shown)?
void log_write(LogLevel level, const char *fmt, ...) PPO_PRINTF(2, 3);
void log_progress(const char *fmt, ...) PPO_PRINTF(1, 2);  // in-place line on a TTY, nothing otherwise
void log_progress_end(void);                               // finishes an in-place line with '\n' (TTY only)

#define log_error(...) log_write(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...) log_write(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...) log_write(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_write(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
