/* Conversions of the ML storage types (bfloat16, float8 e4m3fn/e4m3fnuz/e5m2/e5m2fnuz/e8m0, float4 e2m1,
 * int4/uint4, int2/uint2; one element per byte, bfloat16 in 16 bits: ember/ir/dtypes.py) to and from the
 * other types, and QuantizeLinear/DequantizeLinear to and from them. Everything is integer work on the
 * bits: one rounding (to nearest, ties to even) from float32 and between the formats, no FPU needed and
 * no double on single-precision targets (float64 and integer sources go through float32, as ml_dtypes and
 * so ONNX's reference convert them). NaN, infinity and overflow follow ONNX's Cast (saturate) and the
 * reference implementation's ml_dtypes results bit for bit. */

/*@kernel ember_convert requires ember_prelude*/
/* Float formats by number: the bits of a value are sign | exponent (ebits) | mantissa (mbits). */
#define EMBER_FP_F32 0
#define EMBER_FP_F64 1
#define EMBER_FP_F16 2
#define EMBER_FP_BF16 3
#define EMBER_FP_E4M3FN 4
#define EMBER_FP_E4M3FNUZ 5
#define EMBER_FP_E5M2 6
#define EMBER_FP_E5M2FNUZ 7
#define EMBER_FP_E2M1 8
/* Kinds: IEEE (inf and NaN in the all-ones exponent), FN (no inf; NaN = all ones), FNUZ (no inf, no
 * negative zero; NaN = the sign bit alone), NONAN (no inf, no NaN: out of range saturates). */
#define EMBER_FPK_IEEE 0
#define EMBER_FPK_FN 1
#define EMBER_FPK_FNUZ 2
#define EMBER_FPK_NONAN 3
typedef struct {
    int mbits, ebits, bias, kind;
} ember_fp_format;
static const ember_fp_format ember_fp_formats[9] = {
    {23, 8, 127, EMBER_FPK_IEEE}, {52, 11, 1023, EMBER_FPK_IEEE}, {10, 5, 15, EMBER_FPK_IEEE},
    {7, 8, 127, EMBER_FPK_IEEE},  {3, 4, 7, EMBER_FPK_FN},        {3, 4, 8, EMBER_FPK_FNUZ},
    {2, 5, 15, EMBER_FPK_IEEE},   {2, 5, 16, EMBER_FPK_FNUZ},     {1, 2, 1, EMBER_FPK_NONAN},
};

/* The largest finite encoding of a format, without its sign. */
EMBER_INLINE uint64_t ember_fp_maxenc(ember_fp_format f) {
    const uint64_t ones = ((uint64_t)1 << (f.ebits + f.mbits)) - 1;
    if (f.kind == EMBER_FPK_IEEE) return (ones ^ (((uint64_t)1 << f.mbits) - 1)) - 1;
    return f.kind == EMBER_FPK_FN ? ones - 1 : ones;
}

/* NaN (is_nan) or infinity of sign `neg` in format `fmt`; sat: infinity becomes the largest finite value
 * (ONNX Cast's saturate for the float8 targets). float4 has no NaN: ml_dtypes gives a zero of the
 * opposite sign, and so does this. */
static inline uint64_t ember_fp_special(int neg, int is_nan, int fmt, int sat) {
    const ember_fp_format f = ember_fp_formats[fmt];
    const int top = f.ebits + f.mbits;
    const uint64_t sign = neg ? (uint64_t)1 << top : 0, ones = ((uint64_t)1 << top) - 1;
    const uint64_t inf = ones ^ (((uint64_t)1 << f.mbits) - 1);
    const uint64_t nan = f.kind == EMBER_FPK_IEEE ? sign | inf | ((uint64_t)1 << (f.mbits - 1))
                         : f.kind == EMBER_FPK_FN ? sign | ones
                         : f.kind == EMBER_FPK_FNUZ ? (uint64_t)1 << top
                                                    : (neg ? 0 : (uint64_t)1 << top);
    if (is_nan) return nan;
    if (sat || f.kind == EMBER_FPK_NONAN) return sign | ember_fp_maxenc(f);
    return f.kind == EMBER_FPK_IEEE ? sign | inf : nan;
}

/* (-1)^neg * sig * 2^exp2 in format `fmt`, rounded to nearest even; too large: infinity (IEEE), NaN
 * (FN, FNUZ) or, with sat and for float4, the largest finite value. */
