// Shim for libmpg123: MPEG audio (MP3, MP2) decoded as libsndfile decodes it, but quietly.
// libsndfile's own MPEG decoder gives libmpg123 no MPG123_QUIET, so libmpg123 writes its
// notes ("Note: Illegal Audio-MPEG-Header …", "… a one-frame stream? Duh...") to stderr; these
// few functions open the stream with the flags libsndfile sets plus MPG123_QUIET, and hide
// libmpg123's large-file name macros (function-like macros Swift cannot call).
#ifndef JACKVU_CMPG123_SHIM_H
#define JACKVU_CMPG123_SHIM_H

#include <mpg123.h>

/// Opens `path` to be read as interleaved 32-bit floats. On success fills the sample rate,
/// channels and frames (-1: unknown); on failure returns NULL with `*error` a libmpg123 error
/// code (mpg123_plain_strerror says it).
static inline mpg123_handle *jackvu_mpg123_open(const char *path, long *rate, int *channels, long long *frames, int *error) {
    mpg123_handle *h = mpg123_new(NULL, error);
    if (h == NULL) return NULL;
    // libsndfile's flags (mpeg_decode.c), with MPG123_QUIET.
    mpg123_param(h, MPG123_REMOVE_FLAGS, MPG123_AUTO_RESAMPLE, 1.0);
    mpg123_param(h, MPG123_ADD_FLAGS, MPG123_FORCE_FLOAT | MPG123_GAPLESS | MPG123_QUIET, 1.0);
#if MPG123_API_VERSION >= 45
    mpg123_param(h, MPG123_ADD_FLAGS, MPG123_NO_FRANKENSTEIN, 1.0);
#endif
    int encoding = 0;
    if ((*error = mpg123_open(h, path)) != MPG123_OK
        || (*error = mpg123_getformat(h, rate, channels, &encoding)) != MPG123_OK) {
        mpg123_delete(h);
        return NULL;
    }
    // The length as libsndfile takes it: from the stream's header (a Xing/LAME tag), else
    // by scanning the whole stream.
    off_t length = mpg123_length(h);
    if (length <= 0) {
        if ((*error = mpg123_scan(h)) != MPG123_OK) { mpg123_delete(h); return NULL; }
        length = mpg123_length(h);
    }
    *frames = length >= 0 ? (long long)length : -1;
    if ((*error = mpg123_format_none(h)) != MPG123_OK
        || (*error = mpg123_format(h, *rate, *channels, MPG123_ENC_FLOAT_32)) != MPG123_OK) {
        mpg123_delete(h);
        return NULL;
    }
    return h;
}

/// Reads up to `count` floats; returns MPG123_OK or MPG123_DONE with `*done` floats read, or
/// another code (MPG123_NEW_FORMAT: the stream changed its rate or channels; an error).
static inline int jackvu_mpg123_read(mpg123_handle *h, float *out, size_t count, size_t *done) {
    size_t bytes = 0;
    int r = mpg123_read(h, (unsigned char *)out, count * sizeof(float), &bytes);
    *done = bytes / sizeof(float);
    // MPG123_ERR says only that the handle has the error: its own code says which.
    return r == MPG123_ERR ? mpg123_errcode(h) : r;
}

/// The byte offset in the file where the decoder's input stands (after MPG123_DONE: where
/// the stream ended).
static inline long long jackvu_mpg123_stream_offset(mpg123_handle *h) {
    return (long long)mpg123_tell_stream(h);
}

static inline void jackvu_mpg123_close(mpg123_handle *h) {
    mpg123_close(h);
    mpg123_delete(h);
}

#endif
