// common/file_check.c: see file_check.h.
#include "common/file_check.h"

#include <stddef.h>
#include <sys/stat.h>

#include "common/error.h"

// What a path that is not a regular file is; NULL for a kind without a name here.
static const char *kind_of(mode_t mode) {
  return S_ISDIR(mode)    ? "a directory"
         : S_ISFIFO(mode) ? "a FIFO (named pipe)"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISSOCK(mode) ? "a socket"
                          : NULL;
}

int file_check_regular(const char *path, const char *what) {
  struct stat st;
  if (stat(path, &st) != 0 || S_ISREG(st.st_mode)) return 0;
  const char *kind = kind_of(st.st_mode);
  error_set("%s: is %s: %s must be a regular file", path, kind ? kind : "not a regular file", what);
  return -1;
}

int file_check_output(const char *path, const char *what) {
  struct stat st;
  if (lstat(path, &st) != 0 || S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) return 0;
  const char *kind = kind_of(st.st_mode);
  error_set("%s: is %s%s: %s is written there; move it away", path, kind ? kind : "not a regular file",
            kind ? ", not a regular file" : "", what);
  return -1;
}
