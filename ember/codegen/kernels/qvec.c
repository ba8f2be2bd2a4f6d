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
#endif
/*@end*/
