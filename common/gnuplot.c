// common/gnuplot.c: see gnuplot.h.
#include "gnuplot.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atomic_file.h"
#include "error.h"

bool gnuplot_quote(char *out, size_t capacity, const char *text) {
  size_t n = 0;
  bool whole = true;
  if (capacity < 3) {  // room for '' at least
    if (capacity) out[0] = '\0';
    return false;
  }
  out[n++] = '\'';
  for (const char *p = text; *p; p++) {
    size_t need = *p == '\'' ? 2 : 1;
    if (n + need + 2 > capacity) {  // the closing quote and the terminator
      whole = false;
      break;
    }
    if (*p == '\'') out[n++] = '\'';
    out[n++] = (unsigned char)*p < 0x20 || *p == 0x7f ? ' ' : *p;
  }
  out[n++] = '\'';
  out[n] = '\0';
  return whole;
}

// dir/name into out; false when it does not fit.
static bool join(char *out, size_t capacity, const char *dir, const char *name) {
  int n = snprintf(out, capacity, "%s/%s", dir, name);
  return n >= 0 && (size_t)n < capacity;
}

int gnuplot_render(const char *dir, const char *script, const char *png) {
  char tmp[ATOMIC_PATH_MAX], path[ATOMIC_PATH_MAX], assign[2 * ATOMIC_PATH_MAX + 8];
  if (!join(path, sizeof path, dir, png)) {
    error_set("%s/%s: path too long", dir, png);
    return -1;
  }
  // The temporary name is noted with its directory, so that a signal's clean-up finds it
  // (atomic_file_remove_on_signals); gnuplot, run in dir, is given the name alone.
  if (atomic_file_temp_path(path, tmp, sizeof tmp) != 0) return -1;
  const char *tmp_name = strrchr(tmp, '/') + 1;
  memcpy(assign, "out=", 4);
  if (!gnuplot_quote(assign + 4, sizeof assign - 4, tmp_name)) {
    error_set("%s: path too long", path);
    return -1;
  }
  // The signals that remove temporary files are blocked until the child is noted as the PNG's writer
  // (atomic_file_note_writer): the handler then ends it before removing the file.
  sigset_t stop_signals, before;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT), sigaddset(&stop_signals, SIGTERM), sigaddset(&stop_signals, SIGHUP);
  sigprocmask(SIG_BLOCK, &stop_signals, &before);
  pid_t pid = fork();
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, &before, NULL);
    if (chdir(dir) != 0) _exit(126);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
    execlp("gnuplot", "gnuplot", "-e", assign, script, (char *)NULL);
    _exit(127);
  }
  int fork_errno = pid < 0 ? errno : 0;
  if (pid > 0) atomic_file_note_writer(pid);
  sigprocmask(SIG_SETMASK, &before, NULL);
  int status = 0;
  pid_t waited_for = -1;
  // a handler that returns (ppo-train's stop request) does not end the wait
  while (pid > 0 && (waited_for = waitpid(pid, &status, 0)) < 0 && errno == EINTR) continue;
  bool waited = pid > 0 && waited_for == pid;
  atomic_file_note_writer(0);
  if (!waited || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (pid < 0)
      error_set("cannot start gnuplot: %s", strerror(fork_errno));
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
      error_set("gnuplot is not installed (apt-get install gnuplot-nox; then run `gnuplot %s` in %s)", script, dir);
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 126)
      error_set("cannot enter %s to run gnuplot", dir);
    else
      error_set("gnuplot failed (%s %d; its message is above; `gnuplot %s` in %s draws it by hand)",
                WIFEXITED(status) ? "exit status" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), script, dir);
    atomic_file_discard(tmp);  // gnuplot made it at `set output`, before its error
    unlink(path);  // an earlier run's picture
    return -1;
  }
  if (atomic_file_publish(tmp, path) != 0) {  // removes tmp
    unlink(path);
    return -1;
  }
  return 0;
}
