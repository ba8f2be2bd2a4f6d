/* Recurrent layers: LSTM, GRU and RNN (ember/ops/recurrent.py).
 *
 * The input projection X . W^T of every time step is one matmul before the recurrence
 * (ember_matmul_f32), written into a scratch buffer `xw` of G gate blocks per direction, each block
 * `hp` columns wide (the hidden size rounded up to a panel, padding columns zero). Each step then adds
 * h . R^T in place (ember_rnn_gemm over R packed in panels) and applies the gate math row by row. Batch
 * entries step together: one pass over R serves up to EMBER_RNN_MR entries' rows (R is the big operand:
 * read once per step, not once per entry). Each entry has its own sequence length, and steps past it
 * leave that entry's Y rows zero and its state frozen (Y_h / Y_c are the state after its last step, zero
 * when its length is 0, as onnxruntime does). */

/*@kernel ember_rnn_core requires ember_simd ember_expf ember_fabsf ember_log1pf*/
#define EMBER_RNN_PW 16 /* columns per packed panel of R: a multiple of every EMBER_VL */
#define EMBER_RNN_V (EMBER_RNN_PW / EMBER_VL)
/* Independent partial sums along K, so that about 8 vector accumulators hide the FMA latency. */
#define EMBER_RNN_KS (EMBER_RNN_V >= 8 ? 1 : 8 / EMBER_RNN_V)
/* Activation kinds; the numbers are ember/ops/recurrent.py's _ACT_KINDS. */
#define EMBER_RNN_RELU 0
#define EMBER_RNN_TANH 1
#define EMBER_RNN_SIGMOID 2
#define EMBER_RNN_AFFINE 3
#define EMBER_RNN_LEAKYRELU 4
#define EMBER_RNN_THRESHOLDEDRELU 5
#define EMBER_RNN_SCALEDTANH 6
#define EMBER_RNN_HARDSIGMOID 7
#define EMBER_RNN_ELU 8
#define EMBER_RNN_SOFTSIGN 9
#define EMBER_RNN_SOFTPLUS 10

/* Everything one recurrent node needs (filled field by field by the generated code). */
typedef struct {
    int seq, batch, hidden, hp, dirs, layout, reverse; /* reverse: direction "reverse" (one direction) */
    float *xw;          /* [seq * batch rows in X's order][dirs * G * hp]: projections, overwritten per step */
    const float *rp;    /* R^T in panels: direction d at d * G * hp * hidden */
    const float *bias;  /* Wb + Rb [dirs][G * hp], added by the steps (not by the projection); NULL: none */
    const float *rbh;   /* GRU linear_before_reset: R's bias of the h gate, [dirs][hp]; NULL: none */
    const float *p;     /* LSTM peepholes [dirs][3 * hidden] (i, o, f); NULL: none */
    const float *h0;    /* initial_h, shaped like Y_h; NULL: zeros */
    const float *c0;    /* initial_c, shaped like Y_c; NULL: zeros */
    const int32_t *lens; /* sequence_lens [batch]; NULL: all seq */
    float *y, *yh, *yc; /* outputs; NULL when absent */
    float *state;       /* scratch: 2 * hp floats per batch entry (h, then c or the GRU's r * h) */
    int act[2][3];      /* per direction: f, g, h */
    float alpha[2][3], beta[2][3];
    float clip;         /* +inf: no clip */
    int input_forget, linear_before_reset;
} ember_rnn_args;

