/* ember's own float math: no libm in a freestanding bundle.
 * Max errors vs the correctly rounded float32 result, checked against numpy's float64 over a sweep of
 * every 4099th float bit pattern plus edge cases in tests/ops/test_math.py:
 *   floorf ceilf rintf sqrtf: exact      expf logf expm1f: 2 ulp      tanhf erff sigmoidf log1pf: 3 ulp
 *   sinf cosf: 3 ulp for |x| < 39000 (bounded, not accurate beyond)
 *   powf: 8 ulp for |y| <= 8 (grows like ulp(y*log x) for large |y|); integral x^n exact below 2^24.
 * NaN in gives NaN out; infinities and signed zeros follow C99 Annex F. */

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
#if EMBER_HAVE_SQRT_INSN
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
/* e^x = 2^k * e^r, |r| <= ln2/2, degree-7 polynomial; max error ~1 ulp. Branch-free (clamps and
 * selects only), so loops calling it vectorize: k is rounded with the 1.5*2^23 trick, and 2^k is
 * applied as two exact power-of-two factors so that results near overflow and in the subnormal
 * range come out right. NaN propagates through the arithmetic. */
EMBER_INLINE float ember_expf(float x) {
    const float shift = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer in the low bits */
    float xc = x > 88.8f ? 88.8f : x, kf, k, r, p;
    int32_t ki, half;
    xc = xc < -104.0f ? -104.0f : xc;
    kf = xc * 1.44269502162933349609f + shift;
    ki = (int32_t)(ember_as_u32(kf) - ember_as_u32(shift)); /* the rounded k, from the bits: no UB on NaN */
    k = kf - shift;
    r = xc - k * 0.693145751953125f;
    r = r - k * 1.428606765330187045e-06f;
    p = 1.0f + r * (1.0f + r * (0.5f + r * (1.66666666666666667e-1f + r * (4.16666666666666667e-2f +
        r * (8.33333333333333333e-3f + r * (1.38888888888888889e-3f + r * 1.98412698412698413e-4f))))));
    half = ki / 2;
    return p * ember_as_f32((uint32_t)(half + 127) << 23) * ember_as_f32((uint32_t)(ki - half + 127) << 23);
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
/* Taylor series near 0; elsewhere the Numerical Recipes erfc (fractional error < 1.2e-7). Both are
 * computed and one selected (no branches), so that loops calling it vectorize. */
EMBER_INLINE float ember_erff(float x) {
    const float a = ember_fabsf(x), z = x * x;
    const float t = 1.0f / (1.0f + 0.5f * (a > 4.0f ? 4.0f : a));
    const float small = x * 1.12837916709551257f * (1.0f + z * (-0.333333333333333333f + z * (0.1f + z *
        (-0.0238095238095238095f + z * (0.00462962962962962963f + z * (-0.000757575757575757576f +
        z * 0.000106837606837606838f))))));
    const float r = t * ember_expf(-a * a - 1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f +
        t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f +
        t * (-0.82215223f + t * 0.17087277f)))))))));
    const float big = a > 4.0f ? 1.0f : 1.0f - r;
    return a < 0.5f ? small : (x < 0.0f ? -big : (x > 0.0f ? big : x));
}
/*@end*/

/*@kernel ember_sincosf requires ember_bits ember_rintf ember_floorf*/
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
/* x - k*pi/2 in four parts (Cody-Waite, SLEEF's constants halved): each part has few enough bits
 * that k * part is exact for |k| < 2^15, so the reduction is accurate for |x| < 39000 and sin/cos
 * there are within 2 ulp (absolute error 2^-24 near their zeros). Beyond that the result is
 * bounded but not accurate (no Payne-Hanek reduction); k stays a float, so no int overflow. */
static float ember_trigf(float x, int want_cos) {
    float k, r, q4;
    int32_t q;
    if (ember_isnanf(x) || x == __builtin_inff() || x == -__builtin_inff()) return __builtin_nanf("");
    k = ember_rintf(x * 0.636619772367581343f);
    r = x - k * 1.5703125f;
    r = r - k * 4.8351287841796875e-04f;
    r = r - k * 3.13855707645416259765625e-07f;
    r = r - k * 6.077100628276710381e-11f;
    q4 = k - 4.0f * ember_floorf(k * 0.25f); /* k mod 4, exact in float */
    q = ((int32_t)q4 + want_cos) & 3;
    if (q == 0) return ember_sinf_poly(r);
    if (q == 1) return ember_cosf_poly(r);
    if (q == 2) return -ember_sinf_poly(r);
    return -ember_cosf_poly(r);
}
EMBER_INLINE float ember_sinf(float x) { return ember_trigf(x, 0); }
EMBER_INLINE float ember_cosf(float x) { return ember_trigf(x, 1); }
/*@end*/

