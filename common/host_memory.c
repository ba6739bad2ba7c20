// common/host_memory.c: see host_memory.h.
#include "common/host_memory.h"

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

// This process's address space in bytes (VmSize: /proc/self/statm's first field); 0 when unknown.
static size_t address_space_in_use(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long pages = 0;
  int n = fscanf(f, "%llu", &pages);
  fclose(f);
  return n == 1 ? (size_t)pages * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

int host_memory_info(size_t *available, size_t *total) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return -1;
  char line[256];
  unsigned long long kib, avail = 0, all = 0;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) avail = kib;
    if (sscanf(line, "MemTotal: %llu kB", &kib) == 1) all = kib;
  }
  fclose(f);
  if (!avail || !all) return -1;
  *available = (size_t)avail * 1024;
  *total = (size_t)all * 1024;
  // An address-space limit (ulimit -v, prlimit --as, a batch system's) caps what malloc can give.
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    size_t limit = (size_t)rl.rlim_cur, used = address_space_in_use();
    size_t left = limit > used ? limit - used : 0;
    if (left < *available) *available = left;
    if (limit < *total) *total = limit;
  }
  return 0;
}