/* e^x - 1 without branches (both forms computed, one selected), so loops calling it vectorize. */
EMBER_INLINE float ember_rnn_expm1(float x) {
    const float small = x * (1.0f + x * (0.5f + x * (1.66666666666666667e-1f + x * (4.16666666666666667e-2f +
                        x * (8.33333333333333333e-3f + x * (1.38888888888888889e-3f + x * (1.98412698412698413e-4f +
                        x * (2.48015873015873016e-5f + x * 2.75573192239858907e-6f))))))));
    const float big = ember_expf(x) - 1.0f;
    return ember_fabsf(x) < 0.5f ? small : big;
}
EMBER_INLINE float ember_rnn_tanh(float x) {
    float a = ember_fabsf(x), t;
    a = a > 9.1f ? 9.1f : a; /* tanh rounds to 1 beyond; keeps NaN */
    t = ember_rnn_expm1(2.0f * a);
    t = t / (t + 2.0f);
    return x < 0.0f ? -t : t;
}
EMBER_INLINE float ember_rnn_sigmoid(float x) { return 1.0f / (1.0f + ember_expf(-x)); }
/* One activation; with a constant `kind` the switch folds away. */
EMBER_INLINE float ember_rnn_act(float x, int kind, float alpha, float beta) {
    float t;
    switch (kind) {
    case EMBER_RNN_RELU: return x < 0.0f ? 0.0f : x;
    case EMBER_RNN_TANH: return ember_rnn_tanh(x);
    case EMBER_RNN_SIGMOID: return ember_rnn_sigmoid(x);
    case EMBER_RNN_AFFINE: return alpha * x + beta;
    case EMBER_RNN_LEAKYRELU: return x < 0.0f ? alpha * x : x;
    case EMBER_RNN_THRESHOLDEDRELU: return x > alpha ? x : (x != x ? x : 0.0f);
    case EMBER_RNN_SCALEDTANH: return alpha * ember_rnn_tanh(beta * x);
    case EMBER_RNN_HARDSIGMOID:
        t = alpha * x + beta; t = t < 0.0f ? 0.0f : t; return t > 1.0f ? 1.0f : t;
    case EMBER_RNN_ELU: return x < 0.0f ? alpha * ember_rnn_expm1(x) : x;
    case EMBER_RNN_SOFTSIGN: return x / (1.0f + ember_fabsf(x));
    case EMBER_RNN_SOFTPLUS: /* log(1 + e^x) without overflow */
        return (x > 0.0f ? x : 0.0f) + ember_log1pf(ember_expf(-ember_fabsf(x)));
    default: return x;
    }
}
/* Clips to [-c, c] (keeping NaN) when `clipping`: a constant 0 in the default paths removes it. */
/* The same with a run-time kind, out of line: the general paths call it, so that GCC does not clone their
 * loops once per loop-invariant switch (which made -O3 compiles take minutes). */
EMBER_NOINLINE static float ember_rnn_act_any(float x, int kind, float alpha, float beta) {
    return ember_rnn_act(x, kind, alpha, beta);
}
/* An activation in a cell: `any` (a constant at each call site) selects the out-of-line general one. */
#define EMBER_RNN_ACT(any, x, kind, alpha, beta) \
    ((any) ? ember_rnn_act_any(x, kind, alpha, beta) : ember_rnn_act(x, kind, alpha, beta))
EMBER_INLINE float ember_rnn_clip(float x, float c, int clipping) {
    if (!clipping) return x;
    x = x < -c ? -c : x;
    return x > c ? c : x;
}

/* y[0, panels * 16) = (init ? init : 0) + (bias ? bias : 0) + a[0, k) . B, B packed as `panels` panels of k
 * rows x 16. y may be init (in place). */
