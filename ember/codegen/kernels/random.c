/* Seeded random operators (ember/ops/random.py): numpy's legacy generator, bit for bit.
 * The ONNX reference draws from np.random.RandomState(seed): MT19937 seeded with init_genrand, doubles of
 * 53 bits from two 32-bit words (random_sample), normals by the polar method that caches its second value
 * (legacy gauss). Each node call seeds its own state, which lives in the node's scratch memory (the
 * activation region): the bundle keeps no global state and stays re-entrant.
 * Floating-point steps are kept apart (no fused multiply-add) where numpy rounds each one. */

/*@kernel ember_mt19937 requires ember_prelude*/
/* A product that must be rounded before the sum that follows it (numpy rounds every step) goes through
 * a volatile: -ffp-contract=fast would fuse the two into one multiply-add otherwise, and clang ignores
 * `#pragma clang fp contract(off)` under that flag, also once a kernel is inlined. */
#define EMBER_RND_FN static EMBER_UNUSED
typedef struct {
    uint32_t key[624];
    int pos;
    int has_gauss;
    double gauss;
} ember_mt_state;

/* init_genrand: what RandomState(seed) does for an integer seed in [0, 2^32). */
static void ember_mt_seed(ember_mt_state *s, uint32_t seed) {
    int i;
    for (i = 0; i < 624; ++i) {
        s->key[i] = seed;
        seed = 1812433253u * (seed ^ (seed >> 30)) + (uint32_t)i + 1u;
    }
    s->pos = 624;
    s->has_gauss = 0;
    s->gauss = 0.0;
}

static void ember_mt_refill(ember_mt_state *s) {
    int i;
    uint32_t y;
    for (i = 0; i < 624; ++i) {
        y = (s->key[i] & 0x80000000u) | (s->key[(i + 1) % 624] & 0x7fffffffu);
        s->key[i] = s->key[(i + 397) % 624] ^ (y >> 1) ^ ((0u - (y & 1u)) & 0x9908b0dfu);
    }
    s->pos = 0;
}

static uint32_t ember_mt_next32(ember_mt_state *s) {
    uint32_t y;
    if (s->pos == 624) ember_mt_refill(s);
    y = s->key[s->pos++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
}

/* random_sample = k / 2^53, k = a * 2^26 + b from the top 27 and 26 bits of two words; exact in double.
 * k itself lets a comparison with a constant run without double arithmetic (Dropout on Cortex-M). */
EMBER_RND_FN uint64_t ember_mt_u53(ember_mt_state *s) {
    const uint32_t a = ember_mt_next32(s) >> 5, b = ember_mt_next32(s) >> 6;
    return ((uint64_t)a << 26) | b;
}
EMBER_RND_FN double ember_mt_double(ember_mt_state *s) {
    return (double)ember_mt_u53(s) / 9007199254740992.0;
}

/* y[i] = DRAW(s) rounded to T, times scale, plus offset, each step rounded to T as numpy does (through a
 * volatile: no fused multiply-add under -ffp-contract=fast). RandomUniform's and RandomNormal's kernels. */
#define EMBER_RANDOM_AFFINE(NAME, T, DRAW)                                                               \
    EMBER_RND_FN void NAME(T *y, int n, uint32_t seed, T scale, T offset, void *scratch) {              \
        ember_mt_state *s = (ember_mt_state *)scratch;                                                   \
        int i;                                                                                           \
        ember_mt_seed(s, seed);                                                                          \
        for (i = 0; i < n; ++i) {                                                                        \
            volatile T t = (T)DRAW(s);                                                                   \
            t = t * scale;                                                                               \
            y[i] = t + offset;                                                                           \
        }                                                                                                \
    }
/*@end*/

/*@kernel ember_rnd_log requires ember_mt19937*/
/* log and sqrt for the polar method, as libm's (correctly rounded in all but near-tie cases): log(x) for
 * a normal x > 0 in double-double arithmetic (error about 2^-75 relative), then rounded once. */
typedef struct { double hi, lo; } ember_dd;
EMBER_INLINE uint64_t ember_rnd_bits(double f) { union { double f; uint64_t u; } v; v.f = f; return v.u; }
EMBER_INLINE double ember_rnd_double(uint64_t u) { union { uint64_t u; double f; } v; v.u = u; return v.f; }
EMBER_RND_FN ember_dd ember_dd_two_sum(double a, double b) {
    ember_dd r;
    double bb;
    r.hi = a + b;
    bb = r.hi - a;
    r.lo = (a - (r.hi - bb)) + (b - bb);
    return r;
}
EMBER_RND_FN ember_dd ember_dd_two_prod(double a, double b) {
    ember_dd r;
#if EMBER_GNUC && (defined(__FP_FAST_FMA) || defined(__FMA__) || defined(__aarch64__) || \
                    (defined(__riscv_flen) && __riscv_flen >= 64))
    volatile double hi = a * b; /* stored: a caller's hi - ... must not fuse into an exact residual */
    r.hi = hi;
    r.lo = __builtin_fma(a, b, -r.hi); /* the instruction: exact */
#else
    /* Dekker's product; every product that a sum follows is stored first, so none is fused. */
    const double c = 134217729.0; /* Veltkamp's split: 2^27 + 1 */
    volatile double t = c * a, hi = a * b, p;
    double ah = t - (t - a), al = a - ah, bh, bl;
    t = c * b;
    bh = t - (t - b);
    bl = b - bh;
    r.hi = hi;
    p = ah * bh;
    p = p - r.hi;
    t = ah * bl;
    p = p + t;
    t = al * bh;
    p = p + t;
    t = al * bl;
    r.lo = p + t;
#endif
    return r;
}
EMBER_RND_FN ember_dd ember_dd_add(ember_dd a, ember_dd b) {
    ember_dd s = ember_dd_two_sum(a.hi, b.hi);
    s.lo += a.lo + b.lo;
    return ember_dd_two_sum(s.hi, s.lo);
}
EMBER_RND_FN ember_dd ember_dd_mul(ember_dd a, ember_dd b) {
    ember_dd p = ember_dd_two_prod(a.hi, b.hi);
    p.lo += a.hi * b.lo + a.lo * b.hi;
    return ember_dd_two_sum(p.hi, p.lo);
}

