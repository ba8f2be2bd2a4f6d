/* The transformer operators, float32: scaled dot-product Attention (with its KV cache concatenation),
 * RMSNormalization and RotaryEmbedding. */

/*@kernel ember_attention_kv_f32 requires ember_prelude*/
/* present[b, h, t, :] = past[b, h, t, :] for t < P, else x's row t - P of head h: the cache K or V of
 * B x H heads, P + S rows of D values. x is 4-D [B, H, S, D] or 3-D [B, S, H * D]: its batch, head and
 * row strides say which. past may be NULL when P is 0. */
static void ember_attention_kv_f32(float *EMBER_RESTRICT present, const float *past, const float *x, int B, int H,
                                   int P, int S, int D, ptrdiff_t x_sb, ptrdiff_t x_sh, ptrdiff_t x_ss) {
    int b, h, t, d;
    for (b = 0; b < B; ++b)
        for (h = 0; h < H; ++h) {
            float *dst = present + ((ptrdiff_t)b * H + h) * (P + S) * D;
            const float *src = x + b * x_sb + h * x_sh;
            for (t = 0; t < P; ++t)
                for (d = 0; d < D; ++d)
                    dst[(ptrdiff_t)t * D + d] = past[(((ptrdiff_t)b * H + h) * P + t) * D + d];
            for (t = 0; t < S; ++t)
                for (d = 0; d < D; ++d) dst[(ptrdiff_t)(P + t) * D + d] = src[t * x_ss + d];
        }
}
/*@end*/

/*@kernel ember_attention_f32 requires ember_matmul_core ember_expf ember_tanhf*/
/* Entries of the int32 geometry table (ember/ops/attention.py writes it in this order). */
#define EMBER_ATT_B 0        /* batch */
#define EMBER_ATT_HQ 1       /* query heads */
#define EMBER_ATT_HKV 2      /* key/value heads (divides HQ: GQA / MQA) */
#define EMBER_ATT_SQ 3       /* query rows */
#define EMBER_ATT_T 4        /* key/value rows (past + new) */
#define EMBER_ATT_D 5        /* Q/K head size */
#define EMBER_ATT_DV 6       /* V head size */
#define EMBER_ATT_Q_SB 7     /* Q strides: batch, head, row (values within a row are contiguous) */
#define EMBER_ATT_Q_SH 8
#define EMBER_ATT_Q_SS 9
#define EMBER_ATT_K_SB 10
#define EMBER_ATT_K_SH 11
#define EMBER_ATT_K_SS 12
#define EMBER_ATT_V_SB 13
#define EMBER_ATT_V_SH 14
#define EMBER_ATT_V_SS 15
#define EMBER_ATT_Y_SB 16
#define EMBER_ATT_Y_SH 17
#define EMBER_ATT_Y_SS 18
#define EMBER_ATT_M_SB 19    /* mask strides (0: broadcast) for batch, query head, query row */
#define EMBER_ATT_M_SH 20
#define EMBER_ATT_M_SQ 21
#define EMBER_ATT_M_LEN 22   /* mask columns; keys at or past it are masked (0: no mask) */
#define EMBER_ATT_CAUSAL 23
#define EMBER_ATT_PAST 24    /* cached rows ahead of the new ones: the causal / window offset */
#define EMBER_ATT_LEFT 25    /* window bounds, -1: unbounded */
#define EMBER_ATT_RIGHT 26
#define EMBER_ATT_QK_MODE 27 /* what qk_out holds: 0 scores, 1 soft-capped, 2 plus bias, 3 probabilities */
#define EMBER_ATT_BQ 28      /* query rows per block: the scores in scratch are BQ x T, not SQ x T */
#define EMBER_ATT_SIZE 29

/* The additive bias of query row i (absolute position i + offset) over the first T keys: the mask (boolean:
 * 0 or -inf; float: its value; -inf past its last column), causal frontier, window and padding. Returns
 * whether any key is left (a row with none attends nothing and gives zeros, not NaN). */
