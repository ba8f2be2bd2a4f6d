/* ember's own float math: no libm in a freestanding bundle.
 * Max errors vs the correctly rounded float32 result, checked against numpy's float64 over a sweep of
 * every 4099th float bit pattern plus edge cases in tests/ops/test_math.py:
 *   floorf ceilf rintf sqrtf: exact      expf logf expm1f: 2 ulp      tanhf erff sigmoidf log1pf: 3 ulp
 *   sinf cosf: 3 ulp for |x| < 39000 (bounded, not accurate beyond)
 *   powf: 8 ulp for |y| <= 8 (grows like ulp(y*log x) for large |y|); integral x^n exact below 2^24.
 *   tanf: 4 ulp for |x| < 39000      atanf: 2 ulp      asinf acosf sinhf coshf asinhf acoshf atanhf: 3 ulp
 *   fmodf, and fmod for double: exact.
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

/*@kernel ember_sigmoidf requires ember_bits*/
/* 1 / (1 + e^-x) from e = e^-|x| (never overflows): s = 1 / (1 + e) for x >= 0, e * s below. Branch-free
 * so that Swish/Sigmoid loops vectorize (a branch per sign kept GCC's loops scalar: 3x slower), and
 * cheaper than ember_expf: no overflow clamp, and 2^k (k in [-150, 0]) is the normal 2^(k+64) times the
 * constant 2^-64 (one rounding), so that sigmoid(x) below x = -87 comes out subnormal and right. NaN propagates. */
EMBER_INLINE float ember_sigmoidf(float x) {
    const float shift = 12582912.0f; /* 1.5 * 2^23, as in ember_expf */
    float t = -ember_as_f32(ember_as_u32(x) & 0x7fffffffu), kf, k, r, e, s;
    int32_t ki;
    t = t < -104.0f ? -104.0f : t;
    kf = t * 1.44269502162933349609f + shift;
    ki = (int32_t)(ember_as_u32(kf) - ember_as_u32(shift));
    k = kf - shift;
    r = t - k * 0.693145751953125f;
    r = r - k * 1.428606765330187045e-06f;
    e = 1.0f + r * (1.0f + r * (0.5f + r * (1.66666666666666667e-1f + r * (4.16666666666666667e-2f +
        r * (8.33333333333333333e-3f + r * (1.38888888888888889e-3f + r * 1.98412698412698413e-4f))))));
    e = e * ember_as_f32((uint32_t)(ki + 64 + 127) << 23) * 5.42101086242752217e-20f; /* 2^(k+64) * 2^-64 */
    s = 1.0f / (1.0f + e);
    return x >= 0.0f ? s : e * s;
}
/*@end*/

/*@kernel ember_erff requires ember_expf ember_fabsf*/
/* |x| < 1: x + x * P(x^2). 1 <= |x| < 3.92: 1 - e^(-x^2) * Q(1/|x|), since erfc(a) e^(a^2) is smooth in
 * 1/a; beyond, erf rounds to +-1. P and Q are least-squares fits on Chebyshev nodes (relative errors
 * 1.2e-9 and 2.1e-9); the result is within 2 ulp. Both are computed and one selected (no branches), so that
 * loops calling it vectorize; half the operations of the Numerical Recipes erfc it replaces (GELU's cost). */
EMBER_INLINE float ember_erff(float x) {
    const float a = ember_fabsf(x), z = x * x;
    const float small = x + x * (0.12837917f + z * (-0.37612626f + z * (0.112835824f + z * (-0.026853692f +
        z * (0.005188099f + z * (-0.0008008189f + z * 7.847259e-05f))))));
    const float t = 1.0f / (a > 1.0f ? a : 1.0f);
    const float q = 3.4712928e-05f + t * (0.56354475f + t * (0.0045406274f + t * (-0.29288116f + t * (-0.044440154f +
        t * (0.8459173f + t * (-1.4457208f + t * (1.3472717f + t * (-0.7623634f + t * (0.24706662f +
        t * -0.03538664f)))))))));
    const float big = a >= 3.92f ? 1.0f : 1.0f - ember_expf(-z) * q;
    return a < 1.0f ? small : (x < 0.0f ? -big : (x > 0.0f ? big : x));
}
/*@end*/

