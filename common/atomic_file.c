// common/atomic_file.c: see atomic_file.h.
#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"

// --- temporary files a signal removes ---------------------------------------------------------------
//
// Every temporary name this process makes is noted in a slot until it is published or removed (from
// one thread at a time: the programs write their files from the main thread). Once
// atomic_file_remove_on_signals() has run, SIGINT, SIGTERM and SIGHUP (unless ignored, as under
// nohup) unlink the noted files (unlink is async-signal-safe) and then end the process as the
// signal would have. A name the handler reads while it is being replaced can be a mix of two names;
// only names that end in this process's ".tmp.PID" are unlinked, and those are its own temporaries.
#define PENDING_SLOTS 16
static char pending[PENDING_SLOTS][ATOMIC_PATH_MAX];
static char pending_suffix[32];  // ".tmp.PID", set when the handlers are installed
static size_t pending_suffix_len;

static void pending_note(const char *tmp_path) {
  size_t len = strlen(tmp_path);
  if (len >= ATOMIC_PATH_MAX) return;
  for (int k = 0; k < PENDING_SLOTS; k++)
    if (pending[k][0] == '\0' || strcmp(pending[k], tmp_path) == 0) {
      memcpy(pending[k], tmp_path, len + 1);
      return;
    }
  // All slots busy (more than 16 files open at once): slot 0 is reused, and its file is left behind.
  memcpy(pending[0], tmp_path, len + 1);
}

static void pending_forget(const char *tmp_path) {
  for (int k = 0; k < PENDING_SLOTS; k++)
    if (strcmp(pending[k], tmp_path) == 0) pending[k][0] = '\0';
}

static volatile sig_atomic_t writer_child;  // a process writing a noted file (gnuplot), or 0

void atomic_file_note_writer(pid_t pid) { writer_child = (sig_atomic_t)pid; }

