// common/file_check.h: refusing a path that is not a regular file before opening it for reading.
// A FIFO given as a configuration, checkpoint or market file blocked the reader forever (and a
// timeout's SIGTERM then read as a stop request); a directory gave "not an HDF5 file".
// Depends on error.h.
#ifndef PPO_COMMON_FILE_CHECK_H
#define PPO_COMMON_FILE_CHECK_H

// 0 when path is a regular file (after symbolic links) or cannot be stat'ed (the opener then says
// why: no such file, permission); else -1 and the message "PATH: is a directory (a FIFO, ...):
// WHAT must be a regular file".
int file_check_regular(const char *path, const char *what);

#endif
