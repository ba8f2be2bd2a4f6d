/* Quantization kernels: ONNX QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear, and the integer
 * element-wise, pooling and lookup kernels of folded QDQ models (QAdd and QMaxPool: qpointwise.c).
 * Integer results never depend on the target: requantisation is a 64-bit fixed-point product (see
 * ember_q_scale), no float. */

/*@kernel ember_qsaturate requires ember_prelude*/
/* round-half-to-even(v) + zp saturated to [lo, hi]: ONNX QuantizeLinear's rint-then-saturate, exact
 * for any float (after clamping to a small range, truncation and the fraction are exact) and
 * independent of the FPU rounding mode; NaN gives lo. Branch-free, so loops over it vectorize. */
EMBER_INLINE int32_t ember_q_saturate(float v, int32_t zp, int32_t lo, int32_t hi) {
    const float flo = (float)(lo - zp) - 1.0f, fhi = (float)(hi - zp) + 1.0f;
    const float c = v >= flo ? (v <= fhi ? v : fhi) : flo;
    const int32_t i = (int32_t)c;
    const float f = c - (float)i;
    const int32_t odd = i & 1;
    const int32_t r = i + zp + ((f > 0.5f) | ((f == 0.5f) & odd)) - ((f < -0.5f) | ((f == -0.5f) & odd));
    return r < lo ? lo : r > hi ? hi : r;
}
#if EMBER_HAVE_AVX512
#define EMBER_QSAT16 1
typedef float ember_qsat_f __attribute__((vector_size(64), aligned(4)));
typedef int32_t ember_qsat_i __attribute__((vector_size(64)));
/* ember_q_saturate(x[i] / sc, zp, lo, hi) of 16 floats: the same IEEE division, the same clamp (NaN: to
 * flo, MAXPS returning its second operand then), round half to even by VRNDSCALEPS's own mode 0. */
EMBER_INLINE ember_qsat_i ember_q_saturate16(const float *x, float sc, int32_t zp, int32_t lo, int32_t hi) {
    ember_qsat_f v = *(const ember_qsat_f *)(const void *)x / sc;
    const ember_qsat_f flo = (ember_qsat_f){0} + ((float)(lo - zp) - 1.0f);
    const ember_qsat_f fhi = (ember_qsat_f){0} + ((float)(hi - zp) + 1.0f);
    ember_qsat_i r;
    __asm__("vmaxps %2, %1, %0" : "=v"(v) : "v"(v), "v"(flo));
    __asm__("vminps %2, %1, %0" : "=v"(v) : "v"(v), "v"(fhi));
    __asm__("vrndscaleps $0, %1, %0" : "=v"(v) : "v"(v));
    r = __builtin_convertvector(v, ember_qsat_i) + zp;
    __asm__("vpmaxsd %2, %1, %0" : "=v"(r) : "v"(r), "v"((ember_qsat_i){0} + lo));
    __asm__("vpminsd %2, %1, %0" : "=v"(r) : "v"(r), "v"((ember_qsat_i){0} + hi));
    return r;
}
#endif
/*@end*/

/*@kernel ember_qround requires ember_prelude*/
/* acc * mult * 2^-shift, rounded half to even: the requantisation of every integer kernel. The real
 * multiplier (e.g. x_scale * w_scale / y_scale) is mult * 2^-shift with mult < 2^31 and 1 <= shift <= 62,
 * made at compile time from the float32 value exactly, so the result is the float computation's
 * correctly rounded value, with no float at run time. */
/* p * 2^-k rounded half to even, for p of any signed integer type (int64 here, int32 in QAdd's vector
 * loop): the one rounding of every portable integer path (AVX-512's: qvec.c's ember_qv16_round).
 * rnd = 2^(k-1) - 1, as EMBER_Q_RND gives it (loops hoist it): adding it and p's bit k carries past bit
 * k - 1 exactly when the dropped fraction is above one half, or is one half and the kept part odd. */
#define EMBER_Q_RND(T, k) ((((T)1) << ((k) - 1)) - 1)
#define EMBER_Q_ROUND_SHIFT(p, k, rnd) (((p) + (rnd) + (((p) >> (k)) & 1)) >> (k))
/* TFLite's requantisations (ember/ops/qlinear.py `tflite_requant`, TFL_DIVIDE), chosen by the shift's high bits so that
 * every kernel's (mult, shift) interface carries them: shift = 64 + k, LiteRT's (built with
 * TFLITE_SINGLE_ROUNDING): (acc * mult + 2^(k-1)) >> k, half up; shift = 128 + k, TFLite Micro's
 * MultiplyByQuantizedMultiplier: acc * 2^max(31-k, 0) (int32), SaturatingRoundingDoublingHighMul by mult
 * (half away from zero), then RoundingDivideByPOT by max(k-31, 0) (half away from zero). */
#define EMBER_Q_TFL 64
EMBER_INLINE int64_t ember_q_scale_tfl(int64_t acc, int32_t mult, int shift) {
    const int k = shift & 63;
    int64_t a, p, h;
    int rs;
    if (shift >= 3 * EMBER_Q_TFL) { /* 192 + k: TFLite's average pool, acc / mult half away from zero */
        const int64_t half = mult / 2;
        return acc > 0 ? (acc + half) / mult : (acc - half) / mult;
    }
    if (shift < 2 * EMBER_Q_TFL) return (acc * mult + ((int64_t)1 << (k - 1))) >> k;
    a = k < 31 ? acc * ((int64_t)1 << (31 - k)) : acc;
    a = a < -2147483647 - 1 ? -2147483647 - 1 : a > 2147483647 ? 2147483647 : a; /* int32, as TFLite's (its overflow is UB) */
    p = a * mult + (a * mult >= 0 ? ((int64_t)1 << 30) : 1 - ((int64_t)1 << 30));
    h = p >= 0 ? p >> 31 : -((-p) >> 31); /* a division by 2^31, truncating */
    rs = k > 31 ? k - 31 : 0;
    if (!rs) return h;
    return (h >> rs) + ((h & (((int64_t)1 << rs) - 1)) > ((((int64_t)1 << rs) - 1) >> 1) + (h < 0));
}
EMBER_INLINE int64_t ember_q_scale(int64_t acc, int32_t mult, int shift) {
    const int64_t p = acc * mult;
    if (shift >= EMBER_Q_TFL) return ember_q_scale_tfl(acc, mult, shift);
    return EMBER_Q_ROUND_SHIFT(p, shift, EMBER_Q_RND(int64_t, shift));
}
#if EMBER_HAVE_AVX2
/* TFLite's requantisations (shift 64 + k, 128 + k; not 192 + k) of 8 int32 lanes, bit-identical to
 * ember_q_requant with ember_q_scale_tfl, for AVX2 (and AVX-512, which has it): the scalar int64 loops
 * do not vectorize there (no 64-bit arithmetic shift, no 64-bit min/max), and were most of a TFLite int8
 * model's time. The 32 x 32 -> 64-bit products are VPMULDQ of the even lanes and of the odd lanes
 * shifted down. LiteRT's single rounding: the 64-bit (p + 2^(k-1)) >> k arithmetic, done as a logical
 * shift of p xor its sign mask, then clamped in 64 bits. gemmlowp's SaturatingRoundingDoublingHighMul,
 * with its nudge 2^30 (p >= 0) or 1 - 2^30 and a division by 2^31 truncating toward zero, is
 * floor((p + 2^30) / 2^31) for every p (for p < 0 truncation adds 2^31 - 1 first): one add and a
 * logical shift, whose low 32 bits equal an arithmetic one's since the result fits int32; then
 * RoundingDivideByPOT on int32 lanes (remainder against half, plus one for negatives). */
