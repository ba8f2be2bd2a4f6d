/* Requantisation of 16 int32 sums in an AVX-512 register, bit-identical to ember_q_requant (quant.c),
 * where the caller has proven (qlinear.py `exact_in_float`) that the sums v are below 2^24 and
 * v * m below 2^22 in magnitude (m = mult * 2^-shift). Then v and m are exact as floats (mult has at
 * most 24 significant bits), and one fused multiply-add v * m + 1.5 * 2^23, rounded once to nearest-even
 * (the instruction's own {rn-sae}, not the FPU mode), is 1.5 * 2^23 plus the round-half-to-even of the
 * exact product: its result lies in [2^23, 2^24), where floats are the integers, and 1.5 * 2^23 is even.
 * The integer is then the low mantissa bits: subtracting the bits of 1.5 * 2^23 (minus the zero point)
 * leaves it plus the zero point, which is clamped (or saturated to int8 by the narrowing). */

/*@kernel ember_qv16_round requires ember_prelude*/
#if EMBER_HAVE_AVX512_BWVL
#define EMBER_QV16_ROUND 1
#define EMBER_QV16_BIAS 0x4B400000 /* the bits of 1.5 * 2^23 */
typedef int32_t ember_qv16_i __attribute__((vector_size(64)));
typedef float ember_qv16_f __attribute__((vector_size(64)));
/* EMBER_QV16_BIAS + round_half_even(t * m) in each lane (t, m, |t * m| < 2^22 as above): the one
 * rounding of AVX-512's integer paths (ember_qv16's and QAdd's); callers subtract the bias (less a zero
 * point). */
EMBER_INLINE ember_qv16_i ember_qv16_round(ember_qv16_f t, ember_qv16_f m) {
    __asm__("vfmadd213ps %{rn-sae%}, %2, %1, %0" : "+v"(t) : "v"(m), "v"((ember_qv16_f){0} + 12582912.0f));
    return (ember_qv16_i)t;
}
#endif
/*@end*/

/*@kernel ember_qv16 requires ember_qround ember_qv16_round*/
#ifdef EMBER_QV16_ROUND
#define EMBER_QV16 1
typedef int32_t ember_qv16_iu __attribute__((vector_size(64), aligned(1), may_alias));
typedef uint8_t ember_qv16_b __attribute__((vector_size(16)));
typedef uint8_t ember_qv16_bu __attribute__((vector_size(16), aligned(1), may_alias));

/* mult * 2^-shift as a float (exact: 24 significant bits, shift <= 62). */
EMBER_INLINE float ember_qv16_mult(int32_t mult, int shift) {
    union { uint32_t u; float f; } p;
    p.u = (uint32_t)(127 - shift) << 23;
    return (float)mult * p.f;
}
/* The layer's constants from out = [zp, lo, hi]: the clamp (or none: the int8 range, which the
 * saturating narrowing gives), and the bits of 1.5 * 2^23 minus the zero point. */
typedef struct {
    ember_qv16_i lo, hi, off;
    int clamp;
} ember_qv16_out;
EMBER_INLINE ember_qv16_out ember_qv16_range(const int32_t *out) {
    ember_qv16_out r;
    r.lo = (ember_qv16_i){0} + out[EMBER_QOUT_LO];
    r.hi = (ember_qv16_i){0} + out[EMBER_QOUT_HI];
    r.off = (ember_qv16_i){0} + (EMBER_QV16_BIAS - out[EMBER_QOUT_ZP]);
    r.clamp = out[EMBER_QOUT_LO] != -128 || out[EMBER_QOUT_HI] != 127;
    return r;
}
/* The rounded, unclamped ember_q_requant of the 16 sums v (bias and corrections included) plus the zero
 * point; m: the lanes' ember_qv16_mult. */
