/* Depthwise integer convolution (one input channel per group), direct: no packing, no int8 product. */

/*@kernel ember_qdwconv requires ember_qround ember_window_bounds ember_qrun ember_qdw_vnni ember_qblk ember_conv_geo*/
/* Depthwise integer convolution (one input channel per group, M = C * multiplier), one output row at a
 * time as in ember_dwconv_f32: each tap adds w * (x - xz) over the row segment whose input column is
 * inside the input (outside it, x - xz would be 0). w: M x kvol int16, the weights minus their zero
 * point. The input channel is first converted to (x - xz) values of the accumulator type: float where
 * there is an FPU and the caller says every partial sum stays below 2^24 (`exact`: the sums are
 * integers, exact in float, so the result is the integer one, at float speed), else int32.
 * scratch (4-byte values): for 2-D the stride-phase planes and the flat sums (EMBER_QDW_PLANES), for
 * 3-D the channel's values and one output row. */
#define EMBER_QDW_ROWS(NAME, T)                                                                                        \
    static void NAME(T *EMBER_RESTRICT acc, const T *EMBER_RESTRICT xs, const int16_t *wm, const int32_t *p, int od,   \
                     int oh, const int *kwb) {                                                                         \
        const int D = p[EMBER_GEO_IN_D], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], KD = p[EMBER_GEO_K_D],          \
                  KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W], OW = p[EMBER_GEO_OUT_W], sw = p[EMBER_GEO_STRIDE_W];   \
        int kd, kh, kw, ow, lo, hi;                                                                                    \
        for (ow = 0; ow < OW; ++ow) acc[ow] = (T)0;                                                                    \
        for (kd = 0; kd < KD; ++kd) {                                                                                  \
            const int id = od * p[EMBER_GEO_STRIDE_D] - p[EMBER_GEO_PAD_D] + kd * p[EMBER_GEO_DIL_D];                  \
            if (id < 0 || id >= D) continue;                                                                           \
            for (kh = 0; kh < KH; ++kh) {                                                                              \
                const int ih = oh * p[EMBER_GEO_STRIDE_H] - p[EMBER_GEO_PAD_H] + kh * p[EMBER_GEO_DIL_H];              \
                const T *xr = xs + ((ptrdiff_t)id * H + ih) * W;                                                       \
                if (ih < 0 || ih >= H) continue;                                                                       \
                for (kw = 0; kw < KW; ++kw) {                                                                          \
                    const int off = kw * p[EMBER_GEO_DIL_W] - p[EMBER_GEO_PAD_W];                                      \
                    const T wv = (T)wm[((ptrdiff_t)kd * KH + kh) * KW + kw];                                           \
                    if (kw < 16) {                                                                                     \
                        lo = kwb[2 * kw];                                                                              \
                        hi = kwb[2 * kw + 1];                                                                          \
                    } else {                                                                                           \
                        ember_window_bounds(W, OW, sw, off, &lo, &hi);                                                 \
                    }                                                                                                  \
                    if (sw == 1)                                                                                       \
                        for (ow = lo; ow < hi; ++ow) acc[ow] += wv * xr[ow + off];                                     \
                    else                                                                                               \
                        for (ow = lo; ow < hi; ++ow) acc[ow] += wv * xr[(ptrdiff_t)ow * sw + off];                     \
                }                                                                                                      \
            }                                                                                                          \
        }                                                                                                              \
    }
/* 2-D: the channel as zero-padded planes, one per stride phase (a, b) = (row % sh, column % sw), so
 * that every tap reads one plane at a fixed offset from the output's flat index q = oh*Wh + ow: the
 * whole channel is then one long multiply-add loop per tap (for 3x3 one loop for all nine).
 * xc: the channel's bytes (int8 if sgn), zero point xz; returns acc (len values, row oh at oh*Wh). */
/* d[j] = x[j * step] - xz for n bytes (int8 if sgn): a padded plane row; constant steps 1 and 2 so
 * that the loops vectorize, and not inlined, which keeps the restrict qualifiers that let them. */
#if EMBER_GNUC
#define EMBER_QNOINLINE __attribute__((noinline))
#else
#define EMBER_QNOINLINE
#endif
#define EMBER_QDW_FILL_LOOP(T, LOAD)                                                                     \
    for (; j + 16 <= n; j += 16) /* in runs of 16 and 4: vectorized whole, not left to a remainder */    \
        for (t = j; t < j + 16; ++t) d[t] = (T)((int32_t)LOAD(t) - xz);                                \
    for (; j + 4 <= n; j += 4)                                                                           \
        for (t = j; t < j + 4; ++t) d[t] = (T)((int32_t)LOAD(t) - xz);                                 \
    for (; j < n; ++j) d[j] = (T)((int32_t)LOAD(j) - xz);
#define EMBER_QDW_S1(i) ((int8_t)x[i])
#define EMBER_QDW_S2(i) ((int8_t)x[2 * (i)])
#define EMBER_QDW_SN(i) ((int8_t)x[(ptrdiff_t)(i) * step])
#define EMBER_QDW_U1(i) (x[i])
#define EMBER_QDW_U2(i) (x[2 * (i)])
#define EMBER_QDW_UN(i) (x[(ptrdiff_t)(i) * step])
#define EMBER_QDW_FILL(NAME, T)                                                                          \
    EMBER_QNOINLINE static void NAME(T *EMBER_RESTRICT d, const uint8_t *EMBER_RESTRICT x, int n, int step, int sgn, \
                                     int32_t xz) {                                                      \
        int j = 0, t;                                                                                    \
        if (sgn && step == 1) {                                                                          \
            EMBER_QDW_FILL_LOOP(T, EMBER_QDW_S1)                                                         \
        } else if (sgn && step == 2) {                                                                   \
            EMBER_QDW_FILL_LOOP(T, EMBER_QDW_S2)                                                         \
        } else if (sgn) {                                                                                \
            EMBER_QDW_FILL_LOOP(T, EMBER_QDW_SN)                                                         \
        } else if (step == 1) {                                                                          \
            EMBER_QDW_FILL_LOOP(T, EMBER_QDW_U1)                                                         \
        } else if (step == 2) {                                                                          \
            EMBER_QDW_FILL_LOOP(T, EMBER_QDW_U2)                                                         \
        } else {                                                                                         \
            EMBER_QDW_FILL_LOOP(T, EMBER_QDW_UN)                                                         \
        }                                                                                                \
    }
