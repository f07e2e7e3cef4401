/* What the C programs of bench/c/ share with bench/driver_bench.cpp's method. */
#ifndef WIREPOOL_BENCH_COMMON_H
#define WIREPOOL_BENCH_COMMON_H

#include <time.h>

/* The scan is read this many times, each with one reader, and its median time
 * reported: one 20,000-row scan takes 15-30 ms, short enough for one
 * preemption on this shared machine to move it by 10% (driver_bench.cpp does
 * the same). */
#define SCAN_PASSES 5

static inline double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The median of n (<= SCAN_PASSES) times; sorts them. */
static inline double median_seconds(double* v, int n) {
  for (int i = 1; i < n; ++i)
    for (int k = i; k > 0 && v[k - 1] > v[k]; --k) {
      double t = v[k];
      v[k] = v[k - 1];
      v[k - 1] = t;
    }
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