#define EMBER_QT8 1
typedef int32_t ember_qt8i __attribute__((vector_size(32)));
typedef uint32_t ember_qt8w __attribute__((vector_size(32)));
typedef long long ember_qt8q __attribute__((vector_size(32)));
typedef unsigned long long ember_qt8u __attribute__((vector_size(32)));
typedef int32_t ember_qt8iu __attribute__((vector_size(32), aligned(4), may_alias));
typedef uint8_t ember_qt8b __attribute__((vector_size(8)));
typedef uint64_t ember_qt8bu __attribute__((may_alias, aligned(1)));
/* The constants of 8 lanes (ember_qt8_init: one row's; ember_qt8_lane: a lane's own, shifts by VPSRLVQ,
 * VPSRAVD, VPSLLVD), the clamp before the zero point; _e, _o: the 64-bit lanes of the even and odd int32
 * lanes. dbl (gemmlowp's) is one for all lanes. */
typedef struct {
    ember_qt8i m, mo, l, h, zp, half, mask, ls, rs;
    ember_qt8i s32; /* k - 32 per lane (hi32) */
    ember_qt8q rnd_e, rnd_o, k_e, k_o, l64, h64;
    int dbl;
    int ls0; /* no lane shifts left (every k >= 31, as multipliers below 1 give): the saturating shift is the identity */
    int hi32; /* single rounding with every k >= 32 (multipliers below 1/2): the result is the high dword of the
                 rounded product shifted right by k - 32 in 32 bits (ember_qt8_rq) */
    int k32;  /* every k >= 32 */
    int one;  /* gemmlowp's two roundings as ember_qt8_rqa's one (every k >= 32 and the layer's sums proven to
                 allow it: out[EMBER_QOUT_ONE]); 0 from ember_qt8_init, callers set it (ember_qt8_one) */
} ember_qt8;
/* LiteRT's rounding constant of a lane's 64-bit product, or for gemmlowp's (dbl) ember_qt8_rqa's: 2^(k-1) + 2^30
 * (ember_qt8_rqd keeps its own 2^30). */
#define EMBER_QT8_RND(dbl, k) \
    ((dbl) ? ((k) >= 32 ? ((long long)1 << ((k) - 1)) + (1LL << 30) : 1LL << 30) : (k) ? (long long)1 << ((k) - 1) : 0)
EMBER_UNUSED EMBER_INLINE void ember_qt8_init(ember_qt8 *t, int32_t mult, int shift, int32_t zp, int32_t lo, int32_t hi) {
    const int k = shift & 63, rs = k > 31 ? k - 31 : 0;
    const int32_t mask = (int32_t)(((uint32_t)1 << rs) - 1u);
    t->dbl = shift >= 2 * EMBER_Q_TFL;
    t->ls0 = k >= 31;
    t->hi32 = !t->dbl && k >= 32;
    t->k32 = k >= 32;
    t->one = 0;
    t->s32 = (ember_qt8i){0} + (k >= 32 ? k - 32 : 0);
    t->m = t->mo = (ember_qt8i){0} + mult;
    t->ls = (ember_qt8i){0} + (k < 31 ? 31 - k : 0);
    t->rs = (ember_qt8i){0} + rs;
    t->mask = (ember_qt8i){0} + mask;
    t->half = (ember_qt8i){0} + (mask >> 1);
    t->k_e = t->k_o = (ember_qt8q){0} + (t->dbl ? 31 : k);
    t->rnd_e = t->rnd_o = (ember_qt8q){0} + EMBER_QT8_RND(t->dbl, k);
    t->l = (ember_qt8i){0} + (lo - zp);
    t->h = (ember_qt8i){0} + (hi - zp);
    t->zp = (ember_qt8i){0} + zp;
    t->l64 = (ember_qt8q){0} + (lo - zp);
    t->h64 = (ember_qt8q){0} + (hi - zp);
}
/* Lane i's own multiplier and shift (of the same rounding kind as ember_qt8_init's). */
EMBER_UNUSED EMBER_INLINE void ember_qt8_lane(ember_qt8 *t, int i, int32_t mult, int shift) {
    const int k = shift & 63, rs = k > 31 ? k - 31 : 0;
    const int32_t mask = (int32_t)(((uint32_t)1 << rs) - 1u);
    const long long rnd = EMBER_QT8_RND(t->dbl, k);
    t->m[i] = mult;
    t->ls[i] = k < 31 ? 31 - k : 0;
    t->ls0 = t->ls0 && k >= 31;
    t->hi32 = t->hi32 && k >= 32;
    t->k32 = t->k32 && k >= 32;
    t->s32[i] = k >= 32 ? k - 32 : 0;
    t->rs[i] = rs;
    t->mask[i] = mask;
    t->half[i] = mask >> 1;
    if (i & 1) {
        t->mo[i - 1] = mult;
        t->k_o[i / 2] = t->dbl ? 31 : k;
        t->rnd_o[i / 2] = rnd;
    } else {
        t->k_e[i / 2] = t->dbl ? 31 : k;
        t->rnd_e[i / 2] = rnd;
    }
}
/* ember_qt8_lane for all 8 lanes at once, lane i taking channel i % 4 of mult[0..3], shift[0..3] (a channel
 * quad's 2 pixels x 4 channels): each field built whole, where 8 ember_qt8_lane calls wrote single lanes
 * of vectors in memory and the next vector loads waited on those stores (per quad of a depthwise layer,
 * which on a 3x3 map was as long as the quad's sums). */