#define EMBER_QDW_PLANES(NAME, T, FILL)                                                                                \
    static T *NAME(T *EMBER_RESTRICT buf, const uint8_t *xc, int sgn, int32_t xz, const int16_t *wm, const int32_t *p, \
                   int fill) {                                                                                         \
        const int H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W],          \
                  OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W];                                                    \
        const int sh = p[EMBER_GEO_STRIDE_H], sw = p[EMBER_GEO_STRIDE_W], dh = p[EMBER_GEO_DIL_H],                     \
                  dw = p[EMBER_GEO_DIL_W], pt = p[EMBER_GEO_PAD_H], pl = p[EMBER_GEO_PAD_W];                           \
        const int Hh = ((OH - 1) * sh + (KH - 1) * dh + 1 + sh - 1) / sh;                                              \
        const int Wh = ((OW - 1) * sw + (KW - 1) * dw + 1 + sw - 1) / sw;                                              \
        const ptrdiff_t plane = (ptrdiff_t)Hh * Wh, len = (ptrdiff_t)(OH - 1) * Wh + OW;                               \
        T *EMBER_RESTRICT acc = buf + (ptrdiff_t)sh * sw * plane;                                                      \
        int a, b, i, j, kh, kw;                                                                                        \
        ptrdiff_t q;                                                                                                   \
        for (b = 0; b < sw * fill; ++b) {                                                                              \
            int blo, bhi;                                                                                              \
            ember_window_bounds(W, Wh, sw, b - pl, &blo, &bhi);                                                        \
            for (a = 0; a < sh; ++a)                                                                                   \
                for (i = 0; i < Hh; ++i) {                                                                             \
                    T *EMBER_RESTRICT d = buf + ((ptrdiff_t)a * sw + b) * plane + (ptrdiff_t)i * Wh;                   \
                    const int ih = i * sh + a - pt, in = ih >= 0 && ih < H;                                            \
                    const int lo = in ? blo : 0, hi = in ? bhi : 0;                                                    \
                    for (j = 0; j < lo; ++j) d[j] = (T)0;                                                              \
                    if (in) FILL(d + lo, xc + (ptrdiff_t)ih * W + b - pl + (ptrdiff_t)lo * sw, hi - lo, sw, sgn, xz);  \
                    for (j = hi; j < Wh; ++j) d[j] = (T)0;                                                             \
                }                                                                                                      \
        }                                                                                                              \
        if (KH == 3 && KW == 3) { /* the usual kernel: all taps in one pass */                                         \
            const T *EMBER_RESTRICT t[9];                                                                              \
            T c[9];                                                                                                    \
            for (kh = 0; kh < 9; ++kh) {                                                                               \
                const int r = kh / 3 * dh, cc = kh % 3 * dw;                                                           \
                t[kh] = buf + ((ptrdiff_t)(r % sh) * sw + cc % sw) * plane + (ptrdiff_t)(r / sh) * Wh + cc / sw;       \
                c[kh] = (T)wm[kh];                                                                                     \
            }                                                                                                          \
            for (q = 0; q < len; ++q)                                                                                  \
                acc[q] = c[0] * t[0][q] + c[1] * t[1][q] + c[2] * t[2][q] + c[3] * t[3][q] + c[4] * t[4][q] +          \
                         c[5] * t[5][q] + c[6] * t[6][q] + c[7] * t[7][q] + c[8] * t[8][q];                            \
            return acc;                                                                                                \
        }                                                                                                              \
        for (q = 0; q < len; ++q) acc[q] = (T)0;                                                                       \
        for (kh = 0; kh < KH; ++kh)                                                                                    \
            for (kw = 0; kw < KW; ++kw) {                                                                              \
                const T wv = (T)wm[kh * KW + kw];                                                                      \
                const T *EMBER_RESTRICT t = buf + ((ptrdiff_t)(kh * dh % sh) * sw + kw * dw % sw) * plane +            \
                                            (ptrdiff_t)(kh * dh / sh) * Wh + kw * dw / sw;                             \
                for (q = 0; q < len; ++q) acc[q] += wv * t[q];                                                         \
            }                                                                                                          \
        return acc;                                                                                                    \
    }
EMBER_QDW_ROWS(ember_qdw_rows_i32, int32_t)
EMBER_QDW_FILL(ember_qdw_fill_i32, int32_t)
EMBER_QDW_PLANES(ember_qdw_planes_i32, int32_t, ember_qdw_fill_i32)
#if EMBER_HAVE_FPU32
#define EMBER_QDW_FLOAT 1
EMBER_QDW_ROWS(ember_qdw_rows_f32, float)
EMBER_QDW_FILL(ember_qdw_fill_f32, float)
EMBER_QDW_PLANES(ember_qdw_planes_f32, float, ember_qdw_fill_f32)
#endif

#ifdef EMBER_QDW_FLOAT
/* q[i] = requantised (int32)acc[i] + b0: the exact float sums of a whole channel at once. q may be acc
 * itself (byte i over float i / 4: each run of acc is read before its bytes are written). */
EMBER_QNOINLINE static void ember_qdw_requant(uint8_t *q, const float *acc, ptrdiff_t n,
                                              int32_t b0, int32_t mu, int32_t sh, const int32_t *out) {
    const int32_t zp = out[EMBER_QOUT_ZP], lo = out[EMBER_QOUT_LO], hi = out[EMBER_QOUT_HI];
    int32_t a[256]; /* in runs through ember_qrun, which vectorizes (this loop's int64 did not on AVX2) */
    ptrdiff_t i, j;
    for (i = 0; i < n; i += 256) {
        const int r = n - i < 256 ? (int)(n - i) : 256;
        for (j = 0; j < r; ++j) a[j] = (int32_t)acc[i + j];
        ember_qrun(q + i, a, r, b0, mu, sh, zp, lo, hi);
    }
}
#endif