static void ember_rnn_gemv(float *y, const float *init, const float *bias, const float *EMBER_RESTRICT a,
                           const float *EMBER_RESTRICT bp, int k, int panels) {
    int p, kk, s, v;
    for (p = 0; p < panels; ++p) {
        const float *b = bp + (ptrdiff_t)p * EMBER_RNN_PW * k;
        ember_vf acc[EMBER_RNN_KS][EMBER_RNN_V];
        for (s = 0; s < EMBER_RNN_KS; ++s)
            for (v = 0; v < EMBER_RNN_V; ++v) acc[s][v] = (ember_vf){0};
        for (kk = 0; kk + EMBER_RNN_KS <= k; kk += EMBER_RNN_KS) {
            EMBER_UNROLL
            for (s = 0; s < EMBER_RNN_KS; ++s) {
                const float av = a[kk + s];
                const float *bk = b + (ptrdiff_t)(kk + s) * EMBER_RNN_PW;
                EMBER_UNROLL
                for (v = 0; v < EMBER_RNN_V; ++v) acc[s][v] += av * *(const ember_vf *)(bk + v * EMBER_VL);
            }
        }
        for (; kk < k; ++kk) {
            const float av = a[kk];
            const float *bk = b + (ptrdiff_t)kk * EMBER_RNN_PW;
            for (v = 0; v < EMBER_RNN_V; ++v) acc[0][v] += av * *(const ember_vf *)(bk + v * EMBER_VL);
        }
        for (s = 1; s < EMBER_RNN_KS; ++s)
            for (v = 0; v < EMBER_RNN_V; ++v) acc[0][v] += acc[s][v];
        for (v = 0; v < EMBER_RNN_V; ++v) {
            const ptrdiff_t at = (ptrdiff_t)p * EMBER_RNN_PW + v * EMBER_VL;
            ember_vf r = acc[0][v];
            if (init) r += *(const ember_vf *)(init + at);
            if (bias) r += *(const ember_vf *)(bias + at);
            *(ember_vf *)(y + at) = r;
        }
    }
}

/* rows (1 to EMBER_RNN_MR) rows at once: y[r] = (init[r] ? init[r] : 0) + (bias ? bias : 0) + a[r] . B, each
 * panel row of B loaded once for all of them. Inline, called with a constant `rows`: the loops unroll, and
 * `ks` independent partial sums along K keep about 8 vector accumulators in flight, as ember_rnn_gemv does. */
#define EMBER_RNN_MR 4
EMBER_INLINE void ember_rnn_gemm_rows(float *const *y, const float *const *init, const float *bias,
                                      const float *const *a, const float *EMBER_RESTRICT bp, int k, int panels,
                                      int rows) {
    const int ks = EMBER_RNN_V * rows >= 8 ? 1 : 8 / (EMBER_RNN_V * rows);
    int p, kk, r, s, v;
    for (p = 0; p < panels; ++p) {
        const float *b = bp + (ptrdiff_t)p * EMBER_RNN_PW * k;
        ember_vf acc[8][EMBER_RNN_MR][EMBER_RNN_V];
        for (s = 0; s < ks; ++s)
            for (r = 0; r < rows; ++r)
                for (v = 0; v < EMBER_RNN_V; ++v) acc[s][r][v] = (ember_vf){0};
        for (kk = 0; kk + ks <= k; kk += ks) {
            EMBER_UNROLL
            for (s = 0; s < ks; ++s) {
                const float *bk = b + (ptrdiff_t)(kk + s) * EMBER_RNN_PW;
                EMBER_UNROLL
                for (r = 0; r < rows; ++r) {
                    const float av = a[r][kk + s];
                    EMBER_UNROLL
                    for (v = 0; v < EMBER_RNN_V; ++v) acc[s][r][v] += av * *(const ember_vf *)(bk + v * EMBER_VL);
                }
            }
        }
        for (; kk < k; ++kk) {
            const float *bk = b + (ptrdiff_t)kk * EMBER_RNN_PW;
            for (r = 0; r < rows; ++r)
                for (v = 0; v < EMBER_RNN_V; ++v) acc[0][r][v] += a[r][kk] * *(const ember_vf *)(bk + v * EMBER_VL);
        }
        for (r = 0; r < rows; ++r)
            for (v = 0; v < EMBER_RNN_V; ++v) {
                const ptrdiff_t at = (ptrdiff_t)p * EMBER_RNN_PW + v * EMBER_VL;
                ember_vf o = acc[0][r][v];
                for (s = 1; s < ks; ++s) o += acc[s][r][v];
                if (init[r]) o += *(const ember_vf *)(init[r] + at);
                if (bias) o += *(const ember_vf *)(bias + at);
                *(ember_vf *)(y[r] + at) = o;
            }
    }
}
static void ember_rnn_gemm(float *const *y, const float *const *init, const float *bias, const float *const *a,
                           const float *EMBER_RESTRICT bp, int k, int panels, int rows) {
    switch (rows) {
    case 1: ember_rnn_gemv(y[0], init[0], bias, a[0], bp, k, panels); break; /* split sums hide FMA latency */
    case 2: ember_rnn_gemm_rows(y, init, bias, a, bp, k, panels, 2); break;
    case 3: ember_rnn_gemm_rows(y, init, bias, a, bp, k, panels, 3); break;
    default: ember_rnn_gemm_rows(y, init, bias, a, bp, k, panels, EMBER_RNN_MR); break;
    }
}

