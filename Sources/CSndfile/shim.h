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

/// For a WAV, WAVEX or RF64 file of little-endian PCM samples: the bits per sample (16, 24,
/// 32) for integers, -32 for 32-bit floats; 0 for anything else (read those through libsndfile).
static inline int jackvu_sf_plain_wav_bits(int format) {
    int major = format & SF_FORMAT_TYPEMASK, endian = format & SF_FORMAT_ENDMASK;
    if ((major != SF_FORMAT_WAV && major != SF_FORMAT_WAVEX && major != SF_FORMAT_RF64) || (endian != SF_ENDIAN_FILE && endian != SF_ENDIAN_LITTLE)) {
        return 0;
    }
    switch (format & SF_FORMAT_SUBMASK) {
    case SF_FORMAT_PCM_16: return 16;
    case SF_FORMAT_PCM_24: return 24;
    case SF_FORMAT_PCM_32: return 32;
    case SF_FORMAT_FLOAT: return -32;
    default: return 0;
    }
}

/// For an AIFF, AIFC or CAF file of PCM or float samples: the bits per sample (16, 24, 32)
/// for integers, -32 for 32-bit floats; 0 for anything else. (Their byte order is the file's
/// `COMM` or `desc` chunk's to say: `PlainWave`.)
static inline int jackvu_sf_plain_aiff_caf_bits(int format) {
    int major = format & SF_FORMAT_TYPEMASK;
    if (major != SF_FORMAT_AIFF && major != SF_FORMAT_CAF) {
        return 0;
    }
    switch (format & SF_FORMAT_SUBMASK) {
    case SF_FORMAT_PCM_16: return 16;
    case SF_FORMAT_PCM_24: return 24;
    case SF_FORMAT_PCM_32: return 32;
    case SF_FORMAT_FLOAT: return -32;
    default: return 0;
    }
}

#endif