#if EMBER_HAVE_AVX2 && defined(__FMA__)
/* AVX2 (and AVX-512 builds, for the layers qdwvnni.c's VNNI kernel does not take: TFLite's roundings, whose
 * planes path took 3-5x this one's time), channel-blocked input and output (lay 3, multiplier 1): a channel
 * quad at a time, never a channel plane. The quad's input rows for a band of output rows are laid out once as floats x - xz
 * (4 channels a pixel, zero padding, columns split by stride phase as EMBER_QDW_PLANES does), so that
 * 8 consecutive output pixels of a tap are 4 contiguous 8-float vectors (2 pixels x 4 channels): one
 * fused multiply-add each by the tap's 4 weights. The sums (bias first) are exact integers in float
 * and so is the requantisation, where qlinear.py's exact_in_float holds (out[EMBER_QOUT_EXACT]), or
 * TFLite's integer one (shift codes from EMBER_Q_TFL: quant.c ember_qt8_rq, lane by lane); then
 * packed to bytes and stored as whole words. The general path unblocked each channel into a plane,
 * converted it, and scattered each output byte back at a stride of 4. */
#define EMBER_QDW_AVX2 1
#define EMBER_QDX_TAPS 64
typedef float ember_qdx_f8 __attribute__((vector_size(32)));
typedef float ember_qdx_f8u __attribute__((vector_size(32), aligned(4), may_alias));
typedef float ember_qdx_f4 __attribute__((vector_size(16)));
typedef float ember_qdx_f4u __attribute__((vector_size(16), aligned(4), may_alias));
typedef int32_t ember_qdx_i8 __attribute__((vector_size(32)));
typedef int32_t ember_qdx_i4 __attribute__((vector_size(16)));
typedef uint64_t ember_qdx_u64u __attribute__((aligned(1), may_alias));
typedef uint32_t ember_qdx_u32u __attribute__((aligned(1), may_alias));

/* The 8 (ld8) or 4 bytes at s, int8 if sgn else uint8, as int32 lanes: one VPMOVSXBD/VPMOVZXBD from memory
 * (GCC assembles a conversion of an unaligned byte vector from scalar byte loads). */
EMBER_INLINE ember_qdx_i8 ember_qdx_ld8(const uint8_t *s, int sgn) {
    ember_qdx_i8 r;
    if (sgn) __asm__("vpmovsxbd %1, %0" : "=x"(r) : "m"(*(const ember_qdx_u64u *)(const void *)s));
    else __asm__("vpmovzxbd %1, %0" : "=x"(r) : "m"(*(const ember_qdx_u64u *)(const void *)s));
    return r;
}
EMBER_INLINE ember_qdx_i4 ember_qdx_ld4(const uint8_t *s, int sgn) {
    ember_qdx_i4 r;
    if (sgn) __asm__("vpmovsxbd %1, %0" : "=x"(r) : "m"(*(const ember_qdx_u32u *)(const void *)s));
    else __asm__("vpmovzxbd %1, %0" : "=x"(r) : "m"(*(const ember_qdx_u32u *)(const void *)s));
    return r;
}
typedef short ember_qdx_h16 __attribute__((vector_size(32)));
typedef char ember_qdx_b32 __attribute__((vector_size(32)));
typedef uint32_t ember_qdx_w8u __attribute__((vector_size(32), aligned(1), may_alias));
typedef uint32_t ember_qdx_w1u __attribute__((aligned(1), may_alias));

/* ember_qdx_fill for column stride 2: each pair of adjacent input pixels is one 8-byte load whose two
 * pixels go to the two phases' rows, where a load per pixel and phase was most of a stride-2 layer's time. */
static void ember_qdx_fill2(float *EMBER_RESTRICT F, const uint8_t *xi, ptrdiff_t bs, int c, int sgn, int32_t xz,
                            const int32_t *p, int r0, int nr, int Wq) {
    const int H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], pt = p[EMBER_GEO_PAD_H], pl = p[EMBER_GEO_PAD_W];
    /* the input columns whose padded column iw + pl has a place (j < Wq) */
    const int iw1 = W < 2 * Wq - pl ? W : 2 * Wq - pl;
    const ember_qdx_i4 z = (ember_qdx_i4){0} + xz;
    const ember_qdx_i8 z8 = (ember_qdx_i8){0} + xz;
    int lo[2], hi[2], rr, b, j, iw;
    for (b = 0; b < 2; ++b) ember_window_bounds(W, Wq, 2, b - pl, &lo[b], &hi[b]);
    for (rr = 0; rr < nr; ++rr) {
        const int ih = r0 + rr - pt;
        float *const d[2] = {F + (ptrdiff_t)rr * 2 * Wq * 4, F + ((ptrdiff_t)rr * 2 + 1) * Wq * 4};
        if (ih < 0 || ih >= H) {
            for (j = 0; j < 2 * Wq; ++j) *(ember_qdx_f4u *)(void *)(d[0] + 4 * j) = (ember_qdx_f4){0};
            continue;
        }
        for (b = 0; b < 2; ++b) { /* the padding columns of each phase */
            for (j = 0; j < lo[b]; ++j) *(ember_qdx_f4u *)(void *)(d[b] + 4 * j) = (ember_qdx_f4){0};
            for (j = hi[b]; j < Wq; ++j) *(ember_qdx_f4u *)(void *)(d[b] + 4 * j) = (ember_qdx_f4){0};
        }
        for (iw = 0; iw < iw1;) { /* runs of pixels inside one block of 64: consecutive words */
            const ptrdiff_t pix = (ptrdiff_t)ih * W + iw;
            const uint8_t *s = xi + ember_qblk_off(pix, c, bs);
            const int run = 64 - (int)(pix & 63), e = iw + (run < iw1 - iw ? run : iw1 - iw);
            if (iw + 2 <= e) { /* a pair's first pixel always lands in the same phase in one run */
                const int pc = iw + pl;
                float *da = d[pc & 1] + 4 * (pc >> 1), *db = d[(pc + 1) & 1] + 4 * ((pc + 1) >> 1);
                for (; iw + 2 <= e; iw += 2, s += 8, da += 4, db += 4) {
                    const ember_qdx_f8 v = __builtin_convertvector(ember_qdx_ld8(s, sgn) - z8, ember_qdx_f8);
                    *(ember_qdx_f4u *)(void *)da = (ember_qdx_f4){v[0], v[1], v[2], v[3]};
                    *(ember_qdx_f4u *)(void *)db = (ember_qdx_f4){v[4], v[5], v[6], v[7]};
                }
            }
            for (; iw < e; ++iw, s += 4) {
                const int pc = iw + pl;
                *(ember_qdx_f4u *)(void *)(d[pc & 1] + 4 * (pc >> 1)) =
                    __builtin_convertvector(ember_qdx_ld4(s, sgn) - z, ember_qdx_f4);
            }
        }
    }
}
/* Padded input rows r0 .. r0+nr-1 of channel quad c of the blocked image xi (bs bytes per block) as
 * floats x - xz: row rr, phase b, column j at F + ((rr * sw + b) * Wq + j) * 4 (padded column j*sw + b). */
