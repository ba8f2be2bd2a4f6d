/* ember kernel library: common definitions. Freestanding C99: only <stdint.h> and <stddef.h>. */

/*@kernel ember_prelude*/
#if defined(__GNUC__) || defined(__clang__)
#define EMBER_RESTRICT __restrict__
#define EMBER_INLINE static inline __attribute__((always_inline))
#define EMBER_UNUSED __attribute__((unused))
#define EMBER_NOINLINE __attribute__((noinline))
#else
#define EMBER_RESTRICT
#define EMBER_INLINE static inline
#define EMBER_UNUSED
#define EMBER_NOINLINE
#endif
/* Before a loop of constant trip count that must be unrolled whole (register arrays, lane indices). */
#if defined(__clang__)
#define EMBER_UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define EMBER_UNROLL _Pragma("GCC unroll 16")
#else
#define EMBER_UNROLL
#endif
/*@end*/

/*@kernel ember_copy requires ember_prelude*/
/* Byte copy (no libc memcpy in a freestanding bundle). */
static void ember_copy(void *EMBER_RESTRICT dst, const void *EMBER_RESTRICT src, size_t n) {
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    size_t i;
    for (i = 0; i < n; ++i) d[i] = s[i];
}
/*@end*/

/*@kernel ember_f16 requires ember_prelude*/
/* IEEE half <-> float, round to nearest even. */
static float ember_f16_to_f32(uint16_t h) {
    union { uint32_t u; float f; } v;
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1fu) {
        v.u = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        v.u = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        v.u = sign;
    } else {
        v.f = (float)man * 5.9604644775390625e-8f; /* man * 2^-24 */
        v.u |= sign;
    }
    return v.f;
}
static uint16_t ember_f32_to_f16(float f) {
    union { float f; uint32_t u; } v;
    uint32_t sign, exp, man, half;
    v.f = f;
    sign = (v.u >> 16) & 0x8000u;
    exp = (v.u >> 23) & 0xffu;
    man = v.u & 0x7fffffu;
    if (exp == 0xffu) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0u));
    if (exp > 142u) return (uint16_t)(sign | 0x7c00u);
    if (exp < 113u) {
        uint32_t shift;
        if (exp < 102u) return (uint16_t)sign;
        man |= 0x800000u;
        shift = 126u - exp;
        half = man >> shift;
        if ((man & ((1u << shift) - 1u)) > (1u << (shift - 1u)) ||
            ((man & ((1u << shift) - 1u)) == (1u << (shift - 1u)) && (half & 1u)))
            half++;
        return (uint16_t)(sign | half);
    }
    half = ((exp - 112u) << 10) | (man >> 13);
    if ((man & 0x1fffu) > 0x1000u || ((man & 0x1fffu) == 0x1000u && (half & 1u))) half++;
    return (uint16_t)(sign | half);
}
/*@end*/

/*@kernel ember_row_sum requires ember_prelude*/
/* Sums of n contiguous floats in 16 fixed lanes: loops that vectorize, in an order set by this code
 * (not by the vectorizer), so every target rounds alike. ember_row_sqdev_f32 below sums (x - mu)^2. */
static float ember_row_sum_f32(const float *x, ptrdiff_t n) {
    const ptrdiff_t full = n - n % 16;
    float lane[16] = {0}, s = 0.0f;
    ptrdiff_t j;
    int l;
    for (j = 0; j < full; j += 16)
        for (l = 0; l < 16; ++l) lane[l] += x[j + l];
    for (l = 0; l < 16; ++l) s += lane[l];
    for (j = full; j < n; ++j) s += x[j];
    return s;
}
/*@end*/

/*@kernel ember_row_sqdev requires ember_prelude*/
static float ember_row_sqdev_f32(const float *x, ptrdiff_t n, float mu) {
    const ptrdiff_t full = n - n % 16;
    float lane[16] = {0}, s = 0.0f;
    ptrdiff_t j;
    int l;
    for (j = 0; j < full; j += 16)
        for (l = 0; l < 16; ++l) lane[l] += (x[j + l] - mu) * (x[j + l] - mu);
    for (l = 0; l < 16; ++l) s += lane[l];
    for (j = full; j < n; ++j) s += (x[j] - mu) * (x[j] - mu);
    return s;
}
/*@end*/
