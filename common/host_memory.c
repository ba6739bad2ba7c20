// common/host_memory.c: see host_memory.h.
#include "common/host_memory.h"

#include <stdio.h>

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
  return 0;
}