static void ember_qdx_fill(float *EMBER_RESTRICT F, const uint8_t *xi, ptrdiff_t bs, int c, int sgn, int32_t xz,
                           const int32_t *p, int r0, int nr, int Wq) {
    const int H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], sw = p[EMBER_GEO_STRIDE_W], pt = p[EMBER_GEO_PAD_H],
              pl = p[EMBER_GEO_PAD_W];
    const ember_qdx_i4 z = (ember_qdx_i4){0} + xz;
    const ember_qdx_i8 z8 = (ember_qdx_i8){0} + xz;
    int rr, b, j;
    if (sw == 2) {
        ember_qdx_fill2(F, xi, bs, c, sgn, xz, p, r0, nr, Wq);
        return;
    }
    for (b = 0; b < sw; ++b) {
        int lo0, hi0; /* the columns j with input column j*sw + b - pl inside the input: once a phase, not a row
                       * (its divisions were a tenth of the layer) */
        ember_window_bounds(W, Wq, sw, b - pl, &lo0, &hi0);
        for (rr = 0; rr < nr; ++rr) {
            const int ih = r0 + rr - pt;
            float *EMBER_RESTRICT d = F + ((ptrdiff_t)rr * sw + b) * Wq * 4;
            int lo = lo0, hi = hi0;
            if (ih < 0 || ih >= H) lo = hi = 0;
            for (j = 0; j < lo; ++j) *(ember_qdx_f4u *)(void *)(d + 4 * j) = (ember_qdx_f4){0};
            while (j < hi) { /* runs of pixels inside one block of 64: words 4 * sw bytes apart */
                const ptrdiff_t pix = (ptrdiff_t)ih * W + j * sw + b - pl;
                const uint8_t *s = xi + ember_qblk_off(pix, c, bs);
                const int run = (sw == 1 ? 63 - (int)(pix & 63) : (63 - (int)(pix & 63)) / sw) + 1,
                          e = j + (run < hi - j ? run : hi - j);
                if (sw == 1) /* two pixels' words at a time */
                    for (; j + 2 <= e; j += 2, s += 8)
                        *(ember_qdx_f8u *)(void *)(d + 4 * j) = __builtin_convertvector(ember_qdx_ld8(s, sgn) - z8, ember_qdx_f8);
                for (; j < e; ++j, s += 4 * sw)
                    *(ember_qdx_f4u *)(void *)(d + 4 * j) = __builtin_convertvector(ember_qdx_ld4(s, sgn) - z, ember_qdx_f4);
            }
            for (; j < Wq; ++j) *(ember_qdx_f4u *)(void *)(d + 4 * j) = (ember_qdx_f4){0};
        }
    }
}
/* Requantised lanes (2 pixels x 4 channels) of the float sums a: bias 1.5 * 2^23 added by one rounding,
 * then the integer bits (qvec.c), clamped. */