EMBER_UNUSED EMBER_INLINE void ember_qt8_quad(ember_qt8 *t, const int32_t *mult, const int32_t *shift) {
    int32_t ls[4], rs[4], mask[4], s32[4];
    long long kk[4], rnd[4];
    int i, all = 1, hi32 = !t->dbl, k32 = 1;
    for (i = 0; i < 4; ++i) {
        const int k = shift[i] & 63;
        s32[i] = k >= 32 ? k - 32 : 0;
        hi32 = hi32 && k >= 32;
        ls[i] = k < 31 ? 31 - k : 0;
        rs[i] = k > 31 ? k - 31 : 0;
        mask[i] = (int32_t)(((uint32_t)1 << rs[i]) - 1u);
        kk[i] = t->dbl ? 31 : k;
        rnd[i] = EMBER_QT8_RND(t->dbl, k);
        all = all && k >= 31;
        k32 = k32 && k >= 32;
    }
    t->ls0 = all;
    t->hi32 = hi32;
    t->k32 = k32;
    t->s32 = (ember_qt8i){s32[0], s32[1], s32[2], s32[3], s32[0], s32[1], s32[2], s32[3]};
    t->m = (ember_qt8i){mult[0], mult[1], mult[2], mult[3], mult[0], mult[1], mult[2], mult[3]};
    t->mo = (ember_qt8i){mult[1], mult[1], mult[3], mult[3], mult[1], mult[1], mult[3], mult[3]};
    t->ls = (ember_qt8i){ls[0], ls[1], ls[2], ls[3], ls[0], ls[1], ls[2], ls[3]};
    t->rs = (ember_qt8i){rs[0], rs[1], rs[2], rs[3], rs[0], rs[1], rs[2], rs[3]};
    t->mask = (ember_qt8i){mask[0], mask[1], mask[2], mask[3], mask[0], mask[1], mask[2], mask[3]};
    t->half = t->mask >> 1;
    t->k_e = (ember_qt8q){kk[0], kk[2], kk[0], kk[2]};
    t->k_o = (ember_qt8q){kk[1], kk[3], kk[1], kk[3]};
    t->rnd_e = (ember_qt8q){rnd[0], rnd[2], rnd[0], rnd[2]};
    t->rnd_o = (ember_qt8q){rnd[1], rnd[3], rnd[1], rnd[3]};
}
/* ember_qt8_lane for all 8 lanes at once, lane i taking mult[i], shift[i] (8 rows of a matrix-vector
 * product), each field built whole as in ember_qt8_quad. */
EMBER_UNUSED EMBER_INLINE void ember_qt8_oct(ember_qt8 *t, const int32_t *mult, const int32_t *shift) {
    int32_t ls[8], rs[8], mask[8], s32[8];
    long long kk[8], rnd[8];
    int i, all = 1, hi32 = !t->dbl, k32 = 1;
    for (i = 0; i < 8; ++i) {
        const int k = shift[i] & 63;
        s32[i] = k >= 32 ? k - 32 : 0;
        hi32 = hi32 && k >= 32;
        ls[i] = k < 31 ? 31 - k : 0;
        rs[i] = k > 31 ? k - 31 : 0;
        mask[i] = (int32_t)(((uint32_t)1 << rs[i]) - 1u);
        kk[i] = t->dbl ? 31 : k;
        rnd[i] = EMBER_QT8_RND(t->dbl, k);
        all = all && k >= 31;
        k32 = k32 && k >= 32;
    }
    t->ls0 = all;
    t->hi32 = hi32;
    t->k32 = k32;
    t->s32 = *(const ember_qt8iu *)(const void *)s32;
    t->m = *(const ember_qt8iu *)(const void *)mult;
    t->mo = (ember_qt8i){mult[1], mult[1], mult[3], mult[3], mult[5], mult[5], mult[7], mult[7]};
    t->ls = *(const ember_qt8iu *)(const void *)ls;
    t->rs = *(const ember_qt8iu *)(const void *)rs;
    t->mask = *(const ember_qt8iu *)(const void *)mask;
    t->half = t->mask >> 1;
    t->k_e = (ember_qt8q){kk[0], kk[2], kk[4], kk[6]};
    t->k_o = (ember_qt8q){kk[1], kk[3], kk[5], kk[7]};
    t->rnd_e = (ember_qt8q){rnd[0], rnd[2], rnd[4], rnd[6]};
    t->rnd_o = (ember_qt8q){rnd[1], rnd[3], rnd[5], rnd[7]};
}
/* Lanes of a where c (-1 lanes), else of b (C has no vector ?:; compilers make these VPBLENDVB, VPMINSD). */
#define EMBER_QT8_SEL(c, a, b) (((a) & (c)) | ((b) & ~(c)))
EMBER_UNUSED EMBER_INLINE ember_qt8q ember_qt8_clamp64(ember_qt8q x, ember_qt8q l, ember_qt8q h) {
    x = EMBER_QT8_SEL(x < l, l, x);
    return EMBER_QT8_SEL(x > h, h, x);
}
EMBER_UNUSED EMBER_INLINE ember_qt8i ember_qt8_clamp(ember_qt8i x, ember_qt8i l, ember_qt8i h) {
    /* VPMAXSD, VPMINSD (GCC made the selects compares and VPBLENDVBs; clang has no builtins for them) */
    __asm__("vpmaxsd %2, %1, %0\n\tvpminsd %3, %0, %0" : "=&x"(x) : "x"(x), "x"(l), "x"(h));
    return x;
}
/* x >> k (arithmetic) of 64-bit lanes, each by its own k. */
EMBER_UNUSED EMBER_INLINE ember_qt8q ember_qt8_sra(ember_qt8q x, ember_qt8q k) {
    const ember_qt8q s = x < (ember_qt8q){0};
    return (ember_qt8q)((ember_qt8u)(x ^ s) >> (ember_qt8u)k) ^ s;
}
/* LiteRT's single rounding of 8 lanes where every k >= 32 (multipliers below 1/2), from the products' high
 * dwords: floor((p + 2^(k-1)) / 2^32) fits int32 (|p| < 2^62), and its floor division by 2^(k-32) (s) is
 * the floor division by 2^k, which fits the 32-bit clamp: no 64-bit shift emulation or 64-bit clamp.
 * m, mo, rnd_e, rnd_o as ember_qt8's; l, h the clamp before the zero point. */
