// Shim for FFTW 3, single precision (fftw3f).
#ifndef JACKVU_CFFTW_SHIM_H
#define JACKVU_CFFTW_SHIM_H

#include <fftw3.h>

/// Plans a real-to-complex transform of `n` floats into `n / 2 + 1` interleaved complex values
/// (re, im), so Swift sees plain `float *` buffers instead of `float[2]` tuples.
static inline fftwf_plan jackvu_fftwf_plan_r2c(int n, float *in, float *out, unsigned flags) {
    return fftwf_plan_dft_r2c_1d(n, in, (fftwf_complex *)out, flags);
}

/// Plans the inverse (complex-to-real) transform: `n / 2 + 1` interleaved complex values to
/// `n` floats, unnormalised (the result is n times the signal).
static inline fftwf_plan jackvu_fftwf_plan_c2r(int n, float *in, float *out, unsigned flags) {
    return fftwf_plan_dft_c2r_1d(n, (fftwf_complex *)in, out, flags);
}

#endif