static inline uint64_t ember_fp_pack(int neg, uint64_t sig, int32_t exp2, int fmt, int sat) {
    const ember_fp_format f = ember_fp_formats[fmt];
    const int top = f.ebits + f.mbits;
    const uint64_t sign = neg ? (uint64_t)1 << top : 0;
    const int32_t emin = 1 - f.bias;
    int32_t msb = 0, e, shift;
    uint64_t q, enc;
    if (sig == 0) return f.kind == EMBER_FPK_FNUZ ? 0 : sign;
    while (msb < 63 && (sig >> (msb + 1)) != 0) ++msb;
    e = msb + exp2; /* the value is in [2^e, 2^(e+1)) */
    shift = msb - f.mbits + (e < emin ? emin - e : 0);
    if (shift <= 0) {
        q = sig << -shift;
    } else if (shift > msb + 1) {
        q = 0; /* below half the smallest step */
    } else if (shift == msb + 1) {
        q = sig > ((uint64_t)1 << msb) ? 1 : 0; /* between 0 and the smallest step; a tie goes to 0 */
    } else {
        const uint64_t rem = sig & (((uint64_t)1 << shift) - 1), half = (uint64_t)1 << (shift - 1);
        q = sig >> shift;
        q += (rem > half) | ((rem == half) & (q & 1));
    }
    /* Normal: the exponent field plus the significand without its leading one (a carry out of the
     * mantissa steps the exponent, as it should); subnormal: q is the mantissa field. */
    enc = e >= emin ? ((uint64_t)(e + f.bias) << f.mbits) + q - ((uint64_t)1 << f.mbits) : q;
    if (e >= emin && e + f.bias > (1 << f.ebits)) enc = ember_fp_maxenc(f) + 1; /* far out of range */
    if (enc > ember_fp_maxenc(f)) {
        if (sat || f.kind == EMBER_FPK_NONAN) return sign | ember_fp_maxenc(f);
        return ember_fp_special(neg, 0, fmt, 0);
    }
    if (enc == 0 && f.kind == EMBER_FPK_FNUZ) return 0;
    return sign | enc;
}

/* bits of format `from` -> bits of format `to` (exact when `to` holds every value of `from`). */
static inline uint64_t ember_fp_recode(uint64_t bits, int from, int to, int sat) {
    const ember_fp_format f = ember_fp_formats[from];
    const int top = f.ebits + f.mbits;
    const uint64_t mmask = ((uint64_t)1 << f.mbits) - 1, emask = ((uint64_t)1 << f.ebits) - 1;
    const uint64_t ef = (bits >> f.mbits) & emask, m = bits & mmask;
    const int neg = (int)((bits >> top) & 1);
    if (f.kind == EMBER_FPK_IEEE && ef == emask) return ember_fp_special(neg, m != 0, to, sat);
    if (f.kind == EMBER_FPK_FN && ef == emask && m == mmask) return ember_fp_special(neg, 1, to, sat);
    if (f.kind == EMBER_FPK_FNUZ && (bits & (((uint64_t)1 << (top + 1)) - 1)) == (uint64_t)1 << top)
        return ember_fp_special(0, 1, to, sat);
    return ember_fp_pack(neg, ef ? m | (mmask + 1) : m, (int32_t)(ef ? ef : 1) - f.bias - f.mbits, to, sat);
}

EMBER_INLINE uint32_t ember_f32_bits(float x) {
    union { float f; uint32_t u; } v;
    v.f = x;
    return v.u;
}
EMBER_INLINE float ember_bits_f32(uint32_t u) {
    union { uint32_t u; float f; } v;
    v.u = u;
    return v.f;
}
/* float -> format `fmt` (bits). */
EMBER_INLINE uint32_t ember_f32_to_fp(float x, int fmt, int sat) {
    return (uint32_t)ember_fp_recode(ember_f32_bits(x), EMBER_FP_F32, fmt, sat);
}
/* format `fmt` -> float (exact for every format here but float64). */
EMBER_INLINE float ember_fp_to_f32(uint32_t bits, int fmt) {
    return ember_bits_f32((uint32_t)ember_fp_recode(bits, fmt, EMBER_FP_F32, 0));
}
/* float8 e8m0 (an exponent alone: 2^(e-127), 0xFF NaN, no sign, no zero), as ONNX's reference
 * (onnx.numpy_helper.to_float8e8m0) makes it from float32: the sign is dropped, NaN and infinity become
 * 0xFF, round_mode 0 up (any fraction steps up), 1 down, 2 nearest (the reference's guard-bit rule);
 * sat keeps 0xFE from stepping up to NaN. */