EMBER_INLINE ember_qv16_i ember_qv16_scaled(ember_qv16_i v, ember_qv16_f m, const ember_qv16_out *o) {
    return ember_qv16_round(__builtin_convertvector(v, ember_qv16_f), m) - o->off;
}
EMBER_INLINE ember_qv16_i ember_qv16_clamp(ember_qv16_i r, const ember_qv16_out *o) {
    __asm__("vpmaxsd %2, %1, %0" : "=v"(r) : "v"(r), "v"(o->lo));
    __asm__("vpminsd %2, %1, %0" : "=v"(r) : "v"(r), "v"(o->hi));
    return r;
}
/* ember_q_requant of the 16 sums v as bytes. */
EMBER_INLINE ember_qv16_b ember_qv16_requant(ember_qv16_i v, ember_qv16_f m, const ember_qv16_out *o) {
    ember_qv16_i r = ember_qv16_scaled(v, m, o);
    ember_qv16_b b;
    if (o->clamp) return __builtin_convertvector(ember_qv16_clamp(r, o), ember_qv16_b);
    __asm__("vpmovsdb %1, %0" : "=v"(b) : "v"(r)); /* the int8 range: saturation is the clamp */
    return b;
}
/* Four output channels' requantised lanes (ember_qv16_clamp'ed) as the words of a channel-blocked
 * tensor: byte t of word j is q[t]'s lane j. */
EMBER_INLINE ember_qv16_i ember_qv16_words(ember_qv16_i q0, ember_qv16_i q1, ember_qv16_i q2, ember_qv16_i q3) {
    typedef uint32_t u16v __attribute__((vector_size(64)));
    const u16v b = (u16v){0} + 255u;
    return (ember_qv16_i)(((u16v)q0 & b) | ((u16v)q1 & b) << 8 | ((u16v)q2 & b) << 16 | (u16v)q3 << 24);
}
/* The first n (none if n <= 0, at most 16) words of w to y. */
EMBER_INLINE void ember_qv16_store_words(uint8_t *y, ember_qv16_i w, int n) {
    const unsigned short k = n <= 0 ? 0 : n >= 16 ? 0xFFFF : (unsigned short)((1u << n) - 1);
    __asm__("vmovdqu32 %1, %0%{%2%}" : "+m"(*(ember_qv16_iu *)(void *)y) : "v"(w), "Yk"(k));
}
/* The first n (none if n <= 0, at most 16) words of w to y, y + ps, y + 2 ps, ...: a channel quad of 16 pixels of a
 * channels-last output (ps bytes a pixel), or of 16 rows of a matrix product's output. */
EMBER_INLINE void ember_qv16_scatter_words(uint8_t *y, ptrdiff_t ps, ember_qv16_i w, int n) {
    int j;
    for (j = 0; j < n && j < 16; ++j) {
        const int32_t v = w[j];
        __builtin_memcpy(y + j * ps, &v, 4);
    }
}
/* The first n (none if n <= 0, at most 16) bytes of b to y, y + ps, y + 2 ps, ...: one channel of 16 pixels. */
EMBER_INLINE void ember_qv16_scatter(uint8_t *y, ptrdiff_t ps, ember_qv16_b b, int n) {
    int j;
    for (j = 0; j < n && j < 16; ++j) y[j * ps] = b[j];
}
/* v clamped to [-lim, lim]. */
EMBER_INLINE ember_qv16_i ember_qv16_limit(ember_qv16_i v, ember_qv16_i lim) {
    __asm__("vpminsd %2, %1, %0" : "=v"(v) : "v"(v), "v"(lim));
    __asm__("vpmaxsd %2, %1, %0" : "=v"(v) : "v"(v), "v"(-lim));
    return v;
}
/* 16 int8 (sgn) or uint8 bytes at p as int32 lanes. */
EMBER_UNUSED EMBER_INLINE ember_qv16_i ember_qv16_widen(const uint8_t *p, int sgn) {
    ember_qv16_i r;
    if (sgn) __asm__("vpmovsxbd %1, %0" : "=v"(r) : "m"(*(const ember_qv16_bu *)(const void *)p));
    else __asm__("vpmovzxbd %1, %0" : "=v"(r) : "m"(*(const ember_qv16_bu *)(const void *)p));
    return r;
}
/* The first n (<= 16) of 16 bytes to y. */
EMBER_INLINE void ember_qv16_store(uint8_t *y, ember_qv16_b b, int n) {
    __asm__("vmovdqu8 %1, %0%{%2%}" : "+m"(*(ember_qv16_bu *)(void *)y) : "v"(b), "Yk"((unsigned short)((1u << n) - 1)));
}