static void remove_pending_and_exit(int sig) {
  pid_t child = (pid_t)writer_child;
  if (child > 0) {  // ended first, so that it cannot make its file after the unlink
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
  }
  for (int k = 0; k < PENDING_SLOTS; k++) {
    size_t len = strnlen(pending[k], ATOMIC_PATH_MAX);
    if (len > pending_suffix_len && memcmp(pending[k] + len - pending_suffix_len, pending_suffix, pending_suffix_len) == 0)
      unlink(pending[k]);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

void atomic_file_remove_on_signals(void) {
  snprintf(pending_suffix, sizeof pending_suffix, ".tmp.%ld", (long)getpid());
  pending_suffix_len = strlen(pending_suffix);
  const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++) {
    struct sigaction old;
    if (sigaction(sigs[k], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;  // nohup's SIGHUP stays ignored
    struct sigaction sa = {.sa_handler = remove_pending_and_exit};
    sigemptyset(&sa.sa_mask);
    sigaction(sigs[k], &sa, NULL);
  }
}

void atomic_file_discard(const char *tmp_path) {
  unlink(tmp_path);
  pending_forget(tmp_path);
}

// The temporary name of path into tmp_path, not noted; 0, or -1 and the message.
static int temp_name(const char *path, char *tmp_path, size_t capacity) {
  const char *slash = strrchr(path, '/');
  int dir_len = slash ? (int)(slash - path + 1) : 0;  // keeps the trailing '/'
  const char *base = slash ? slash + 1 : path;
  if (base[0] == '\0') {
    error_set("%s: not a file name (it ends with '/')", path);
    return -1;
  }
  int n = snprintf(tmp_path, capacity, "%.*s.%s.tmp.%ld", dir_len, path, base, (long)getpid());
  if (n < 0 || (size_t)n >= capacity) {
    error_set("path too long for a temporary name beside it (at most %zu characters): %s", capacity - 32, path);
    return -1;
  }
  return 0;
}

int atomic_file_temp_path(const char *path, char *tmp_path, size_t capacity) {
  if (temp_name(path, tmp_path, capacity) != 0) return -1;
  pending_note(tmp_path);
  return 0;
}

int atomic_file_check_path(const char *path) {
  char tmp[ATOMIC_PATH_MAX];
  return temp_name(path, tmp, sizeof tmp);
}

// strerror never returns NULL in glibc; the guard keeps GCC's -Wformat-overflow quiet under UBSan.
static const char *errno_text(void) {
  const char *text = strerror(errno);
  return text ? text : "unknown error";
}

// fsync of a path opened read-only: makes a finished file or a rename durable.
static int fsync_path(const char *path, int flags) {
  int fd = open(path, flags);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  // Some file systems refuse fsync on directories (EINVAL): durability is best effort there.
  if (rc != 0 && (errno == EINVAL || errno == EROFS)) rc = 0;
  close(fd);
  return rc;
}

// fsync(tmp); 0, or -1, tmp_path removed and the error message.
static int sync_temporary(const char *tmp_path) {
  if (fsync_path(tmp_path, O_RDONLY) == 0) return 0;
  error_set("%s: cannot flush to disk: %s", tmp_path, errno_text());
  atomic_file_discard(tmp_path);
  return -1;
}

// rename(tmp, path), fsync(dir) of a temporary file already synced.
static int rename_into_place(const char *tmp_path, const char *path) {
  if (rename(tmp_path, path) != 0) {
    error_set("%s: cannot rename %s into place: %s", path, tmp_path, errno_text());
    atomic_file_discard(tmp_path);
    return -1;
  }
  pending_forget(tmp_path);
  char dir[ATOMIC_PATH_MAX];
  const char *slash = strrchr(path, '/');
  if (slash) {
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path + 1), path);
  } else {
    snprintf(dir, sizeof dir, ".");
  }
  fsync_path(dir, O_RDONLY | O_DIRECTORY);  // the rename itself; failure here loses nothing written
  return 0;
}

int atomic_file_publish(const char *tmp_path, const char *path) {
  if (sync_temporary(tmp_path) != 0) return -1;
  return rename_into_place(tmp_path, path);
}

FILE *atomic_file_open(AtomicFile *af, const char *path) {
  memset(af, 0, sizeof *af);
  if (strlen(path) >= sizeof af->path) {
    error_set("%s: path too long", path);
    return NULL;
  }
  strcpy(af->path, path);
  if (atomic_file_temp_path(path, af->tmp_path, sizeof af->tmp_path) != 0) {
    af->tmp_path[0] = '\0';  // a name cut short: nothing of it may be removed by an abort
    return NULL;
  }
  af->stream = fopen(af->tmp_path, "wb");
  if (!af->stream) {
    error_set("%s: cannot create file: %s", path, errno_text());
    return NULL;
  }
  return af->stream;
}

int atomic_file_finish(AtomicFile *af) {
  int write_failed = ferror(af->stream);
  int close_failed = fclose(af->stream) != 0;
  af->stream = NULL;
  if (write_failed || close_failed) {
    error_set("%s: write failed: %s", af->path, errno_text());
    atomic_file_discard(af->tmp_path);
    af->tmp_path[0] = '\0';
    return -1;
  }
  if (sync_temporary(af->tmp_path) != 0) {
    af->tmp_path[0] = '\0';
    return -1;
  }
  return 0;
}

int atomic_file_commit(AtomicFile *af) {
  if (atomic_file_finish(af) != 0) return -1;
  return rename_into_place(af->tmp_path, af->path);
}

int atomic_file_publish_set(AtomicFile *files, int count) {
  int k = 0;
  for (; k < count; k++) {
    if (rename_into_place(files[k].tmp_path, files[k].path) != 0) break;  // it removed its own
    files[k].tmp_path[0] = '\0';
  }
  if (k == count) return 0;
  files[k].tmp_path[0] = '\0';
  for (int j = k + 1; j < count; j++) atomic_file_abort(&files[j]);
  return -1;
}

int atomic_file_write_text(const char *path, const char *text) {
  AtomicFile af;
  if (!atomic_file_open(&af, path)) return -1;
  fputs(text, af.stream);
  return atomic_file_commit(&af);
}

void atomic_file_abort(AtomicFile *af) {
  if (af->stream) fclose(af->stream);
  af->stream = NULL;
  if (af->tmp_path[0]) atomic_file_discard(af->tmp_path);
  af->tmp_path[0] = '\0';
}

int make_directories(const char *path) {
  char buf[ATOMIC_PATH_MAX];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
    error_set("%.200s...: directory path longer than %d bytes", path, ATOMIC_PATH_MAX - 1);
    return -1;
  }
  for (char *p = buf + 1;; p++) {
    if (*p != '/' && *p != '\0') continue;
    char c = *p;
    *p = '\0';
    if (mkdir(buf, 0777) != 0) {
      struct stat st;
      if (errno != EEXIST) {
        error_set("%s: cannot create directory: %s", buf, strerror(errno));
        return -1;
      }
      if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {  // EEXIST for a file too
        error_set("%s: exists and is not a directory", buf);
        return -1;
      }
    }
    if (c == '\0') return 0;
    *p = c;
  }
}

bool path_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}
