// common/host_memory.h: how much RAM this machine has and can still give (Linux /proc/meminfo).
#ifndef PPO_COMMON_HOST_MEMORY_H
#define PPO_COMMON_HOST_MEMORY_H

#include <stddef.h>

// MemAvailable and MemTotal in bytes: 0, or -1 when /proc/meminfo cannot be read or lacks them.
int host_memory_info(size_t *available, size_t *total);

#endif
