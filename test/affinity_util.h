// test/affinity_util.h: the calling thread (and the threads it makes later) pinned to one CPU of
// those it may use, for the tests of waiting for a CPU. The including file defines _GNU_SOURCE
// before its first #include (sched_setaffinity, CPU_SET).
#ifndef PPO_TEST_AFFINITY_UTIL_H
#define PPO_TEST_AFFINITY_UTIL_H

#include <sched.h>

// 0 when pinned, -1 when the affinity could not be read or set.
static inline int pin_to_one_cpu(void) {
  cpu_set_t one;
  CPU_ZERO(&one);
  if (sched_getaffinity(0, sizeof one, &one) != 0) return -1;
  int cpu = 0;
  while (!CPU_ISSET(cpu, &one)) cpu++;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return sched_setaffinity(0, sizeof one, &one) == 0 ? 0 : -1;
}

#endif
