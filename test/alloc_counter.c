// test/alloc_counter.c: the counting wrappers behind alloc_counter.h (linked with --wrap=...).
#include "test/alloc_counter.h"

#include <stdatomic.h>
#include <stddef.h>

static atomic_long allocations;

void *__real_malloc(size_t size);
void *__real_calloc(size_t count, size_t size);
void *__real_realloc(void *p, size_t size);
void *__real_aligned_alloc(size_t alignment, size_t size);
int __real_posix_memalign(void **p, size_t alignment, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t count, size_t size);
void *__wrap_realloc(void *p, size_t size);
void *__wrap_aligned_alloc(size_t alignment, size_t size);
int __wrap_posix_memalign(void **p, size_t alignment, size_t size);

void *__wrap_malloc(size_t size) {
  atomic_fetch_add(&allocations, 1);
  return __real_malloc(size);
}

void *__wrap_calloc(size_t count, size_t size) {
  atomic_fetch_add(&allocations, 1);
  return __real_calloc(count, size);
}

void *__wrap_realloc(void *p, size_t size) {
  atomic_fetch_add(&allocations, 1);
  return __real_realloc(p, size);
}

void *__wrap_aligned_alloc(size_t alignment, size_t size) {
  atomic_fetch_add(&allocations, 1);
  return __real_aligned_alloc(alignment, size);
}

int __wrap_posix_memalign(void **p, size_t alignment, size_t size) {
  atomic_fetch_add(&allocations, 1);
  return __real_posix_memalign(p, alignment, size);
}

long alloc_counter_read(void) { return atomic_load(&allocations); }
