/* Fourier transforms: DFT and STFT (ember/ops/signal.py). Complex values are interleaved (re, im).
 * `tw` holds (cos, sin)(2 pi k / n), computed at compile time: k < n/2 where n is a power of two (radix-2
 * FFT), k < n otherwise (direct DFT). The forward transform multiplies by e^(-i theta), the inverse by
 * e^(+i theta) and does not scale (the callers divide by n). */

/*@kernel ember_fft_impl requires ember_prelude*/
#define EMBER_FFT_LINE(NAME, T)                                                                     \
    static void NAME(T *EMBER_RESTRICT z, T *EMBER_RESTRICT tmp, const T *tw, size_t n, int inverse) { \
        const T sign = inverse ? (T)1 : (T)-1;                                                      \
        size_t i, j, k, len;                                                                        \
        if ((n & (n - 1)) == 0) {                                                                   \
            /* Radix 2: bit-reversed order, then butterflies of growing length. */                  \
            for (i = 1, j = 0; i < n; ++i) {                                                        \
                size_t bit = n >> 1;                                                                \
                for (; j & bit; bit >>= 1) j ^= bit;                                                \
                j |= bit;                                                                           \
                if (i < j) {                                                                        \
                    const T re = z[2 * i], im = z[2 * i + 1];                                       \
                    z[2 * i] = z[2 * j];                                                            \
                    z[2 * i + 1] = z[2 * j + 1];                                                    \
                    z[2 * j] = re;                                                                  \
                    z[2 * j + 1] = im;                                                              \
                }                                                                                   \
            }                                                                                       \
            for (len = 2; len <= n; len <<= 1) {                                                    \
                const size_t half = len >> 1, step = n / len;                                      \
                for (i = 0; i < n; i += len) {                                                      \
                    for (k = 0; k < half; ++k) {                                                    \
                        const T wr = tw[2 * k * step], wi = sign * tw[2 * k * step + 1];            \
                        T *a = z + 2 * (i + k), *b = z + 2 * (i + k + half);                        \
                        const T vr = b[0] * wr - b[1] * wi, vi = b[0] * wi + b[1] * wr;             \
                        b[0] = a[0] - vr;                                                           \
                        b[1] = a[1] - vi;                                                           \
                        a[0] += vr;                                                                 \
                        a[1] += vi;                                                                 \
                    }                                                                               \
                }                                                                                   \
            }                                                                                       \
            return;                                                                                 \
        }                                                                                           \
        /* Any other length: the direct sum, the twiddle index j*k kept mod n as it steps. */       \
        for (k = 0; k < n; ++k) {                                                                   \
            T re = 0, im = 0;                                                                       \
            size_t at = 0;                                                                          \
            for (j = 0; j < n; ++j) {                                                               \
                const T wr = tw[2 * at], wi = sign * tw[2 * at + 1];                                \
                re += z[2 * j] * wr - z[2 * j + 1] * wi;                                            \
                im += z[2 * j] * wi + z[2 * j + 1] * wr;                                            \
                at += k;                                                                            \
                if (at >= n) at -= n;                                                               \
            }                                                                                       \
            tmp[2 * k] = re;                                                                        \
            tmp[2 * k + 1] = im;                                                                    \
        }                                                                                           \
        for (k = 0; k < 2 * n; ++k) z[k] = tmp[k];                                                  \
    }
/*@end*/

/*@kernel ember_dft_impl requires ember_prelude*/
/* x: [outer, in_len, inner, in_comps] (in_comps 1: real, 2: complex); y: [outer, out_len, inner,
 * out_comps]. Each line along the axis is zero-padded or cut to n, transformed (inverse: scaled by 1/n)
 * and its first out_len values stored (out_comps 1: the real parts). `hermitian`: the input is the first
 * half of the spectrum of a real signal (inverse one-sided DFT); the rest is its mirror image, conjugated,
 * and the imaginary parts at 0 and n/2 are ignored. work: 4n elements. */