static int ember_attention_bias(float *bias, const int32_t *g, const float *mask_f, const uint8_t *mask_b,
                                int b, int hq, int i, int64_t offset, int valid, int T) {
    const int len = g[EMBER_ATT_M_LEN];
    const int64_t p = i + offset, left = g[EMBER_ATT_LEFT], right = g[EMBER_ATT_RIGHT];
    const int causal = g[EMBER_ATT_CAUSAL];
    const ptrdiff_t m0 = (ptrdiff_t)b * g[EMBER_ATT_M_SB] + (ptrdiff_t)hq * g[EMBER_ATT_M_SH] +
                         (ptrdiff_t)i * g[EMBER_ATT_M_SQ];
    const float ninf = -__builtin_inff();
    int j, live = 0;
    if (!mask_f && !mask_b && !causal && left < 0 && right < 0 && valid >= T) { /* every key, no bias */
        for (j = 0; j < T; ++j) bias[j] = 0.0f;
        return T > 0;
    }
    for (j = 0; j < T; ++j) {
        float v = 0.0f;
        if (mask_f || mask_b) {
            if (j >= len) v = ninf;
            else if (mask_b) v = mask_b[m0 + j] ? 0.0f : ninf;
            else v = mask_f[m0 + j];
        }
        if ((causal && j > p) || (left >= 0 && p - j > left) || (right >= 0 && j - p > right) || j >= valid)
            v = ninf;
        bias[j] = v;
        live |= v != ninf;
    }
    return live;
}

#if EMBER_VL > 1
typedef int32_t ember_att_vi __attribute__((vector_size(EMBER_VL * 4)));
typedef uint32_t ember_att_vu __attribute__((vector_size(EMBER_VL * 4)));
#endif
/* s[j] += bias[j] over T scores (bias NULL: none, the scores are only scanned); returns the largest (-inf for
 * none; NaN is passed over). With vectors (AVX2, AVX-512, NEON) the maximum is taken in vector lanes: GCC leaves a
 * float max reduction scalar, and this loop and the exponentials below were most of the row's time in a BERT
 * encoder (T = 128). */
EMBER_INLINE float ember_attention_add_max(float *s, const float *bias, int T) {
    float m = -__builtin_inff();
    int j = 0;
#if EMBER_VL > 1
    if (T >= EMBER_VL) {
        ember_vf mv = (ember_vf){0} + m;
        for (; j + EMBER_VL <= T; j += EMBER_VL) {
            ember_vf v = *(const ember_vf *)(s + j);
            ember_att_vi gt;
            if (bias) {
                v += *(const ember_vf *)(bias + j);
                *(ember_vf *)(s + j) = v;
            }
            gt = v > mv;
            mv = (ember_vf)(((ember_att_vi)v & gt) | ((ember_att_vi)mv & ~gt));
        }
        for (int l = 0; l < EMBER_VL; ++l) m = mv[l] > m ? mv[l] : m;
    }
#endif
    for (; j < T; ++j) {
        if (bias) s[j] += bias[j];
        m = s[j] > m ? s[j] : m;
    }
    return m;
}


/* e^x for the softmax's x = s - max <= 0 (or NaN): x clamped at -87 (a weight of 2^-126 where the true one
 * is smaller, against a row sum of at least 1), so 2^k is one exponent field: half of ember_expf's
 * operations, whose range clamps and two-factor scaling cover all of float. Degree-7 polynomial on
 * |r| <= ln2 / 2, as there. */
EMBER_INLINE float ember_attention_exp(float x) {
    const float shift = 12582912.0f, xc = x < -87.0f ? -87.0f : x;
    const float kf = xc * 1.44269502162933349609f + shift, k = kf - shift;
    const uint32_t ki = ember_as_u32(kf) - ember_as_u32(shift);
    const float r = (xc - k * 0.693145751953125f) - k * 1.428606765330187045e-06f, r2 = r * r;
    const float p = (1.0f + r) + r2 * ((0.5f + r * 1.66666666666666667e-1f) +
                                       r2 * ((4.16666666666666667e-2f + r * 8.33333333333333333e-3f) +
                                             r2 * (1.38888888888888889e-3f + r * 1.98412698412698413e-4f)));
    return p * ember_as_f32((ki + 127u) << 23);
}