/* TFLite's requantisations of 16 int32 lanes, each lane its own multiplier and shift, bit-identical to
 * ember_q_requant with quant.c's ember_q_scale_tfl: AVX-512's form of quant.c's 8-lane ember_qt8, for the tiles and
 * the depthwise kernel that requantise in registers, where TFLite's layers went through int32 sums stored and
 * requantised by ember_qrun (a TFLite MobileNetV2's depthwise layers took 4x its float model's time). Three kinds,
 * by the shift codes (ember_q_scale_tfl): LiteRT's single rounding (64 + k), gemmlowp's two roundings (128 + k,
 * every k >= 31: acc is not shifted left first), and those two as one (every k >= 32 and out[EMBER_QOUT_ONE]:
 * quant.c ember_qt8_rqa says why). The 32 x 32 -> 64-bit products are VPMULDQ (VPMULUDQ) of the even lanes and
 * of the odd lanes shifted down, as in ember_qt8. */
typedef long long ember_qt16q __attribute__((vector_size(64)));
typedef unsigned long long ember_qt16u __attribute__((vector_size(64)));
typedef struct {
    ember_qv16_i m, mo;                 /* lane i's multiplier; mo: the odd lanes' in the even lanes below them */
    ember_qt16q rnd_e, rnd_o, k_e, k_o; /* each 64-bit product's rounding constant and shift (even, odd lanes) */
    ember_qv16_i rs, mask, half, s32;   /* gemmlowp's RoundingDivideByPOT; as one: the shift past 32 */
    ember_qv16_i l, h, zp;              /* the clamp before the zero point, and the zero point */
    ember_qt16q l64, h64;
    int kind;                           /* EMBER_QT16_SINGLE, _ONE or _TWO */
} ember_qt16;
#define EMBER_QT16_SINGLE 0
#define EMBER_QT16_ONE 1
#define EMBER_QT16_TWO 2
/* The kind for n lanes' shift codes and the layer's out table, or -1 where these lanes have none (not TFLite's, its
 * average pool's division, or gemmlowp's with k < 31: the callers' other paths take those). */
EMBER_UNUSED EMBER_INLINE int ember_qt16_kind(const int32_t *shift, int n, const int32_t *out) {
    int i, k32 = 1;
    if (shift[0] < EMBER_Q_TFL || shift[0] >= 3 * EMBER_Q_TFL) return -1;
    if (shift[0] < 2 * EMBER_Q_TFL) return EMBER_QT16_SINGLE;
    for (i = 0; i < n; ++i) {
        if ((shift[i] & 63) < 31) return -1;
        k32 = k32 && (shift[i] & 63) >= 32;
    }
    return k32 && out[EMBER_QOUT_ONE] ? EMBER_QT16_ONE : EMBER_QT16_TWO;
}
/* Lane i's constants from its multiplier mult[i] and shift code shift[i] (a depthwise block's 16 channels, or one
 * row's 16 pixels); kind from ember_qt16_kind. Built whole in vectors: lane stores into the fields would make the
 * vector loads after them wait (a tile's epilogue sets one up for each of its rows). */
EMBER_UNUSED EMBER_INLINE void ember_qt16_init(ember_qt16 *t, int kind, ember_qv16_i mult, ember_qv16_i shift,
                                               const int32_t *out) {
    const int32_t zp = out[EMBER_QOUT_ZP], lo = out[EMBER_QOUT_LO], hi = out[EMBER_QOUT_HI];
    const ember_qv16_i k = shift & 63, zero = {0};
    const ember_qt16q one = (ember_qt16q){0} + 1, k_e = (ember_qt16q)((ember_qt16u)k & 0xFFFFFFFFull),
                      k_o = (ember_qt16q)((ember_qt16u)k >> 32);
    ember_qv16_i rs = k - 31, s32 = k - 32;
    rs &= rs > zero;
    s32 &= s32 > zero;
    t->kind = kind;
    t->m = mult;
    t->mo = (ember_qv16_i)((ember_qt16u)mult >> 32);
    if (kind == EMBER_QT16_SINGLE) { /* 2^(k-1), none where k = 0 */
        t->k_e = k_e;
        t->k_o = k_o;
        t->rnd_e = (one << k_e) >> 1;
        t->rnd_o = (one << k_o) >> 1;
    } else { /* gemmlowp's: its 2^30, as one also RoundingDivideByPOT's 2^(k-1) */
        t->k_e = t->k_o = (ember_qt16q){0} + 31;
        t->rnd_e = (ember_qt16q){0} + (1LL << 30) + (kind == EMBER_QT16_ONE ? (one << k_e) >> 1 : (ember_qt16q){0});
        t->rnd_o = (ember_qt16q){0} + (1LL << 30) + (kind == EMBER_QT16_ONE ? (one << k_o) >> 1 : (ember_qt16q){0});
    }
    t->rs = rs;
    t->mask = (((ember_qv16_i){0} + 1) << rs) - 1;
    t->half = t->mask >> 1;
    t->s32 = s32;
    t->l = (ember_qv16_i){0} + (lo - zp);
    t->h = (ember_qv16_i){0} + (hi - zp);
    t->zp = (ember_qv16_i){0} + zp;
    t->l64 = (ember_qt16q){0} + (lo - zp);
    t->h64 = (ember_qt16q){0} + (hi - zp);
}
/* The 64-bit products of the even lanes of a and b, signed (VPMULDQ) or not (VPMULUDQ): no builtin of the same
 * name in GCC and clang. */