/* Batch entry b's sequence length (clamped to [0, seq]). */
static int ember_rnn_len(const ember_rnn_args *a, int b) {
    int n;
    if (!a->lens) return a->seq;
    n = a->lens[b];
    return n < 0 ? 0 : n > a->seq ? a->seq : n;
}
/* Element offsets: row (t, b) of xw, Y[t, d, b, :], Y_h[d, b, :] (layout 1: batch first everywhere). */
static ptrdiff_t ember_rnn_xrow(const ember_rnn_args *a, int t, int b) {
    return a->layout ? (ptrdiff_t)b * a->seq + t : (ptrdiff_t)t * a->batch + b;
}
static ptrdiff_t ember_rnn_yat(const ember_rnn_args *a, int t, int d, int b) {
    return (a->layout ? ((ptrdiff_t)b * a->seq + t) * a->dirs + d : ((ptrdiff_t)t * a->dirs + d) * a->batch + b) *
           a->hidden;
}
static ptrdiff_t ember_rnn_hat(const ember_rnn_args *a, int d, int b) {
    return (a->layout ? (ptrdiff_t)b * a->dirs + d : (ptrdiff_t)d * a->batch + b) * a->hidden;
}
/* A state row from its initial value (or zeros); the padding columns stay zero. */
static void ember_rnn_init_state(const ember_rnn_args *a, float *dst, const float *init, int d, int b) {
    int j;
    for (j = 0; j < a->hp; ++j) dst[j] = init && j < a->hidden ? init[ember_rnn_hat(a, d, b) + j] : 0.0f;
}
static void ember_rnn_put(float *dst, const float *src, int n) {
    int j;
    for (j = 0; j < n; ++j) dst[j] = src ? src[j] : 0.0f;
}
/* After batch entry b's `len` steps in direction d: zero its Y rows past its length, write Y_h / Y_c. */
static void ember_rnn_finish(const ember_rnn_args *a, int d, int b, int len, const float *h, const float *c) {
    int t;
    if (a->y)
        for (t = len; t < a->seq; ++t) ember_rnn_put(a->y + ember_rnn_yat(a, t, d, b), 0, a->hidden);
    if (a->yh) ember_rnn_put(a->yh + ember_rnn_hat(a, d, b), len > 0 ? h : 0, a->hidden);
    if (a->yc) ember_rnn_put(a->yc + ember_rnn_hat(a, d, b), len > 0 ? c : 0, a->hidden);
}
/* The direction d's steps run forward or backward in time. */
static int ember_rnn_backward(const ember_rnn_args *a, int d) { return a->dirs == 2 ? d == 1 : a->reverse; }
/* Direction d's summed bias (NULL: none); whether the gates are clipped at all. */
static const float *ember_rnn_bias(const ember_rnn_args *a, int d, int gates) {
    return a->bias ? a->bias + (ptrdiff_t)d * gates * a->hp : 0;
}
static int ember_rnn_clipping(const ember_rnn_args *a) { return a->clip < __builtin_inff(); }
/* The rows of step s: up to EMBER_RNN_MR batch entries from *next on that are still running at step s (each
 * with its time index t[i] and its state at state + b[i] * 2 * hp); *next moves past them. Returns how many. */
