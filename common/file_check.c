// common/file_check.c: see file_check.h.
#include "common/file_check.h"

#include <sys/stat.h>

#include "common/error.h"

int file_check_regular(const char *path, const char *what) {
  struct stat st;
  if (stat(path, &st) != 0 || S_ISREG(st.st_mode)) return 0;
  const char *kind = S_ISDIR(st.st_mode)    ? "a directory"
                     : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                     : S_ISCHR(st.st_mode)  ? "a character device"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a regular file";
  error_set("%s: is %s: %s must be a regular file", path, kind, what);
  return -1;
}
