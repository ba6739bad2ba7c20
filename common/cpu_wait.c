// common/cpu_wait.c: see cpu_wait.h.
#include "common/cpu_wait.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

double cpu_wait_seconds(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  unsigned long long total_ns = 0;
  int read_any = 0;
  for (struct dirent *de; (de = readdir(d));) {
    if (de->d_name[0] == '.') continue;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%.20s/schedstat", de->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;  // a thread that ended meanwhile
    unsigned long long on_cpu, run_delay;
    if (fscanf(f, "%llu %llu", &on_cpu, &run_delay) == 2) total_ns += run_delay, read_any = 1;
    fclose(f);
  }
  closedir(d);
  return read_any ? (double)total_ns * 1e-9 : -1;
}

double cpu_wait_share(CpuWaitWindow *w, double now, int threads, double (*read)(void)) {
  if (w->wall0 >= 0 && now - w->wall0 < w->window_s) return -1;
  double wait = read();
  if (wait < 0) return -1;
  double share = -1;
  if (w->wall0 >= 0 && threads > 0) {
    share = (wait - w->wait0) / ((now - w->wall0) * threads);
    share = share < 0 ? 0 : share > 1 ? 1 : share;  // a thread that ended takes its count with it
  }
  w->wall0 = now, w->wait0 = wait;
  return share;
}