EMBER_INLINE ember_qdx_i8 ember_qdx_rq(ember_qdx_f8 a, ember_qdx_f8 m, ember_qdx_i8 off, ember_qdx_i8 lo, ember_qdx_i8 hi) {
    ember_qdx_i8 v;
    __asm__("vfmadd213ps %2, %1, %0" : "+x"(a) : "x"(m), "x"((ember_qdx_f8){0} + 12582912.0f));
    v = (ember_qdx_i8)a - off;
    /* VPMAXSD, VPMINSD by asm: clang (zig cc, the cross compiler) has no builtins for them */
    __asm__("vpmaxsd %2, %1, %0\n\tvpminsd %3, %0, %0" : "=&x"(v) : "x"(v), "x"(lo), "x"(hi));
    return v;
}
/* The layer on AVX2 if it takes this path (returns 0 where not: then the general path runs). */
static int ember_qdx_conv(uint8_t *y, const uint8_t *x, int x_sgn, int32_t xz, const int32_t *p, int N, int M,
                          const int16_t *w, const int32_t *bias, const int32_t *mult, const int32_t *shift,
                          const int32_t *out, void *scratch, ptrdiff_t room, int mb) {
    const int KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W],
              sh = p[EMBER_GEO_STRIDE_H], sw = p[EMBER_GEO_STRIDE_W], dh = p[EMBER_GEO_DIL_H], dw = p[EMBER_GEO_DIL_W];
    const int taps = KH * KW, OWv = (OW + 7) / 8 * 8, Wq = OWv + (KW - 1) * dw / sw;
    const ptrdiff_t s_in = (ptrdiff_t)p[EMBER_GEO_IN_H] * p[EMBER_GEO_IN_W], s_out = (ptrdiff_t)OH * OW;
    const ptrdiff_t bs = 64 * (ptrdiff_t)mb, row_bytes = (ptrdiff_t)sw * Wq * 16;
    const ptrdiff_t fit_rows = room / row_bytes, halo = (ptrdiff_t)(KH - 1) * dh + 1;
    const int band = fit_rows < halo ? 0 : (int)((fit_rows - halo) / sh + 1 < OH ? (fit_rows - halo) / sh + 1 : OH);
    const ember_qdx_i8 off = (ember_qdx_i8){0} + (0x4B400000 - out[EMBER_QOUT_ZP]),
                       lo = (ember_qdx_i8){0} + out[EMBER_QOUT_LO], hi = (ember_qdx_i8){0} + out[EMBER_QOUT_HI];
    const int uns = out[EMBER_QOUT_LO] >= 0; /* bytes by unsigned saturation (the clamp holds them) */
    /* lo, hi in every byte and the zero point in every int16 (ember_qt8_rqa's results: the clamp after the packs) */
    const ember_qdx_i8 blo = (ember_qdx_i8){0} + (int32_t)(0x01010101u * (uint8_t)out[EMBER_QOUT_LO]),
                       bhi = (ember_qdx_i8){0} + (int32_t)(0x01010101u * (uint8_t)out[EMBER_QOUT_HI]),
                       wzp = (ember_qdx_i8){0} + (int32_t)(0x00010001u * (uint16_t)out[EMBER_QOUT_ZP]);
    /* TFLite's requantisation (quant.c ember_qt8_rq, a lane's channel's own multiplier and shift) of the
     * exact float sums made int32, the bias added in int32 (float could round it) */
    const int tfl = shift[0] >= EMBER_Q_TFL && shift[0] < 3 * EMBER_Q_TFL;
    const ember_qdx_i8 order = {0, 4, 1, 5, 2, 6, 3, 7};
    float *const F = (float *)scratch;
    ptrdiff_t toff[EMBER_QDX_TAPS];
    ember_qdx_f8 wf[EMBER_QDX_TAPS];
    int n, c, t, oh0, oh, ow0, l, j;
    if (p[EMBER_GEO_IN_D] != 1 || p[EMBER_GEO_K_D] != 1 || p[EMBER_GEO_OUT_D] != 1 || M % 4 || taps > EMBER_QDX_TAPS ||
        band < 1 || p[EMBER_GEO_C] != M)
        return 0;
    for (t = 0; t < taps; ++t) { /* floats from a band row's first output pixel to tap t's input */
        const int kh = t / KW, kw = t % KW;
        toff[t] = (((ptrdiff_t)kh * dh * sw + kw * dw % sw) * Wq + kw * dw / sw) * 4;
    }
    for (n = 0; n < N; ++n)
        for (c = 0; c < M; c += 4) {
            const uint8_t *xi = x + n * ((s_in + 63) / 64) * bs;
            uint8_t *yi = y + n * ((s_out + 63) / 64) * bs;
            ember_qdx_f8 m, b0;
            ember_qdx_i8 bi = (ember_qdx_i8){0};
            ember_qt8 tq;
            ember_qt8_init(&tq, mult[c], shift[c], out[EMBER_QOUT_ZP], out[EMBER_QOUT_LO], out[EMBER_QOUT_HI]);
            for (l = 0; l < 8; ++l) {
                union { uint32_t u; float f; } p2;
                p2.u = (uint32_t)(127 - shift[c + l % 4]) << 23;
                m[l] = (float)mult[c + l % 4] * p2.f;
                b0[l] = bias ? (float)bias[c + l % 4] : 0.0f;
                if (tfl) {
                    bi[l] = bias ? bias[c + l % 4] : 0;
                    b0[l] = 0.0f;
                }
            }
            if (tfl) {
                ember_qt8_quad(&tq, mult + c, shift + c); /* quant.c */
                ember_qt8_one(&tq, out[EMBER_QOUT_ONE]);
            }
            for (t = 0; t < taps; ++t)
                for (l = 0; l < 8; ++l) wf[t][l] = (float)w[(ptrdiff_t)(c + l % 4) * taps + t];
            for (oh0 = 0; oh0 < OH; oh0 += band) {
                const int nb = OH - oh0 < band ? OH - oh0 : band;
                ember_qdx_fill(F, xi, bs, c, x_sgn, xz, p, oh0 * sh, (nb - 1) * sh + (KH - 1) * dh + 1, Wq);
                for (oh = oh0; oh < oh0 + nb; ++oh) {
                    const float *row = F + (ptrdiff_t)(oh - oh0) * sh * sw * Wq * 4;
                    for (ow0 = 0; ow0 < OW; ow0 += 8) {
                        ember_qdx_f8 a0 = b0, a1 = b0, a2 = b0, a3 = b0, c0 = {0}, c1 = {0}, c2 = {0}, c3 = {0};
                        ember_qdx_i8 q;
                        const ptrdiff_t pix = (ptrdiff_t)oh * OW + ow0;
                        const int cnt = OW - ow0 < 8 ? OW - ow0 : 8;
                        /* the even taps into a0..a3, the odd ones into c0..c3: eight chains of FMAs, where four
                         * waited on each other's latency; every partial sum is an integer within the bound
                         * that makes the whole exact, so the order changes no bit */
                        for (t = 0; t + 1 < taps; t += 2) {
                            const float *s = row + toff[t] + 4 * ow0, *u = row + toff[t + 1] + 4 * ow0;
                            a0 += wf[t] * *(const ember_qdx_f8u *)(const void *)s;
                            a1 += wf[t] * *(const ember_qdx_f8u *)(const void *)(s + 8);
                            a2 += wf[t] * *(const ember_qdx_f8u *)(const void *)(s + 16);
                            a3 += wf[t] * *(const ember_qdx_f8u *)(const void *)(s + 24);
                            c0 += wf[t + 1] * *(const ember_qdx_f8u *)(const void *)u;
                            c1 += wf[t + 1] * *(const ember_qdx_f8u *)(const void *)(u + 8);
                            c2 += wf[t + 1] * *(const ember_qdx_f8u *)(const void *)(u + 16);
                            c3 += wf[t + 1] * *(const ember_qdx_f8u *)(const void *)(u + 24);
                        }
                        if (t < taps) {
                            const float *s = row + toff[t] + 4 * ow0;
                            a0 += wf[t] * *(const ember_qdx_f8u *)(const void *)s;
                            a1 += wf[t] * *(const ember_qdx_f8u *)(const void *)(s + 8);
                            a2 += wf[t] * *(const ember_qdx_f8u *)(const void *)(s + 16);
                            a3 += wf[t] * *(const ember_qdx_f8u *)(const void *)(s + 24);
                        }
                        a0 += c0;
                        a1 += c1;
                        a2 += c2;
                        a3 += c3;
                        if (tq.one) { /* gemmlowp's as one rounding (quant.c ember_qt8_rqa), the zero point added
                                         saturating to int16 and the clamp on bytes (as qgemm.c ember_qf8_pack_words) */
#define EMBER_QDX_RQA(a) ember_qt8_rqa(__builtin_convertvector(a, ember_qdx_i8) + bi, tq.m, tq.mo, tq.rnd_e, tq.rnd_o, \
                                       tq.s32)
                            ember_qdx_h16 h01 = (ember_qdx_h16)__builtin_ia32_packssdw256(EMBER_QDX_RQA(a0),
                                                                                          EMBER_QDX_RQA(a1)),
                                          h23 = (ember_qdx_h16)__builtin_ia32_packssdw256(EMBER_QDX_RQA(a2),
                                                                                          EMBER_QDX_RQA(a3));
#undef EMBER_QDX_RQA
                            ember_qdx_b32 b8;
                            __asm__("vpaddsw %1, %0, %0" : "+x"(h01) : "x"(wzp));
                            __asm__("vpaddsw %1, %0, %0" : "+x"(h23) : "x"(wzp));
                            if (uns) {
                                b8 = (ember_qdx_b32)__builtin_ia32_packuswb256(h01, h23);
                                __asm__("vpmaxub %1, %0, %0\n\tvpminub %2, %0, %0" : "+x"(b8) : "x"(blo), "x"(bhi));
                            } else {
                                b8 = (ember_qdx_b32)__builtin_ia32_packsswb256(h01, h23);
                                __asm__("vpmaxsb %1, %0, %0\n\tvpminsb %2, %0, %0" : "+x"(b8) : "x"(blo), "x"(bhi));
                            }
                            q = (ember_qdx_i8)__builtin_ia32_permvarsi256((ember_qdx_i8)b8, order); /* pixel order */
                        } else {
#define EMBER_QDX_RQ(a) (tfl ? ember_qt8_rq(__builtin_convertvector(a, ember_qdx_i8) + bi, &tq) \
                             : ember_qdx_rq(a, m, off, lo, hi))
                            const ember_qdx_h16 h01 = (ember_qdx_h16)__builtin_ia32_packssdw256(EMBER_QDX_RQ(a0),
                                                                                                EMBER_QDX_RQ(a1)),
                                                h23 = (ember_qdx_h16)__builtin_ia32_packssdw256(EMBER_QDX_RQ(a2),
                                                                                                EMBER_QDX_RQ(a3));
#undef EMBER_QDX_RQ
                            const ember_qdx_b32 b8 = uns ? (ember_qdx_b32)__builtin_ia32_packuswb256(h01, h23)
                                                         : (ember_qdx_b32)__builtin_ia32_packsswb256(h01, h23);
                            q = (ember_qdx_i8)__builtin_ia32_permvarsi256((ember_qdx_i8)b8, order); /* pixel order */
                        }
                        if (cnt == 8 && (pix & 63) <= 56) /* 8 words of one block */
                            *(ember_qdx_w8u *)(void *)(yi + ember_qblk_off(pix, c, bs)) = (ember_qdx_w8u)q;
                        else
                            for (j = 0; j < cnt; ++j)
                                *(ember_qdx_w1u *)(void *)(yi + ember_qblk_off(pix + j, c, bs)) = (uint32_t)q[j];
                    }
                }
            }
        }
    return 1;
}
#endif