#if EMBER_VL > 1
/* ember_attention_exp of s - m on a vector, and 0 where s is -inf (a masked key), as the row pass below takes it
 * (GCC left the scalar loop scalar: on AVX-512 the row pass was half of ViT-Tiny's attention time). */
EMBER_INLINE ember_vf ember_attention_vexp(ember_vf s, float m) {
    const ember_vf shift = (ember_vf){0} + 12582912.0f, lo = (ember_vf){0} - 87.0f, x = s - m;
    const ember_att_vi below = x < lo, masked = s == -__builtin_inff();
    const ember_vf xc = (ember_vf)((below & (ember_att_vi)lo) | (~below & (ember_att_vi)x));
    const ember_vf kf = xc * 1.44269502162933349609f + shift, k = kf - shift;
    const ember_att_vu ki = (ember_att_vu)kf - (ember_att_vu)shift;
    const ember_vf r = (xc - k * 0.693145751953125f) - k * 1.428606765330187045e-06f, r2 = r * r;
    const ember_vf p = (1.0f + r) + r2 * ((0.5f + r * 1.66666666666666667e-1f) +
                                          r2 * ((4.16666666666666667e-2f + r * 8.33333333333333333e-3f) +
                                                r2 * (1.38888888888888889e-3f + r * 1.98412698412698413e-4f)));
    return (ember_vf)((ember_att_vi)(p * (ember_vf)((ki + 127u) << 23)) & ~masked);
}
#endif

/* s[j] = e^(s[j] - m) over T scores, 0 for a masked key (-inf); returns their sum (in vector lanes, then the
 * rest). */
EMBER_INLINE float ember_attention_exp_sum(float *s, int T, float m) {
    const float ninf = -__builtin_inff();
    float sum = 0.0f;
    int j = 0;
#if EMBER_VL > 1
    if (T >= EMBER_VL) {
        ember_vf sv = (ember_vf){0};
        for (; j + EMBER_VL <= T; j += EMBER_VL) {
            const ember_vf e = ember_attention_vexp(*(const ember_vf *)(s + j), m);
            *(ember_vf *)(s + j) = e;
            sv += e;
        }
        for (int l = 0; l < EMBER_VL; ++l) sum += sv[l];
    }
#endif
    for (; j < T; ++j) {
        s[j] = s[j] == ninf ? 0.0f : ember_attention_exp(s[j] - m);
        sum += s[j];
    }
    return sum;
}

/* Softcap, bias (NULL: none) and a numerically stable softmax over one row of T scores, in place; the stage
 * the mode asks for is copied to qk (when not NULL). A fully masked row becomes zeros. Returns the factor
 * that normalizes the row (1 / the sum of its exponentials, 0 for a masked row): the row is left
 * unnormalized unless `normalize` (or qk wants probabilities), and the caller scales the row of the output
 * instead, DV values rather than T. */
static float ember_attention_row(float *s, float *qk, const float *bias, int T, int live, float softcap, int mode,
                                 int normalize) {
    const float ninf = -__builtin_inff();
    float m, r;
    int j;
    if (qk && mode == 0)
        for (j = 0; j < T; ++j) qk[j] = s[j];
    if (softcap > 0.0f)
        for (j = 0; j < T; ++j) s[j] = softcap * ember_tanhf(s[j] / softcap);
    if (qk && mode == 1)
        for (j = 0; j < T; ++j) qk[j] = s[j];
    m = ember_attention_add_max(s, bias, T);
    if (qk && mode == 2)
        for (j = 0; j < T; ++j) qk[j] = s[j];
    if (!live || m == ninf) {
        for (j = 0; j < T; ++j) s[j] = 0.0f;
        r = 0.0f;
    } else {
        /* Masked keys (-inf) weigh exactly 0; the largest score is subtracted so nothing overflows. */
        r = 1.0f / ember_attention_exp_sum(s, T, m);
    }
    if (qk && mode == 3) {
        for (j = 0; j < T; ++j) s[j] *= r;
        for (j = 0; j < T; ++j) qk[j] = s[j];
        return 1.0f;
    }
    if (normalize) {
        for (j = 0; j < T; ++j) s[j] *= r;
        return 1.0f;
    }
    return r;
}