EMBER_UNUSED EMBER_INLINE ember_qt8i ember_qt8_rq32(ember_qt8i v, ember_qt8i m, ember_qt8i mo, ember_qt8q rnd_e,
                                                    ember_qt8q rnd_o, ember_qt8i s, ember_qt8i l, ember_qt8i h,
                                                    ember_qt8i zp) {
    const ember_qt8q e = (ember_qt8q)__builtin_ia32_pmuldq256(v, m) + rnd_e,
                     o = (ember_qt8q)__builtin_ia32_pmuldq256((ember_qt8i)((ember_qt8q)v >> 32), mo) + rnd_o;
    const ember_qt8i r = (ember_qt8i)__builtin_ia32_pblendd256((ember_qt8i)((ember_qt8u)e >> 32), (ember_qt8i)o, 0xAA);
    return ember_qt8_clamp(r >> s, l, h) + zp;
}
/* gemmlowp's doubling high multiply and rounding divide (TFLite Micro's, and LiteRT's convolutions') of 8 lanes
 * where every k >= 31 (no saturating left shift): m, mo as ember_qt8's; rs, mask, half the divide's. */
EMBER_UNUSED EMBER_INLINE ember_qt8i ember_qt8_rqd(ember_qt8i v, ember_qt8i m, ember_qt8i mo, ember_qt8i rs,
                                                   ember_qt8i mask, ember_qt8i half, ember_qt8i l, ember_qt8i h,
                                                   ember_qt8i zp) {
    const ember_qt8q rnd = (ember_qt8q){0} + (1LL << 30),
                     e = (ember_qt8q)__builtin_ia32_pmuldq256(v, m) + rnd,
                     o = (ember_qt8q)__builtin_ia32_pmuldq256((ember_qt8i)((ember_qt8q)v >> 32), mo) + rnd;
    /* bits 31..62 of each product: the even lanes' low dwords after a shift by 31, the odd lanes' high dwords
     * after a shift by 1, one VPBLENDD */
    ember_qt8i r = (ember_qt8i)__builtin_ia32_pblendd256((ember_qt8i)((ember_qt8u)e >> 31), (ember_qt8i)((ember_qt8u)o << 1), 0xAA);
    /* RoundingDivideByPOT(r, rs): the comparisons' lanes are -1 where true */
    r = (r >> rs) - ((r & mask) > half - (r < (ember_qt8i){0}));
    return ember_qt8_clamp(r, l, h) + zp;
}
/* gemmlowp's two roundings of 8 lanes as one, where every k >= 32 and ops/qlinear.py `one_rounding` proved it for
 * every sum the layer makes (out[EMBER_QOUT_ONE]): SaturatingRoundingDoublingHighMul rounds half up at 2^31,
 * which moves RoundingDivideByPOT's half-away-from-zero thresholds toward zero by 2^30, so the result is
 * sign(v) floor((|v| M + 2^(k-1) + 2^30) / 2^k) (rnd_e, rnd_o as ember_qt8's: EMBER_QT8_RND): VPMULUDQ of |v|
 * (INT32_MIN's 2^31 too), the high dwords of the products shifted right by k - 32 (s) in 32 bits, VPSIGND; 10
 * operations before the clamp where ember_qt8_rqd takes 14. The result before the zero point and clamp. */
EMBER_UNUSED EMBER_INLINE ember_qt8i ember_qt8_rqa(ember_qt8i v, ember_qt8i m, ember_qt8i mo, ember_qt8q rnd_e,
                                                   ember_qt8q rnd_o, ember_qt8i s) {
    const ember_qt8i a = (ember_qt8i)__builtin_ia32_psignd256(v, v);
    const ember_qt8q e = (ember_qt8q)__builtin_ia32_pmuludq256(a, m) + rnd_e,
                     o = (ember_qt8q)__builtin_ia32_pmuludq256((ember_qt8i)((ember_qt8u)a >> 32), mo) + rnd_o;
    const ember_qt8i r = (ember_qt8i)__builtin_ia32_pblendd256((ember_qt8i)((ember_qt8u)e >> 32), (ember_qt8i)o, 0xAA);
    return (ember_qt8i)__builtin_ia32_psignd256(r >> s, v);
}
/* t->one for a layer's requantisation: ok (its out[EMBER_QOUT_ONE]) and every lane's k >= 32 (gemmlowp's rounding). */
EMBER_UNUSED EMBER_INLINE void ember_qt8_one(ember_qt8 *t, int32_t ok) {
    t->one = t->dbl && t->k32 && ok;
}
/* ember_q_requant(v[i], mult, shift, zp, lo, hi) of the 8 lanes, as int32 lanes. */
EMBER_UNUSED EMBER_INLINE ember_qt8i ember_qt8_rq(ember_qt8i v, const ember_qt8 *t) {
    ember_qt8q e, o;
    ember_qt8i r;
    if (!t->dbl) {
        if (t->hi32) return ember_qt8_rq32(v, t->m, t->mo, t->rnd_e, t->rnd_o, t->s32, t->l, t->h, t->zp);
        e = (ember_qt8q)__builtin_ia32_pmuldq256(v, t->m) + t->rnd_e;
        o = (ember_qt8q)__builtin_ia32_pmuldq256((ember_qt8i)((ember_qt8q)v >> 32), t->mo) + t->rnd_o;
        e = ember_qt8_clamp64(ember_qt8_sra(e, t->k_e), t->l64, t->h64);
        o = ember_qt8_clamp64(ember_qt8_sra(o, t->k_o), t->l64, t->h64);
        r = (ember_qt8i)(((ember_qt8u)e & 0xFFFFFFFFull) | (ember_qt8u)o << 32);
        return r + t->zp;
    }
    if (t->one) return ember_qt8_clamp(ember_qt8_rqa(v, t->m, t->mo, t->rnd_e, t->rnd_o, t->s32), t->l, t->h) + t->zp;
    if (!t->ls0) { /* acc * 2^ls saturated to int32, as ember_q_scale_tfl's clamp */
        const ember_qt8i a = (ember_qt8i)((ember_qt8w)v << (ember_qt8w)t->ls);
        const ember_qt8i sat = (v >> 31) ^ 0x7FFFFFFF;
        v = EMBER_QT8_SEL((a >> t->ls) == v, a, sat);
    }
    return ember_qt8_rqd(v, t->m, t->mo, t->rs, t->mask, t->half, t->l, t->h, t->zp); /* rnd_e, rnd_o: 2^30 */
}
#endif
/* ember_q_scale + zero point, clamped to [lo, hi]. */
EMBER_UNUSED EMBER_INLINE int32_t ember_q_requant(int64_t acc, int32_t mult, int shift, int32_t zp, int32_t lo, int32_t hi) {
    const int64_t r = ember_q_scale(acc, mult, shift) + zp;
    return (int32_t)(r < lo ? lo : r > hi ? hi : r);
}
/* Entries of a requantised result's `out` table (ember/ops/qpointwise.py QOut): zero point, clamp; the
 * integer products' (qlinear.py _out_args) add: sums exact in float, tiles may requantise in float
 * (qlinear.py float_limit's ok), after clamping sums to [-L, L] (its L; 0: no clamp), and whether no
 * weight byte is -128 (found at compile time; -1: run-time weights, qgemm.c ember_qout_w127 checks), and whether
 * TFLite's two roundings are one for every sum (qlinear.py one_rounding: ember_qt8_rqa). */