/* x = m 2^e, m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact); log(1 + f) = 2 atanh(s), s = f / (2 + f):
 * 2s + s^3 (2/3 + 2/5 z + z^2 R(z)), z = s^2 <= 0.0295, the first terms in double-double. */
EMBER_RND_FN double ember_rnd_log(double x) {
    static const ember_dd ln2 = {6.93147180559945286227e-01, 2.31904681384629955842e-17};
    static const ember_dd c3 = {6.66666666666666629659e-01, 3.70074341541718826233e-17};
    static const ember_dd c5 = {4.00000000000000022204e-01, -2.22044604925031320658e-17};
    const uint64_t u = ember_rnd_bits(x);
    int e = (int)(u >> 52) - 1023;
    double m = ember_rnd_double((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull), f, q, z1, r;
    ember_dd den, s, z, t, res;
    if (m > 1.41421356237309504880) {
        m *= 0.5;
        e += 1;
    }
    f = m - 1.0;
    den = ember_dd_two_sum(2.0, f);
    /* s = f / den to double-double: one division and the exact remainder. */
    q = f / den.hi;
    t = ember_dd_two_prod(q, den.hi);
    r = ((f - t.hi) - t.lo) - q * den.lo;
    s = ember_dd_two_sum(q, r / den.hi);
    z = ember_dd_mul(s, s);
    z1 = z.hi;
    r = z1 * z1 * (2.0 / 7 + z1 * (2.0 / 9 + z1 * (2.0 / 11 + z1 * (2.0 / 13 + z1 * (2.0 / 15 + z1 * (2.0 / 17 +
        z1 * (2.0 / 19 + z1 * (2.0 / 21 + z1 * (2.0 / 23 + z1 * 2.0 / 25)))))))));
    t = ember_dd_add(ember_dd_add(c3, ember_dd_mul(c5, z)), ember_dd_two_sum(r, 0.0));
    t = ember_dd_mul(ember_dd_mul(t, z), s);
    s.hi *= 2.0;
    s.lo *= 2.0;
    res = ember_dd_add(s, t);
    t = ember_dd_two_prod((double)e, ln2.hi);
    t.lo += (double)e * ln2.lo;
    res = ember_dd_add(t, res);
    return res.hi + res.lo;
}

/* sqrt, correctly rounded: the instruction where the FPU has one for double, else Newton's iteration and
 * a last correction from the exact residual. */
EMBER_RND_FN double ember_rnd_sqrt(double x) {
#if EMBER_GNUC && defined(__NO_MATH_ERRNO__) && (defined(__SSE2__) || defined(__aarch64__) || \
    defined(__wasm__) || (defined(__riscv_flen) && __riscv_flen >= 64) || (defined(__ARM_FP) && (__ARM_FP & 8)))
    return __builtin_sqrt(x);
#else
    double y = ember_rnd_double((ember_rnd_bits(x) >> 1) + 0x1ff7a3bea91d9b1bull), lo, hi;
    ember_dd p;
    int i;
    for (i = 0; i < 6; ++i) y = 0.5 * (y + x / y);
    /* y is within an ulp: step to the neighbour whose square is nearest x. */
    for (i = 0; i < 2; ++i) {
        hi = ember_rnd_double(ember_rnd_bits(y) + 1);
        lo = ember_rnd_double(ember_rnd_bits(y) - 1);
        p = ember_dd_two_prod(y, y);
        if ((x - p.hi) - p.lo > 0.0) {
            p = ember_dd_two_prod(y, hi);
            if ((x - p.hi) - p.lo > 0.0) y = hi; /* x > y * next(y): past the midpoint */
        } else {
            p = ember_dd_two_prod(y, lo);
            if ((x - p.hi) - p.lo < 0.0) y = lo;
        }
    }
    return y;
#endif
}

