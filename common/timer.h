// common/timer.h: monotonic wall-clock timers for progress lines and benchmarks.
// Never affected by clock adjustments (CLOCK_MONOTONIC). Depends on nothing.
#ifndef PPO_COMMON_TIMER_H
#define PPO_COMMON_TIMER_H

double timer_now(void);                        // seconds since an arbitrary fixed point
static inline double timer_since(double t0) {  // seconds elapsed since t0 = timer_now()
  return timer_now() - t0;
}

#endif
