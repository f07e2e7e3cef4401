/* What the C programs of bench/c/ share with bench/driver_bench.cpp's method. */
#ifndef WIREPOOL_BENCH_COMMON_H
#define WIREPOOL_BENCH_COMMON_H

#include <stdio.h>
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

/* Ends scan pass `pass` started at t0: records its time, and answers nonzero
 * (after saying so) when it did not read `rows` rows. */
static inline int scan_pass_done(const char* program, double* times, int pass, double t0,
                                 long long scanned, long long rows) {
  times[pass] = now() - t0;
  if (scanned == rows) return 0;
  fprintf(stderr, "%s: scanned %lld rows, expected %lld\n", program, scanned, rows);
  return 1;
}

#endif
