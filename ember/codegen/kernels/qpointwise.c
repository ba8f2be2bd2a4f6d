/* Integer kernels of folded QDQ models with AVX-512 fast paths, in a file of their own (the others are
 * in quant.c): QAdd (ember_qadd) and 2-D QMaxPool (ember_qmaxpool); see ember/ops/qpointwise.py. Every
 * target computes the same bytes as the portable path, which tests compare bit for bit. */

/*@kernel ember_qadd requires ember_qround ember_qv16_round*/
/* Folded QDQ Add (and Sub, with mb < 0) on int8 (sgn = 1) or uint8 bytes, each input rescaled to the
 * output's scale: y = zy + round_half_even(((a - za) * ma + (b - zb) * mb) * 2^-shift) clamped to [lo, hi];
 * r: the EMBER_QADD_* entries (ember/ops/qpointwise.py QAddParams). `b` may broadcast: element i of y
 * reads b[(i / b_div) % b_mod] (b_div = 1, b_mod = n: same shape; b_mod = 1: one value; else one axis of y).
 * The sum takes up to 40 bits, yet every target works in int32 (cheap on 32-bit cores, 16 lanes on
 * AVX-512) when |ma|, |mb| <= 2^30 and 18 <= shift <= 46, as fold_qdq_ops.py's multipliers are: see
 * ember_qadd_split. Otherwise 64-bit scalar code. Every path computes the same integers. */
#define EMBER_QADD_ZA 0
#define EMBER_QADD_ZB 1
#define EMBER_QADD_MA 2
#define EMBER_QADD_MB 3
#define EMBER_QADD_SHIFT 4
#define EMBER_QADD_ZY 5
#define EMBER_QADD_LO 6
#define EMBER_QADD_HI 7
typedef struct {
    int32_t za, zb, mh[2], ml[2], k, rnd; /* zero points in the uint8 view, split multipliers, 2^(k-1) - 1 */
} ember_qadd_k;
/* Each multiplier as m = mh * 2^16 + ml, |mh| <= 2^14, -2^15 <= ml < 2^15. With a' = a - za, b' = b - zb
 * (|a'|, |b'| <= 255), H = a' mh_a + b' mh_b and L = a' ml_a + b' ml_b fit int32, and the sum is
 * G * 2^16 + F with G = H + (L >> 16), |G| < 2^23, and F = L & 0xFFFF. Rounding the sum at bit 16 + k is
 * rounding G at bit k (k >= 2) with F != 0 set into G's bit 0: below the rounding bit, it only decides
 * whether a tie is one. */
static int ember_qadd_split(const int32_t *r, int sgn, ember_qadd_k *q) {
    int j;
    if (r[EMBER_QADD_MA] < -(1 << 30) || r[EMBER_QADD_MA] > (1 << 30) || r[EMBER_QADD_MB] < -(1 << 30) ||
        r[EMBER_QADD_MB] > (1 << 30) || r[EMBER_QADD_SHIFT] < 18 || r[EMBER_QADD_SHIFT] > 46)
        return 0;
    for (j = 0; j < 2; ++j) {
        q->mh[j] = (r[EMBER_QADD_MA + j] + (1 << 15)) >> 16; /* ma, then mb */
        q->ml[j] = r[EMBER_QADD_MA + j] - q->mh[j] * 65536;
    }
    q->za = r[EMBER_QADD_ZA] + 128 * sgn; /* int8 x read as the byte x ^ 0x80 = x + 128 */
    q->zb = r[EMBER_QADD_ZB] + 128 * sgn;
    q->k = r[EMBER_QADD_SHIFT] - 16;
    q->rnd = EMBER_Q_RND(int32_t, q->k);
    return 1;
}
/* y = zy + the rounded sum, clamped, for a run of n elements whose b advances with a (bstep = 1) or
 * stays (0); written so that compilers vectorize it (the constants in locals: y may alias r). */
