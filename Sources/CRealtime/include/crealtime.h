#ifndef JACKVU_CREALTIME_H
#define JACKVU_CREALTIME_H

#include <semaphore.h>
#include <time.h>

/// Waits on `semaphore` until it is posted or CLOCK_MONOTONIC reaches `deadline`
/// (glibc's sem_clockwait, which Swift's Glibc module does not show: it needs _GNU_SOURCE).
/// Retries when a signal interrupts the wait. Returns 0 when posted, else the errno
/// (ETIMEDOUT at the deadline).
int jackvu_sem_wait_monotonic(sem_t *semaphore, const struct timespec *deadline);

#endif
