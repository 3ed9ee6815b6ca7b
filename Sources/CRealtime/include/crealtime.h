#ifndef JACKVU_CREALTIME_H
#define JACKVU_CREALTIME_H

#include <semaphore.h>
#include <spawn.h>
#include <time.h>

/// Waits on `semaphore` until it is posted or CLOCK_MONOTONIC reaches `deadline`
/// (glibc's sem_clockwait, which Swift's Glibc module does not show: it needs _GNU_SOURCE).
/// Retries when a signal interrupts the wait. Returns 0 when posted, else the errno
/// (ETIMEDOUT at the deadline).
int jackvu_sem_wait_monotonic(sem_t *semaphore, const struct timespec *deadline);

/// glibc 2.34's posix_spawn_file_actions_addclosefrom_np (it needs _GNU_SOURCE): the
/// --on-alarm command gets none of jackvu's descriptors from 3 on.
int jackvu_spawn_close_from_fd(posix_spawn_file_actions_t *actions, int from);

#endif