EMBER_INLINE void ember_qadd_run32(uint8_t *y, const uint8_t *a, const uint8_t *b, int bstep, ptrdiff_t n, int sgn,
                                   const int32_t *r, const ember_qadd_k *q) {
    const uint8_t flip = sgn ? 0x80 : 0;
    const int32_t za = q->za, zb = q->zb, mha = q->mh[0], mhb = q->mh[1], mla = q->ml[0], mlb = q->ml[1];
    const int32_t k = q->k, rnd = q->rnd, zy = r[EMBER_QADD_ZY], lo = r[EMBER_QADD_LO] - zy, hi = r[EMBER_QADD_HI] - zy;
    ptrdiff_t i;
#if EMBER_HAVE_ARM_DSP /* Cortex-M DSP: (a', b') as one halfword pair (SSUB16), L and H by SMUAD / SMLAD */
    const uint32_t zz = (uint16_t)za | (uint32_t)zb << 16, ml2 = (uint16_t)mla | (uint32_t)mlb << 16;
    const uint32_t mh2 = (uint16_t)mha | (uint32_t)mhb << 16;
#endif
    for (i = 0; i < n; ++i) {
#if EMBER_HAVE_ARM_DSP /* the same integers: |a'|, |b'| <= 255 and the split multipliers fit int16 */
        const uint32_t ab = (uint32_t)(a[i] ^ flip) | (uint32_t)(b[i * bstep] ^ flip) << 16;
        uint32_t d;
        int32_t L, G;
        __asm__("ssub16 %0, %1, %2" : "=r"(d) : "r"(ab), "r"(zz));
        __asm__("smuad %0, %1, %2" : "=r"(L) : "r"(d), "r"(ml2));
        __asm__("smlad %0, %1, %2, %3" : "=r"(G) : "r"(d), "r"(mh2), "r"(L >> 16));
        G |= (L & 0xFFFF) != 0;
#else
        const int32_t ap = (a[i] ^ flip) - za, bp = (b[i * bstep] ^ flip) - zb, L = ap * mla + bp * mlb;
        const int32_t G = (ap * mha + bp * mhb + (L >> 16)) | ((L & 0xFFFF) != 0);
#endif
        int32_t v = EMBER_Q_ROUND_SHIFT(G, k, rnd);
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
        y[i] = (uint8_t)(v + zy);
    }
}
#ifdef EMBER_QV16_ROUND /* AVX-512 F, BW and VL: qvec.c's rounding */
#define EMBER_QA_VEC 1
typedef int32_t ember_qd_d __attribute__((vector_size(64)));
typedef float ember_qd_f __attribute__((vector_size(64)));
typedef int16_t ember_qd_w __attribute__((vector_size(64)));
typedef int64_t ember_qd_q __attribute__((vector_size(64)));
typedef uint8_t ember_qd_v __attribute__((vector_size(64)));
typedef uint8_t ember_qd_vu __attribute__((vector_size(64), aligned(1), may_alias));
typedef uint8_t ember_qd_hu __attribute__((vector_size(32), aligned(1), may_alias));
typedef struct {
    ember_qd_d mh, ml; /* the split multipliers (narrow: the multipliers, and 0) as int16 pairs (a's, b's) */
    ember_qd_d ch, cl; /* H and L of the zero points, negated */
    ember_qd_f scale;  /* 2^-k (narrow: 2^-shift) */
    ember_qd_w zy;
    ember_qd_v lo, hi;
    int narrow, clamp; /* clamp: [lo, hi] narrower than the bytes' range, which the saturating packs give */
} ember_qd_k;
/* 32 bytes at p as int16 lanes. */
EMBER_INLINE ember_qd_w ember_qd_widen(const uint8_t *p, int sgn) {
    ember_qd_w r;
    if (sgn) __asm__("vpmovsxbw %1, %0" : "=v"(r) : "m"(*(const ember_qd_hu *)(const void *)p));
    else __asm__("vpmovzxbw %1, %0" : "=v"(r) : "m"(*(const ember_qd_hu *)(const void *)p));
    return r;
}
/* acc + the dot products of the word pairs p and m. */
EMBER_INLINE ember_qd_d ember_qd_dot(ember_qd_d acc, ember_qd_w p, ember_qd_d m) {
#if EMBER_HAVE_AVX512_VNNI
    __asm__("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(p), "v"(m));
#else
    ember_qd_d d;
    __asm__("vpmaddwd %2, %1, %0" : "=v"(d) : "v"(p), "v"(m));
    acc += d;
#endif
    return acc;
}
/* The rounded sums of 16 (a, b) word pairs (the raw bytes: the zero points' part starts the sums).
 * G is ember_qadd_split's, or, narrow, the whole sum: an integer below 2^24 in magnitude, exact as a
 * float, which one FMA rounds exactly: qvec.c's ember_qv16_round. */
EMBER_INLINE ember_qd_d ember_qd_round(ember_qd_w pairs, const ember_qd_k *k, int narrow) {
    ember_qd_d G = ember_qd_dot(k->ch, pairs, k->mh);
    ember_qd_f t;
    if (!narrow) {
        const ember_qd_d L = ember_qd_dot(k->cl, pairs, k->ml);
        unsigned short f;
        G += L >> 16;
        __asm__("vptestmd %2, %1, %0" : "=Yk"(f) : "v"(L), "v"((ember_qd_d){0} + 0xFFFF));
        __asm__("vpord %2, %1, %0%{%3%}" : "+v"(G) : "v"(G), "v"((ember_qd_d){0} + 1), "Yk"(f));
    }
    t = __builtin_convertvector(G, ember_qd_f);
    return ember_qv16_round(t, k->scale) - EMBER_QV16_BIAS;
}
/* 32 results as int16 in order, plus zy: the word unpacks pair a_i with b_i in 128-bit lanes
 * (elements 0-3 of each lane's eight in lo, 4-7 in hi) and the pack puts each lane's eight back. */
EMBER_INLINE ember_qd_w ember_qd_half(const uint8_t *a, const uint8_t *b, const ember_qd_k *k, int sgn, int narrow) {
    const ember_qd_w wa = ember_qd_widen(a, sgn), wb = ember_qd_widen(b, sgn);
    ember_qd_w lo, hi;
    ember_qd_d rl, rh;
    __asm__("vpunpcklwd %2, %1, %0" : "=v"(lo) : "v"(wa), "v"(wb));
    __asm__("vpunpckhwd %2, %1, %0" : "=v"(hi) : "v"(wa), "v"(wb));
    rl = ember_qd_round(lo, k, narrow);
    rh = ember_qd_round(hi, k, narrow);
    __asm__("vpackssdw %2, %1, %0\n\tvpaddsw %3, %0, %0" : "=&v"(lo) : "v"(rl), "v"(rh), "v"(k->zy));
    return lo;
}
/* 64 outputs: every step saturates (packs, the zero point's add), so the clamp gives the exact clamped
 * value; the lane-wise byte pack's quadwords put back in order. */
EMBER_INLINE void ember_qd_block(uint8_t *y, const uint8_t *a, const uint8_t *b, const ember_qd_k *k, int sgn,
                                 int narrow) {
    const ember_qd_w w0 = ember_qd_half(a, b, k, sgn, narrow), w1 = ember_qd_half(a + 32, b + 32, k, sgn, narrow);
    ember_qd_v v;
    if (sgn) __asm__("vpacksswb %2, %1, %0" : "=v"(v) : "v"(w0), "v"(w1));
    else __asm__("vpackuswb %2, %1, %0" : "=v"(v) : "v"(w0), "v"(w1));
    __asm__("vpermq %1, %2, %0" : "=v"(v) : "v"(v), "v"((ember_qd_q){0, 2, 4, 6, 1, 3, 5, 7}));
    if (k->clamp && sgn)
        __asm__("vpmaxsb %2, %1, %0\n\tvpminsb %3, %0, %0" : "=&v"(v) : "v"(v), "v"(k->lo), "v"(k->hi));
    else if (k->clamp)
        __asm__("vpmaxub %2, %1, %0\n\tvpminub %3, %0, %0" : "=&v"(v) : "v"(v), "v"(k->lo), "v"(k->hi));
    *(ember_qd_vu *)(void *)y = v;
}
/* A run in blocks of 64, the last partial block through zero-padded copies; a stepless b is a
 * 64-byte copy of its value. */
EMBER_INLINE void ember_qd_run(uint8_t *y, const uint8_t *a, const uint8_t *b, int bstep, ptrdiff_t n,
                               const ember_qd_k *k, int sgn, int narrow) {
    ptrdiff_t i;
    for (i = 0; i + 64 <= n; i += 64) ember_qd_block(y + i, a + i, b + bstep * i, k, sgn, narrow);
    if (i < n) {
        uint8_t ta[64], tb[64], ty[64];
        int j, rest = (int)(n - i);
        for (j = 0; j < 64; ++j) {
            ta[j] = j < rest ? a[i + j] : 0;
            tb[j] = j < rest ? b[bstep * (i + j)] : 0;
        }
        ember_qd_block(ty, ta, tb, k, sgn, narrow);
        for (j = 0; j < rest; ++j) y[i + j] = ty[j];
    }
}
/* The vector constants. Multipliers that are 15-bit integers once their common factors of 2 leave the
 * shift (as power-of-two scales make them) are `narrow`: their sum is below 2^24 in magnitude, made in
 * one dot product and rounded at once. */
static void ember_qd_setup(ember_qd_k *v, const int32_t *r, int sgn, const ember_qadd_k *q) {
    int32_t m[4] = {q->mh[0], q->mh[1], q->ml[0], q->ml[1]}, ma = r[EMBER_QADD_MA], mb = r[EMBER_QADD_MB],
            shift = r[EMBER_QADD_SHIFT];
    while (shift > 2 && ma % 2 == 0 && mb % 2 == 0) {
        ma /= 2;
        mb /= 2;
        --shift;
    }
    v->narrow = ma >= -32767 && ma <= 32767 && mb >= -32767 && mb <= 32767 && shift <= 30;
    if (v->narrow) {
        m[0] = ma, m[1] = mb, m[2] = m[3] = 0;
    } else {
        shift = q->k;
    }
    v->mh = (ember_qd_d){0} + (int32_t)((uint32_t)(uint16_t)m[0] | ((uint32_t)(uint16_t)m[1] << 16));
    v->ml = (ember_qd_d){0} + (int32_t)((uint32_t)(uint16_t)m[2] | ((uint32_t)(uint16_t)m[3] << 16));
    v->ch = (ember_qd_d){0} - (r[EMBER_QADD_ZA] * m[0] + r[EMBER_QADD_ZB] * m[1]);
    v->cl = (ember_qd_d){0} - (r[EMBER_QADD_ZA] * m[2] + r[EMBER_QADD_ZB] * m[3]);
    v->scale = (ember_qd_f){0} + 1.0f / (float)((int32_t)1 << shift); /* exact: shift <= 30 */
    v->zy = (ember_qd_w){0} + (int16_t)r[EMBER_QADD_ZY];
    v->lo = (ember_qd_v){0} + (uint8_t)r[EMBER_QADD_LO];
    v->hi = (ember_qd_v){0} + (uint8_t)r[EMBER_QADD_HI];
    v->clamp = r[EMBER_QADD_LO] != (sgn ? -128 : 0) || r[EMBER_QADD_HI] != (sgn ? 127 : 255);
}
#endif
/* By runs of constant b (a per-channel or single value) or of b in step (the same shape, or b
 * repeating along the last axis). */
static void ember_qadd_runs(uint8_t *y, const uint8_t *a, const uint8_t *b, ptrdiff_t n, ptrdiff_t b_div,
                            ptrdiff_t b_mod, int sgn, const int32_t *r, const ember_qadd_k *q) {
    const ptrdiff_t len = b_mod == 1 ? n : b_div == 1 ? b_mod : b_div;
    ptrdiff_t i;
#ifdef EMBER_QA_VEC
    ember_qd_k k;
    uint8_t splat[64];
    ember_qd_setup(&k, r, sgn, q);
#endif
    for (i = 0; i < n; i += len) {
        const ptrdiff_t m = n - i < len ? n - i : len;
        const int bstep = b_mod > 1 && b_div == 1;
        const uint8_t *bi = bstep ? b : b + (i / b_div) % b_mod;
#ifdef EMBER_QA_VEC
        if (m >= 16) { /* shorter runs cost less in scalar code than a padded block */
            if (!bstep) {
                int j;
                for (j = 0; j < 64; ++j) splat[j] = *bi;
                bi = splat;
            }
            if (sgn && k.narrow) ember_qd_run(y + i, a + i, bi, bstep, m, &k, 1, 1);
            else if (sgn) ember_qd_run(y + i, a + i, bi, bstep, m, &k, 1, 0);
            else if (k.narrow) ember_qd_run(y + i, a + i, bi, bstep, m, &k, 0, 1);
            else ember_qd_run(y + i, a + i, bi, bstep, m, &k, 0, 0);
            continue;
        }
#endif
        if (bstep) ember_qadd_run32(y + i, a + i, bi, 1, m, sgn, r, q);
        else ember_qadd_run32(y + i, a + i, bi, 0, m, sgn, r, q);
    }
}
#ifdef EMBER_QT8
/* The 8 bytes at s (int8 if sgn, else uint8) as int32 lanes. */
EMBER_INLINE ember_qt8i ember_qt8_ld8(const uint8_t *s, int sgn) {
    ember_qt8i r;
    if (sgn) __asm__("vpmovsxbd %1, %0" : "=x"(r) : "m"(*(const ember_qt8bu *)(const void *)s));
    else __asm__("vpmovzxbd %1, %0" : "=x"(r) : "m"(*(const ember_qt8bu *)(const void *)s));
    return r;
}
/* 8 int32 lanes already inside the byte range of sgn as 8 bytes, in order. */
typedef short ember_qt8h __attribute__((vector_size(16)));
typedef int32_t ember_qt8d4 __attribute__((vector_size(16)));
typedef char ember_qt8c16 __attribute__((vector_size(16)));
typedef unsigned long long ember_qt8l2 __attribute__((vector_size(16)));
EMBER_INLINE uint64_t ember_qt8_bytes(ember_qt8i v, int sgn) {
    const ember_qt8d4 lo = {v[0], v[1], v[2], v[3]}, hi = {v[4], v[5], v[6], v[7]};
    const ember_qt8h h = (ember_qt8h)__builtin_ia32_packssdw128(lo, hi);
    const ember_qt8c16 b = sgn ? (ember_qt8c16)__builtin_ia32_packsswb128(h, h) : (ember_qt8c16)__builtin_ia32_packuswb128(h, h);
    return ((ember_qt8l2)b)[0];
}
#endif
/* TFLite's int8 ADD and SUB (its AddElementwise): each input's value minus its zero point, times 2^20,
 * requantised by its own multiplier, then the sum (or difference) by the output's, each rounded twice
 * (quant.c ember_q_scale_tfl); r[8 ..]: qpointwise.py QAddParams.tflite. */
static void ember_qadd_tfl(uint8_t *y, const uint8_t *a, const uint8_t *b, ptrdiff_t n, ptrdiff_t b_div,
                           ptrdiff_t b_mod, int sgn, const int32_t *r) {
    const int32_t *t = r + 8;
    ptrdiff_t i = 0;
#ifdef EMBER_QT8
    /* 8 at a time (quant.c ember_qt8_rq) where b is not broadcast and each input's multiplier is below 1
     * (TFLite's are at most 1/2): every intermediate then fits int32, as the scalar int64 values do */
    if (b_div == 1 && b_mod >= n && (t[1] & 63) >= 31 && (t[3] & 63) >= 31 && t[1] < 3 * EMBER_Q_TFL &&
        t[3] < 3 * EMBER_Q_TFL && t[5] < 3 * EMBER_Q_TFL) {
        ember_qt8 ta, tb, ty;
        ember_qt8_init(&ta, t[0], t[1], 0, -2147483647 - 1, 2147483647);
        ember_qt8_init(&tb, t[2], t[3], 0, -2147483647 - 1, 2147483647);
        ember_qt8_init(&ty, t[4], t[5], r[EMBER_QADD_ZY], r[EMBER_QADD_LO], r[EMBER_QADD_HI]);
        for (; i + 8 <= n; i += 8) {
            /* 8 bytes widened by one VPMOVSXBD / VPMOVZXBD each (element loads were most of the time), and the
             * clamped results back to bytes by saturating packs, which then change nothing */
            ember_qt8i va = ember_qt8_ld8(a + i, sgn), vb = ember_qt8_ld8(b + i, sgn);
            va = ember_qt8_rq((va - r[EMBER_QADD_ZA]) * (1 << 20), &ta);
            vb = ember_qt8_rq((vb - r[EMBER_QADD_ZB]) * (1 << 20), &tb);
            *(ember_qt8bu *)(void *)(y + i) = ember_qt8_bytes(ember_qt8_rq(t[6] ? va - vb : va + vb, &ty), sgn);
        }
    }
#endif
    for (; i < n; ++i) {
        const int64_t va = ember_q_scale_tfl((int64_t)(ember_q_load(a, i, sgn) - r[EMBER_QADD_ZA]) * (1 << 20), t[0], t[1]);
        const int64_t vb = ember_q_scale_tfl(
            (int64_t)(ember_q_load(b, (i / b_div) % b_mod, sgn) - r[EMBER_QADD_ZB]) * (1 << 20), t[2], t[3]);
        y[i] = (uint8_t)ember_q_requant(t[6] ? va - vb : va + vb, t[4], t[5], r[EMBER_QADD_ZY], r[EMBER_QADD_LO],
                                        r[EMBER_QADD_HI]);
    }
}
static void ember_qadd(uint8_t *y, const uint8_t *a, const uint8_t *b, ptrdiff_t n, ptrdiff_t b_div,
                       ptrdiff_t b_mod, int sgn, const int32_t *r) {
    ember_qadd_k q;
    ptrdiff_t i;
    if (r[EMBER_QADD_SHIFT] >= EMBER_Q_TFL) {
        ember_qadd_tfl(y, a, b, n, b_div, b_mod, sgn, r);
        return;
    }
    if (ember_qadd_split(r, sgn, &q)) {
        ember_qadd_runs(y, a, b, n, b_div, b_mod, sgn, r, &q);
        return;
    }
    for (i = 0; i < n; ++i) {
        const int64_t s = (int64_t)(ember_q_load(a, i, sgn) - r[EMBER_QADD_ZA]) * r[EMBER_QADD_MA] +
                          (int64_t)(ember_q_load(b, (i / b_div) % b_mod, sgn) - r[EMBER_QADD_ZB]) * r[EMBER_QADD_MB];
        y[i] =
            (uint8_t)ember_q_requant(s, 1, r[EMBER_QADD_SHIFT], r[EMBER_QADD_ZY], r[EMBER_QADD_LO], r[EMBER_QADD_HI]);
    }
}
/*@end*/

/*@kernel ember_qmaxpool requires ember_pool_geo*/
/* 2-D max pooling of int8 (sgn) or uint8 planes (geometry table p, EMBER_POOL_*; no indices). Per output row,
 * the input rows under the window are maxed column by column into one padded row; then each output is
 * the max of the row's taps. Bytes compare in the uint8 view (int8 ^ 0x80 keeps the order); padding is
 * the lowest value, as ONNX MaxPool ignores it. row: scratch of qpointwise.py's `_maxpool_row` bytes.
 * Portable path: the row is split into its stride phases (column c at phase c % sw, index c / sw), so
 * each window column is one contiguous run of a phase and every loop vectorizes. AVX-512 path (strides
 * 1 and 2): whole rows in 64-byte vectors, masked loads for the padding and the row's ends; stride 2
 * keeps the even bytes of the maxed taps (VPMOVWB), 32 outputs per 64 row bytes. */
static int ember_qmaxpool_phase(const int32_t *p) { /* columns per stride phase */
    return ((p[EMBER_POOL_OUT_W] - 1) * p[EMBER_POOL_STRIDE_W] + (p[EMBER_POOL_K_W] - 1) * p[EMBER_POOL_DIL_W]
            + p[EMBER_POOL_STRIDE_W]) / p[EMBER_POOL_STRIDE_W];
}
#if EMBER_HAVE_AVX512_BWVL
#define EMBER_QMAXPOOL_V 1
#define EMBER_QMP_ROWS 8 /* output rows per batch: see ember_qmaxpool_v */
/* Bytes of one padded row that the AVX-512 path writes and reads: the last 64 row bytes' outputs
 * (64 / sw of them) and the widest tap, in whole 64-byte vectors. */
static int ember_qmaxpool_vrow(const int32_t *p) {
    return ((p[EMBER_POOL_OUT_W] - 1) / (64 / p[EMBER_POOL_STRIDE_W]) * 64
            + (p[EMBER_POOL_K_W] - 1) * p[EMBER_POOL_DIL_W] + 127) / 64 * 64;
}
typedef uint8_t ember_qmp_v __attribute__((vector_size(64)));
typedef uint8_t ember_qmp_vu __attribute__((vector_size(64), aligned(1), may_alias));
typedef uint8_t ember_qmp_h __attribute__((vector_size(32)));
typedef uint8_t ember_qmp_hu __attribute__((vector_size(32), aligned(1), may_alias));
/* The lanes j of a vector at column c with lo <= c + j < hi. */
EMBER_INLINE uint64_t ember_qmp_lanes(int c, int lo, int hi) {
    const int a = lo - c < 0 ? 0 : lo - c, b = hi - c > 64 ? 64 : hi - c;
    return b <= a ? 0 : (b - a == 64 ? ~0ull : (1ull << (b - a)) - 1) << a;
}
EMBER_INLINE ember_qmp_v ember_qmp_max(ember_qmp_v a, ember_qmp_v b) {
    __asm__("vpmaxub %2, %1, %0" : "=v"(a) : "v"(a), "v"(b));
    return a;
}
EMBER_INLINE ember_qmp_v ember_qmp_load(const uint8_t *p) { return *(const ember_qmp_vu *)(const void *)p; }
/* Padded row oh of plane xc, maxed over the window's input rows, flipped to the uint8 order. Lanes
 * outside the input keep `flip`, which the flip makes 0, the lowest value; the masked load reads no
 * byte outside the input row. */
static void ember_qmp_rows(uint8_t *row, const uint8_t *xc, const int32_t *p, int oh, int vrow, uint8_t flip) {
    const int H = p[EMBER_POOL_IN_H], W = p[EMBER_POOL_IN_W], KH = p[EMBER_POOL_K_H], sh = p[EMBER_POOL_STRIDE_H],
              dh = p[EMBER_POOL_DIL_H], pt = p[EMBER_POOL_PAD_H], pl = p[EMBER_POOL_PAD_W];
    const ember_qmp_v fv = (ember_qmp_v){0} + flip;
    int c, kh;
    for (c = 0; c < vrow; c += 64) {
        const uint64_t in = ember_qmp_lanes(c, pl, pl + W);
        ember_qmp_v v = (ember_qmp_v){0};
        for (kh = 0; kh < KH && in; ++kh) {
            const int ih = oh * sh - pt + kh * dh;
            ember_qmp_v t = fv;
            if (ih < 0 || ih >= H) continue;
            __asm__("vmovdqu8 %1, %0%{%2%}" : "+v"(t)
                    : "m"(*(const ember_qmp_vu *)(const void *)(xc + (ptrdiff_t)ih * W + c - pl)), "Yk"(in));
            v = ember_qmp_max(v, t ^ fv);
        }
        *(ember_qmp_vu *)(void *)(row + c) = v;
    }
}
/* Output row yr from its padded row: the max of the taps, 64 / sw outputs per 64 row bytes; stride 2
 * keeps the even bytes, the low byte of each word (VPMOVWB). */
static void ember_qmp_cols(uint8_t *yr, const uint8_t *row, const int32_t *p, uint8_t flip) {
    const int KW = p[EMBER_POOL_K_W], OW = p[EMBER_POOL_OUT_W], sw = p[EMBER_POOL_STRIDE_W], dw = p[EMBER_POOL_DIL_W];
    int ow, kw;
    for (ow = 0; ow < OW; ow += 64 / sw) {
        const uint64_t n = ember_qmp_lanes(0, 0, OW - ow);
        ember_qmp_v v = ember_qmp_load(row + ow * sw);
        for (kw = 1; kw < KW; ++kw) v = ember_qmp_max(v, ember_qmp_load(row + ow * sw + kw * dw));
        if (sw == 1) {
            v ^= (ember_qmp_v){0} + flip;
            __asm__("vmovdqu8 %1, %0%{%2%}" : "+m"(*(ember_qmp_vu *)(void *)(yr + ow)) : "v"(v), "Yk"(n));
        } else {
            ember_qmp_h h;
            __asm__("vpmovwb %1, %0" : "=v"(h) : "v"(v));
            h ^= (ember_qmp_h){0} + flip;
            __asm__("vmovdqu8 %1, %0%{%2%}" : "+m"(*(ember_qmp_hu *)(void *)(yr + ow)) : "v"(h), "Yk"((uint32_t)n));
        }
    }
}
/* Strides 1 and 2. The padded rows of EMBER_QMP_ROWS outputs are made before any is read: a row read
 * back at once, at byte offsets across two 64-byte stores, waits for the stores to retire (no store
 * forwarding), which cost as much as all the rest. rows: EMBER_QMP_ROWS * ember_qmaxpool_vrow bytes. */
static void ember_qmaxpool_v(uint8_t *y, const uint8_t *x, const int32_t *p, ptrdiff_t NC, uint8_t flip,
                             uint8_t *rows) {
    const int H = p[EMBER_POOL_IN_H], W = p[EMBER_POOL_IN_W], OH = p[EMBER_POOL_OUT_H], OW = p[EMBER_POOL_OUT_W],
              vrow = ember_qmaxpool_vrow(p);
    ptrdiff_t nc;
    int o0, oh;
    for (nc = 0; nc < NC; ++nc)
        for (o0 = 0; o0 < OH; o0 += EMBER_QMP_ROWS) {
            const int o1 = OH - o0 < EMBER_QMP_ROWS ? OH : o0 + EMBER_QMP_ROWS;
            for (oh = o0; oh < o1; ++oh) ember_qmp_rows(rows + (oh - o0) * vrow, x + nc * H * W, p, oh, vrow, flip);
            for (oh = o0; oh < o1; ++oh) ember_qmp_cols(y + (nc * OH + oh) * OW, rows + (oh - o0) * vrow, p, flip);
        }
}
#endif
static void ember_qmaxpool_max(uint8_t *EMBER_RESTRICT d, const uint8_t *EMBER_RESTRICT s, int n, uint8_t flip) {
    int i;
    for (i = 0; i < n; ++i) {
        const uint8_t v = s[i] ^ flip;
        d[i] = v > d[i] ? v : d[i];
    }
}
static void ember_qmaxpool(uint8_t *y, const uint8_t *x, const int32_t *p, ptrdiff_t NC, int sgn, uint8_t *row) {
    const int H = p[EMBER_POOL_IN_H], W = p[EMBER_POOL_IN_W], KH = p[EMBER_POOL_K_H], KW = p[EMBER_POOL_K_W],
              OH = p[EMBER_POOL_OUT_H], OW = p[EMBER_POOL_OUT_W], sh = p[EMBER_POOL_STRIDE_H],
              sw = p[EMBER_POOL_STRIDE_W];
    const int dh = p[EMBER_POOL_DIL_H], dw = p[EMBER_POOL_DIL_W], pt = p[EMBER_POOL_PAD_H], pl = p[EMBER_POOL_PAD_W],
              wq = ember_qmaxpool_phase(p);
    const int wpad = sw * wq, c0 = pl < wpad ? pl : wpad, c1 = pl + W < wpad ? pl + W : wpad;
    const uint8_t flip = sgn ? 0x80 : 0;
    uint8_t *phases = row + wpad;
    ptrdiff_t nc;
    int oh, ow, kh, kw, c, ph;
#ifdef EMBER_QMAXPOOL_V
    if (sw <= 2) {
        ember_qmaxpool_v(y, x, p, NC, flip, row);
        return;
    }
#endif
    for (nc = 0; nc < NC; ++nc)
        for (oh = 0; oh < OH; ++oh) {
            const uint8_t *xc = x + nc * H * W;
            uint8_t *yr = y + (nc * OH + oh) * OW;
            for (c = 0; c < wpad; ++c) row[c] = 0;
            for (kh = 0; kh < KH; ++kh) {
                const int ih = oh * sh - pt + kh * dh;
                if (ih >= 0 && ih < H) ember_qmaxpool_max(row + c0, xc + (ptrdiff_t)ih * W + c0 - pl, c1 - c0, flip);
            }
            if (sw == 2) /* a constant stride, which compilers vectorize */
                for (c = 0; c < wq; ++c) {
                    phases[c] = row[2 * c];
                    phases[wq + c] = row[2 * c + 1];
                }
            else if (sw > 1)
                for (ph = 0; ph < sw; ++ph)
                    for (c = 0; c < wq; ++c) phases[ph * wq + c] = row[c * sw + ph];
            for (ow = 0; ow < OW; ++ow) yr[ow] = 0;
            for (kw = 0; kw < KW; ++kw) {
                const int off = kw * dw;
                ember_qmaxpool_max(yr, sw > 1 ? phases + (off % sw) * wq + off / sw : row + off, OW, 0);
            }
            for (ow = 0; ow < OW; ++ow) yr[ow] ^= flip;
        }
}
/*@end*/
