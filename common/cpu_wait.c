// common/cpu_wait.c: see cpu_wait.h.
#define _GNU_SOURCE  // syscall(SYS_gettid)
#include "common/cpu_wait.h"

#include <dirent.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int cpu_wait_omp_threads(int *tids, int capacity) {
  int n = 0;
#pragma omp parallel
  {
    int t = omp_get_thread_num();
#ifdef SYS_gettid
    if (t < capacity) tids[t] = (int)syscall(SYS_gettid);
#else
    if (t < capacity) tids[t] = -1;
#endif
#pragma omp single
    n = omp_get_num_threads();
  }
  return n < capacity ? n : capacity;
}

// A thread's nanoseconds on a CPU and waiting for one (the first two fields of its schedstat);
// false when they cannot be read (a thread that has ended, a kernel without schedstat).
static bool read_schedstat(int tid, unsigned long long *on_cpu, unsigned long long *run_delay) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
  FILE *f = fopen(path, "r");
  if (!f) return false;
  bool ok = fscanf(f, "%llu %llu", on_cpu, run_delay) == 2;
  fclose(f);
  return ok;
}

double cpu_wait_seconds(const int *tids, int n) {
  unsigned long long total_ns = 0, on_cpu, run_delay;
  bool read_any = false;
  for (int k = 0; k < n; k++)
    if (tids[k] > 0 && read_schedstat(tids[k], &on_cpu, &run_delay)) total_ns += run_delay, read_any = true;
  return read_any ? (double)total_ns * 1e-9 : -1;
}

double cpu_time_other_threads(const int *tids, int n) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  unsigned long long total_ns = 0;
  for (struct dirent *de; (de = readdir(d));) {
    int tid = atoi(de->d_name);
    bool in_team = tid <= 0;  // "." and ".."
    for (int k = 0; k < n && !in_team; k++) in_team = tids[k] == tid;
    unsigned long long on_cpu, run_delay;
    if (!in_team && read_schedstat(tid, &on_cpu, &run_delay)) total_ns += on_cpu;  // else ended meanwhile
  }
  closedir(d);
  return (double)total_ns * 1e-9;
}

// The first number of `path` over its second ("max" or a missing file: -1); v2's cpu.max holds
// both, v1 splits them over two files (quota_path, period_path).
static double quota_of(const char *quota_path, const char *period_path) {
  FILE *f = fopen(quota_path, "r");
  if (!f) return -1;
  char a[32] = "", b[32] = "";
  int got = fscanf(f, "%31s %31s", a, b);
  fclose(f);
  if (got < 1 || strcmp(a, "max") == 0 || a[0] == '-') return -1;
  if (period_path) {
    f = fopen(period_path, "r");
    if (!f) return -1;
    got = fscanf(f, "%31s", b);
    fclose(f);
    if (got != 1) return -1;
  } else if (got != 2) {
    return -1;
  }
  double quota = strtod(a, NULL), period = strtod(b, NULL);
  return quota > 0 && period > 0 ? quota / period : -1;
}

// The smallest quota from dir/rel up to dir (-1: none). rel starts with '/'.
static double smallest_quota_up(const char *dir, const char *rel, bool v2) {
  char path[1024], quota_path[1100], period_path[1100];
  snprintf(path, sizeof path, "%s", rel);
  double least = -1;
  for (;;) {
    const char *sep = strcmp(path, "/") == 0 ? "" : path;
    double q;
    if (v2) {
      snprintf(quota_path, sizeof quota_path, "%s%s/cpu.max", dir, sep);
      q = quota_of(quota_path, NULL);
    } else {
      snprintf(quota_path, sizeof quota_path, "%s%s/cpu.cfs_quota_us", dir, sep);
      snprintf(period_path, sizeof period_path, "%s%s/cpu.cfs_period_us", dir, sep);
      q = quota_of(quota_path, period_path);
    }
    if (q > 0 && (least < 0 || q < least)) least = q;
    char *slash = strrchr(path, '/');
    if (!slash || slash == path) {
      if (strcmp(path, "/") == 0) break;
      strcpy(path, "/");  // the root last (a container's own cgroup, mounted there)
    } else {
      *slash = '\0';
    }
  }
  return least;
}

double cpu_quota_cpus(void) {
  FILE *f = fopen("/proc/self/cgroup", "r");
  if (!f) return -1;
  char line[1200];
  double least = -1;
  while (fgets(line, sizeof line, f)) {  // "ID:CONTROLLERS:PATH"
    line[strcspn(line, "\n")] = '\0';
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2 || c2[1] != '/') continue;
    *c2 = '\0';
    const char *controllers = c1 + 1, *rel = c2 + 1;
    double q = -1;
    if (controllers[0] == '\0') {  // cgroup v2
      q = smallest_quota_up("/sys/fs/cgroup", rel, true);
    } else {  // v1: the hierarchy holding the cpu controller ("cpu", "cpu,cpuacct")
      char list[256], dir[300];
      snprintf(list, sizeof list, ",%s,", controllers);
      if (!strstr(list, ",cpu,")) continue;
      snprintf(dir, sizeof dir, "/sys/fs/cgroup/%s", controllers);
      q = smallest_quota_up(dir, rel, false);
      if (q < 0) q = smallest_quota_up("/sys/fs/cgroup/cpu", rel, false);
    }
    if (q > 0 && (least < 0 || q < least)) least = q;
  }
  fclose(f);
  return least;
}

double cpu_wait_share(CpuWaitWindow *w, double now, int threads, double (*read)(const void *ctx), const void *ctx) {
  if (w->off || (w->wall0 >= 0 && now - w->wall0 < w->window_s)) return -1;
  double wait = read(ctx);
  if (wait < 0) {
    w->off = true;
    return -1;
  }
  double share = -1;
  if (w->wall0 >= 0 && threads > 0 && now > w->wall0) {
    share = (wait - w->wait0) / ((now - w->wall0) * threads);
    share = share < 0 ? 0 : share > 1 ? 1 : share;  // a thread that ended takes its count with it
  }
  w->wall0 = now, w->wait0 = wait;
  return share;
}