#define EMBER_QOUT_ZP 0
#define EMBER_QOUT_LO 1
#define EMBER_QOUT_HI 2
#define EMBER_QOUT_EXACT 3
#define EMBER_QOUT_FLOAT 4
#define EMBER_QOUT_LIMIT 5
#define EMBER_QOUT_W127 6
#define EMBER_QOUT_ONE 7
/* Element i of int8 (sgn = 1) or uint8 (sgn = 0) bytes, as an int. */
EMBER_UNUSED EMBER_INLINE int32_t ember_q_load(const uint8_t *p, ptrdiff_t i, int sgn) {
    return sgn ? (int32_t)(int8_t)p[i] : (int32_t)p[i];
}
/*@end*/

/*@kernel ember_qrun requires ember_qround*/
/* y[j] = ember_q_requant(acc[j] + c, mult, shift, zp, lo, hi) for j < n, in runs of 64: a constant trip
 * count that compilers vectorize whole (a 32 x 32 -> 64-bit multiply, the clamp before the zero point),
 * the last partial run through a zero-padded copy instead of a scalar remainder loop. */
EMBER_INLINE void ember_qrun64(uint8_t *EMBER_RESTRICT y, const int32_t *EMBER_RESTRICT acc, int32_t c, int32_t mult,
                               int shift, int32_t zp, int64_t l, int64_t h) {
    const int64_t rnd = EMBER_Q_RND(int64_t, shift);
    int j;
    for (j = 0; j < 64; ++j) {
        const int64_t p = (int64_t)(acc[j] + c) * mult; /* the sums plus c fit int32: see qlinear.py */
        int64_t r = EMBER_Q_ROUND_SHIFT(p, shift, rnd);
        r = r < l ? l : r;
        r = r > h ? h : r;
        y[j] = (uint8_t)(r + zp);
    }
}
/* ember_qrun for n <= 16 sums (a tile's row where vectors are narrow: AVX2, SSE2), y[j * ps]: the same
 * arithmetic over a zero-padded run of 16, which compilers vectorize whole. */
EMBER_INLINE void ember_qrun16(uint8_t *EMBER_RESTRICT y, ptrdiff_t ps, const int32_t *EMBER_RESTRICT acc, int n, int32_t c,
                           int32_t mult, int shift, int32_t zp, int32_t lo, int32_t hi) {
    const int64_t l = lo - zp, h = hi - zp;
    int64_t rnd;
    int32_t a[16];
    uint8_t b[16];
    int j;
    for (j = 0; j < 16; ++j) a[j] = j < n ? acc[j] : 0;
    if (shift >= EMBER_Q_TFL) { /* TFLite's rounding (ember_q_scale_tfl); its shifts are no bit counts */
#ifdef EMBER_QT8
        if (shift < 3 * EMBER_Q_TFL) {
            ember_qt8 t;
            ember_qt8i r[2];
            ember_qt8_init(&t, mult, shift, zp, lo, hi);
            for (j = 0; j < 2; ++j) r[j] = ember_qt8_rq(*(const ember_qt8iu *)(const void *)(a + 8 * j) + c, &t);
            for (j = 0; j < n; ++j) y[j * ps] = (uint8_t)r[j >> 3][j & 7];
            return;
        }
#endif
        for (j = 0; j < n; ++j) y[j * ps] = (uint8_t)ember_q_requant(acc[j] + c, mult, shift, zp, lo, hi);
        return;
    }
    rnd = EMBER_Q_RND(int64_t, shift);
    for (j = 0; j < 16; ++j) {
        const int64_t p = (int64_t)(a[j] + c) * mult;
        int64_t r = EMBER_Q_ROUND_SHIFT(p, shift, rnd);
        r = r < l ? l : r;
        r = r > h ? h : r;
        b[j] = (uint8_t)(r + zp);
    }
    for (j = 0; j < n; ++j) y[j * ps] = b[j];
}
/* ember_qrun64 for TFLite's requantisations (shift >= EMBER_Q_TFL): LiteRT's half-up rounding is the same
 * 32 x 32 -> 64-bit multiply, add and shift, which compilers vectorize as they do ember_qrun64's. */
