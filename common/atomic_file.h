// common/atomic_file.h: write a file under a temporary name, then rename it into place.
//
// A reader (or a resumed run) sees either the old file or the complete new one, never a torn
// one: the data is written to "DIR/.NAME.tmp.PID", flushed and fsync'ed, renamed over NAME, and
// the directory is fsync'ed. On any failure the temporary file is removed and NAME is untouched.
// Used for every output: checkpoints, market data, metrics, reports.
// Depends on error.h.
#ifndef PPO_COMMON_ATOMIC_FILE_H
#define PPO_COMMON_ATOMIC_FILE_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#define ATOMIC_PATH_MAX 4096

typedef struct {
  char path[ATOMIC_PATH_MAX];      // the final name
  char tmp_path[ATOMIC_PATH_MAX];  // where the data goes until commit
  FILE *stream;                    // open on tmp_path (atomic_file_open only)
} AtomicFile;

// The temporary name for `path`, in the same directory (rename stays on one file system).
// Returns 0, or -1 and sets the error message when the name does not fit.
int atomic_file_temp_path(const char *path, char *tmp_path, size_t capacity);
// Whether a temporary name for `path` can be made (an output path checked before the work): 0, or
// -1 and the message atomic_file_temp_path would give. Nothing is created or noted.
int atomic_file_check_path(const char *path);

// Moves a finished temporary file into place: fsync(tmp), rename(tmp, path), fsync(dir).
// Returns 0, or -1, removes tmp_path and sets the error message.
int atomic_file_publish(const char *tmp_path, const char *path);

// Stdio flavour: opens a temporary stream for `path` ("wb"). Returns the stream, or NULL and sets
// the error message. The caller writes to af->stream, then calls exactly one of commit / abort.
FILE *atomic_file_open(AtomicFile *af, const char *path);
int atomic_file_commit(AtomicFile *af);  // fclose (checking write errors) + publish; 0, or -1 and the error message
int atomic_file_write_text(const char *path, const char *text);  // open + text + commit; 0, or -1 and the message
void atomic_file_abort(AtomicFile *af);                          // fclose + remove the temporary file; `path` untouched

// Files published together, all or none (ppo-eval's report.json and its CSVs): each is opened with
// atomic_file_open, written and finished, and only when every one is, atomic_file_publish_set
// renames them into place in order (the file readers look for, report.json, last). A failure
// before that is followed by atomic_file_abort of every file of the set (it is a no-op for one
// whose finish failed), so none is published and no temporary file stays.
// finish: fclose (checking write errors) + fsync of the temporary file; 0, or -1, the error message
// and the temporary file removed.
int atomic_file_finish(AtomicFile *af);
// Renames every finished file into place in order; 0, or -1 and the error message, with the files
// after the one whose rename failed removed (those before it are published: only a change to the
// directory meanwhile makes a rename fail).
int atomic_file_publish_set(AtomicFile *files, int count);

// For programs without their own stop handling (ppo-data, ppo-eval): installs handlers so that
// SIGINT, SIGTERM and SIGHUP remove this process's temporary files that are not yet published or
// removed, then end the process as the signal would have.
void atomic_file_remove_on_signals(void);
// A child process (gnuplot) that writes a noted temporary file: the handlers SIGKILL and reap it
// before removing the files, so that it cannot make its file after them. 0: none. Note it with
// the signals blocked from before the fork (gnuplot_render does), or a signal between the fork and
// the note leaves the child running.
void atomic_file_note_writer(pid_t pid);
// Removes a temporary file named by atomic_file_temp_path that will not be published, and its note.
void atomic_file_discard(const char *tmp_path);

// Creates directory `path` and its missing parents (mode 0777 before the umask); an existing
// directory is fine. 0, or -1 and the error message naming the directory that could not be made.
int make_directories(const char *path);
bool path_exists(const char *path);  // stat() succeeds: a file, a directory or anything else

#endif