EMBER_INLINE ember_qt16q ember_qt16_muldq(ember_qv16_i a, ember_qv16_i b) {
    ember_qt16q r;
    __asm__("vpmuldq %2, %1, %0" : "=v"(r) : "v"(a), "v"(b));
    return r;
}
EMBER_INLINE ember_qt16q ember_qt16_muludq(ember_qv16_i a, ember_qv16_i b) {
    ember_qt16q r;
    __asm__("vpmuludq %2, %1, %0" : "=v"(r) : "v"(a), "v"(b));
    return r;
}
/* The low dwords of the even lanes' e and of the odd lanes' o as 16 int32 lanes. */
EMBER_INLINE ember_qv16_i ember_qt16_join(ember_qt16q e, ember_qt16q o) {
    return (ember_qv16_i)(((ember_qt16u)e & 0xFFFFFFFFull) | (ember_qt16u)o << 32);
}
/* ember_q_requant(v[i], mult[i], shift[i], zp, lo, hi) of the 16 lanes, as int32 lanes. */
EMBER_UNUSED EMBER_INLINE ember_qv16_i ember_qt16_rq(ember_qv16_i v, const ember_qt16 *t) {
    const ember_qv16_i odd = (ember_qv16_i)((ember_qt16q)v >> 32);
    ember_qv16_i r;
    if (t->kind == EMBER_QT16_SINGLE) { /* (v * m + 2^(k-1)) >> k, clamped in 64 bits (it may not fit 32) */
        ember_qt16q e = ember_qt16_muldq(v, t->m) + t->rnd_e, o = ember_qt16_muldq(odd, t->mo) + t->rnd_o;
        e >>= t->k_e;
        o >>= t->k_o;
        __asm__("vpmaxsq %2, %1, %0\n\tvpminsq %3, %0, %0" : "=&v"(e) : "v"(e), "v"(t->l64), "v"(t->h64));
        __asm__("vpmaxsq %2, %1, %0\n\tvpminsq %3, %0, %0" : "=&v"(o) : "v"(o), "v"(t->l64), "v"(t->h64));
        return ember_qt16_join(e, o) + t->zp;
    }
    if (t->kind == EMBER_QT16_ONE) { /* sign(v) floor((|v| m + 2^(k-1) + 2^30) / 2^k) */
        const ember_qv16_i neg = v >> 31, a = (v ^ neg) - neg; /* |v| (INT32_MIN's 2^31 as unsigned) */
        const ember_qt16q e = ember_qt16_muludq(a, t->m) + t->rnd_e,
                          o = ember_qt16_muludq((ember_qv16_i)((ember_qt16u)a >> 32), t->mo) + t->rnd_o;
        r = ember_qt16_join((ember_qt16q)((ember_qt16u)e >> 32), (ember_qt16q)((ember_qt16u)o >> 32)) >> t->s32;
        r = (r ^ neg) - neg;
    } else { /* SaturatingRoundingDoublingHighMul (bits 31..62 of v m + 2^30), then RoundingDivideByPOT */
        const ember_qt16q e = ember_qt16_muldq(v, t->m) + t->rnd_e, o = ember_qt16_muldq(odd, t->mo) + t->rnd_o;
        r = ember_qt16_join((ember_qt16q)((ember_qt16u)e >> 31), (ember_qt16q)((ember_qt16u)o >> 31));
        r = (r >> t->rs) - ((r & t->mask) > t->half - (r < (ember_qv16_i){0}));
    }
    __asm__("vpmaxsd %2, %1, %0\n\tvpminsd %3, %0, %0" : "=&v"(r) : "v"(r), "v"(t->l), "v"(t->h));
    return r + t->zp;
}
#endif
/*@end*/