EMBER_INLINE void ember_qrun64_tfl(uint8_t *EMBER_RESTRICT y, const int32_t *EMBER_RESTRICT acc, int32_t c,
                                   int32_t mult, int shift, int32_t zp, int64_t l, int64_t h) {
    int j;
#ifdef EMBER_QT8
    if (shift < 3 * EMBER_Q_TFL) { /* 8 lanes at a time (ember_qt8_rq) */
        ember_qt8 t;
        ember_qt8_init(&t, mult, shift, zp, (int32_t)l + zp, (int32_t)h + zp);
        for (j = 0; j < 64; j += 8) {
            const ember_qt8i r = ember_qt8_rq(*(const ember_qt8iu *)(const void *)(acc + j) + c, &t);
            *(ember_qt8bu *)(void *)(y + j) = (uint64_t)__builtin_convertvector(r, ember_qt8b);
        }
        return;
    }
#endif
    if (shift < 2 * EMBER_Q_TFL) {
        const int k = shift & 63;
        const int64_t rnd = (int64_t)1 << (k - 1);
        for (j = 0; j < 64; ++j) {
            int64_t r = ((int64_t)(acc[j] + c) * mult + rnd) >> k;
            r = r < l ? l : r;
            r = r > h ? h : r;
            y[j] = (uint8_t)(r + zp);
        }
        return;
    }
    for (j = 0; j < 64; ++j) {
        int64_t r = ember_q_scale_tfl(acc[j] + c, mult, shift);
        r = r < l ? l : r;
        r = r > h ? h : r;
        y[j] = (uint8_t)(r + zp);
    }
}
/* One run of 64 with the rounding that shift names: ember's, or TFLite's (shift >= EMBER_Q_TFL). */
EMBER_INLINE void ember_qrun64_any(uint8_t *EMBER_RESTRICT y, const int32_t *EMBER_RESTRICT acc, int32_t c,
                                   int32_t mult, int shift, int32_t zp, int64_t l, int64_t h) {
    if (shift >= EMBER_Q_TFL) ember_qrun64_tfl(y, acc, c, mult, shift, zp, l, h);
    else ember_qrun64(y, acc, c, mult, shift, zp, l, h);
}
static void ember_qrun(uint8_t *EMBER_RESTRICT y, const int32_t *EMBER_RESTRICT acc, ptrdiff_t n, int32_t c,
                       int32_t mult, int shift, int32_t zp, int32_t lo, int32_t hi) {
    const int64_t l = lo - zp, h = hi - zp;
    ptrdiff_t j;
    for (j = 0; j + 64 <= n; j += 64) ember_qrun64_any(y + j, acc + j, c, mult, shift, zp, l, h);
    if (j < n) {
        int32_t a[64];
        uint8_t b[64];
        int i, r = (int)(n - j);
        for (i = 0; i < 64; ++i) a[i] = i < r ? acc[j + i] : 0;
        ember_qrun64_any(b, a, c, mult, shift, zp, l, h);
        for (i = 0; i < r; ++i) y[j + i] = b[i];
    }
}
/*@end*/

/*@kernel ember_quantize_tpl requires ember_qsaturate*/
/* Scale / zero-point layout `q` = [outer, A, inner, block, s_o, s_a, s_i]: the tensor is outer x A x inner
 * (A = the quantization axis) and element (o, a, i) uses parameter o*s_o + (a/block)*s_a + i*s_i
 * (all strides 0: per tensor; s_a = 1: per axis; blocked otherwise). zp may be NULL (zero). Requires
 * ember_qsaturate so that EMBER_QSAT16 is known where this block's #ifdef reads it. */
#define EMBER_QUANT_LOOP(BODY)                                                                       \
    int o, a, i;                                                                                     \
    for (o = 0; o < q[0]; ++o)                                                                       \
        for (a = 0; a < q[1]; ++a) {                                                                 \
            const ptrdiff_t base = (ptrdiff_t)o * q[4] + (ptrdiff_t)(a / q[3]) * q[5];               \
            const ptrdiff_t e0 = ((ptrdiff_t)o * q[1] + a) * q[2];                                   \
            if (q[6] == 0) { /* one scale for the run: a loop that vectorizes */                      \
                const float sc = scale[base];                                                        \
                const int32_t z = zp ? (int32_t)zp[base] : 0;                                        \
                for (i = 0; i < q[2]; ++i) {                                                         \
                    const ptrdiff_t e = e0 + i;                                                      \
                    BODY;                                                                            \
                }                                                                                    \
            } else {                                                                                 \
                for (i = 0; i < q[2]; ++i) {                                                         \
                    const ptrdiff_t e = e0 + i;                                                      \
                    const float sc = scale[base + (ptrdiff_t)i * q[6]];                              \
                    const int32_t z = zp ? (int32_t)zp[base + (ptrdiff_t)i * q[6]] : 0;              \
                    BODY;                                                                            \
                }                                                                                    \
            }                                                                                        \
        }
#ifdef EMBER_QSAT16
/* One scale and zero point for the whole tensor (every stride 0): 16 elements at a time. */
#define EMBER_QUANT_TENSOR(T, LO, HI)                                                                \
    if (q[4] == 0 && q[5] == 0 && q[6] == 0) {                                                       \
        typedef T ember_qt16 __attribute__((vector_size(16 * sizeof(T)), aligned(1)));               \
        const ptrdiff_t n = (ptrdiff_t)q[0] * q[1] * q[2];                                           \
        const int32_t z = zp ? (int32_t)zp[0] : 0;                                                   \
        ptrdiff_t e = 0;                                                                             \
        for (; e + 16 <= n; e += 16)                                                                 \
            *(ember_qt16 *)(void *)(y + e) =                                                         \
                __builtin_convertvector(ember_q_saturate16(x + e, scale[0], z, LO, HI), ember_qt16); \
        for (; e < n; ++e) y[e] = (T)ember_q_saturate(x[e] / scale[0], z, LO, HI);                   \
        return;                                                                                      \
    }
#else
#define EMBER_QUANT_TENSOR(T, LO, HI)
#endif
#define EMBER_QUANTIZE(SUFFIX, T, LO, HI)                                                            \
    static void ember_quantize_##SUFFIX(T *EMBER_RESTRICT y, const float *EMBER_RESTRICT x, const float *scale, \
                                        const T *zp, const int32_t *q) {                             \
        EMBER_QUANT_TENSOR(T, LO, HI)                                                                \
        EMBER_QUANT_LOOP(y[e] = (T)ember_q_saturate(x[e] / sc, z, LO, HI))                           \
    }
