// Shim for libsndfile.
#ifndef JACKVU_CSNDFILE_SHIM_H
#define JACKVU_CSNDFILE_SHIM_H

#include <sndfile.h>
#include <stdio.h>
#include <unistd.h>

/// The name of a file's major format (e.g. "WAV (Microsoft)"), or "unknown".
static inline const char *jackvu_sf_format_name(int format) {
    SF_FORMAT_INFO info;
    info.format = format & SF_FORMAT_TYPEMASK;
    if (sf_command(NULL, SFC_GET_FORMAT_INFO, &info, sizeof(info)) != 0 || info.name == NULL) {
        return "unknown";
    }
    return info.name;
}

/// The bits per sample of a format's PCM or float samples (16, 24, 32) for integers, -32 for
/// 32-bit floats; 0 for any other encoding.
static inline int jackvu_sf_plain_bits(int format) {
    switch (format & SF_FORMAT_SUBMASK) {
    case SF_FORMAT_PCM_16: return 16;
    case SF_FORMAT_PCM_24: return 24;
    case SF_FORMAT_PCM_32: return 32;
    case SF_FORMAT_FLOAT: return -32;
    default: return 0;
    }
}

/// For a WAV, WAVEX or RF64 file of little-endian PCM samples: the bits per sample (16, 24,
/// 32) for integers, -32 for 32-bit floats; 0 for anything else (read those through libsndfile).
static inline int jackvu_sf_plain_wav_bits(int format) {
    int major = format & SF_FORMAT_TYPEMASK, endian = format & SF_FORMAT_ENDMASK;
    if ((major != SF_FORMAT_WAV && major != SF_FORMAT_WAVEX && major != SF_FORMAT_RF64) || (endian != SF_ENDIAN_FILE && endian != SF_ENDIAN_LITTLE)) {
        return 0;
    }
    return jackvu_sf_plain_bits(format);
}

/// For an AIFF, AIFC or CAF file of PCM or float samples: the bits per sample, as
/// `jackvu_sf_plain_bits`; 0 for anything else. (Their byte order is the file's `COMM` or
/// `desc` chunk's to say: `PlainWave`.)
static inline int jackvu_sf_plain_aiff_caf_bits(int format) {
    int major = format & SF_FORMAT_TYPEMASK;
    return major == SF_FORMAT_AIFF || major == SF_FORMAT_CAF ? jackvu_sf_plain_bits(format) : 0;
}

/// A file seen by libsndfile only up to `length` bytes: a WAV file whose chunk after its audio
/// claims more than the file holds is opened as if it ended with its audio (libsndfile 1.2
/// parses such a LIST chunk for minutes). Reads with `pread` on `fd`, which the caller owns.
typedef struct {
    int fd;
    sf_count_t length, position;
} jackvu_sf_view;

static sf_count_t jackvu_sf_view_length(void *user) { return ((jackvu_sf_view *)user)->length; }

static sf_count_t jackvu_sf_view_seek(sf_count_t offset, int whence, void *user) {
    jackvu_sf_view *view = user;
    sf_count_t to = whence == SEEK_SET ? offset : whence == SEEK_CUR ? view->position + offset : view->length + offset;
    view->position = to < 0 ? 0 : to;
    return view->position;
}

static sf_count_t jackvu_sf_view_read(void *into, sf_count_t count, void *user) {
    jackvu_sf_view *view = user;
    if (count <= 0 || view->position >= view->length) {
        return 0;
    }
    if (count > view->length - view->position) {
        count = view->length - view->position;
    }
    ssize_t got = pread(view->fd, into, (size_t)count, (off_t)view->position);
    if (got <= 0) {
        return 0;
    }
    view->position += got;
    return got;
}

static sf_count_t jackvu_sf_view_write(const void *from, sf_count_t count, void *user) {
    (void)from, (void)count, (void)user;
    return 0;
}

static sf_count_t jackvu_sf_view_tell(void *user) { return ((jackvu_sf_view *)user)->position; }

/// libsndfile's handle on `view` (read only), or NULL (`sf_strerror(NULL)` says why).
static inline SNDFILE *jackvu_sf_open_view(jackvu_sf_view *view, SF_INFO *info) {
    static SF_VIRTUAL_IO io = {jackvu_sf_view_length, jackvu_sf_view_seek, jackvu_sf_view_read, jackvu_sf_view_write, jackvu_sf_view_tell};
    return sf_open_virtual(&io, SFM_READ, info, view);
}

#endif