static int ember_rnn_rows(const ember_rnn_args *a, int d, int s, int *next, int *b, int *t) {
    int m = 0, len;
    for (; *next < a->batch && m < EMBER_RNN_MR; ++*next) {
        len = ember_rnn_len(a, *next);
        if (s >= len) continue;
        b[m] = *next;
        t[m++] = ember_rnn_backward(a, d) ? len - 1 - s : s;
    }
    return m;
}
/*@end*/

/*@kernel ember_rnn_pack_f32 requires ember_rnn_core*/
/* Run-time W, R and B (graph inputs, not constants) in the layouts ember/ops/recurrent.py packs constants
 * into at compile time: wt = W^T [input][dirs * G * hp], rp = R^T in panels, bias = Wb + Rb per gate
 * block (for the GRU's h gate with linear_before_reset, Wb only: its Rb goes to rbh [dirs][hp]).
 * Padding columns are zero. Outputs that are NULL are not made. */
static void ember_rnn_pack_f32(float *wt, float *rp, float *bias, float *rbh, const float *W, const float *R,
                               const float *B, int dirs, int gates, int hidden, int input, int hp, int lbr) {
    int d, g, n, k;
    for (d = 0; d < dirs; ++d)
        for (g = 0; g < gates; ++g)
            for (n = 0; n < hp; ++n) {
                const ptrdiff_t col = ((ptrdiff_t)d * gates + g) * hp + n;
                const ptrdiff_t row = ((ptrdiff_t)d * gates + g) * hidden + n; /* W / R row of this column */
                const int real = n < hidden;
                float *panel = rp + (((ptrdiff_t)d * gates + g) * hp + n / EMBER_RNN_PW * EMBER_RNN_PW) * hidden;
                for (k = 0; k < input; ++k)
                    wt[(ptrdiff_t)k * dirs * gates * hp + col] = real ? W[row * input + k] : 0.0f;
                for (k = 0; k < hidden; ++k)
                    panel[(ptrdiff_t)k * EMBER_RNN_PW + n % EMBER_RNN_PW] = real ? R[row * hidden + k] : 0.0f;
                if (bias && B) {
                    const float *wb = B + (ptrdiff_t)d * 2 * gates * hidden, *rb = wb + gates * hidden;
                    const int split = lbr && g == 2;
                    bias[col] = real ? wb[g * hidden + n] + (split ? 0.0f : rb[g * hidden + n]) : 0.0f;
                    if (split && rbh) rbh[(ptrdiff_t)d * hp + n] = real ? rb[g * hidden + n] : 0.0f;
                }
            }
}
/*@end*/

/*@kernel ember_lstm_f32 requires ember_rnn_core*/
/* One LSTM step's gate math on one row: g = [i | o | f | c] pre-activations (blocks hp apart), h and c
 * the state, updated in place. Inline: the call with the default activations gets constant kinds. */