/* Channel c's n pixels of the channel-blocked image xi (bs bytes per block) as a plane d. */
static void ember_qdw_unblock(uint8_t *EMBER_RESTRICT d, const uint8_t *EMBER_RESTRICT xi, ptrdiff_t bs, int c,
                              ptrdiff_t n) {
    ptrdiff_t i, b;
    for (b = 0; b < n; b += 64) { /* a block of 64 pixels at a time: a plain stride-4 gather */
        const uint8_t *s = xi + ember_qblk_off(b, c, bs);
        const ptrdiff_t e = n - b < 64 ? n - b : 64;
        for (i = 0; i < e; ++i) d[b + i] = s[4 * i];
    }
}
/* n bytes s to channel m of the image yi from pixel pix: its plane of P pixels, channel-blocked (bs > 0 bytes per
 * block), or channels-last (ps > 0: the pixel stride, its channel count). */
static void ember_qdw_put(uint8_t *EMBER_RESTRICT yi, ptrdiff_t bs, int m, ptrdiff_t P, ptrdiff_t pix,
                          const uint8_t *EMBER_RESTRICT s, int n, ptrdiff_t ps) {
    int j, e;
    if (ps)
        for (j = 0; j < n; ++j) yi[(pix + j) * ps + m] = s[j];
    else if (bs)
        for (j = 0; j < n; j += e) { /* up to the end of each block of 64 pixels: a plain stride-4 scatter */
            uint8_t *d = yi + ember_qblk_off(pix + j, m, bs);
            int i;
            e = 64 - (int)((pix + j) & 63);
            e = e < n - j ? e : n - j;
            for (i = 0; i < e; ++i) d[4 * i] = s[j + i];
        }
    else
        for (j = 0; j < n; ++j) yi[m * P + pix + j] = s[j];
}