/* Y = softmax(scale * Q K^T + bias) V for every batch and query head; query head h reads key/value head
 * h / (HQ / HKV). Per key/value head, scale * K^T is packed once in scratch as the matmul's compile-time
 * panels (EMBER_MM_PANEL columns = keys each, zero past T: TP = T rounded up to the panel), and V too when DV
 * is a multiple of the panel; so no query block packs a strip of either again. The query rows then go in
 * blocks of BQ (a multiple of every EMBER_MR: whole register tiles): scores (BQ x TP in scratch) by one
 * matmul, the row pass above, the unnormalized probabilities times V by a second matmul straight into Y,
 * and each row of Y scaled by its softmax factor. `nonpad` (NULL: none) holds each batch's count of valid
 * keys: later keys are masked and, without a cache (PAST 0), the causal frontier is nonpad - SQ. qk_out
 * (NULL: none) is [B, HQ, SQ, T].
 * scratch: D * TP + BQ * TP + TP + BQ floats, plus T * DV when DV is a multiple of the panel (ops/attention.py
 * allocates for TP rounded up to 32, the widest panel). */
static void ember_attention_f32(float *Y, const float *Q, const float *K, const float *V, const int32_t *g,
                                float scale, float softcap, const float *mask_f, const uint8_t *mask_b,
                                const int64_t *nonpad, float *qk_out, float *scratch) {
    const int B = g[EMBER_ATT_B], HQ = g[EMBER_ATT_HQ], HKV = g[EMBER_ATT_HKV], SQ = g[EMBER_ATT_SQ];
    const int T = g[EMBER_ATT_T], D = g[EMBER_ATT_D], DV = g[EMBER_ATT_DV], BQ = g[EMBER_ATT_BQ];
    const int group = HQ / HKV, mode = g[EMBER_ATT_QK_MODE], P = EMBER_MM_PANEL, TP = (T + P - 1) / P * P;
    const int v_panels = DV % P == 0;
    const ptrdiff_t y_ss = g[EMBER_ATT_Y_SS];
    float *kt = scratch, *s = kt + (ptrdiff_t)D * TP, *bias = s + (ptrdiff_t)BQ * TP, *rs = bias + TP;
    float *vp = rs + BQ;
    int b, hk, hq, i0, r, t, d;
    for (b = 0; b < B; ++b) {
        /* Keys past nonpad[b] are padding; the causal offset counts the valid keys before the queries. */
        const int64_t nv = nonpad ? nonpad[b] : T;
        const int valid = nv < 0 ? 0 : nv > T ? T : (int)nv;
        /* (clamped far beyond any position first, so the subtraction cannot overflow) */
        const int64_t far = (int64_t)1 << 40;
        const int64_t offset = nonpad ? (nv < -far ? -far : nv > far ? far : nv) - SQ : g[EMBER_ATT_PAST];
        for (hk = 0; hk < HKV; ++hk) {
            const float *kb = K + b * (ptrdiff_t)g[EMBER_ATT_K_SB] + hk * (ptrdiff_t)g[EMBER_ATT_K_SH];
            const float *vb = V + b * (ptrdiff_t)g[EMBER_ATT_V_SB] + hk * (ptrdiff_t)g[EMBER_ATT_V_SH];
            for (t = 0; t < TP; ++t) {
                float *dst = kt + (ptrdiff_t)(t / P) * D * P + t % P;
                const float *kr = kb + (ptrdiff_t)t * g[EMBER_ATT_K_SS];
                for (d = 0; d < D; ++d) dst[(ptrdiff_t)d * P] = t < T ? scale * kr[d] : 0.0f;
            }
            if (v_panels)
                for (d = 0; d < DV; d += P)
                    for (t = 0; t < T; ++t) {
                        const float *vr = vb + (ptrdiff_t)t * g[EMBER_ATT_V_SS] + d;
                        float *dst = vp + (ptrdiff_t)d * T + (ptrdiff_t)t * P;
                        int c;
                        for (c = 0; c < P; ++c) dst[c] = vr[c]; /* a panel row: P contiguous values */
                    }
            for (hq = hk * group; hq < (hk + 1) * group; ++hq) {
                const float *qb = Q + b * (ptrdiff_t)g[EMBER_ATT_Q_SB] + hq * (ptrdiff_t)g[EMBER_ATT_Q_SH];
                float *yb = Y + b * (ptrdiff_t)g[EMBER_ATT_Y_SB] + hq * (ptrdiff_t)g[EMBER_ATT_Y_SH];
                for (i0 = 0; i0 < SQ; i0 += BQ) {
                    const int rows = SQ - i0 < BQ ? SQ - i0 : BQ;
                    int normalize, plain;
                    /* Keys no row of the block can see (past the causal frontier of its last row, or padding)
                     * are left out of both products: half the work of a causal prefill. Not when the scores
                     * are an output: they are wanted for every key. */
                    int tn = T;
                    if (!qk_out) {
                        const int64_t frontier = i0 + rows + offset;
                        if (g[EMBER_ATT_CAUSAL] && frontier < tn) tn = frontier < 0 ? 0 : (int)frontier;
                        if (valid < tn) tn = valid;
                    }
                    if (tn == 0) { /* every row of the block is fully masked */
                        for (r = 0; r < rows; ++r)
                            for (d = 0; d < DV; ++d) yb[(ptrdiff_t)(i0 + r) * y_ss + d] = 0.0f;
                        continue;
                    }
                    /* Scores for whole panels: the columns past tn are computed (zeros, or keys no row
                     * sees) and never read. */
                    ember_matmul_core(s, TP, qb + (ptrdiff_t)i0 * g[EMBER_ATT_Q_SS], g[EMBER_ATT_Q_SS], 1, kt, 0, 0, 1,
                                      rows, (tn + P - 1) / P * P, D, 1.0f, 0, 0, 0, 0.0f, 0, 0.0f, 0.0f);
                    /* No bias at all (no mask, causality, window or padding in reach): nothing to add. */
                    plain = !mask_f && !mask_b && !g[EMBER_ATT_CAUSAL] && g[EMBER_ATT_LEFT] < 0 &&
                            g[EMBER_ATT_RIGHT] < 0 && valid >= tn;
                    /* The rows are scaled after the product only where it writes Y in place of the scaled
                     * probabilities; a row's factor is then applied to DV values instead of tn. */
                    normalize = qk_out != 0;
                    for (r = 0; r < rows; ++r) {
                        const int i = i0 + r;
                        float *qk = qk_out ? qk_out + (((ptrdiff_t)b * HQ + hq) * SQ + i) * T : 0;
                        const int live = plain || ember_attention_bias(bias, g, mask_f, mask_b, b, hq, i, offset,
                                                                       valid, tn);
                        rs[r] = ember_attention_row(s + (ptrdiff_t)r * TP, qk, plain ? 0 : bias, tn, live, softcap,
                                                    mode, normalize);
                    }
                    plain = v_panels && tn == T;
                    ember_matmul_core(yb + (ptrdiff_t)i0 * y_ss, y_ss, s, TP, 1, plain ? vp : vb,
                                      g[EMBER_ATT_V_SS], 0, plain, rows, DV, tn, 1.0f, 0, 0, 0, 0.0f, 0, 0.0f, 0.0f);
                    if (!normalize)
                        for (r = 0; r < rows; ++r) {
                            float *yr = yb + (ptrdiff_t)(i0 + r) * y_ss;
                            for (d = 0; d < DV; ++d) yr[d] *= rs[r];
                        }
                }
            }
        }
    }
}
/*@end*/