EMBER_INLINE uint32_t ember_f32_to_e8m0(float x, int sat, int mode) {
    const uint32_t u = ember_f32_bits(x), e = (u >> 23) & 0xffu;
    uint32_t up;
    if (e == 0xffu) return 0xffu;
    if (mode == 0) {
        up = (u & 0x7fffffu) != 0;
    } else if (mode == 2) {
        up = (u & 0x400000u) != 0 && ((u & 0x3fffffu) != 0 || e > 0);
    } else {
        up = 0;
    }
    if (sat && e == 0xfeu) up = 0;
    return e + up;
}
EMBER_INLINE float ember_e8m0_to_f32(uint32_t b) {
    return b == 0xffu ? ember_bits_f32(0x7fc00000u) : ember_bits_f32((uint32_t)ember_fp_pack(0, 1, (int32_t)b - 127,
                                                                                          EMBER_FP_F32, 0));
}

/* Sub-byte integers: the value in the low bits of its byte (int4 -1 is 0x0F). */
EMBER_INLINE int32_t ember_s4(uint32_t b) { return (int32_t)((b & 15u) ^ 8u) - 8; }
EMBER_INLINE int32_t ember_s2(uint32_t b) { return (int32_t)((b & 3u) ^ 2u) - 2; }
/*@end*/

/*@kernel ember_convert_f64 requires ember_convert*/
/* The formats -> float64 (exact): only bundles with float64 tensors use it. (float64 -> a format goes
 * through float32, as ml_dtypes and so ONNX's reference convert.) */
EMBER_INLINE double ember_fp_to_f64(uint32_t bits, int fmt) {
    union { uint64_t u; double d; } v;
    v.u = ember_fp_recode(bits, fmt, EMBER_FP_F64, 0);
    return v.d;
}
/*@end*/

/*@kernel ember_quantize_lowbit requires ember_convert ember_quantize_tpl*/
/* QuantizeLinear to int4/uint4/int2/uint2 (bits, sgn): round half to even, + zero point, saturate, the
 * result in the low bits of its byte; to a float format `fmt` (bits = 0): x / scale converted with ONNX's
 * saturate (float8; the zero point must be zero and is not read) or, for float4 e2m1, plus its zero
 * point and saturating always, as the reference does. q: the layout of ember_quantize_tpl. */
static void ember_quantize_lowbit(uint8_t *EMBER_RESTRICT y, const float *EMBER_RESTRICT x, const float *scale,
                                  const uint8_t *zp, const int32_t *q, int bits, int sgn, int fmt, int sat) {
    const int32_t lo = sgn ? -(1 << (bits - 1)) : 0, hi = sgn ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
    const uint32_t mask = bits ? (1u << bits) - 1u : 0u;
    const int add_zp = zp != 0 && fmt == EMBER_FP_E2M1;
    if (bits) {
        EMBER_QUANT_LOOP({
            const int32_t zv = sgn ? (int32_t)(((uint32_t)z & mask) ^ (uint32_t)(hi + 1)) - (hi + 1)
                                   : (int32_t)((uint32_t)z & mask);
            y[e] = (uint8_t)((uint32_t)ember_q_saturate(x[e] / sc, zv, lo, hi) & mask);
        })
    } else {
        EMBER_QUANT_LOOP({
            const float v = x[e] / sc;
            y[e] = (uint8_t)ember_f32_to_fp(add_zp ? v + ember_fp_to_f32((uint32_t)z, fmt) : v, fmt, sat);
        })
    }
}
/*@end*/

/*@kernel ember_dequantize_lowbit requires ember_convert ember_quantize_tpl*/
/* DequantizeLinear from int4/uint4/int2/uint2 (bits, sgn): (x - zero point) * scale; from a float format
 * `fmt` (bits = 0): x * scale (the reference reads no zero point for float8 and float4). */
static void ember_dequantize_lowbit(float *EMBER_RESTRICT y, const uint8_t *EMBER_RESTRICT x, const float *scale,
                                    const uint8_t *zp, const int32_t *q, int bits, int sgn, int fmt) {
    const uint32_t mask = bits ? (1u << bits) - 1u : 0u, half = bits ? 1u << (bits - 1) : 0u;
    if (bits) {
        EMBER_QUANT_LOOP({
            const int32_t xv = sgn ? (int32_t)((x[e] & mask) ^ half) - (int32_t)half : (int32_t)(x[e] & mask);
            const int32_t zv = sgn ? (int32_t)(((uint32_t)z & mask) ^ half) - (int32_t)half
                                   : (int32_t)((uint32_t)z & mask);
            y[e] = ((float)xv - (float)zv) * sc;
        })
    } else {
        EMBER_QUANT_LOOP({
            (void)z;
            y[e] = ember_fp_to_f32(x[e], fmt) * sc;
        })
    }
}
/*@end*/
