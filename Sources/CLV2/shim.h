// LV2's headers (lv2-dev): the plugin descriptor and its entry point; URIDs (the host's map,
// for the atom types of the transport's position).
#include <lv2/core/lv2.h>
#include <lv2/urid/urid.h>

/// Maps `uri` through the host's map feature (0 when there is none).
static inline LV2_URID jackvu_lv2_map(const LV2_URID_Map *map, const char *uri) {
    return map ? map->map(map->handle, uri) : 0;
}

// RealtimeSanitizer, when a host process has it (the tests preload its runtime into jalv):
// run() marks itself a real-time context, so an allocation, a lock or a system call in it is
// reported. Weak: without the runtime these are no-ops.
extern void __rtsan_realtime_enter(void) __attribute__((weak));
extern void __rtsan_realtime_exit(void) __attribute__((weak));
extern void __rtsan_ensure_initialized(void) __attribute__((weak));

static inline void jackvu_lv2_rtsan_init(void) {
    if (__rtsan_ensure_initialized) __rtsan_ensure_initialized();
}
static inline void jackvu_lv2_rtsan_enter(void) {
    if (__rtsan_realtime_enter) __rtsan_realtime_enter();
}
static inline void jackvu_lv2_rtsan_exit(void) {
    if (__rtsan_realtime_exit) __rtsan_realtime_exit();
}