/* legacy_gauss: the polar method; every second call returns the value the first cached. */
EMBER_RND_FN double ember_mt_gauss(ember_mt_state *s) {
    double x1, x2, r2, f;
    if (s->has_gauss) {
        s->has_gauss = 0;
        return s->gauss;
    }
    do {
        volatile double sq1, sq2;
        x1 = 2.0 * ember_mt_double(s) - 1.0; /* 2u is exact: a fused form rounds the same */
        x2 = 2.0 * ember_mt_double(s) - 1.0;
        sq1 = x1 * x1;
        sq2 = x2 * x2;
        r2 = sq1 + sq2;
    } while (r2 >= 1.0 || r2 == 0.0);
    f = ember_rnd_sqrt(-2.0 * ember_rnd_log(r2) / r2);
    s->gauss = f * x1;
    s->has_gauss = 1;
    return f * x2;
}
/*@end*/

/*@kernel ember_random_uniform requires ember_mt19937*/
/* RandomUniform(Like): rand(), rounded to the output type, then * (high - low) and + low in that type. */
EMBER_RANDOM_AFFINE(ember_random_uniform_f32, float, ember_mt_double)
EMBER_RANDOM_AFFINE(ember_random_uniform_f64, double, ember_mt_double)
/*@end*/

/*@kernel ember_random_normal requires ember_rnd_log*/
/* RandomNormal(Like): randn(), rounded to the output type, then * scale and + mean in that type. */
EMBER_RANDOM_AFFINE(ember_random_normal_f32, float, ember_mt_gauss)
EMBER_RANDOM_AFFINE(ember_random_normal_f64, double, ember_mt_gauss)
/*@end*/

/*@kernel ember_bernoulli requires ember_mt19937*/
/* binomial(1, p) as numpy's legacy inversion draws it, one draw u = k / 2^53 per element (p == 0 too):
 * p <= 1/2 gives 1 when u > 1 - p (rounded to double), p > 1/2 gives 1 when u <= p (1 - (1 - p) is p for
 * every p > 1/2). For n = 1 the inversion's e^(n log q) is q itself unless libm's exp(log q) misses q by an
 * ulp, which changes the outcome only when u is that ulp: one draw in 2^52. p must lie in [0, 1] (numpy
 * refuses others). The output is 0/1 bytes (a Cast after the node gives other element types). */

/* float32 p without double arithmetic (single-precision FPUs): with P = p 2^53, 1 - p rounded to double is
 * Q / 2^53 for Q = 2^53 - P rounded to the nearest integer, ties to even (its ulp is 2^-53 on [1/2, 1)). */