/* The requantised (kind 1) or int32 outputs of one output row from its sums. */
static void ember_qdw_store(void *y, int kind, ptrdiff_t at, const int32_t *EMBER_RESTRICT sums, int OW, int32_t b0,
                            int32_t mu, int32_t sh, const int32_t *out) {
    const int32_t zp = out[EMBER_QOUT_ZP], lo = out[EMBER_QOUT_LO], hi = out[EMBER_QOUT_HI];
    int ow;
    if (kind == 0) {
        int32_t *EMBER_RESTRICT yo = (int32_t *)y + at;
        for (ow = 0; ow < OW; ++ow) yo[ow] = sums[ow] + b0;
    } else {
        ember_qrun((uint8_t *)y + at, sums, OW, b0, mu, sh, zp, lo, hi);
    }
}

/* d = the rows x cols bytes s transposed (d[c][r] = s[r][c]), in 16 x 16 tiles. */
static void ember_qdw_transpose(uint8_t *EMBER_RESTRICT d, const uint8_t *EMBER_RESTRICT s, ptrdiff_t rows,
                                ptrdiff_t cols) {
    ptrdiff_t r0, c0, r, c;
    for (r0 = 0; r0 < rows; r0 += 16)
        for (c0 = 0; c0 < cols; c0 += 16)
            for (c = c0; c < cols && c < c0 + 16; ++c)
                for (r = r0; r < rows && r < r0 + 16; ++r) d[c * rows + r] = s[r * cols + c];
}
/* lay (2-D, kind 1 for y; passes/int8_layout.py): bit 0, x is channel-blocked (multiplier 1), bit 1, y;
 * scratch then also holds the input plane and one output row, past the planes and sums. Bit 2, x is stored
 * channels-last (multiplier 1), bit 3, y (ops/shape.py NhwcView): qdwvnni.c reads and writes a pixel's 16 channels at
 * once; the other paths run on NCHW copies at the end of scratch (its last N * (C * s_in + M * s_out) bytes), one
 * transpose each way, as the Transposes they replace would. mb: the channels of
 * a blocked x's and y's blocks: M, or more where x and y point at a thread's part of the channel quads
 * (ops/split.py; each channel is computed as the whole call computes it, at the whole block stride). words: the
 * VNNI path's weight words made at compile time, or NULL (qdwvnni.c ember_qdv_conv). Bit 4 with bit 2 or 3 (a
 * microcontroller's, ops/qlinear.py): no copies, but a channel's plane gathered at a time into scratch as a blocked
 * input's is, and its rows stored at the pixel stride as a blocked output's are (multiplier 1, 2-D), so that the
 * scratch holds a plane and a row, not the tensors. */
static void ember_qdwconv(void *y, int kind, const void *x, int x_sgn, int32_t xz, const int32_t *p, int N, int M,
                          const int16_t *w, const int32_t *bias, const int32_t *mult, const int32_t *shift,
                          const int32_t *out, int exact, int lay, void *scratch, ptrdiff_t room, int mb,
                          const int32_t *words) {
    const int C = p[EMBER_GEO_C], KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W], OD = p[EMBER_GEO_OUT_D],
              OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W], mult_c = M / C;
    const int planar = p[EMBER_GEO_IN_D] == 1 && p[EMBER_GEO_K_D] == 1 && p[EMBER_GEO_OUT_D] == 1; /* 2-D */
    const int Wh = ((OW - 1) * p[EMBER_GEO_STRIDE_W] + (KW - 1) * p[EMBER_GEO_DIL_W] + 1 + p[EMBER_GEO_STRIDE_W] - 1) /
                   p[EMBER_GEO_STRIDE_W];
    const int Hh = ((OH - 1) * p[EMBER_GEO_STRIDE_H] + (KH - 1) * p[EMBER_GEO_DIL_H] + 1 + p[EMBER_GEO_STRIDE_H] - 1) /
                   p[EMBER_GEO_STRIDE_H];
    const ptrdiff_t s_in = (ptrdiff_t)p[EMBER_GEO_IN_D] * p[EMBER_GEO_IN_H] * p[EMBER_GEO_IN_W],
                    s_out = (ptrdiff_t)OD * OH * OW;
    const ptrdiff_t xbs = lay & 1 ? 64 * (ptrdiff_t)mb : 0, ybs = lay & 2 ? 64 * (ptrdiff_t)mb : 0;
    const ptrdiff_t x_img = xbs ? (s_in + 63) / 64 * xbs : C * s_in, y_img = ybs ? (s_out + 63) / 64 * ybs : M * s_out;
    /* past EMBER_QDW_PLANES's planes and sums: a blocked input's channel plane, a blocked output's row */
    uint8_t *const xplane =
        lay ? (uint8_t *)scratch + 4 * ((ptrdiff_t)p[EMBER_GEO_STRIDE_H] * p[EMBER_GEO_STRIDE_W] * Hh * Wh +
                                        (ptrdiff_t)(OH - 1) * Wh + OW)
            : (uint8_t *)scratch;
    const int hin = (lay & 20) == 20, hout = (lay & 24) == 24; /* channels-last, a plane or row at a time */
    const ptrdiff_t yps = hout ? M : 0;
    uint8_t *const yrow = xplane + (lay & 1 || hin ? s_in : 0);
    int32_t *xi = (int32_t *)scratch, *ai = xi + s_in;
    int n, m, od, oh, ow, kw, kwb[32];
    ptrdiff_t i;
#ifdef EMBER_QDW_FLOAT
    float *xf = (float *)scratch, *af = xf + s_in;
#else
    (void)exact;
#endif
#ifdef EMBER_QDW_VNNI
    {
        const int tfl = kind == 1 ? ember_qt16_kind(shift, M, out) : -1; /* TFLite's requantisation, or -1 */
        if ((exact & 2) && kind == 1 && ember_qdv_fits(p) &&
            (shift[0] < EMBER_Q_TFL ? out[EMBER_QOUT_EXACT] : tfl >= 0)) { /* qdwvnni.c */
            ember_qdv_conv((uint8_t *)y, (const uint8_t *)x, x_sgn, xz, p, N, M, w, bias, mult, shift, out, tfl, lay,
                           (uint8_t *)scratch, room, mb, words);
            return;
        }
    }
#else
    (void)room, (void)words;
