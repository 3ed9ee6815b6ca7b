// Shim for libsndfile.
#ifndef JACKVU_CSNDFILE_SHIM_H
#define JACKVU_CSNDFILE_SHIM_H

#include <sndfile.h>

/// The name of a file's major format (e.g. "WAV (Microsoft)"), or "unknown".
static inline const char *jackvu_sf_format_name(int format) {
    SF_FORMAT_INFO info;
    info.format = format & SF_FORMAT_TYPEMASK;
    if (sf_command(NULL, SFC_GET_FORMAT_INFO, &info, sizeof(info)) != 0 || info.name == NULL) {
        return "unknown";
    }
    return info.name;
}

#endif
