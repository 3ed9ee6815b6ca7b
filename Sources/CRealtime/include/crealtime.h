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

/// glibc 2.34's posix_spawn_file_actions_addclosefrom_np (it needs _GNU_SOURCE): a helper
/// process (`ChildProcess.spawn`: the --on-alarm command, the in-process client's metadata
/// helper) gets none of jackvu's descriptors from 3 on — inside jackd those are the server's
/// client sockets, which a copy held open would keep registered.
int jackvu_spawn_close_from_fd(posix_spawn_file_actions_t *actions, int from);

#endif