#endif
    if ((lay & 12) && !(lay & 16)) {
        const ptrdiff_t xn = lay & 4 ? (ptrdiff_t)N * C * s_in : 0, yn = lay & 8 ? (ptrdiff_t)N * M * s_out : 0;
        uint8_t *const xt = (uint8_t *)scratch + room - xn - yn, *const yt = xt + xn;
        for (n = 0; n < N && (lay & 4); ++n)
            ember_qdw_transpose(xt + n * C * s_in, (const uint8_t *)x + n * C * s_in, s_in, C);
        ember_qdwconv(lay & 8 ? (void *)yt : y, kind, lay & 4 ? (const void *)xt : x, x_sgn, xz, p, N, M, w, bias, mult,
                      shift, out, exact & 1, lay & 3, scratch, room - xn - yn, mb, words);
        for (n = 0; n < N && (lay & 8); ++n)
            ember_qdw_transpose((uint8_t *)y + n * M * s_out, yt + n * M * s_out, M, s_out);
        return;
    }
#ifdef EMBER_QDW_AVX2
    if (lay == 3 && kind == 1 && (exact & 1) &&
        (out[EMBER_QOUT_EXACT] || (shift[0] >= EMBER_Q_TFL && shift[0] < 3 * EMBER_Q_TFL)) &&
        ember_qdx_conv((uint8_t *)y, (const uint8_t *)x, x_sgn, xz, p, N, M, w, bias, mult, shift, out, scratch, room,
                       mb))
        return;
#endif
    exact &= 1;
    for (kw = 0; kw < KW && kw < 16; ++kw)
        ember_window_bounds(p[EMBER_GEO_IN_W], OW, p[EMBER_GEO_STRIDE_W], kw * p[EMBER_GEO_DIL_W] - p[EMBER_GEO_PAD_W],
                            &kwb[2 * kw], &kwb[2 * kw + 1]);
    for (n = 0; n < N; ++n)
        for (m = 0; m < M; ++m) {
            const uint8_t *xc = xbs || hin ? xplane : (const uint8_t *)x + n * x_img + (ptrdiff_t)(m / mult_c) * s_in;
            const int16_t *wm = w + (ptrdiff_t)m * p[EMBER_GEO_K_D] * p[EMBER_GEO_K_H] * KW;
            const int32_t b0 = bias ? bias[m] : 0, mu = mult ? mult[m] : 0, sh = shift ? shift[m] : 1;
            const ptrdiff_t ym = ((ptrdiff_t)n * M + m) * s_out;
            uint8_t *const yi = (uint8_t *)y + n * y_img;
            if (xbs) ember_qdw_unblock(xplane, (const uint8_t *)x + n * x_img, xbs, m / mult_c, s_in);
            if (hin) /* channel m of the NHWC image (multiplier 1) */
                for (i = 0; i < s_in; ++i) xplane[i] = ((const uint8_t *)x)[n * x_img + i * C + m];
            if (m % mult_c == 0 && !planar) /* a new input channel: its values minus the zero point */
                for (i = 0; i < s_in; ++i) {
                    const int32_t v = (x_sgn ? (int32_t)(int8_t)xc[i] : (int32_t)xc[i]) - xz;
#ifdef EMBER_QDW_FLOAT
                    if (exact) xf[i] = (float)v;
                    else
#endif
                    xi[i] = v;
                }
            if (planar) {
                const ptrdiff_t len = (ptrdiff_t)(OH - 1) * Wh + OW;
                const int32_t *sums;
#ifdef EMBER_QDW_FLOAT
                if (exact) { /* integer sums below 2^24: exact in float */
                    /* the planes are filled once per input channel, for all its multipliers, where kind 1 leaves
                     * them as they are */
                    const float *accf = ember_qdw_planes_f32(xf, xc, x_sgn, xz, wm, p, m % mult_c == 0 || kind != 1);
                    if (kind == 1) { /* requantised in one pass over the flat sums, into them (byte i over float
                                      * i/4, already read): the planes stay for the channel's other multipliers */
                        uint8_t *q8 = (uint8_t *)(void *)accf;
                        ember_qdw_requant(q8, accf, len, b0, mu, sh, out);
                        for (oh = 0; oh < OH; ++oh)
                            ember_qdw_put(yi, ybs, m, s_out, (ptrdiff_t)oh * OW, q8 + (ptrdiff_t)oh * Wh, OW, yps);
                        continue;
                    }
                    {
                        int32_t *EMBER_RESTRICT conv = (int32_t *)(void *)xf; /* over the dead planes (len <= plane) */
                        for (i = 0; i < len; ++i) conv[i] = (int32_t)accf[i];
                        sums = conv;
                    }
                } else
#endif
                sums = ember_qdw_planes_i32(xi, xc, x_sgn, xz, wm, p, m % mult_c == 0);
                for (oh = 0; oh < OH; ++oh)
                    if (ybs || hout) { /* kind 1 */
                        ember_qrun(yrow, sums + (ptrdiff_t)oh * Wh, OW, b0, mu, sh, out[EMBER_QOUT_ZP],
                                   out[EMBER_QOUT_LO], out[EMBER_QOUT_HI]);
                        ember_qdw_put(yi, ybs, m, s_out, (ptrdiff_t)oh * OW, yrow, OW, yps);
                    } else {
                        ember_qdw_store(y, kind, ym + (ptrdiff_t)oh * OW, sums + (ptrdiff_t)oh * Wh, OW, b0, mu, sh, out);
                    }
                continue;
            }
            for (od = 0; od < OD; ++od)
                for (oh = 0; oh < OH; ++oh) {
                    const ptrdiff_t yr = ym + ((ptrdiff_t)od * OH + oh) * OW;
#ifdef EMBER_QDW_FLOAT
                    if (exact) {
                        ember_qdw_rows_f32(af, xf, wm, p, od, oh, kwb);
                        for (ow = 0; ow < OW; ++ow) ai[ow] = (int32_t)af[ow];
                    } else
#endif
                    ember_qdw_rows_i32(ai, xi, wm, p, od, oh, kwb);
                    ember_qdw_store(y, kind, yr, ai, OW, b0, mu, sh, out);
                }
        }
}
/*@end*/
