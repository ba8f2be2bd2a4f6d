/* TFLite's full-integer LSTM (UNIDIRECTIONAL_SEQUENCE_LSTM with int8 input, output and weights, int16 cell
 * state, int32 bias; ember/ops/lstm_int.py), bit-exact with LiteRT's reference kernel (lstm_eval's
 * 8x8_16 path: gemmlowp's fixed-point sigmoid and tanh) or with TFLite Micro's (its int16 LOGISTIC and TANH
 * tables, every product requantised by a multiplier). */

/*@kernel ember_lstm_int requires ember_qround ember_q16_sigmoid*/
/* The int16 fixed-point arithmetic of gemmlowp's FixedPoint<int16_t, k> as LiteRT uses it: products are
 * rounding doubling high multiplies, sums wrap (int16 modulo, as its plain Add does), rescales saturate. */
EMBER_INLINE int16_t ember_lq_wrap(int32_t v) {
    v &= 0xFFFF;
    return (int16_t)(v >= 0x8000 ? v - 0x10000 : v);
}
EMBER_INLINE int16_t ember_lq_sat(int32_t v) { return (int16_t)(v < -32768 ? -32768 : v > 32767 ? 32767 : v); }
EMBER_INLINE int32_t ember_lq_rdiv(int32_t x, int e) { /* gemmlowp's RoundingDivideByPOT */
    const int32_t mask = (int32_t)(((int64_t)1 << e) - 1);
    return (x >> e) + ((x & mask) > (mask >> 1) + (x < 0 ? 1 : 0) ? 1 : 0);
}
EMBER_INLINE int16_t ember_lq_mul(int16_t a, int16_t b) { /* SaturatingRoundingDoublingHighMul */
    const int32_t ab = (int32_t)a * b;
    if (a == -32768 && b == -32768) return 32767;
    return (int16_t)((ab + (ab >= 0 ? (1 << 14) : 1 - (1 << 14))) / (1 << 15));
}
EMBER_INLINE int16_t ember_lq_pot(int16_t x, int e) { /* SaturatingRoundingMultiplyByPOT<e> */
    if (e > 0) {
        const int32_t t = (1 << (15 - e)) - 1;
        return x > t ? 32767 : x < -t ? -32768 : (int16_t)(x * (1 << e));
    }
    return e < 0 ? (int16_t)ember_lq_rdiv(x, -e) : x;
}
/* gemmlowp's 32-bit constants narrowed to 16 bits (RescaleConstantInitializer). */
EMBER_INLINE int16_t ember_lq_const(int32_t c) { return (int16_t)ember_lq_rdiv(c, 16); }

/* exp(a) for a in [-1/4, 0), Q0.15: the Taylor expansion about -1/8. */
static int16_t ember_lq_exp_quarter(int16_t a) {
    const int16_t c = ember_lq_const(1895147668), third = ember_lq_const(715827883);
    const int16_t x = ember_lq_wrap(a + (1 << 12));
    const int16_t x2 = ember_lq_mul(x, x), x3 = ember_lq_mul(x2, x), x4 = ember_lq_mul(x2, x2);
    const int16_t s = ember_lq_pot(ember_lq_wrap(ember_lq_mul(ember_lq_wrap(ember_lq_pot(x4, -2) + x3), third) + x2),
                                   -1);
    return ember_lq_sat(c + ember_lq_mul(c, ember_lq_wrap(x + s)));
}

/* exp(a) for a <= 0 in Q(k).(15-k), result Q0.15: the last quarter by the polynomial, the rest by the
 * barrel of exp(-2^e) factors. */