/*@kernel ember_rmsnorm_rows_f32 requires ember_sqrtf ember_row_sqdev*/
/* y = x / sqrt(mean(x^2) + eps) * scale over `rows` rows of `len` contiguous values; scale is indexed
 * per element (scale_step 1) or is one value (scale_step 0). */
static void ember_rmsnorm_rows_f32(float *y, const float *x, ptrdiff_t rows, ptrdiff_t len, float eps,
                                   const float *scale, ptrdiff_t scale_step) {
    ptrdiff_t r, i;
    for (r = 0; r < rows; ++r) {
        const float *xr = x + r * len;
        float *yr = y + r * len;
        const float inv = 1.0f / ember_sqrtf(ember_row_sqdev_f32(xr, len, 0.0f) / (float)len + eps);
        for (i = 0; i < len; ++i) yr[i] = xr[i] * inv * scale[i * scale_step];
    }
}
/*@end*/

/*@kernel ember_rotary_f32 requires ember_prelude*/
/* Rotary position embedding of B x S tokens of H heads of D values (x and y laid out alike: batch,
 * head and token strides). The first `rd` values of each head rotate in rd / 2 pairs, (k, k + rd / 2)
 * or, interleaved, (2k, 2k + 1), by the angle whose cosine and sine are row `p` of the caches (rd / 2
 * values each); the rest are copied. p is pos[b * S + s] (clamped to the max_pos rows of the caches)
 * or, when pos is NULL, the token itself: caches of B x S rows. y may be x. */
