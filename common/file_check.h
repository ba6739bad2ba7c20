// common/file_check.h: refusing a path that is not a regular file before opening it for reading,
// or before a program writes a file there.
// A FIFO given as a configuration, checkpoint or market file blocked the reader forever (and a
// timeout's SIGTERM then read as a stop request); a directory gave "not an HDF5 file". A directory
// where an output goes (RUN/metrics.csv, ppo-eval's report.json) failed only at the rename, after
// the work (exit 1), or was a warning at every write (best.h5).
// Depends on error.h.
#ifndef PPO_COMMON_FILE_CHECK_H
#define PPO_COMMON_FILE_CHECK_H

// 0 when path is a regular file (after symbolic links) or cannot be stat'ed (the opener then says
// why: no such file, permission); else -1 and the message "PATH: is a directory (a FIFO, ...):
// WHAT must be a regular file".
int file_check_regular(const char *path, const char *what);

// For a file a program writes (under a temporary name renamed over path, or opened for appending):
// 0 when nothing is at path, or a regular file, or a symbolic link (the rename replaces the link
// itself), or when path cannot be looked at (the writer then says why); else -1 and the message
// "PATH: is a directory (a FIFO, ...), not a regular file: WHAT is written there; move it away".
int file_check_output(const char *path, const char *what);

#endif
