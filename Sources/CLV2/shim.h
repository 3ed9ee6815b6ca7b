// LV2's headers (lv2-dev): the plugin descriptor and its entry point; URIDs (the host's map,
// for the atom types of the transport's position).
#include <lv2/core/lv2.h>
#include <lv2/urid/urid.h>
#include <lv2/state/state.h>

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

// LV2 state (the plugin's settings that are not control ports, saved with the host's session):
// a file path, made portable through the host's state:mapPath when it has one.
#include <lv2/state/state.h>
#include <stdlib.h>
#include <string.h>

static inline const void *jackvu_lv2_feature(const LV2_Feature *const *features, const char *uri) {
    for (; features && *features; ++features) {
        if (!strcmp((*features)->URI, uri)) return (*features)->data;
    }
    return NULL;
}

/// Stores `path` (absolute) under `key` as an atom of type `path_type`, abstract when the host
/// maps paths and `is_path` (an atom:Path; a string is stored as it is). Returns the store's
/// status.
static inline LV2_State_Status jackvu_lv2_store_path(
    LV2_State_Store_Function store, LV2_State_Handle handle, LV2_URID key, LV2_URID path_type,
    const char *path, int is_path, const LV2_Feature *const *features) {
    const LV2_State_Map_Path *map = is_path ? (const LV2_State_Map_Path *)jackvu_lv2_feature(features, LV2_STATE__mapPath) : NULL;
    const LV2_State_Free_Path *free_path = (const LV2_State_Free_Path *)jackvu_lv2_feature(features, LV2_STATE__freePath);
    char *abstract = map ? map->abstract_path(map->handle, path) : NULL;
    const char *value = abstract ? abstract : path;
    LV2_State_Status status = store(handle, key, value, strlen(value) + 1, path_type,
                                    LV2_STATE_IS_POD | LV2_STATE_IS_PORTABLE);
    if (abstract) {
        if (free_path) free_path->free_path(free_path->handle, abstract);
        else free(abstract);
    }
    return status;
}

/// The atom of type `path_type` stored under `key` (an atom:Path made absolute when `is_path`)
/// into `out` (`capacity` bytes with its NUL): its length, 0 when there is none, -1 when it
/// does not fit.
static inline long jackvu_lv2_retrieve_path(
    LV2_State_Retrieve_Function retrieve, LV2_State_Handle handle, LV2_URID key, LV2_URID path_type,
    int is_path, const LV2_Feature *const *features, char *out, size_t capacity) {
    size_t size = 0;
    uint32_t type = 0, flags = 0;
    const char *value = (const char *)retrieve(handle, key, &size, &type, &flags);
    if (!value || type != path_type || size == 0) return 0;
    const LV2_State_Map_Path *map = is_path ? (const LV2_State_Map_Path *)jackvu_lv2_feature(features, LV2_STATE__mapPath) : NULL;
    const LV2_State_Free_Path *free_path = (const LV2_State_Free_Path *)jackvu_lv2_feature(features, LV2_STATE__freePath);
    char *absolute = map ? map->absolute_path(map->handle, value) : NULL;
    const char *path = absolute ? absolute : value;
    size_t length = strnlen(path, size > 0 && !absolute ? size : capacity);
    long result = -1;
    if (length + 1 <= capacity) {
        memcpy(out, path, length);
        out[length] = 0;
        result = (long)length;
    }
    if (absolute) {
        if (free_path) free_path->free_path(free_path->handle, absolute);
        else free(absolute);
    }
    return result;
}
