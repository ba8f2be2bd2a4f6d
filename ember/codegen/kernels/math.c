/* ember's own float math: no libm in a freestanding bundle.
 * Error bounds are checked against numpy in tests/ops/test_math.py. */

/*@kernel ember_bits requires ember_prelude*/
EMBER_INLINE uint32_t ember_as_u32(float f) { union { float f; uint32_t u; } v; v.f = f; return v.u; }
EMBER_INLINE float ember_as_f32(uint32_t u) { union { uint32_t u; float f; } v; v.u = u; return v.f; }
EMBER_INLINE int ember_isnanf(float x) { return x != x; }
/*@end*/

/*@kernel ember_fabsf requires ember_bits*/
EMBER_INLINE float ember_fabsf(float x) { return ember_as_f32(ember_as_u32(x) & 0x7fffffffu); }
/*@end*/

/*@kernel ember_truncf requires ember_fabsf*/
/* |x| >= 2^23 is already an integer (or inf/nan). */
EMBER_INLINE float ember_truncf(float x) {
    return ember_fabsf(x) < 8388608.0f ? (float)(int32_t)x : x;
}
/*@end*/

/*@kernel ember_floorf requires ember_truncf*/
EMBER_INLINE float ember_floorf(float x) {
    float t = ember_truncf(x);
    return t > x ? t - 1.0f : t;
}
/*@end*/

/*@kernel ember_ceilf requires ember_truncf*/
EMBER_INLINE float ember_ceilf(float x) {
    float t = ember_truncf(x);
    return t < x ? t + 1.0f : t;
}
/*@end*/

/*@kernel ember_rintf requires ember_floorf*/
/* Round half to even (ONNX Round), independent of the FPU rounding mode. */
EMBER_INLINE float ember_rintf(float x) {
    float f, d;
    if (!(ember_fabsf(x) < 8388608.0f)) return x;
    f = ember_floorf(x);
    d = x - f;
    if (d > 0.5f) return f + 1.0f;
    if (d < 0.5f) return f;
    return ((int32_t)f % 2 == 0) ? f : f + 1.0f;
}
/*@end*/

/*@kernel ember_sqrtf requires ember_bits*/
EMBER_INLINE float ember_sqrtf(float x) {
#if defined(__GNUC__) && defined(__NO_MATH_ERRNO__) && (defined(__SSE__) || defined(__ARM_FP) || defined(__riscv_flen) || defined(__wasm__) || defined(__aarch64__))
    return __builtin_sqrtf(x); /* one instruction when math errno is off */
#else
    float y;
    int i;
    if (!(x > 0.0f)) return x == 0.0f ? x : __builtin_nanf("");
    if (x == __builtin_inff()) return x;
    y = ember_as_f32((ember_as_u32(x) >> 1) + 0x1fbd1df5u);
    for (i = 0; i < 4; ++i) y = 0.5f * (y + x / y);
    return y;
#endif
}
/*@end*/

/*@kernel ember_expf requires ember_bits*/
/* e^x = 2^k * e^r, |r| <= ln2/2, degree-7 polynomial; max error ~1 ulp. */
static float ember_expf(float x) {
    float k, r, p;
    int32_t ki;
    if (ember_isnanf(x)) return x;
    if (x > 88.72283935546875f) return __builtin_inff();
    if (x < -103.972084045410f) return 0.0f;
    k = (float)(int32_t)(x * 1.44269502162933349609f + (x >= 0.0f ? 0.5f : -0.5f));
    r = x - k * 0.693145751953125f;
    r = r - k * 1.428606765330187045e-06f;
    p = 1.0f + r * (1.0f + r * (0.5f + r * (1.66666666666666667e-1f + r * (4.16666666666666667e-2f +
        r * (8.33333333333333333e-3f + r * (1.38888888888888889e-3f + r * 1.98412698412698413e-4f))))));
    ki = (int32_t)k;
    if (ki > 127) { p *= 2.0f; ki -= 1; }
    if (ki < -126) { p *= 5.9604644775390625e-08f; ki += 24; } /* keep subnormal results */
    return p * ember_as_f32((uint32_t)(ki + 127) << 23);
}
/*@end*/

/*@kernel ember_expm1f requires ember_expf ember_fabsf*/
/* e^x - 1, accurate near 0 (Taylor to degree 9 on |x| < 0.5). */
static float ember_expm1f(float x) {
    if (ember_fabsf(x) < 0.5f) {
        return x * (1.0f + x * (0.5f + x * (1.66666666666666667e-1f + x * (4.16666666666666667e-2f +
               x * (8.33333333333333333e-3f + x * (1.38888888888888889e-3f + x * (1.98412698412698413e-4f +
               x * (2.48015873015873016e-5f + x * 2.75573192239858907e-6f))))))));
    }
    return ember_expf(x) - 1.0f;
}
/*@end*/