#define EMBER_DFT(NAME, LINE, T)                                                                    \
    static void NAME(T *y, const T *x, T *work, const T *tw, size_t outer, size_t in_len, size_t inner, \
                     size_t in_comps, size_t n, size_t out_len, size_t out_comps, int inverse, int hermitian) { \
        T *z = work, *tmp = work + 2 * n;                                                           \
        const T scale = inverse ? (T)1 / (T)n : (T)1;                                               \
        size_t o, i, j;                                                                             \
        for (o = 0; o < outer; ++o) {                                                               \
            for (i = 0; i < inner; ++i) {                                                           \
                for (j = 0; j < n; ++j) {                                                           \
                    const size_t src = hermitian && j > n / 2 ? n - j : j;                          \
                    T re = 0, im = 0;                                                               \
                    if (src < in_len) {                                                             \
                        const T *p = x + ((o * in_len + src) * inner + i) * in_comps;               \
                        re = p[0];                                                                  \
                        im = in_comps == 2 ? p[1] : (T)0;                                           \
                    }                                                                               \
                    if (hermitian && (src == 0 || 2 * src == n)) im = 0;                            \
                    z[2 * j] = re;                                                                  \
                    z[2 * j + 1] = hermitian && j != src ? -im : im;                                \
                }                                                                                   \
                LINE(z, tmp, tw, n, inverse);                                                       \
                for (j = 0; j < out_len; ++j) {                                                     \
                    T *q = y + ((o * out_len + j) * inner + i) * out_comps;                         \
                    q[0] = z[2 * j] * scale;                                                        \
                    if (out_comps == 2) q[1] = z[2 * j + 1] * scale;                                \
                }                                                                                   \
            }                                                                                       \
        }                                                                                           \
    }

/* signal: [batch, length, comps]; y: [batch, frames, bins, 2]. Frame f is the n samples from f * step,
 * times the window (none: ones), transformed forward; its first `bins` values are stored. */
#define EMBER_STFT(NAME, LINE, T)                                                                   \
    static void NAME(T *y, const T *x, const T *window, T *work, const T *tw, size_t batch, size_t length, \
                     size_t comps, size_t frames, size_t step, size_t n, size_t bins) {             \
        T *z = work, *tmp = work + 2 * n;                                                           \
        size_t b, f, j;                                                                             \
        for (b = 0; b < batch; ++b) {                                                               \
            for (f = 0; f < frames; ++f) {                                                          \
                for (j = 0; j < n; ++j) {                                                           \
                    const size_t s = f * step + j;                                                  \
                    const T w = window ? window[j] : (T)1;                                          \
                    z[2 * j] = z[2 * j + 1] = 0;                                                    \
                    if (s < length) {                                                               \
                        const T *p = x + (b * length + s) * comps;                                  \
                        z[2 * j] = p[0] * w;                                                        \
                        if (comps == 2) z[2 * j + 1] = p[1] * w;                                    \
                    }                                                                               \
                }                                                                                   \
                LINE(z, tmp, tw, n, 0);                                                             \
                for (j = 0; j < 2 * bins; ++j) y[((b * frames + f) * bins) * 2 + j] = z[j];         \
            }                                                                                       \
        }                                                                                           \
    }
/*@end*/

/*@kernel ember_fft_line_f32 requires ember_fft_impl*/
EMBER_FFT_LINE(ember_fft_line_f32, float)
/*@end*/

/*@kernel ember_fft_line_f64 requires ember_fft_impl*/
EMBER_FFT_LINE(ember_fft_line_f64, double)
/*@end*/

/*@kernel ember_dft_f32 requires ember_dft_impl ember_fft_line_f32*/
EMBER_DFT(ember_dft_f32, ember_fft_line_f32, float)
/*@end*/

/*@kernel ember_dft_f64 requires ember_dft_impl ember_fft_line_f64*/
EMBER_DFT(ember_dft_f64, ember_fft_line_f64, double)
/*@end*/

/*@kernel ember_stft_f32 requires ember_dft_impl ember_fft_line_f32*/
EMBER_STFT(ember_stft_f32, ember_fft_line_f32, float)
/*@end*/

/*@kernel ember_stft_f64 requires ember_dft_impl ember_fft_line_f64*/
EMBER_STFT(ember_stft_f64, ember_fft_line_f64, double)
/*@end*/
