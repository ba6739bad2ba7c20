// test/alloc_counter.h: counts malloc-family calls, for the "no allocation after init" tests.
//
// The linker routes malloc, calloc, realloc, aligned_alloc and posix_memalign of the whole test
// executable through counting wrappers (`ppo_add_test(... COUNT_ALLOCATIONS)` in test/CMakeLists.txt
// adds alloc_counter.c and the --wrap options). Calls made inside shared libraries (libgomp, oneDNN)
// are not ours and are not counted. A test reads the counter before and after the code under test.
#ifndef PPO_TEST_ALLOC_COUNTER_H
#define PPO_TEST_ALLOC_COUNTER_H

long alloc_counter_read(void);  // malloc-family calls made by this executable so far (thread-safe)

#endif