EMBER_INLINE void ember_lstm_cell(float *EMBER_RESTRICT h, float *EMBER_RESTRICT c, const float *EMBER_RESTRICT g,
                                  int n, int hp, const float *p, float clip, int clipping, int input_forget, int any,
                                  int fk, float fa, float fb, int gk, float ga, float gb, int hk, float ha, float hb) {
    int j;
    for (j = 0; j < n; ++j) {
        const float cp = c[j];
        float gi = g[j], go = g[hp + j], gf = g[2 * hp + j], i, f, o, cn;
        if (p) {
            gi += p[j] * cp;
            gf += p[2 * n + j] * cp;
        }
        i = EMBER_RNN_ACT(any, ember_rnn_clip(gi, clip, clipping), fk, fa, fb);
        f = input_forget ? 1.0f - i : EMBER_RNN_ACT(any, ember_rnn_clip(gf, clip, clipping), fk, fa, fb);
        cn = f * cp + i * EMBER_RNN_ACT(any, ember_rnn_clip(g[3 * hp + j], clip, clipping), gk, ga, gb);
        if (p) go += p[n + j] * cn;
        o = EMBER_RNN_ACT(any, ember_rnn_clip(go, clip, clipping), fk, fa, fb);
        c[j] = cn;
        h[j] = o * EMBER_RNN_ACT(any, cn, hk, ha, hb);
    }
}
static void ember_lstm_f32(const ember_rnn_args *a) {
    const int n = a->hidden, hp = a->hp, width = a->dirs * 4 * hp;
    int d, b, s, i, j, next, m, rb[EMBER_RNN_MR], rt[EMBER_RNN_MR];
    float *g[EMBER_RNN_MR];
    const float *h[EMBER_RNN_MR];
    for (d = 0; d < a->dirs; ++d) {
        const float *rp = a->rp + (ptrdiff_t)d * 4 * hp * n, *p = a->p ? a->p + (ptrdiff_t)d * 3 * n : 0;
        const float *bias = ember_rnn_bias(a, d, 4);
        const int *k = a->act[d], clipping = ember_rnn_clipping(a);
        const float *al = a->alpha[d], *be = a->beta[d];
        const int fast = !p && !a->input_forget && !clipping && k[0] == EMBER_RNN_SIGMOID && k[1] == EMBER_RNN_TANH &&
                         k[2] == EMBER_RNN_TANH;
        for (b = 0; b < a->batch; ++b) { /* entry b's h, c at state + b * 2 * hp */
            ember_rnn_init_state(a, a->state + (ptrdiff_t)b * 2 * hp, a->h0, d, b);
            ember_rnn_init_state(a, a->state + (ptrdiff_t)b * 2 * hp + hp, a->c0, d, b);
        }
        for (s = 0; s < a->seq; ++s)
            for (next = 0; (m = ember_rnn_rows(a, d, s, &next, rb, rt)) > 0;) {
                for (i = 0; i < m; ++i) {
                    g[i] = a->xw + ember_rnn_xrow(a, rt[i], rb[i]) * width + (ptrdiff_t)d * 4 * hp;
                    h[i] = a->state + (ptrdiff_t)rb[i] * 2 * hp;
                }
                ember_rnn_gemm(g, (const float *const *)g, bias, h, rp, n, 4 * hp / EMBER_RNN_PW, m);
                for (i = 0; i < m; ++i) {
                    float *hi = a->state + (ptrdiff_t)rb[i] * 2 * hp, *ci = hi + hp;
                    if (fast)
                        ember_lstm_cell(hi, ci, g[i], n, hp, 0, 0.0f, 0, 0, 0, EMBER_RNN_SIGMOID, 0.0f, 0.0f,
                                        EMBER_RNN_TANH, 0.0f, 0.0f, EMBER_RNN_TANH, 0.0f, 0.0f);
                    else
                        ember_lstm_cell(hi, ci, g[i], n, hp, p, a->clip, 1, a->input_forget, 1, k[0], al[0], be[0],
                                        k[1], al[1], be[1], k[2], al[2], be[2]);
                    if (a->y) {
                        float *y = a->y + ember_rnn_yat(a, rt[i], d, rb[i]);
                        for (j = 0; j < n; ++j) y[j] = hi[j];
                    }
                }
            }
        for (b = 0; b < a->batch; ++b) {
            const float *hb = a->state + (ptrdiff_t)b * 2 * hp;
            ember_rnn_finish(a, d, b, ember_rnn_len(a, b), hb, hb + hp);
        }
    }
}
/*@end*/

/*@kernel ember_gru_f32 requires ember_rnn_core*/
/* GRU gate math, in two halves around the h gate's matmul (linear_before_reset = 0 multiplies r into
 * the state before it): z, r from g = [z | r | h]; z is kept in g's z block, r * h_prev goes to rh. */
