// common/error.h: user-facing errors and the programs' exit statuses.
//
// Two kinds of failure, handled differently (STYLE rule 8):
//   - bad input from the user (configuration, data files, checkpoints, command line): the
//     function that finds it returns a failure status (-1 or NULL) and records one message with
//     error_set(); main() prints error_message() and exits EXIT_BAD_INPUT (2). The message names
//     the file, the line, the key or column, the bad value and what is allowed.
//   - a failure at run time (out of memory, a library call that cannot fail on good input): the
//     check macros in check.h print the call and its file:line and exit EXIT_RUNTIME (1).
//
// The message buffer is thread-local, so OpenMP workers that fail do not overwrite each other.
// Depends on nothing.
#ifndef PPO_COMMON_ERROR_H
#define PPO_COMMON_ERROR_H

#include <stdbool.h>

enum {
  EXIT_OK = 0,         // success
  EXIT_RUNTIME = 1,    // a failure at run time
  EXIT_BAD_INPUT = 2,  // bad usage, configuration or input data
};

#define ERROR_MESSAGE_MAX 4096

#if defined(__GNUC__)
#define PPO_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define PPO_PRINTF(fmt_index, first_arg)
#endif

void error_set(const char *fmt, ...) PPO_PRINTF(1, 2);      // replaces the message (truncated to ERROR_MESSAGE_MAX)
void error_prepend(const char *fmt, ...) PPO_PRINTF(1, 2);  // adds context in front: "FILE: " + old message
const char *error_message(void);                            // the last message, "" when none
void error_clear(void);                                     // forgets the message
// The message just set says a file is damaged (cut short, failing its checksums, not the format at
// all), as opposed to a file that reads but holds something refused: the caller may point to another
// copy. error_set clears the mark; error_prepend keeps it.
void error_mark_damaged(void);
bool error_is_damage(void);

#endif
