/* ember kernel library: common definitions. Freestanding C99: only <stdint.h> and <stddef.h>. */

/*@kernel ember_prelude*/
/* What the compiler and the target CPU offer, stated once from their predefined macros (so --cpu and
 * --target decide); every kernel tests these, never the compilers' own macros. Each is 1 or 0 (for #if;
 * not `defined` inside a macro, which -Wextra rejects as unportable).
 * EMBER_GNUC: GCC or clang (vector extensions, inline asm, attributes). The SIMD ones need it too:
 * the kernels reach every instruction set through those extensions. */
#if defined(__GNUC__) || defined(__clang__)
#define EMBER_GNUC 1
#else
#define EMBER_GNUC 0
#endif
#if defined(__clang__)
#define EMBER_CLANG 1 /* __builtin_shufflevector and clang's builtins' names */
#else
#define EMBER_CLANG 0
#endif
/* x86: AVX-512 F, with BW and VL, VNNI (with BW), VBMI; AVX-VNNI; AVX2; AVX; SSE2. */
#if EMBER_GNUC && defined(__AVX512F__)
#define EMBER_HAVE_AVX512 1
#else
#define EMBER_HAVE_AVX512 0
#endif
#if EMBER_HAVE_AVX512 && defined(__AVX512BW__) && defined(__AVX512VL__)
#define EMBER_HAVE_AVX512_BWVL 1
#else
#define EMBER_HAVE_AVX512_BWVL 0
#endif
#if EMBER_GNUC && defined(__AVX512VNNI__) && defined(__AVX512BW__)
#define EMBER_HAVE_AVX512_VNNI 1
#else
#define EMBER_HAVE_AVX512_VNNI 0
#endif
#if EMBER_GNUC && defined(__AVX512VBMI__)
#define EMBER_HAVE_AVX512_VBMI 1
#else
#define EMBER_HAVE_AVX512_VBMI 0
#endif
#if EMBER_GNUC && defined(__AVXVNNI__)
#define EMBER_HAVE_AVX_VNNI 1
#else
#define EMBER_HAVE_AVX_VNNI 0
#endif
/* AMX with int8 tiles, on Linux x86-64 only: a process must ask the kernel for the tile state (a system call, made
 * by qamx.c) before its first tile instruction, and Linux is where ember knows how. */
#if EMBER_GNUC && defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__x86_64__) && defined(__linux__)
#define EMBER_HAVE_AMX_INT8 1
#else
#define EMBER_HAVE_AMX_INT8 0
#endif
#if EMBER_GNUC && defined(__AVX2__)
#define EMBER_HAVE_AVX2 1
#else
#define EMBER_HAVE_AVX2 0
#endif
#if EMBER_GNUC && defined(__AVX__)
#define EMBER_HAVE_AVX 1
#else
#define EMBER_HAVE_AVX 0
#endif
#if EMBER_GNUC && defined(__SSE2__)
#define EMBER_HAVE_SSE2 1
#else
#define EMBER_HAVE_SSE2 0
#endif
/* ARM: NEON (any, and AArch64's), AArch64's SDOT, 32-bit ARM's DSP extension (SMLAD). */
#if EMBER_GNUC && defined(__ARM_NEON)
#define EMBER_HAVE_NEON 1
#else
#define EMBER_HAVE_NEON 0
#endif
#if EMBER_HAVE_NEON && defined(__aarch64__)
#define EMBER_HAVE_NEON64 1
#else
#define EMBER_HAVE_NEON64 0
#endif
#if EMBER_GNUC && defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#define EMBER_HAVE_NEON_DOTPROD 1
#else
#define EMBER_HAVE_NEON_DOTPROD 0
#endif
#if EMBER_GNUC && defined(__ARM_FEATURE_DSP) && !defined(__aarch64__)
#define EMBER_HAVE_ARM_DSP 1
#else
#define EMBER_HAVE_ARM_DSP 0
#endif
/* WebAssembly's 128-bit SIMD; any 128-bit SIMD that the vector extensions compile to. */
#if EMBER_GNUC && defined(__wasm_simd128__)
#define EMBER_HAVE_WASM_SIMD 1
#else
#define EMBER_HAVE_WASM_SIMD 0
#endif
#if EMBER_HAVE_SSE2 || EMBER_HAVE_NEON || EMBER_HAVE_WASM_SIMD
#define EMBER_HAVE_SIMD128 1
#else
#define EMBER_HAVE_SIMD128 0
#endif
/* Single-precision float in hardware. */
#if defined(__SSE2__) || defined(__aarch64__) || (defined(__ARM_FP) && (__ARM_FP & 4)) || \
    (defined(__riscv_flen) && __riscv_flen >= 32) || defined(__wasm__)
#define EMBER_HAVE_FPU32 1
#else
#define EMBER_HAVE_FPU32 0
#endif
/* A square root instruction that __builtin_sqrtf becomes once math errno is off. */
#if EMBER_GNUC && defined(__NO_MATH_ERRNO__) && \
    (defined(__SSE__) || defined(__ARM_FP) || defined(__riscv_flen) || defined(__wasm__) || defined(__aarch64__))
#define EMBER_HAVE_SQRT_INSN 1
#else
#define EMBER_HAVE_SQRT_INSN 0
#endif
#if EMBER_GNUC
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
#if EMBER_CLANG
#define EMBER_UNROLL _Pragma("clang loop unroll(full)")
#elif EMBER_GNUC
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
/* IEEE half <-> float, round to nearest even. Inline: a bundle may need only one direction, and an
 * unused static inline function draws no warning. */
static inline float ember_f16_to_f32(uint16_t h) {
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
static inline uint16_t ember_f32_to_f16(float f) {
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
