// common/host_memory.h: how much RAM this machine has and can still give this process (Linux
// /proc/meminfo and the address-space limit).
#ifndef PPO_COMMON_HOST_MEMORY_H
#define PPO_COMMON_HOST_MEMORY_H

#include <stddef.h>

// MemAvailable and MemTotal in bytes, each capped by this process's address-space limit
// (RLIMIT_AS: available by what is left of it after the address space in use): 0, or -1 when
// /proc/meminfo cannot be read or lacks them.
int host_memory_info(size_t *available, size_t *total);

#endif