/*@kernel ember_geluf requires ember_prelude*/
/* GELU, x * Phi(x) = x / 2 * (1 + erf(u)), u = x / sqrt(2), for the Gelu op (the erf-based one: BERT's and
 * ViT's FFN). erf(u) = u * P(u^2) / Q(u^2) on u clamped to [-3.92, 3.92] (where erf rounds to +-1), P of
 * degree 6 and Q of degree 4 fitted by iterated linear least squares (weighted by u: the absolute error of
 * erf) on Chebyshev nodes, evaluated by Estrin's scheme. Absolute error of erf(u) under 4e-7, so of GELU
 * under 2e-7 * |x| + 1 ulp. One division and 17 other operations, where ember_erff's two polynomials, its
 * division and a full expf (2 ulp) took 3.5x the time per element: GELU is where a transformer's FFN spends
 * its time outside the matmuls. Branch-free, so loops vectorize. NaN gives NaN, +inf gives inf and -inf NaN
 * (-inf + inf, as the ONNX reference's -inf * 0). */
EMBER_INLINE float ember_geluf(float x) {
    const float u0 = x * 0.70710678118654752f, u = u0 < -3.92f ? -3.92f : u0 > 3.92f ? 3.92f : u0;
    const float z = u * u, z2 = z * z, z4 = z2 * z2;
    const float p = (1.128379f + z * 0.20303322f) + z2 * (0.050984677f + z * 0.003837694f) +
                    z4 * ((0.00014542886f + z * -1.9758147e-06f) + z2 * 1.9915529e-08f);
    const float q = (1.0f + z * 0.51326364f) + z2 * (0.11628525f + z * 0.014621368f) + z4 * 0.0009902183f;
    const float h = 0.5f * x;
    return h + h * (u * p / q);
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

/*@kernel ember_tanf requires ember_sincosf*/
/* sin/cos share the reduction (the same k), so their quotient keeps their accuracy: 5 ulp. */
EMBER_INLINE float ember_tanf(float x) { return ember_sinf(x) / ember_cosf(x); }
/*@end*/

/*@kernel ember_atanf requires ember_fabsf*/
/* |x| > 1 folds to pi/2 - atan(1/|x|), |x| > 2 - sqrt(3) to pi/6 + atan((sqrt(3)|x| - 1)/(|x| + sqrt(3))),
 * leaving |z| <= 0.268 for the odd Taylor polynomial (degree 15). pi/2 and pi/6 are added as a head
 * and a tail so the folds lose no more than their own rounding. */
static float ember_atanf(float x) {
    float a = ember_fabsf(x), z, zz, p, r, head = 0.0f, tail = 0.0f, s = 1.0f;
    if (ember_isnanf(x)) return x;
    if (a > 1.0f) { /* 1/inf is 0: atan(+-inf) = +-pi/2 */
        a = 1.0f / a;
        head = 1.57079637050628662109f;
        tail = -4.37113900018624283e-8f;
        s = -1.0f;
    }
    if (a > 0.267949192431122706f) {
        z = (a * 1.73205080756887729f - 1.0f) / (a + 1.73205080756887729f);
        head += s * 0.52359879016876220703f;
        tail += s * -1.45704633339541419e-8f;
    } else {
        z = a;
    }
    zz = z * z;
    p = zz * (-0.333333333333333333f + zz * (0.2f + zz * (-0.142857142857142857f + zz * (0.111111111111111111f +
        zz * (-0.0909090909090909091f + zz * (0.0769230769230769231f + zz * -0.0666666666666666667f))))));
    r = head + (tail + s * (z + z * p));
    return x < 0.0f ? -r : r;
}
/*@end*/

/*@kernel ember_asinf requires ember_atanf ember_sqrtf*/
/* asin(x) = atan(x / sqrt((1 - x)(1 + x))); 1 - x is exact where it matters (Sterbenz). */
static float ember_asinf(float x) {
    float a = ember_fabsf(x);
    if (!(a <= 1.0f)) return __builtin_nanf(""); /* |x| > 1 or NaN */
    if (a == 1.0f) return x * 1.57079637050628662109f;
    return ember_atanf(x / ember_sqrtf((1.0f - a) * (1.0f + a)));
}
/*@end*/

/*@kernel ember_acosf requires ember_atanf ember_sqrtf*/
/* acos(x) = 2 atan(sqrt((1 - x) / (1 + x))): accurate near both ends. */
static float ember_acosf(float x) {
    if (!(ember_fabsf(x) <= 1.0f)) return __builtin_nanf("");
    if (x == -1.0f) return 3.14159274101257324219f;
    return 2.0f * ember_atanf(ember_sqrtf((1.0f - x) / (1.0f + x)));
}
/*@end*/

/*@kernel ember_sinhf requires ember_expm1f ember_fabsf*/
/* sinh|x| = (E + E/(E + 1)) / 2, E = e^|x| - 1, with no cancellation near 0; beyond 9, e^-|x| is below
 * half an ulp and e^|x|/2 is (e^(|x|/2)/2) e^(|x|/2), finite up to the largest sinh a float holds. */
static float ember_sinhf(float x) {
    float a = ember_fabsf(x), e, r;
    if (a > 9.0f) {
        e = ember_expf(0.5f * a);
        r = (0.5f * e) * e;
    } else {
        e = ember_expm1f(a);
        r = 0.5f * (e + e / (e + 1.0f));
    }
    return x < 0.0f ? -r : r;
}
/*@end*/

/*@kernel ember_coshf requires ember_expf ember_fabsf*/
static float ember_coshf(float x) {
    float a = ember_fabsf(x), e;
    if (a > 9.0f) {
        e = ember_expf(0.5f * a);
        return (0.5f * e) * e;
    }
    e = ember_expf(a);
    return 0.5f * (e + 1.0f / e);
}
/*@end*/

/*@kernel ember_asinhf requires ember_log1pf ember_sqrtf ember_fabsf*/
/* asinh|x| = log1p(|x| + x^2 / (1 + sqrt(1 + x^2))); beyond 2^12, sqrt(1 + x^2) is |x| in float and
 * the result is log|x| + log 2 (x^2 would overflow for the largest floats). */
static float ember_asinhf(float x) {
    float a = ember_fabsf(x), r;
    if (a > 4096.0f) r = ember_logf(a) + 0.693147180559945309f;
    else r = ember_log1pf(a + a * a / (1.0f + ember_sqrtf(1.0f + a * a)));
    return x < 0.0f ? -r : r;
}
/*@end*/

/*@kernel ember_acoshf requires ember_log1pf ember_sqrtf*/
/* acosh(x) = log1p(t + sqrt(2t + t^2)), t = x - 1 (exact near 1); log x + log 2 beyond 2^12. */
static float ember_acoshf(float x) {
    float t;
    if (!(x >= 1.0f)) return __builtin_nanf(""); /* x < 1 or NaN */
    if (x > 4096.0f) return ember_logf(x) + 0.693147180559945309f;
    t = x - 1.0f;
    return ember_log1pf(t + ember_sqrtf(t * (2.0f + t)));
}
/*@end*/

/*@kernel ember_atanhf requires ember_log1pf ember_fabsf*/
/* atanh|x| = log1p(2|x| / (1 - |x|)) / 2; 1 - |x| is exact from 1/2 up. */
static float ember_atanhf(float x) {
    float a = ember_fabsf(x), r;
    if (!(a <= 1.0f)) return __builtin_nanf("");
    r = a == 1.0f ? __builtin_inff() : 0.5f * ember_log1pf(2.0f * a / (1.0f - a));
    return x < 0.0f ? -r : r;
}
/*@end*/

/*@kernel ember_fmodf requires ember_bits*/
/* C fmod: x - trunc(x/y) y, always exact. Integer long division of the significands, one bit per
 * step of exponent difference (at most 277 steps). NaN for y = 0, x infinite or either NaN. */
static float ember_fmodf(float x, float y) {
    uint32_t ux = ember_as_u32(x), uy = ember_as_u32(y), sign = ux & 0x80000000u, mx, my;
    int32_t ex, ey;
    ux &= 0x7fffffffu;
    uy &= 0x7fffffffu;
    if (uy == 0u || ux >= 0x7f800000u || uy > 0x7f800000u) return __builtin_nanf("");
    if (ux < uy) return x; /* |x| < |y|, y = +-inf included */
    ex = (int32_t)(ux >> 23);
    ey = (int32_t)(uy >> 23);
    mx = ex ? (ux & 0x007fffffu) | 0x00800000u : ux;
    my = ey ? (uy & 0x007fffffu) | 0x00800000u : uy;
    if (!ex) for (ex = 1; !(mx & 0x00800000u); --ex) mx <<= 1; /* subnormal: normalize */
    if (!ey) for (ey = 1; !(my & 0x00800000u); --ey) my <<= 1;
    for (; ex > ey; --ex) { /* invariant: mx < 2 my */
        if (mx >= my) mx -= my;
        mx <<= 1;
    }
    if (mx >= my) mx -= my;
    if (!mx) return ember_as_f32(sign);
    for (; !(mx & 0x00800000u); --ey) mx <<= 1;
    if (ey > 0) return ember_as_f32(sign | ((uint32_t)ey << 23) | (mx & 0x007fffffu));
    return ember_as_f32(sign | (mx >> (1 - ey))); /* subnormal result: the shifted-out bits are 0 */
}
/*@end*/

/*@kernel ember_fmod requires ember_prelude*/
/* ember_fmodf for double (float64 Mod): integer operations only, so no double arithmetic is needed. */
EMBER_INLINE uint64_t ember_as_u64(double f) { union { double f; uint64_t u; } v; v.f = f; return v.u; }
EMBER_INLINE double ember_as_f64(uint64_t u) { union { uint64_t u; double f; } v; v.u = u; return v.f; }
static double ember_fmod(double x, double y) {
    const uint64_t top = (uint64_t)1 << 52, frac = top - 1u, expmask = (uint64_t)0x7ff << 52;
    uint64_t ux = ember_as_u64(x), uy = ember_as_u64(y), sign = ux & ((uint64_t)1 << 63), mx, my;
    int32_t ex, ey;
    ux &= ~((uint64_t)1 << 63);
    uy &= ~((uint64_t)1 << 63);
    if (uy == 0u || ux >= expmask || uy > expmask) return __builtin_nan("");
    if (ux < uy) return x;
    ex = (int32_t)(ux >> 52);
    ey = (int32_t)(uy >> 52);
    mx = ex ? (ux & frac) | top : ux;
    my = ey ? (uy & frac) | top : uy;
    if (!ex) for (ex = 1; !(mx & top); --ex) mx <<= 1;
    if (!ey) for (ey = 1; !(my & top); --ey) my <<= 1;
    for (; ex > ey; --ex) {
        if (mx >= my) mx -= my;
        mx <<= 1;
    }
    if (mx >= my) mx -= my;
    if (!mx) return ember_as_f64(sign);
    for (; !(mx & top); --ey) mx <<= 1;
    if (ey > 0) return ember_as_f64(sign | ((uint64_t)ey << 52) | (mx & frac));
    return ember_as_f64(sign | (mx >> (1 - ey)));
}
/*@end*/