EMBER_RND_FN int ember_bernoulli_f32_draw(ember_mt_state *s, float pf) {
    union { float f; uint32_t u; } v;
    uint32_t e, m;
    uint64_t k = ember_mt_u53(s), floor_p, rest, half, q;
    int sh;
    v.f = pf;
    if (!(pf > 0.0f)) return 0; /* 0, and what numpy refuses: negative, NaN */
    if (pf > 1.0f) return 1;
    e = (v.u >> 23) & 0xffu;
    m = (v.u & 0x7fffffu) | (e ? 0x800000u : 0u);
    sh = 150 - (int)(e ? e : 1) - 53; /* P = m 2^-sh */
    if (sh <= 0) { /* P is an integer, p > 1/2 among these: u <= p */
        floor_p = (uint64_t)m << -sh;
        return pf > 0.5f ? k <= floor_p : k > ((uint64_t)1 << 53) - floor_p;
    }
    if (sh >= 64) return 0; /* P < 2^-40: 1 - p rounds to 1, which no draw exceeds */
    floor_p = (uint64_t)m >> sh;
    rest = (uint64_t)m & (((uint64_t)1 << sh) - 1u); /* P - floor(P), in units of 2^-sh */
    half = (uint64_t)1 << (sh - 1);
    q = ((uint64_t)1 << 53) - floor_p; /* 2^53 - P = q - frac, rounded to nearest even: */
    if (rest > half || (rest == half && (q & 1u))) --q;
    return k > q;
}

EMBER_RND_FN void ember_bernoulli_f32(uint8_t *y, const float *p, int n, uint32_t seed, void *scratch) {
    ember_mt_state *s = (ember_mt_state *)scratch;
    int i;
    ember_mt_seed(s, seed);
    for (i = 0; i < n; ++i) y[i] = (uint8_t)ember_bernoulli_f32_draw(s, p[i]);
}
EMBER_RND_FN void ember_bernoulli_f64(uint8_t *y, const double *p, int n, uint32_t seed, void *scratch) {
    ember_mt_state *s = (ember_mt_state *)scratch;
    int i;
    ember_mt_seed(s, seed);
    for (i = 0; i < n; ++i) {
        const double u = ember_mt_double(s);
        y[i] = (uint8_t)(p[i] <= 0.5 ? u > 1.0 - p[i] : u <= 1.0 - (1.0 - p[i]));
    }
}
/*@end*/

/*@kernel ember_dropout_train requires ember_mt19937*/
/* Training-mode Dropout as the reference computes it: mask = uniform(0, 1) >= ratio, that is k >= `keep_from`
 * = ceil(ratio * 2^53) for the draw k / 2^53 (no double arithmetic), and y = mask * x * scale in x's type,
 * scale = 1 / (1 - ratio) worked out by the caller. mask may be NULL. */
EMBER_RND_FN void ember_dropout_train_f32(float *y, uint8_t *mask, const float *x, int n, uint32_t seed,
                                          uint64_t keep_from, float scale, void *scratch) {
    ember_mt_state *s = (ember_mt_state *)scratch;
    int i;
    ember_mt_seed(s, seed);
    for (i = 0; i < n; ++i) {
        const int keep = ember_mt_u53(s) >= keep_from;
        if (mask) mask[i] = (uint8_t)keep;
        y[i] = ((float)keep * x[i]) * scale;
    }
}
EMBER_RND_FN void ember_dropout_train_f64(double *y, uint8_t *mask, const double *x, int n, uint32_t seed,
                                          uint64_t keep_from, double scale, void *scratch) {
    ember_mt_state *s = (ember_mt_state *)scratch;
    int i;
    ember_mt_seed(s, seed);
    for (i = 0; i < n; ++i) {
        const int keep = ember_mt_u53(s) >= keep_from;
        if (mask) mask[i] = (uint8_t)keep;
        y[i] = ((double)keep * x[i]) * scale;
    }
}
/*@end*/

/*@kernel ember_multinomial requires ember_mt19937*/
/* e^x for x <= 0 in double, within an ulp (a boundary of the cumulative weights moves by that much: a
 * draw changes class only if it lands in that ulp). x = k ln2 + r, |r| <= ln2/2, Taylor to degree 13. */
