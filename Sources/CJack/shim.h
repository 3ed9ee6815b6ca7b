// Shim for libjack: non-variadic wrappers Swift can call, and RealtimeSanitizer markers.
#ifndef JACKVU_CJACK_SHIM_H
#define JACKVU_CJACK_SHIM_H

#include <jack/jack.h>
#include <jack/metadata.h>
#include <jack/midiport.h>
#include <jack/uuid.h>
#include <stddef.h>

/// `jack_client_open` is variadic (the server name follows `JackServerName`), which Swift
/// cannot call. `server_name` may be NULL for the default server.
static inline jack_client_t *jackvu_client_open(const char *client_name, jack_options_t options,
                                                jack_status_t *status, const char *server_name) {
    if (server_name != NULL) {
        return jack_client_open(client_name, (jack_options_t)(options | JackServerName), status,
                                server_name);
    }
    return jack_client_open(client_name, options, status);
}

// RealtimeSanitizer (clang's -fsanitize=realtime) marks a real-time context with these two
// calls. They are declared weak: in a normal build nothing defines them and the markers are
// no-ops; in a build linked with -fsanitize=realtime the runtime defines them and any
// allocation, lock or blocking system call between enter and exit aborts with a report.
extern void __rtsan_realtime_enter(void) __attribute__((weak));
extern void __rtsan_realtime_exit(void) __attribute__((weak));

static inline void jackvu_rtsan_enter(void) {
    if (__rtsan_realtime_enter) __rtsan_realtime_enter();
}
static inline void jackvu_rtsan_exit(void) {
    if (__rtsan_realtime_exit) __rtsan_realtime_exit();
}
/// 1 when this binary was linked with the RealtimeSanitizer runtime.
static inline int jackvu_rtsan_linked(void) {
    return __rtsan_realtime_enter != NULL;
}

/// The start of the current cycle: its first frame on JACK's frame clock (returned), and its
/// time on JACK's microsecond clock (*usecs; 0 and 0 if unknown). Real-time safe.
static inline jack_nframes_t jackvu_cycle_start(jack_client_t *client, jack_time_t *usecs) {
    jack_nframes_t frames;
    jack_time_t current, next;
    float period;
    if (client == NULL || jack_get_cycle_times(client, &frames, &current, &next, &period) != 0) {
        *usecs = 0;
        return 0;
    }
    *usecs = current;
    return frames;
}

#endif