static int16_t ember_lq_exp_neg(int16_t a, int k) {
    static const int32_t factor[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
    const int frac = 15 - k;
    const int16_t quarter = (int16_t)(1 << (frac - 2));
    const int16_t part = ember_lq_wrap((a & (quarter - 1)) - quarter);
    const int16_t rem = ember_lq_wrap(part - a);
    int16_t r = ember_lq_exp_quarter(ember_lq_pot(part, k));
    int e;
    for (e = -2; e <= 4; ++e) {
        if (k > e && (rem & (1 << (frac + e)))) r = ember_lq_mul(r, ember_lq_const(factor[e + 2]));
    }
    if (k > 5 && a < ember_lq_const(-(1 << (36 - k)))) r = 0;
    return a == 0 ? 32767 : r;
}

/* Newton-Raphson for 1 / (1 + a) (minus = 0) or (1 - a) / (1 + a) (minus = 1), a in (0, 1) Q0.15. */
static int16_t ember_lq_recip(int16_t a, int minus) {
    const int32_t sum = (int32_t)a + 32767;
    const int16_t half = (int16_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
    int16_t x = ember_lq_wrap(ember_lq_const(1515870810) + ember_lq_mul(half, ember_lq_const(-1010580540)));
    int i;
    for (i = 0; i < 3; ++i) {
        const int16_t rest = ember_lq_wrap((1 << 13) - ember_lq_mul(half, x));
        x = ember_lq_wrap(x + ember_lq_pot(ember_lq_mul(x, rest), 2));
    }
    return minus ? ember_lq_pot(ember_lq_wrap(x - (1 << 13)), 2) : ember_lq_pot(x, 1);
}

/* gemmlowp's logistic and tanh of a Q(k).(15-k) value, Q0.15 results. */
static int16_t ember_lq_sigmoid(int16_t a, int k) {
    const int16_t m = a > 0 ? a : ember_lq_wrap(-a);
    const int16_t p = ember_lq_recip(ember_lq_exp_neg(ember_lq_wrap(-m), k), 0);
    return a == 0 ? 16384 : a > 0 ? p : ember_lq_wrap(32767 - p);
}
static int16_t ember_lq_tanh(int16_t a, int k) {
    const int16_t t = ember_lq_recip(ember_lq_exp_neg(a < 0 ? a : ember_lq_wrap(-a), k + 1), 1);
    return a == 0 ? 0 : a < 0 ? ember_lq_wrap(-t) : t;
}

/* TFLite's MultiplyByQuantizedMultiplier (two roundings) of an int32 value by (m, shift). */
EMBER_INLINE int64_t ember_lq_rescale(int32_t v, int32_t m, int32_t shift) {
    return ember_q_scale_tfl(v, m, 2 * EMBER_Q_TFL + 31 - shift);
}

/* Parameter table (ops/lstm_int.py LSTM_PARAMS): per gate i, f, c, o six entries (the input, recurrent and
 * peephole rescales); then the cell-state and hidden arithmetic. */
#define EMBER_LQ_GATE(g, k) ((g) * 6 + (k))
#define EMBER_LQ_IG_SHIFT 24  /* LiteRT: i x g >> (30 + cell scale exponent) */
#define EMBER_LQ_CLIP 25      /* quantized cell clip; negative: none */
#define EMBER_LQ_HID_M 26
#define EMBER_LQ_HID_S 27
#define EMBER_LQ_HID_ZP 28
#define EMBER_LQ_TANH_BITS 29 /* LiteRT: the cell state's integer bits, 15 + its scale exponent */
#define EMBER_LQ_FC_M 30      /* TFLite Micro: forget x cell, input x cell gate, and tanh's input rescale */
#define EMBER_LQ_FC_S 31
#define EMBER_LQ_IG_M 32
#define EMBER_LQ_IG_S 33
#define EMBER_LQ_TANH_MULT 34
#define EMBER_LQ_TANH_SHIFT 35

EMBER_INLINE int64_t ember_lq_sat64(int64_t v) { return v < -32768 ? -32768 : v > 32767 ? 32767 : v; }

/* One gate's pre-activation for one batch row: the input and recurrent products, each with its effective
 * bias (TFLite's bias with the zero points folded in) and rescaled to Q3.12, summed (LiteRT clamps the sum
 * once; TFLite Micro clamps each product, then adds saturating); the peephole term (LiteRT only). The sums
 * wrap as TFLite's int32 sums do, in unsigned arithmetic so that a hostile model is no UB. */
static int16_t ember_lq_pre(const int8_t *x, const int8_t *wx, const int8_t *h, const int8_t *wh,
                            const int32_t *bx, const int32_t *bh, const int16_t *peep, int16_t c,
                            const int32_t *p, int g, int row, int n_in, int n_cell, int micro) {
    uint32_t ax = (uint32_t)bx[row], ah = (uint32_t)bh[row];
    int64_t in, rec, v;
    int j;
    for (j = 0; j < n_in; ++j) ax += (uint32_t)((int32_t)wx[(size_t)row * (size_t)n_in + (size_t)j] * x[j]);
    for (j = 0; j < n_cell; ++j) ah += (uint32_t)((int32_t)wh[(size_t)row * (size_t)n_cell + (size_t)j] * h[j]);
    in = ember_lq_sat64(ember_lq_rescale((int32_t)ax, p[EMBER_LQ_GATE(g, 0)], p[EMBER_LQ_GATE(g, 1)]));
    rec = ember_lq_rescale((int32_t)ah, p[EMBER_LQ_GATE(g, 2)], p[EMBER_LQ_GATE(g, 3)]);
    v = ember_lq_sat64(in + (micro ? ember_lq_sat64(rec) : rec));
    if (peep) {
        v = ember_lq_sat64(v + ember_lq_rescale((int32_t)peep[row] * c, p[EMBER_LQ_GATE(g, 4)],
                                                p[EMBER_LQ_GATE(g, 5)]));
    }
    return (int16_t)v;
}

/* A gate's activation of its Q3.12 pre-activation: sigmoid (tanh for the cell gate), Q0.15. */
static int16_t ember_lq_act(int16_t v, int tanh, int micro, const uint16_t *tab) {
    int16_t out;
    if (!micro) return tanh ? ember_lq_tanh(v, 3) : ember_lq_sigmoid(v, 3);
    ember_q16_sigmoid(&out, &v, 1, tanh, 3, 0, tab);
    return out;
}

/* Gate g (0..3: i, f, c, o; k its index among the present ones) of one batch row, activated, into out. */
static void ember_lq_gate(int16_t *out, int g, int k, const int8_t *xt, const int8_t *wx, const int8_t *wh,
                          const int32_t *bias, const int16_t *peep, const int8_t *hb, const int16_t *cb,
                          const int32_t *p, const uint16_t *tab, int n_in, int n_cell, int micro) {
    const size_t hw = (size_t)n_cell;
    const int16_t *pw = peep && g != 2 ? peep + (size_t)(g == 3 ? 2 : g) * hw : 0;
    int r;
    for (r = 0; r < n_cell; ++r) {
        const int16_t pre = ember_lq_pre(xt, wx + (size_t)k * hw * (size_t)n_in, hb, wh + (size_t)k * hw * hw,
                                         bias + (size_t)(2 * k) * hw, bias + (size_t)(2 * k + 1) * hw, pw, cb[r],
                                         p, g, r, n_in, n_cell, micro);
        out[r] = ember_lq_act(pre, g == 2, micro, tab);
    }
}

/* steps x batch rows of TFLite's LSTM step, from the states h0 (int8) and c0 (int16) [batch, n_cell]; each
 * step's hidden state goes to y ([steps, batch, n_cell] if time_major, else [batch, steps, n_cell]), the
 * last states to h and c (each unless 0: a bundle that does not return the state). wx [G, n_cell, n_in]
 * and wh [G, n_cell, n_cell] hold the G present gates of i, f, c, o (CIFG: no i, which is 1 - f); bias
 * [2G, n_cell] their effective input and recurrent biases; peep [3, n_cell] (or 0) the i, f, o peephole
 * weights; tab: TFLite's int16 sigmoid table (ops/q16.py). work: scratch of (4 + batch) n_cell int16 and
 * batch n_cell int8 (a row's gates, the states). micro: TFLite Micro's arithmetic, else LiteRT's. */
static void ember_lstm_int(const int8_t *x, const int8_t *wx, const int8_t *wh, const int32_t *bias,
                           const int16_t *peep, const int8_t *h0, const int16_t *c0, int8_t *y, int8_t *h,
                           int16_t *c, int16_t *work, const int32_t *p, const uint16_t *tab, int steps, int batch,
                           int n_in, int n_cell, int time_major, int cifg, int micro) {
    const size_t hw = (size_t)n_cell;
    const int32_t clip = p[EMBER_LQ_CLIP];
    int16_t *gi = work, *gf = work + hw, *gc = work + 2 * hw, *go = work + 3 * hw, *cs = work + 4 * hw;
    int8_t *hs = (int8_t *)(cs + (size_t)batch * hw);
    int t, b, r;
    for (r = 0; r < batch * n_cell; ++r) {
        hs[r] = h0[r];
        cs[r] = c0[r];
    }
    for (t = 0; t < steps; ++t) {
        for (b = 0; b < batch; ++b) {
            const size_t row = time_major ? (size_t)t * (size_t)batch + (size_t)b
                                          : (size_t)b * (size_t)steps + (size_t)t;
            const int8_t *xt = x + row * (size_t)n_in;
            int8_t *hb = hs + (size_t)b * hw;
            int16_t *cb = cs + (size_t)b * hw;
            /* i, f and the cell gate read the old states; the output gate comes after the cell update, which
             * its peephole reads (LiteRT's order); the hidden state changes last */
            if (!cifg) ember_lq_gate(gi, 0, 0, xt, wx, wh, bias, peep, hb, cb, p, tab, n_in, n_cell, micro);
            ember_lq_gate(gf, 1, 1 - cifg, xt, wx, wh, bias, peep, hb, cb, p, tab, n_in, n_cell, micro);
            ember_lq_gate(gc, 2, 2 - cifg, xt, wx, wh, bias, peep, hb, cb, p, tab, n_in, n_cell, micro);
            for (r = 0; r < n_cell; ++r) {
                int32_t fc, ig;
                if (micro) {
                    fc = (int32_t)ember_lq_sat64(ember_lq_rescale((int32_t)gf[r] * cb[r], p[EMBER_LQ_FC_M],
                                                                  p[EMBER_LQ_FC_S]));
                    ig = (int32_t)ember_lq_sat64(ember_lq_rescale((int32_t)gi[r] * gc[r], p[EMBER_LQ_IG_M],
                                                                  p[EMBER_LQ_IG_S]));
                } else { /* products rounded by a shift and narrowed to int16 as LiteRT's CwiseMul casts */
                    fc = ember_lq_wrap(ember_lq_rdiv((int32_t)gf[r] * cb[r], 15));
                    ig = ember_lq_wrap(ember_lq_rdiv((int32_t)(cifg ? 32767 - gf[r] : gi[r]) * gc[r],
                                                     p[EMBER_LQ_IG_SHIFT]));
                }
                fc = ember_lq_sat(fc + ig);
                cb[r] = (int16_t)(clip < 0 ? fc : fc < -clip ? -clip : fc > clip ? clip : fc);
            }
            ember_lq_gate(go, 3, 3 - cifg, xt, wx, wh, bias, peep, hb, cb, p, tab, n_in, n_cell, micro);
            for (r = 0; r < n_cell; ++r) { /* h = o x tanh(c), rescaled to the hidden state's int8 */
                int16_t th;
                int64_t v;
                if (micro) {
                    ember_q16_sigmoid(&th, cb + r, 1, 1, p[EMBER_LQ_TANH_MULT], p[EMBER_LQ_TANH_SHIFT], tab);
                } else {
                    th = ember_lq_tanh(cb[r], p[EMBER_LQ_TANH_BITS]);
                }
                v = ember_lq_rescale((int32_t)go[r] * th, p[EMBER_LQ_HID_M], p[EMBER_LQ_HID_S]) + p[EMBER_LQ_HID_ZP];
                hb[r] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
                y[row * hw + (size_t)r] = hb[r];
            }
        }
    }
    for (r = 0; r < batch * n_cell; ++r) {
        if (h) h[r] = hs[r];
        if (c) c[r] = cs[r];
    }
}
/*@end*/