/* (x - zp) * scale, the subtraction in float as ONNX's reference does it (exact below 2^24). */
#define EMBER_DEQUANTIZE(SUFFIX, T)                                                                  \
    static void ember_dequantize_##SUFFIX(float *EMBER_RESTRICT y, const T *EMBER_RESTRICT x, const float *scale, \
                                          const T *zp, const int32_t *q) {                           \
        EMBER_QUANT_LOOP(y[e] = ((float)x[e] - (float)z) * sc)                                      \
    }
/*@end*/

/*@kernel ember_quantize_s8 requires ember_quantize_tpl*/
EMBER_QUANTIZE(s8, int8_t, -128, 127)
/*@end*/
/*@kernel ember_quantize_u8 requires ember_quantize_tpl*/
EMBER_QUANTIZE(u8, uint8_t, 0, 255)
/*@end*/
/*@kernel ember_quantize_s16 requires ember_quantize_tpl*/
EMBER_QUANTIZE(s16, int16_t, -32768, 32767)
/*@end*/
/*@kernel ember_quantize_u16 requires ember_quantize_tpl*/
EMBER_QUANTIZE(u16, uint16_t, 0, 65535)
/*@end*/
/*@kernel ember_dequantize_s8 requires ember_quantize_tpl*/
EMBER_DEQUANTIZE(s8, int8_t)
/*@end*/
/*@kernel ember_dequantize_u8 requires ember_quantize_tpl*/
EMBER_DEQUANTIZE(u8, uint8_t)
/*@end*/
/*@kernel ember_dequantize_s16 requires ember_quantize_tpl*/
EMBER_DEQUANTIZE(s16, int16_t)
/*@end*/
/*@kernel ember_dequantize_u16 requires ember_quantize_tpl*/
EMBER_DEQUANTIZE(u16, uint16_t)
/*@end*/
/*@kernel ember_dequantize_s32 requires ember_quantize_tpl*/
EMBER_DEQUANTIZE(s32, int32_t)
/*@end*/

/*@kernel ember_dynquant_u8 requires ember_quantize_u8*/
/* DynamicQuantizeLinear: uint8 with the range of x widened to include 0, step by step as ONNX's
 * reference computes it (float32); then QuantizeLinear's per-tensor path. */
static void ember_dynquant_u8(uint8_t *y, float *scale, uint8_t *zp, const float *x, ptrdiff_t n) {
    const int32_t per_tensor[7] = {1, 1, (int32_t)n, 1, 0, 0, 0};
    float mx = 0.0f, mn = 0.0f, s, izp;
    ptrdiff_t i;
    for (i = 0; i < n; ++i) {
        mx = x[i] > mx ? x[i] : mx;
        mn = x[i] < mn ? x[i] : mn;
    }
    s = (mx == mn ? 1.0f : mx - mn) / 255.0f;
    izp = 0.0f - mn / s;
    *zp = (uint8_t)ember_q_saturate(izp < 0.0f ? 0.0f : izp > 255.0f ? 255.0f : izp, 0, 0, 255);
    *scale = s;
    ember_quantize_u8(y, x, &s, zp, per_tensor);
}
/*@end*/

/*@kernel ember_qmul requires ember_qround*/
/* Folded QDQ Mul: y = zy + round((a - za) * (b - zb) * mult * 2^-shift) clamped to [lo, hi]; r: the
 * EMBER_QMUL_* entries (ember/ops/qpointwise.py QMulParams), broadcasting as ember_qadd. */
#define EMBER_QMUL_ZA 0
#define EMBER_QMUL_ZB 1
#define EMBER_QMUL_MULT 2
#define EMBER_QMUL_SHIFT 3
#define EMBER_QMUL_ZY 4
#define EMBER_QMUL_LO 5
#define EMBER_QMUL_HI 6
static void ember_qmul(uint8_t *y, const uint8_t *a, const uint8_t *b, ptrdiff_t n, ptrdiff_t b_div,
                       ptrdiff_t b_mod, int sgn, const int32_t *r) {
    ptrdiff_t i;
    for (i = 0; i < n; ++i) {
        const int32_t p = (ember_q_load(a, i, sgn) - r[EMBER_QMUL_ZA]) *
                          (ember_q_load(b, (i / b_div) % b_mod, sgn) - r[EMBER_QMUL_ZB]);
        y[i] = (uint8_t)ember_q_requant(p, r[EMBER_QMUL_MULT], r[EMBER_QMUL_SHIFT], r[EMBER_QMUL_ZY], r[EMBER_QMUL_LO],
                                        r[EMBER_QMUL_HI]);
    }
}
/*@end*/

/*@kernel ember_qlut requires ember_prelude*/
/* y = table[x]: any function of one quantized value (sigmoid, tanh, hard-swish, a change of scale). */
static void ember_qlut(uint8_t *y, const uint8_t *x, ptrdiff_t n, const uint8_t *table) {
    ptrdiff_t i;
    for (i = 0; i < n; ++i) y[i] = table[x[i]];
}
/*@end*/

/*@kernel ember_qavgpool requires ember_qround ember_pool_geo*/
/* Average pooling of int8 (sgn = 1) / uint8 bytes with the geometry table p (EMBER_POOL_*): the window sum of
 * (x - zx) requantised with the multiplier of its divisor, the count of taps inside the input
 * (include_pad = 0) or inside the padded input (1), as ember_avgpool_f32 counts them; the tables
 * mult/shift are indexed by that count (0 .. kernel volume). Padding adds 0 to the sum. */
