// common/check.h: fail loudly with a location (STYLE rule 8).
//
// For failures at run time that no user input explains: a libc call that failed, an
// allocation that could not be served, a broken internal invariant. Each macro prints the
// statement, file:line, errno's text where it applies and a hint, then exits EXIT_RUNTIME (1).
// User errors (bad config, bad data) never go through here: see error.h.
// Depends on error.h.
#ifndef PPO_COMMON_CHECK_H
#define PPO_COMMON_CHECK_H

#include <stddef.h>

#include "error.h"

// CHECK(cond, hint): cond must hold; the hint says what the user can do about it.
#define CHECK(cond, hint)                                          \
  do {                                                             \
    if (!(cond)) check_fail(#cond, __FILE__, __LINE__, (hint), 0); \
  } while (0)

// CHECK_ERRNO(cond, hint): like CHECK, for libc calls that set errno on failure.
#define CHECK_ERRNO(cond, hint)                                    \
  do {                                                             \
    if (!(cond)) check_fail(#cond, __FILE__, __LINE__, (hint), 1); \
  } while (0)

// CHECK_ALLOC(size, what): malloc that never returns NULL; `what` names the buffer.
#define CHECK_ALLOC(size, what) check_malloc((size), (what), __FILE__, __LINE__)

// C11's _Noreturn; the CUDA backend's .cu files include this header as C++, which spells it [[noreturn]].
#ifdef __cplusplus
#define PPO_NORETURN [[noreturn]]
#else
#define PPO_NORETURN _Noreturn
#endif

PPO_NORETURN void check_fail(const char *stmt, const char *file, int line, const char *hint, int use_errno);
void *check_malloc(size_t size, const char *what, const char *file,
                   int line);  // never NULL; size 0 gives a unique pointer

#endif