EMBER_INLINE void ember_gru_zr(float *EMBER_RESTRICT g, float *EMBER_RESTRICT rh, const float *EMBER_RESTRICT h,
                               int n, int hp, float clip, int clipping, int any, int fk, float fa, float fb) {
    int j;
    for (j = 0; j < n; ++j) {
        g[j] = EMBER_RNN_ACT(any, ember_rnn_clip(g[j], clip, clipping), fk, fa, fb);
        rh[j] = EMBER_RNN_ACT(any, ember_rnn_clip(g[hp + j], clip, clipping), fk, fa, fb) * h[j];
    }
}
/* h = (1 - z) * g(pre) + z * h, pre = g's h block (+ r * rec, linear_before_reset: rec = h . Rh^T + Rbh). */
EMBER_INLINE void ember_gru_out(float *EMBER_RESTRICT h, const float *EMBER_RESTRICT g, const float *rec, int n,
                                int hp, float clip, int clipping, int lbr, int any, int fk, float fa, float fb, int gk,
                                float ga, float gb) {
    int j;
    for (j = 0; j < n; ++j) {
        const float z = lbr ? EMBER_RNN_ACT(any, ember_rnn_clip(g[j], clip, clipping), fk, fa, fb) : g[j];
        float pre = g[2 * hp + j];
        if (lbr) pre += EMBER_RNN_ACT(any, ember_rnn_clip(g[hp + j], clip, clipping), fk, fa, fb) * rec[j];
        h[j] = (1.0f - z) * EMBER_RNN_ACT(any, ember_rnn_clip(pre, clip, clipping), gk, ga, gb) + z * h[j];
    }
}
static void ember_gru_f32(const ember_rnn_args *a) {
    const int n = a->hidden, hp = a->hp, width = a->dirs * 3 * hp, lbr = a->linear_before_reset;
    int d, b, s, i, j, next, m, rb[EMBER_RNN_MR], rt[EMBER_RNN_MR];
    float *g[EMBER_RNN_MR], *gh[EMBER_RNN_MR], *tmp[EMBER_RNN_MR];
    const float *h[EMBER_RNN_MR], *rbhs[EMBER_RNN_MR];
    for (d = 0; d < a->dirs; ++d) {
        const float *rp = a->rp + (ptrdiff_t)d * 3 * hp * n, *rbh = a->rbh ? a->rbh + (ptrdiff_t)d * hp : 0;
        const float *rh = rp + (ptrdiff_t)2 * hp * n; /* the h gate's panels */
        const float *bias = ember_rnn_bias(a, d, 3);
        const int *k = a->act[d], clipping = ember_rnn_clipping(a);
        const float *al = a->alpha[d], *be = a->beta[d];
        const int fast = !clipping && k[0] == EMBER_RNN_SIGMOID && k[1] == EMBER_RNN_TANH;
        for (b = 0; b < a->batch; ++b) /* entry b's h at state + b * 2 * hp, then its scratch row */
            ember_rnn_init_state(a, a->state + (ptrdiff_t)b * 2 * hp, a->h0, d, b);
        for (s = 0; s < a->seq; ++s)
            for (next = 0; (m = ember_rnn_rows(a, d, s, &next, rb, rt)) > 0;) {
                for (i = 0; i < m; ++i) {
                    g[i] = a->xw + ember_rnn_xrow(a, rt[i], rb[i]) * width + (ptrdiff_t)d * 3 * hp;
                    gh[i] = g[i] + 2 * hp;
                    h[i] = a->state + (ptrdiff_t)rb[i] * 2 * hp;
                    tmp[i] = a->state + (ptrdiff_t)rb[i] * 2 * hp + hp;
                    rbhs[i] = rbh;
                }
                ember_rnn_gemm(g, (const float *const *)g, bias, h, rp, n, 2 * hp / EMBER_RNN_PW, m);
                if (lbr) {
                    ember_rnn_gemm(tmp, rbhs, 0, h, rh, n, hp / EMBER_RNN_PW, m);
                    if (bias)
                        for (i = 0; i < m; ++i)
                            for (j = 0; j < n; ++j) g[i][2 * hp + j] += bias[2 * hp + j];
                } else {
                    for (i = 0; i < m; ++i) {
                        if (fast) ember_gru_zr(g[i], tmp[i], h[i], n, hp, 0.0f, 0, 0, EMBER_RNN_SIGMOID, 0.0f, 0.0f);
                        else ember_gru_zr(g[i], tmp[i], h[i], n, hp, a->clip, 1, 1, k[0], al[0], be[0]);
                    }
                    ember_rnn_gemm(gh, (const float *const *)gh, bias ? bias + 2 * hp : 0, (const float *const *)tmp,
                                   rh, n, hp / EMBER_RNN_PW, m);
                }
                for (i = 0; i < m; ++i) {
                    float *hi = a->state + (ptrdiff_t)rb[i] * 2 * hp;
                    if (fast)
                        ember_gru_out(hi, g[i], tmp[i], n, hp, 0.0f, 0, lbr, 0, EMBER_RNN_SIGMOID, 0.0f, 0.0f,
                                      EMBER_RNN_TANH, 0.0f, 0.0f);
                    else
                        ember_gru_out(hi, g[i], tmp[i], n, hp, a->clip, 1, lbr, 1, k[0], al[0], be[0], k[1], al[1],
                                      be[1]);
                    if (a->y) {
                        float *y = a->y + ember_rnn_yat(a, rt[i], d, rb[i]);
                        for (j = 0; j < n; ++j) y[j] = hi[j];
                    }
                }
            }
        for (b = 0; b < a->batch; ++b)
            ember_rnn_finish(a, d, b, ember_rnn_len(a, b), a->state + (ptrdiff_t)b * 2 * hp, 0);
    }
}
/*@end*/