static void ember_qavgpool(uint8_t *y, const uint8_t *x, const int32_t *p, ptrdiff_t NC, int sgn, int zx,
                           int include_pad, const int32_t *mult, const int32_t *shift, const int32_t *out) {
    const int D = p[EMBER_POOL_IN_D], H = p[EMBER_POOL_IN_H], W = p[EMBER_POOL_IN_W];
    ptrdiff_t nc;
    int od, oh, ow, kd, kh, kw;
    for (nc = 0; nc < NC; ++nc) {
        const uint8_t *xc = x + nc * (ptrdiff_t)D * H * W;
        for (od = 0; od < p[EMBER_POOL_OUT_D]; ++od)
            for (oh = 0; oh < p[EMBER_POOL_OUT_H]; ++oh)
                for (ow = 0; ow < p[EMBER_POOL_OUT_W]; ++ow) {
                    int32_t sum = 0, count = 0, padded = 0;
                    for (kd = 0; kd < p[EMBER_POOL_K_D]; ++kd) {
                        const int id = od * p[EMBER_POOL_STRIDE_D] - p[EMBER_POOL_PAD_D]
                                       + kd * p[EMBER_POOL_DIL_D];
                        const int din = id >= 0 && id < D,
                                  dpad = id >= -p[EMBER_POOL_PAD_D] && id < D + p[EMBER_POOL_PAD_END_D];
                        for (kh = 0; kh < p[EMBER_POOL_K_H]; ++kh) {
                            const int ih = oh * p[EMBER_POOL_STRIDE_H] - p[EMBER_POOL_PAD_H]
                                           + kh * p[EMBER_POOL_DIL_H];
                            const int hin = din && ih >= 0 && ih < H,
                                      hpad = dpad && ih >= -p[EMBER_POOL_PAD_H] && ih < H + p[EMBER_POOL_PAD_END_H];
                            for (kw = 0; kw < p[EMBER_POOL_K_W]; ++kw) {
                                const int iw = ow * p[EMBER_POOL_STRIDE_W] - p[EMBER_POOL_PAD_W]
                                               + kw * p[EMBER_POOL_DIL_W];
                                if (hpad && iw >= -p[EMBER_POOL_PAD_W] && iw < W + p[EMBER_POOL_PAD_END_W]) ++padded;
                                if (hin && iw >= 0 && iw < W) {
                                    sum += ember_q_load(xc, ((ptrdiff_t)id * H + ih) * W + iw, sgn) - zx;
                                    ++count;
                                }
                            }
                        }
                    }
                    count = include_pad ? padded : count;
                    *y++ = (uint8_t)ember_q_requant(sum, mult[count], shift[count], out[EMBER_QOUT_ZP],
                                                    out[EMBER_QOUT_LO], out[EMBER_QOUT_HI]);
                }
    }
}
/*@end*/

/*@kernel ember_qavgpool_nhwc requires ember_qround ember_pool_nhwc_loop*/
/* ember_qavgpool on channels-last bytes (y [N, OD, OH, OW, C] from x [N, D, H, W, C], pool.c
 * EMBER_POOL_NHWC): each window's int32 sums for up to 64 channels at a time (channels [0, cn) from y and x),
 * in a block on the stack. */
static void ember_qavgpool_nhwc_block(uint8_t *y, const uint8_t *x, const int32_t *p, ptrdiff_t N, ptrdiff_t C,
                                      ptrdiff_t cn, int sgn, int zx, int include_pad, const int32_t *mult,
                                      const int32_t *shift, const int32_t *out) {
    int32_t acc[64];
    EMBER_POOL_NHWC(uint8_t, for (c = 0; c < cn; ++c) acc[c] = 0,
                    for (c = 0; c < cn; ++c) acc[c] += ember_q_load(xp, c, sgn) - zx, {
        const int k = include_pad ? padded : count;
        for (c = 0; c < cn; ++c)
            y[c] = (uint8_t)ember_q_requant(acc[c], mult[k], shift[k], out[EMBER_QOUT_ZP], out[EMBER_QOUT_LO],
                                            out[EMBER_QOUT_HI]);
    })
}
static void ember_qavgpool_nhwc(uint8_t *EMBER_RESTRICT y, const uint8_t *EMBER_RESTRICT x, const int32_t *p,
                                ptrdiff_t N, ptrdiff_t C, int sgn, int zx, int include_pad, const int32_t *mult,
                                const int32_t *shift, const int32_t *out) {
    ptrdiff_t c0;
    for (c0 = 0; c0 < C; c0 += 64)
        ember_qavgpool_nhwc_block(y + c0, x + c0, p, N, C, C - c0 < 64 ? C - c0 : 64, sgn, zx, include_pad, mult, shift,
                                  out);
}
/*@end*/

/*@kernel ember_qmean_nhwc requires ember_qround*/
/* ember_qmean on channels-last bytes: y[n][c] from the S pixels x[n][i][c] (C channels), their sums for up to 64
 * channels at a time, so each pixel's run of channels is read in order. */
static void ember_qmean_nhwc(uint8_t *EMBER_RESTRICT y, const uint8_t *EMBER_RESTRICT x, ptrdiff_t N, ptrdiff_t S,
                             ptrdiff_t C, int sgn, int zx, int32_t mult, int shift, const int32_t *out) {
    int64_t acc[64];
    ptrdiff_t n, i, c, c0;
    for (n = 0; n < N; ++n)
        for (c0 = 0; c0 < C; c0 += 64) {
            const ptrdiff_t cn = C - c0 < 64 ? C - c0 : 64;
            const uint8_t *xn = x + n * S * C + c0;
            for (c = 0; c < cn; ++c) acc[c] = 0;
            for (i = 0; i < S; ++i)
                for (c = 0; c < cn; ++c) acc[c] += ember_q_load(xn, i * C + c, sgn);
            for (c = 0; c < cn; ++c)
                y[n * C + c0 + c] = (uint8_t)ember_q_requant(acc[c] - (int64_t)S * zx, mult, shift, out[EMBER_QOUT_ZP],
                                                             out[EMBER_QOUT_LO], out[EMBER_QOUT_HI]);
        }
}
/*@end*/

/*@kernel ember_qmean requires ember_qround*/
/* GlobalAveragePool / ReduceMean over each of NC planes of S int8 (sgn = 1) / uint8 bytes:
 * zy + round((sum - S*zx) * mult * 2^-shift), the multiplier folding x_scale / (y_scale * S). */
static void ember_qmean(uint8_t *y, const uint8_t *x, ptrdiff_t NC, ptrdiff_t S, int sgn, int zx, int32_t mult,
                        int shift, const int32_t *out) {
    ptrdiff_t nc, i;
    for (nc = 0; nc < NC; ++nc) {
        int64_t sum = 0;
        for (i = 0; i < S; ++i) sum += ember_q_load(x, nc * S + i, sgn);
        y[nc] = (uint8_t)ember_q_requant(sum - (int64_t)S * zx, mult, shift, out[EMBER_QOUT_ZP], out[EMBER_QOUT_LO],
                                         out[EMBER_QOUT_HI]);
    }
}
/*@end*/
