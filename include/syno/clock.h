/* syno/clock.h - the one clock of every measurement, and the median of timings.
 *
 *   syno_clock_seconds  seconds on CLOCK_MONOTONIC (differences only mean something)
 *   syno_clock_wall     seconds since the Unix epoch (CLOCK_REALTIME): for timestamps that
 *                       are stored or shown, never for measuring a duration
 *   syno_clock_thread_seconds  CPU seconds the calling thread has run (CLOCK_THREAD_CPUTIME_ID):
 *                       for timing single-threaded work on a shared machine, where the wall
 *                       clock also counts the time other processes held the CPU
 *   syno_median         sorts v[0..n) ascending in place and returns its median (the mean of
 *                       the middle two when n is even; 0 when n < 1)
 */
#ifndef SYNO_CLOCK_H
#define SYNO_CLOCK_H

double syno_clock_seconds(void);
double syno_clock_wall(void);
double syno_clock_thread_seconds(void);
double syno_median(double *v, int n);

#endif