/*@kernel ember_rnn_f32 requires ember_rnn_core*/
static void ember_rnn_f32(const ember_rnn_args *a) {
    const int n = a->hidden, hp = a->hp, width = a->dirs * hp;
    int d, b, s, i, j, next, m, rb[EMBER_RNN_MR], rt[EMBER_RNN_MR];
    float *g[EMBER_RNN_MR];
    const float *h[EMBER_RNN_MR];
    for (d = 0; d < a->dirs; ++d) {
        const float *rp = a->rp + (ptrdiff_t)d * hp * n, *bias = ember_rnn_bias(a, d, 1);
        const int kind = a->act[d][0], clipping = ember_rnn_clipping(a);
        const float al = a->alpha[d][0], be = a->beta[d][0];
        for (b = 0; b < a->batch; ++b) /* entry b's h at state + b * 2 * hp */
            ember_rnn_init_state(a, a->state + (ptrdiff_t)b * 2 * hp, a->h0, d, b);
        for (s = 0; s < a->seq; ++s)
            for (next = 0; (m = ember_rnn_rows(a, d, s, &next, rb, rt)) > 0;) {
                for (i = 0; i < m; ++i) {
                    g[i] = a->xw + ember_rnn_xrow(a, rt[i], rb[i]) * width + (ptrdiff_t)d * hp;
                    h[i] = a->state + (ptrdiff_t)rb[i] * 2 * hp;
                }
                ember_rnn_gemm(g, (const float *const *)g, bias, h, rp, n, hp / EMBER_RNN_PW, m);
                for (i = 0; i < m; ++i) {
                    float *hi = a->state + (ptrdiff_t)rb[i] * 2 * hp;
                    if (kind == EMBER_RNN_TANH && !clipping)
                        for (j = 0; j < n; ++j) hi[j] = ember_rnn_tanh(g[i][j]);
                    else
                        for (j = 0; j < n; ++j)
                            hi[j] = ember_rnn_act_any(ember_rnn_clip(g[i][j], a->clip, 1), kind, al, be);
                    if (a->y) {
                        float *y = a->y + ember_rnn_yat(a, rt[i], d, rb[i]);
                        for (j = 0; j < n; ++j) y[j] = hi[j];
                    }
                }
            }
        for (b = 0; b < a->batch; ++b)
            ember_rnn_finish(a, d, b, ember_rnn_len(a, b), a->state + (ptrdiff_t)b * 2 * hp, 0);
    }
}
/*@end*/
