// common/error.c: the thread-local user-error message (see error.h).
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char error_buffer[ERROR_MESSAGE_MAX];
static _Thread_local bool error_damaged;  // the message says a file is damaged (error_mark_damaged)

void error_set(const char *fmt, ...) {
  error_damaged = false;
  va_list args;
  va_start(args, fmt);
  vsnprintf(error_buffer, sizeof error_buffer, fmt, args);
  va_end(args);
}

void error_prepend(const char *fmt, ...) {
  char prefix[ERROR_MESSAGE_MAX];
  char old[ERROR_MESSAGE_MAX];
  va_list args;
  va_start(args, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, args);
  va_end(args);
  memcpy(old, error_buffer, sizeof old);
  size_t used = strlen(prefix);
  memcpy(error_buffer, prefix, used + 1);
  snprintf(error_buffer + used, sizeof error_buffer - used, "%s", old);
}

const char *error_message(void) { return error_buffer; }

void error_clear(void) {
  error_buffer[0] = '\0';
  error_damaged = false;
}

void error_mark_damaged(void) { error_damaged = true; }

bool error_is_damage(void) { return error_damaged; }
