// common/check.c: the failure path of the check macros (see check.h).
#include "check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Noreturn void check_fail(const char *stmt, const char *file, int line, const char *hint, int use_errno) {
  int saved_errno = errno;
  fprintf(stderr, "%s:%d: CHECK(%s) failed", file, line, stmt);
  if (use_errno && saved_errno != 0) fprintf(stderr, ": %s", strerror(saved_errno));
  if (hint && hint[0]) fprintf(stderr, "\n  hint: %s", hint);
  fputc('\n', stderr);
  exit(EXIT_RUNTIME);
}

void *check_malloc(size_t size, const char *what, const char *file, int line) {
  void *p = malloc(size ? size : 1);
  if (!p) {
    fprintf(stderr, "%s:%d: out of memory allocating %zu bytes for %s\n", file, line, size, what);
    exit(EXIT_RUNTIME);
  }
  return p;
}