static void ember_rotary_f32(float *y, const float *x, const float *cos_c, const float *sin_c, const int64_t *pos,
                             int max_pos, int B, int S, int H, int D, int rd, int interleaved, ptrdiff_t sb,
                             ptrdiff_t sh, ptrdiff_t ss) {
    const int half = rd / 2;
    int b, s, h, k, d;
    for (b = 0; b < B; ++b)
        for (s = 0; s < S; ++s) {
            ptrdiff_t row = (ptrdiff_t)b * S + s;
            if (pos) {
                const int64_t p = pos[row];
                row = p < 0 ? 0 : p >= max_pos ? max_pos - 1 : (ptrdiff_t)p;
            }
            const float *c = cos_c + row * half, *sn = sin_c + row * half;
            for (h = 0; h < H; ++h) {
                const ptrdiff_t at = b * sb + h * sh + s * ss;
                const float *xr = x + at;
                float *yr = y + at;
                const int step = interleaved ? 2 : 1, other = interleaved ? 1 : half;
                for (k = 0; k < half; ++k) {
                    const float x1 = xr[k * step], x2 = xr[k * step + other];
                    yr[k * step] = c[k] * x1 - sn[k] * x2;
                    yr[k * step + other] = sn[k] * x1 + c[k] * x2;
                }
                for (d = rd; d < D; ++d) yr[d] = xr[d];
            }
        }
}
/*@end*/

/*@kernel ember_causal_conv_state_f32 requires ember_sigmoidf*/
/* Depthwise causal 1-D convolution of B x C channels of L steps, K taps, with a carried state: each
 * channel's input is its K - 1 past values (past, NULL: zeros) followed by x. y[t] = bias + sum_i
 * w[i] * padded[t + i], then x * sigmoid(x) if `silu`; present (NULL: not wanted) gets the last K - 1
 * values of the padded sequence. */
static void ember_causal_conv_state_f32(float *y, float *present, const float *x, const float *w, const float *bias,
                                        const float *past, int B, int C, int L, int K, int silu) {
    const int carry = K - 1;
    int b, c, t, i;
    for (b = 0; b < B; ++b)
        for (c = 0; c < C; ++c) {
            const ptrdiff_t ch = (ptrdiff_t)b * C + c;
            const float *xc = x + ch * L, *pc = past ? past + ch * carry : 0, *wc = w + (ptrdiff_t)c * K;
            for (t = 0; t < L; ++t) {
                float acc = bias ? bias[c] : 0.0f;
                for (i = 0; i < K; ++i) {
                    const int p = t + i;
                    acc += wc[i] * (p >= carry ? xc[p - carry] : pc ? pc[p] : 0.0f);
                }
                y[ch * L + t] = silu ? acc * ember_sigmoidf(acc) : acc;
            }
            if (present)
                for (i = 0; i < carry; ++i) {
                    const int p = L + i;
                    present[ch * carry + i] = p >= carry ? xc[p - carry] : pc ? pc[p] : 0.0f;
                }
        }
}
/*@end*/

/*@kernel ember_linear_attention_f32 requires ember_expf*/
/* Linear attention's recurrence over T steps for B x HKV state matrices S (DK x DV, float32, kept in
 * `state`: the present_state), started from past (NULL: zeros). Per step: S *= exp(decay) (per key
 * dimension or per head; NULL: no gating); v' = beta * (v - S^T k) (beta per head or one; NULL: v' = v);
 * S += k v'^T; then every query head of the group reads y = scale * S^T q. q, k, v, decay, beta and y
 * are packed [B, T, heads * size]. tmp: DV floats. */