/*@kernel ember_powf requires ember_expf ember_logf ember_truncf ember_rintf*/
/* x^y = 2^(y*e) * e^(y*log m) for x = m * 2^e, m in [sqrt(1/2), sqrt(2)). The product y*e is split
 * exactly (y into a 12-bit head and a tail) so its integer part becomes an exact power of two and
 * only a small fraction goes through expf: error <= 2 ulp for |y*log m| < 4 (so |y| < 11), growing
 * like ulp(y*log m) beyond. Integral x^n stays exact while every intermediate is below 2^24, so
 * 3^5 is 243 and not 242.99998 (Pow on integer tensors rounds the float result toward zero). */
static float ember_scalbnf_(float v, int32_t k) {
    while (k > 120) { v *= 1.329227995784915872903807060280344576e36f; k -= 120; } /* 2^120 */
    while (k < -120) { v *= 7.523163845262640050999913838222372338e-37f; k += 120; } /* 2^-120 */
    return v * ember_as_f32((uint32_t)(k + 127) << 23);
}
static float ember_powf(float x, float y) {
    float ay, r, b, ax, m, yh, yl, A, B, k, t;
    uint32_t u;
    int32_t n, e;
    int neg = 0, exact;
    if (y == 0.0f || x == 1.0f) return 1.0f;
    if (ember_isnanf(x) || ember_isnanf(y)) return __builtin_nanf("");
    ay = ember_fabsf(y);
    if (ay <= 64.0f && ember_truncf(y) == y) { /* small integer exponent: exact when it can be */
        n = (int32_t)ay;
        r = 1.0f;
        b = x;
        exact = ember_truncf(x) == x;
        while (n) {
            if (n & 1) r *= b;
            n >>= 1;
            if (n) b *= b;
            if (ember_fabsf(r) > 16777216.0f || ember_fabsf(b) > 16777216.0f) exact = 0;
        }
        if (exact) return y < 0.0f ? 1.0f / r : r;
    }
    ax = x;
    if (x < 0.0f) {
        if (ember_truncf(y) != y) return __builtin_nanf("");
        neg = ember_truncf(y * 0.5f) != y * 0.5f; /* odd integer exponent keeps the sign */
        ax = -x;
    }
    if (ax == 0.0f) return (y > 0.0f) ? (neg ? x : 0.0f) : (neg ? 1.0f / x : __builtin_inff());
    if (ax == __builtin_inff()) r = y > 0.0f ? ax : 0.0f;
    else if (ay == __builtin_inff()) r = (ax < 1.0f) == (y < 0.0f) ? __builtin_inff() : 0.0f;
    else {
        u = ember_as_u32(ax);
        e = 0;
        if (u < 0x00800000u) { ax *= 16777216.0f; u = ember_as_u32(ax); e = -24; } /* subnormal */
        e += (int32_t)(u >> 23) - 127;
        m = ember_as_f32((u & 0x007fffffu) | 0x3f800000u);
        if (m > 1.41421356237f) { m *= 0.5f; e += 1; }
        if (ay * (float)(e < 0 ? -e : e) > 1024.0f) { /* far beyond the float range either way */
            r = ((y > 0.0f) == (e > 0)) ? __builtin_inff() : 0.0f;
        } else {
            yh = ember_as_f32(ember_as_u32(y) & 0xfffff000u);
            yl = y - yh;
            A = yh * (float)e; /* exact: 12 bits times 9 bits */
            B = yl * (float)e; /* exact: 12 bits times 9 bits */
            k = ember_rintf(A);
            t = ((A - k) + B) * 0.693147180559945309f + y * ember_logf(m);
            r = ember_scalbnf_(ember_expf(t), (int32_t)k);
        }
    }
    return neg ? -r : r;
}
/*@end*/

/*@kernel ember_ipow requires ember_prelude*/
/* Integer power by squaring in uint64 arithmetic (wraps like two's complement instead of overflowing).
 * A negative exponent gives 1/b^-e truncated: 0 except for b = 1 and b = -1. */
static int64_t ember_ipow(int64_t b, int64_t e) {
    uint64_t r = 1u, x = (uint64_t)b;
    if (e < 0) return b == 1 ? 1 : b == -1 ? ((e & 1) ? -1 : 1) : 0;
    while (e) {
        if (e & 1) r *= x;
        x *= x;
        e >>= 1;
    }
    return r > (uint64_t)INT64_MAX ? -(int64_t)(~r) - 1 : (int64_t)r;
}
/*@end*/

/*@kernel ember_log1pf requires ember_logf*/
/* log(1 + x) without losing x when it is tiny: scale log(u) by x / (u - 1), u = 1 + x (Goldberg). */
static float ember_log1pf(float x) {
    float u = 1.0f + x;
    if (u == 1.0f) return x;
    if (u == __builtin_inff()) return u;
    return ember_logf(u) * (x / (u - 1.0f));
}
/*@end*/