/*@kernel ember_logf requires ember_bits*/
/* log(m * 2^e), m in [sqrt(1/2), sqrt(2)): 2*atanh(s) series, s = (m-1)/(m+1); max error ~1 ulp. */
static float ember_logf(float x) {
    uint32_t u = ember_as_u32(x);
    int32_t e;
    float m, f, s, z, w, r;
    if (ember_isnanf(x)) return x;
    if (x < 0.0f) return __builtin_nanf("");
    if (x == 0.0f) return -__builtin_inff();
    if (x == __builtin_inff()) return x;
    e = 0;
    if (u < 0x00800000u) { x *= 16777216.0f; u = ember_as_u32(x); e = -24; } /* subnormal */
    e += (int32_t)(u >> 23) - 127;
    m = ember_as_f32((u & 0x007fffffu) | 0x3f800000u);
    if (m > 1.41421356237f) { m *= 0.5f; e += 1; }
    f = m - 1.0f;
    s = f / (2.0f + f);
    z = s * s;
    w = z * (0.666666666666666667f + z * (0.4f + z * (0.285714285714285714f + z * (0.222222222222222222f +
        z * 0.181818181818181818f))));
    r = f - s * (f - w);   /* = 2*atanh(s) written as f - s*(f - w) for accuracy */
    return (float)e * 0.693145751953125f + (r + (float)e * 1.428606765330187045e-06f);
}
/*@end*/

/*@kernel ember_tanhf requires ember_expm1f*/
static float ember_tanhf(float x) {
    float a = ember_fabsf(x), t;
    if (ember_isnanf(x)) return x;
    if (a > 9.1f) return x > 0.0f ? 1.0f : -1.0f;
    t = ember_expm1f(2.0f * a);
    t = t / (t + 2.0f);
    return x < 0.0f ? -t : t;
}
/*@end*/

/*@kernel ember_sigmoidf requires ember_expf*/
EMBER_INLINE float ember_sigmoidf(float x) {
    if (x >= 0.0f) return 1.0f / (1.0f + ember_expf(-x));
    { float e = ember_expf(x); return e / (1.0f + e); }
}
/*@end*/

/*@kernel ember_erff requires ember_expf ember_fabsf*/
/* Taylor series near 0; elsewhere the Numerical Recipes erfc (fractional error < 1.2e-7). */
static float ember_erff(float x) {
    float a = ember_fabsf(x), t, r;
    if (ember_isnanf(x)) return x;
    if (a < 0.5f) {
        float z = x * x;
        return x * 1.12837916709551257f * (1.0f + z * (-0.333333333333333333f + z * (0.1f + z *
               (-0.0238095238095238095f + z * (0.00462962962962962963f + z * (-0.000757575757575757576f +
               z * 0.000106837606837606838f))))));
    }
    if (a > 4.0f) return x > 0.0f ? 1.0f : -1.0f;
    t = 1.0f / (1.0f + 0.5f * a);
    r = t * ember_expf(-a * a - 1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f +
        t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f +
        t * (-0.82215223f + t * 0.17087277f)))))))));
    return x > 0.0f ? 1.0f - r : r - 1.0f;
}
/*@end*/

/*@kernel ember_sincosf requires ember_bits*/
/* Reduce by pi/2 in three parts (Cody-Waite), then polynomials on [-pi/4, pi/4]. */
static float ember_sinf_poly(float r) {
    float z = r * r;
    return r + r * z * (-1.66666666666666667e-1f + z * (8.33333333333333333e-3f + z * (-1.98412698412698413e-4f +
           z * (2.75573192239858907e-6f - z * 2.50521083854417188e-8f))));
}
static float ember_cosf_poly(float r) {
    float z = r * r;
    return 1.0f + z * (-0.5f + z * (4.16666666666666667e-2f + z * (-1.38888888888888889e-3f +
           z * (2.48015873015873016e-5f + z * (-2.75573192239858907e-7f + z * 2.08767569878680990e-9f)))));
}
static float ember_trigf(float x, int want_cos) {
    float k, r;
    int32_t q;
    if (ember_isnanf(x) || x == __builtin_inff() || x == -__builtin_inff()) return __builtin_nanf("");
    k = (float)(int32_t)(x * 0.636619772367581343f + (x >= 0.0f ? 0.5f : -0.5f));
    r = x - k * 1.5707962513e+00f;
    r = r - k * 7.5497894159e-08f;
    r = r - k * 5.3903029534e-15f;
    q = ((int32_t)k + want_cos) & 3;
    if (q == 0) return ember_sinf_poly(r);
    if (q == 1) return ember_cosf_poly(r);
    if (q == 2) return -ember_sinf_poly(r);
    return -ember_cosf_poly(r);
}
EMBER_INLINE float ember_sinf(float x) { return ember_trigf(x, 0); }
EMBER_INLINE float ember_cosf(float x) { return ember_trigf(x, 1); }
/*@end*/

/*@kernel ember_powf requires ember_expf ember_logf ember_truncf*/
static float ember_powf(float x, float y) {
    float ay, r, b;
    int32_t n;
    int odd;
    if (y == 0.0f) return 1.0f;
    if (ember_isnanf(x) || ember_isnanf(y)) return __builtin_nanf("");
    ay = ember_fabsf(y);
    if (ay <= 64.0f && ember_truncf(y) == y) { /* integer exponent: square and multiply, exact-ish */
        n = (int32_t)ay;
        r = 1.0f;
        b = x;
        while (n) { if (n & 1) r *= b; b *= b; n >>= 1; }
        return y < 0.0f ? 1.0f / r : r;
    }
    if (x > 0.0f) return ember_expf(y * ember_logf(x));
    if (x == 0.0f) return y > 0.0f ? 0.0f : __builtin_inff();
    if (ember_truncf(y) != y) return __builtin_nanf("");
    odd = ember_truncf(y * 0.5f) != y * 0.5f;
    r = ember_expf(y * ember_logf(-x));
    return odd ? -r : r;
}
/*@end*/
