#define _GNU_SOURCE
#include "crealtime.h"

#include <errno.h>

int jackvu_sem_wait_monotonic(sem_t *semaphore, const struct timespec *deadline) {
    for (;;) {
        if (sem_clockwait(semaphore, CLOCK_MONOTONIC, deadline) == 0) return 0;
        if (errno != EINTR) return errno;
    }
}

int jackvu_spawn_close_from_fd(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