static void ember_linear_attention_f32(float *y, float *state, const float *q, const float *k, const float *v,
                                       const float *past, const float *decay, int decay_per_dim, const float *beta,
                                       int beta_per_head, int B, int T, int HQ, int HKV, int DK, int DV, float scale,
                                       float *tmp) {
    const int group = HQ / HKV;
    const ptrdiff_t size = (ptrdiff_t)DK * DV;
    int b, hk, hq, t, d, m;
    for (b = 0; b < B; ++b)
        for (hk = 0; hk < HKV; ++hk) {
            float *s = state + ((ptrdiff_t)b * HKV + hk) * size;
            for (d = 0; d < DK * DV; ++d) s[d] = past ? past[((ptrdiff_t)b * HKV + hk) * size + d] : 0.0f;
            for (t = 0; t < T; ++t) {
                const ptrdiff_t step = (ptrdiff_t)b * T + t;
                const float *kt = k + (step * HKV + hk) * DK, *vt = v + (step * HKV + hk) * DV;
                if (decay)
                    for (d = 0; d < DK; ++d) {
                        const float g = ember_expf(decay_per_dim ? decay[(step * HKV + hk) * DK + d]
                                                                 : decay[step * HKV + hk]);
                        for (m = 0; m < DV; ++m) s[(ptrdiff_t)d * DV + m] *= g;
                    }
                for (m = 0; m < DV; ++m) {
                    float r = 0.0f;
                    if (beta) {
                        for (d = 0; d < DK; ++d) r += s[(ptrdiff_t)d * DV + m] * kt[d];
                        tmp[m] = beta[beta_per_head ? step * HKV + hk : step] * (vt[m] - r);
                    } else {
                        tmp[m] = vt[m];
                    }
                }
                for (d = 0; d < DK; ++d)
                    for (m = 0; m < DV; ++m) s[(ptrdiff_t)d * DV + m] += kt[d] * tmp[m];
                for (hq = hk * group; hq < (hk + 1) * group; ++hq) {
                    const float *qt = q + (step * HQ + hq) * DK;
                    float *out = y + (step * HQ + hq) * DV;
                    for (m = 0; m < DV; ++m) out[m] = 0.0f;
                    for (d = 0; d < DK; ++d)
                        for (m = 0; m < DV; ++m) out[m] += qt[d] * s[(ptrdiff_t)d * DV + m];
                    for (m = 0; m < DV; ++m) out[m] *= scale;
                }
            }
        }
}
/*@end*/

/*@kernel ember_tensor_scatter requires ember_copy*/
/* The KV cache update: present = past, then row s of every update slice [len rows] is written to row
 * idx[b] + s of the matching cache slice [max_len rows] (idx NULL: 0), modulo max_len when `circular`;
 * rows of `row_bytes`. Each of the `batch` batches holds `slices` slices. A linear write past either end
 * of the cache is dropped (the bundle never writes outside its tensors). present may be past. */
static void ember_tensor_scatter(uint8_t *present, const uint8_t *past, const uint8_t *update, const int64_t *idx,
                                 int batch, ptrdiff_t slices, int max_len, int len, ptrdiff_t row_bytes,
                                 int circular) {
    int b, s;
    ptrdiff_t o;
    if (present != past) ember_copy(present, past, (size_t)(batch * slices * max_len * row_bytes));
    for (b = 0; b < batch; ++b)
        for (s = 0; s < len; ++s) {
            int64_t at = (idx ? idx[b] : 0) + s;
            if (circular) {
                at %= max_len;
                if (at < 0) at += max_len;
            } else if (at < 0 || at >= max_len) {
                continue;
            }
            for (o = 0; o < slices; ++o) {
                const ptrdiff_t slice = (ptrdiff_t)b * slices + o;
                ember_copy(present + (slice * max_len + (ptrdiff_t)at) * row_bytes,
                           update + (slice * len + s) * row_bytes, (size_t)row_bytes);
            }
        }
}
/*@end*/