static double ember_rnd_exp_neg(double x) {
    /* 1/n! for n = 13 down to 2 */
    static const double inv_fact[12] = {1.6059043836821613e-10, 2.08767569878681e-09, 2.505210838544172e-08,
                                        2.755731922398589e-07, 2.7557319223985893e-06, 2.48015873015873e-05,
                                        1.984126984126984e-04, 1.388888888888889e-03, 8.333333333333333e-03,
                                        4.1666666666666664e-02, 1.6666666666666666e-01, 0.5};
    double k, r, p = inv_fact[0];
    int i;
    union { uint64_t u; double f; } two;
    if (!(x > -708.0)) return x != x ? x : 0.0; /* below the normal range: weight 0 */
    k = (double)(int32_t)(x * 1.44269504088896340736 - 0.5); /* round(x / ln2), x <= 0 */
    r = (x - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10;
    for (i = 1; i < 12; ++i) p = p * r + inv_fact[i];
    p = p * r + 1.0;
    p = p * r + 1.0;
    two.u = (uint64_t)((int64_t)k + 1023) << 52;
    return p * two.f;
}

/* Multinomial: per row of `classes` unnormalized log-probabilities, the weights w = e^(x - max x) and
 * their running sums c in double; each of `samples` draws u = random_sample() * c[last] picks the first
 * class whose running sum exceeds u (numpy: searchsorted(c, u, 'right')). Rows, then samples, in order. */
#define EMBER_MULTINOMIAL(NAME, TX, TY)                                                                  \
    static EMBER_UNUSED void NAME(TY *y, const TX *x, int rows, int classes, int samples, uint32_t seed, void *scratch) { \
        ember_mt_state *s = (ember_mt_state *)scratch;                                                  \
        double *c = (double *)(s + 1);                                                                  \
        int i, j, k;                                                                                    \
        ember_mt_seed(s, seed);                                                                         \
        for (i = 0; i < rows; ++i) {                                                                    \
            const TX *xr = x + (size_t)i * (size_t)classes;                                              \
            double m = (double)xr[0], acc = 0.0;                                                        \
            for (j = 1; j < classes; ++j) m = (double)xr[j] > m ? (double)xr[j] : m;                     \
            for (j = 0; j < classes; ++j) {                                                             \
                acc += ember_rnd_exp_neg((double)xr[j] - m);                                            \
                c[j] = acc;                                                                             \
            }                                                                                           \
            for (k = 0; k < samples; ++k) {                                                             \
                const double u = ember_mt_double(s) * acc;                                              \
                int lo = 0, hi = classes - 1;                                                           \
                while (lo < hi) { /* the first j with c[j] > u; the last class if none */               \
                    const int mid = lo + (hi - lo) / 2;                                                 \
                    if (c[mid] > u) hi = mid; else lo = mid + 1;                                        \
                }                                                                                       \
                y[(size_t)i * (size_t)samples + (size_t)k] = (TY)lo;                                    \
            }                                                                                           \
        }                                                                                               \
    }
EMBER_MULTINOMIAL(ember_multinomial_f32_i32, float, int32_t)
EMBER_MULTINOMIAL(ember_multinomial_f32_i64, float, int64_t)
EMBER_MULTINOMIAL(ember_multinomial_f64_i32, double, int32_t)
EMBER_MULTINOMIAL(ember_multinomial_f64_i64, double, int64_t)
/*@end*/

/*@kernel ember_random_f16 requires ember_random_uniform ember_random_normal ember_f16*/
/* float16 outputs, as numpy computes them: the double draw rounded straight to half, then * scale and
 * + shift (float32 scalars) each in float32 and rounded back to half (twice rounded, as numpy does). */
static uint16_t ember_rnd_double_to_f16(double x) {
    const uint64_t u = ember_rnd_bits(x);
    const uint16_t sign = (uint16_t)((u >> 48) & 0x8000u);
    const int e = (int)((u >> 52) & 0x7ff) - 1023;
    uint64_t m = u & 0x000fffffffffffffull, rem, half;
    int shift;
    uint32_t h;
    if (e == 1024) return (uint16_t)(sign | (m ? 0x7e00u : 0x7c00u));
    if (e > 15) return (uint16_t)(sign | 0x7c00u);
    if (e < -25) return sign;
    if (e >= -14) {
        shift = 42;
        h = ((uint32_t)(e + 15) << 10) | (uint32_t)(m >> 42);
    } else {
        m |= 0x0010000000000000ull;
        shift = 42 + (-14 - e);
        h = (uint32_t)(m >> shift);
    }
    rem = m & ((1ull << shift) - 1u);
    half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h; /* a carry into the exponent is right, up to inf */
    return (uint16_t)(sign | h);
}

static void ember_random_f16(uint16_t *y, int n, uint32_t seed, int normal, float scale, float shift,
                             void *scratch) {
    ember_mt_state *s = (ember_mt_state *)scratch;
    int i;
    ember_mt_seed(s, seed);
    for (i = 0; i < n; ++i) {
        const uint16_t d = ember_rnd_double_to_f16(normal ? ember_mt_gauss(s) : ember_mt_double(s));
        const uint16_t t = ember_f32_to_f16(ember_f16_to_f32(d) * scale);
        y[i] = ember_f32_to_f16(ember_f16_to_f32(t) + shift);
    }
}
/*@end*/
