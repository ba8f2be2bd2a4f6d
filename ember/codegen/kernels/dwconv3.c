/* 3x3 depthwise convolutions with pads 1 at stride 1 or 2 (MobileNet's): the fast paths of
 * ember_dwconv_f32 (dwconv.c), which runs every other geometry. */

/*@kernel ember_dw3_common requires ember_simd*/
/* 3x3 depthwise convolutions with pads 1 at stride 1 or 2 (MobileNet's), written straight into the
 * output plane: a run of outputs is one flat vector loop at the output's own pitch OW, with no per-row
 * loops and no copy-out. A tap that would wrap around a row (the left column at ow = 0, the right one
 * at ow = OW - 1) is cleared with a bit mask (an AND, so an Inf or NaN in the wrapped element cannot
 * leak in); rows above and below the plane are zero rows of a scratch copy. Bias and Relu/Clip are
 * applied in registers. A ragged last vector overlaps the previous one (its outputs are recomputed). */
#if EMBER_VL > 1
typedef int ember_dw_vi __attribute__((vector_size(EMBER_VL * 4)));
typedef int ember_dw_vi_u __attribute__((vector_size(EMBER_VL * 4), aligned(4)));
#define EMBER_DW_LD(ptr) (*(const ember_vf *)(const void *)(ptr))
#define EMBER_DW_ST(ptr, v) (*(ember_vf *)(void *)(ptr) = (v))
#define EMBER_DW_MASK(v, ptr) ((ember_vf)((ember_dw_vi)(v) & (ember_dw_vi)(*(const ember_dw_vi_u *)(const void *)(ptr))))
#if EMBER_VL == 16
#define EMBER_DW_EVEN 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30
#define EMBER_DW_ODD 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31
#define EMBER_DW_PREV 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30
#define EMBER_DW_NEXT 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16
#elif EMBER_VL == 8
#define EMBER_DW_EVEN 0, 2, 4, 6, 8, 10, 12, 14
#define EMBER_DW_ODD 1, 3, 5, 7, 9, 11, 13, 15
#define EMBER_DW_PREV 7, 8, 9, 10, 11, 12, 13, 14
#define EMBER_DW_NEXT 1, 2, 3, 4, 5, 6, 7, 8
#else
#define EMBER_DW_EVEN 0, 2, 4, 6
#define EMBER_DW_ODD 1, 3, 5, 7
#define EMBER_DW_PREV 3, 4, 5, 6
#define EMBER_DW_NEXT 1, 2, 3, 4
#endif
/* EMBER_VL of the 2*EMBER_VL floats of vectors a, b: the even or odd ones (a row's column phases), or
 * those one before or one after b's (the row shifted right or left by one column). */
#if EMBER_CLANG
#define EMBER_DW_PICK(a, b, IDX) __builtin_shufflevector(a, b, IDX)
#else
#define EMBER_DW_PICK(a, b, IDX) __builtin_shuffle(a, b, (ember_dw_vi){IDX})
#endif
#define EMBER_DW_PREFETCH(ptr) __builtin_prefetch(ptr)
#else
#define EMBER_DW_LD(ptr) (*(ptr))
#define EMBER_DW_ST(ptr, v) (*(ptr) = (v))
#define EMBER_DW_MASK(v, ptr) (*(ptr) ? (v) : 0.0f)
#endif

/* The nine weights and the bias of one channel, broadcast. */
typedef struct {
    ember_vf w[9], b;
} ember_dw3_taps;

/* Relu (clamp 1: below lo) or Clip (clamp 2: also above hi), NaN kept, like ember_act_f32. */
EMBER_INLINE ember_vf ember_dw_clamp(ember_vf v, int clamp, float lo, float hi) {
#if EMBER_VL > 1
    const ember_vf lv = (ember_vf){0} + lo, hv = (ember_vf){0} + hi;
    ember_dw_vi m;
    if (clamp >= 1) {
        m = v < lv;
        v = (ember_vf)(((ember_dw_vi)lv & m) | ((ember_dw_vi)v & ~m));
    }
    if (clamp == 2) {
        m = v > hv;
        v = (ember_vf)(((ember_dw_vi)hv & m) | ((ember_dw_vi)v & ~m));
    }
    return v;
#else
    if (clamp >= 1) v = v < lo ? lo : v;
    if (clamp == 2) v = v > hi ? hi : v;
    return v;
#endif
}

/* dst[0..n) = src[0..n), n >= EMBER_VL. */
EMBER_INLINE void ember_dw_copy(float *EMBER_RESTRICT dst, const float *EMBER_RESTRICT src, ptrdiff_t n) {
    ptrdiff_t q;
    for (q = 0; q < n; q += EMBER_VL) {
        if (q > n - EMBER_VL) q = n - EMBER_VL;
        EMBER_DW_ST(dst + q, EMBER_DW_LD(src + q));
    }
}
/*@end*/

/*@kernel ember_dwconv3_f32 requires ember_dw3_common ember_dw3_blocked ember_act_apply_f32 ember_conv_geo*/
/* What every run of one call shares: col[k] = (k % W != 0) for k <= W + EMBER_VL, which masks the taps
 * left of column 0 (col + r, r = the column of a vector's first output) and, at stride 1, right of
 * column W - 1 (col + r + 1); step = EMBER_VL % W; the clamp. */
typedef struct {
    const int *col;
    int W, step, clamp;
    float lo, hi;
} ember_dw3_ctx;

/* A run: the outputs y[0..len) (pitch W), the first in column r0 and the vector at len - EMBER_VL in
 * column r_last (precomputed per call: no division here); if len < EMBER_VL that vector starts before
 * y, in outputs computed before (same values). Stride 1: s is the input element under y[0], with the
 * rows above and below and W + EMBER_VL floats before and after readable. With vectors, each of the
 * three rows is loaded once per vector and its copies shifted by one column for the left and right taps
 * are made from it and its neighbours, kept in registers; the ragged end (and, without vectors,
 * everything) loads the shifted rows directly. */
EMBER_INLINE void ember_dw3s1_run(float *EMBER_RESTRICT y, const float *s, ptrdiff_t len, int r0, int r_last,
                                  const ember_dw3_taps *t, const ember_dw3_ctx *cx) {
    const int *col = cx->col, W = cx->W;
    ptrdiff_t q = 0;
    int r = r0;
#if EMBER_VL > 1
    ember_vf ua = EMBER_DW_LD(s - W - EMBER_VL), ma = EMBER_DW_LD(s - EMBER_VL), da = EMBER_DW_LD(s + W - EMBER_VL);
    ember_vf ub = EMBER_DW_LD(s - W), mb = EMBER_DW_LD(s), db = EMBER_DW_LD(s + W);
    for (; q + EMBER_VL <= len; q += EMBER_VL) {
        const float *pc = s + q + EMBER_VL;
        const ember_vf uc = EMBER_DW_LD(pc - W), mc = EMBER_DW_LD(pc), dc = EMBER_DW_LD(pc + W);
        const ember_vf l = t->w[0] * EMBER_DW_PICK(ua, ub, EMBER_DW_PREV) + t->w[3] * EMBER_DW_PICK(ma, mb, EMBER_DW_PREV) +
                           t->w[6] * EMBER_DW_PICK(da, db, EMBER_DW_PREV);
        const ember_vf rt = t->w[2] * EMBER_DW_PICK(ub, uc, EMBER_DW_NEXT) + t->w[5] * EMBER_DW_PICK(mb, mc, EMBER_DW_NEXT) +
                            t->w[8] * EMBER_DW_PICK(db, dc, EMBER_DW_NEXT);
        ember_vf acc = t->b + t->w[1] * ub + t->w[4] * mb + t->w[7] * db;
        acc += EMBER_DW_MASK(l, col + r) + EMBER_DW_MASK(rt, col + r + 1);
        EMBER_DW_ST(y + q, ember_dw_clamp(acc, cx->clamp, cx->lo, cx->hi));
        ua = ub, ub = uc, ma = mb, mb = mc, da = db, db = dc;
        r += cx->step;
        if (r >= W) r -= W;
    }
    if (q == len) return;
    q = len - EMBER_VL, r = r_last;
#endif
    for (;;) {
        const float *p = s + q;
        const ember_vf l = t->w[0] * EMBER_DW_LD(p - W - 1) + t->w[3] * EMBER_DW_LD(p - 1) + t->w[6] * EMBER_DW_LD(p + W - 1);
        const ember_vf rt = t->w[2] * EMBER_DW_LD(p - W + 1) + t->w[5] * EMBER_DW_LD(p + 1) + t->w[8] * EMBER_DW_LD(p + W + 1);
        ember_vf acc = t->b + t->w[1] * EMBER_DW_LD(p - W) + t->w[4] * EMBER_DW_LD(p) + t->w[7] * EMBER_DW_LD(p + W);
        acc += EMBER_DW_MASK(l, col + r) + EMBER_DW_MASK(rt, col + r + 1);
        EMBER_DW_ST(y + q, ember_dw_clamp(acc, cx->clamp, cx->lo, cx->hi));
        if (q + EMBER_VL >= len) return;
        q += EMBER_VL;
        r += cx->step;
        if (r >= W) r -= W;
        if (q > len - EMBER_VL) q = len - EMBER_VL, r = r_last;
    }
}

/* A run at stride 2 (as ember_dw3s1_run): s[2a + b] is the row/column phase plane P[a][b] (pitch W = OW) at
 * y[0]; P[1][*] is read one row up and P[*][1] one column left, and a vector before that (OW + EMBER_VL
 * readable floats before each plane). The left taps are the loaded P[*][1] rows shifted right by one. */
EMBER_INLINE void ember_dw3s2_run(float *EMBER_RESTRICT y, const float *const *s, ptrdiff_t len, int r0, int r_last,
                                  const ember_dw3_taps *t, const ember_dw3_ctx *cx) {
    const int *col = cx->col, W = cx->W;
    const float *p00 = s[0], *p01 = s[1], *p10 = s[2], *p11 = s[3];
    ptrdiff_t q = 0;
    int r = r0;
#if EMBER_VL > 1
    ember_vf ua = EMBER_DW_LD(p11 - W - EMBER_VL), ma = EMBER_DW_LD(p01 - EMBER_VL), da = EMBER_DW_LD(p11 - EMBER_VL);
    for (; q + EMBER_VL <= len; q += EMBER_VL) {
        const ember_vf ub = EMBER_DW_LD(p11 + q - W), mb = EMBER_DW_LD(p01 + q), db = EMBER_DW_LD(p11 + q);
        const ember_vf l = t->w[0] * EMBER_DW_PICK(ua, ub, EMBER_DW_PREV) + t->w[3] * EMBER_DW_PICK(ma, mb, EMBER_DW_PREV) +
                           t->w[6] * EMBER_DW_PICK(da, db, EMBER_DW_PREV);
        ember_vf acc = t->b + t->w[1] * EMBER_DW_LD(p10 + q - W) + t->w[2] * ub + t->w[4] * EMBER_DW_LD(p00 + q) +
                       t->w[5] * mb + t->w[7] * EMBER_DW_LD(p10 + q) + t->w[8] * db;
        acc += EMBER_DW_MASK(l, col + r);
        EMBER_DW_ST(y + q, ember_dw_clamp(acc, cx->clamp, cx->lo, cx->hi));
        ua = ub, ma = mb, da = db;
        r += cx->step;
        if (r >= W) r -= W;
    }
    if (q == len) return;
    q = len - EMBER_VL, r = r_last;
#endif
    for (;;) {
        const float *a00 = p00 + q, *a01 = p01 + q, *a10 = p10 + q, *a11 = p11 + q;
        const ember_vf l = t->w[0] * EMBER_DW_LD(a11 - W - 1) + t->w[3] * EMBER_DW_LD(a01 - 1) + t->w[6] * EMBER_DW_LD(a11 - 1);
        ember_vf acc = t->b + t->w[1] * EMBER_DW_LD(a10 - W) + t->w[2] * EMBER_DW_LD(a11 - W) + t->w[4] * EMBER_DW_LD(a00) +
                       t->w[5] * EMBER_DW_LD(a01) + t->w[7] * EMBER_DW_LD(a10) + t->w[8] * EMBER_DW_LD(a11);
        acc += EMBER_DW_MASK(l, col + r);
        EMBER_DW_ST(y + q, ember_dw_clamp(acc, cx->clamp, cx->lo, cx->hi));
        if (q + EMBER_VL >= len) return;
        q += EMBER_VL;
        r += cx->step;
        if (r >= W) r -= W;
        if (q > len - EMBER_VL) q = len - EMBER_VL, r = r_last;
    }
}

#if EMBER_VL > 1
/* Stride 2 with even W and OW >= EMBER_VL, with no phase planes: each output row from its three input
 * rows, deinterleaved in registers (two vectors of input give a vector of even and one of odd columns);
 * the left taps are the odd columns shifted right by one, carried from the previous vector (zero at the
 * row start). Rows above or below the input read `zero` (W zeros). The ragged last vector of a row loads
 * its left taps directly. */
static void ember_dw3s2_direct(float *EMBER_RESTRICT ym, const float *xc, const float *zero, int H, int W, int OH,
                               int OW, const ember_dw3_taps *t, const ember_dw3_ctx *cx) {
    int oh, ow, k;
    for (oh = 0; oh < OH; ++oh) {
        const float *r[3];
        ember_vf carry[3] = {{0}, {0}, {0}}, ev[3], od[3], acc;
        r[0] = oh ? xc + (ptrdiff_t)(2 * oh - 1) * W : zero, r[1] = xc + (ptrdiff_t)2 * oh * W;
        r[2] = 2 * oh + 1 < H ? r[1] + W : zero;
        for (ow = 0; ow < OW; ow += EMBER_VL) {
            const int tail = ow > OW - EMBER_VL;
            if (tail) ow = OW - EMBER_VL;
            acc = t->b;
            for (k = 0; k < 3; ++k) {
                const float *a = r[k] + 2 * (ptrdiff_t)ow;
                const ember_vf lo = EMBER_DW_LD(a), hi = EMBER_DW_LD(a + EMBER_VL);
                if (k == 2) EMBER_DW_PREFETCH(a + 8 * W), EMBER_DW_PREFETCH(a + 8 * W + EMBER_VL);
                ev[k] = EMBER_DW_PICK(lo, hi, EMBER_DW_EVEN), od[k] = EMBER_DW_PICK(lo, hi, EMBER_DW_ODD);
                if (tail)
                    acc += t->w[3 * k] * EMBER_DW_PICK(EMBER_DW_LD(a - 1), EMBER_DW_LD(a - 1 + EMBER_VL), EMBER_DW_EVEN);
                else
                    acc += t->w[3 * k] * EMBER_DW_PICK(carry[k], od[k], EMBER_DW_PREV);
                acc += t->w[3 * k + 1] * ev[k] + t->w[3 * k + 2] * od[k];
                carry[k] = od[k];
            }
            EMBER_DW_ST(ym + (ptrdiff_t)oh * OW + ow, ember_dw_clamp(acc, cx->clamp, cx->lo, cx->hi));
        }
    }
}
#endif

/* Input row xr (W floats) into its column phases ev, od (rows of OW). With vectors (`vec`: H, W even), a row
 * shorter than two vectors is split as one that reads on into the next rows (while inside [.., end))
 * and writes past its end into rows or a margin written later. */
EMBER_INLINE void ember_dw_split_row(float *ev, float *od, const float *xr, int W, int OW, int vec, const float *end) {
    int j;
#if EMBER_VL > 1
    if (vec && (OW >= EMBER_VL || xr + 2 * EMBER_VL <= end)) {
        const ptrdiff_t pf = 8 * (ptrdiff_t)W;
        for (j = 0; j < OW; j += EMBER_VL) {
            ember_vf a, b;
            if (OW >= EMBER_VL && j > OW - EMBER_VL) j = OW - EMBER_VL;
            EMBER_DW_PREFETCH(xr + 2 * j + pf);
            EMBER_DW_PREFETCH(xr + 2 * j + EMBER_VL + pf);
            a = EMBER_DW_LD(xr + 2 * j);
            b = EMBER_DW_LD(xr + 2 * j + EMBER_VL);
            EMBER_DW_ST(ev + j, EMBER_DW_PICK(a, b, EMBER_DW_EVEN));
            EMBER_DW_ST(od + j, EMBER_DW_PICK(a, b, EMBER_DW_ODD));
        }
        return;
    }
#else
    (void)vec, (void)end;
#endif
    for (j = 0; j < W / 2; ++j) {
        ev[j] = xr[2 * j];
        od[j] = xr[2 * j + 1];
    }
    if (W & 1) ev[OW - 1] = xr[W - 1];
}

/* Input rows [i0, i1) of plane xc into the phase planes at buf (each after g zeros, ps apart). */
EMBER_INLINE void ember_dw_split_rows(float *buf, ptrdiff_t ps, ptrdiff_t g, const float *xc, int i0, int i1, int W,
                                      int OW, int vec, const float *end) {
    int i;
    for (i = i0; i < i1; ++i) {
        float *row = buf + (i & 1) * 2 * ps + g + (ptrdiff_t)(i >> 1) * OW;
        ember_dw_split_row(row, row + ps, xc + (ptrdiff_t)i * W, W, OW, vec, end);
    }
}

/* Runs a 2-D depthwise conv whose geometry has a fast path here and returns 1, else returns 0.
 * Small planes (multiplier 1) go EMBER_VL channels at a time (ember_dw3_blocked, dwconv.c), the rest
 * plane by plane. Stride 2 with even W and rows of at least a vector reads its input rows directly
 * (ember_dw3s2_direct). Otherwise the scratch holds, after OW + EMBER_VL + 1 ints (col), the input
 * copies: stride 1, the whole plane inside zero rows, or for big planes only its first and last rows
 * (the rest is read in place); stride 2, the four phase planes, each after OW + EMBER_VL + 1 zeros and
 * before a margin of EMBER_VL, filled in chunks of output rows for big planes. Small planes are copied
 * one input plane ahead into two alternating buffers, so that the taps never wait for stores still in
 * flight; after those buffers come the blocked path's grid, outputs and weights. */
static int ember_dwconv3_f32(float *y, const float *x, const float *w, const float *bias, float *scratch,
                             const int32_t *p, int N, int M, int act, float act_a, float act_b) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], OH = p[EMBER_GEO_OUT_H],
              OW = p[EMBER_GEO_OUT_W], s = p[EMBER_GEO_STRIDE_H], mult = M / C;
    const ptrdiff_t n = (ptrdiff_t)OH * OW, in_plane = (ptrdiff_t)H * W, count = (ptrdiff_t)N * C;
    const float *x_end = x + count * in_plane;
    float *buf = scratch + OW + EMBER_VL + 1;
    /* stride 1: zero guards of G; the outputs [0, T) and [n - T, n) of a big plane read copies of its top
     * and bottom rows */
    const ptrdiff_t G = W + EMBER_VL + 1, T = G, gs = OW + EMBER_VL + 1, ps = gs + n + EMBER_VL;
    const int split = n - 2 * T >= 4 * EMBER_VL && n >= 2048;
    /* stride 2: output rows per chunk (about 512 outputs); rows split with vectors */
    const int rows = OW >= 512 ? 1 : 512 / OW, vec = !(H & 1) && !(W & 1), chunked = OH > rows;
    const ptrdiff_t size = s == 1 ? (split ? 2 * (T + 2 * G) : n + 2 * G) : 4 * ps;
    const int direct = EMBER_VL > 1 && s == 2 && !(W & 1) && OW >= EMBER_VL;
    const int ahead = s == 1 ? !split : !chunked && !direct;
    int r_top = 0, r_mid = 0, r_mid_last = 0, r_bot = 0, r_end, ci, k, i;
    ember_dw3_ctx cx;
    ember_dw3_taps t;
    ptrdiff_t q, j, j0 = 0;
    if (p[EMBER_GEO_K_H] != 3 || p[EMBER_GEO_K_W] != 3 || p[EMBER_GEO_DIL_H] != 1 || p[EMBER_GEO_DIL_W] != 1 ||
        p[EMBER_GEO_PAD_H] != 1 || p[EMBER_GEO_PAD_W] != 1 || p[EMBER_GEO_STRIDE_W] != s || n < EMBER_VL)
        return 0;
    if (s == 1 && OH == H && OW == W) {
        r_top = (int)((T - EMBER_VL) % OW), r_mid = (int)(T % OW);
        r_mid_last = (int)((n - T - EMBER_VL) % OW), r_bot = (int)((n - T) % OW);
    } else if (!(s == 2 && (H == 2 * OH || H == 2 * OH - 1) && (W == 2 * OW || W == 2 * OW - 1))) {
        return 0;
    }
    for (q = 0; q < (ahead ? 2 : 1) * size; ++q) buf[q] = 0.0f; /* incl. a missing last row or column phase */
    cx.col = (int *)(void *)scratch;
    for (q = 0; q <= OW + EMBER_VL; ++q) ((int *)(void *)scratch)[q] = q % OW != 0 ? -1 : 0;
    cx.W = OW, cx.step = EMBER_VL % OW;
    cx.clamp = act == EMBER_ACT_RELU ? 1 : act == EMBER_ACT_CLIP ? 2 : 0;
    cx.lo = act == EMBER_ACT_CLIP ? act_a : 0.0f, cx.hi = act_b;
    r_end = (OW - cx.step) % OW; /* the column of the last vector of a run that ends a row */
#if EMBER_VL > 1
    if (mult == 1 && count >= EMBER_VL && in_plane <= (s == 1 ? 1 : 4) * EMBER_DW3_BLOCKED_PIXELS) {
        const ptrdiff_t cells = (ptrdiff_t)(H + 2) * (W + 2) * EMBER_VL;
        float *grid = buf + 2 * size, *out, *wt;
        grid += (EMBER_VL - (ptrdiff_t)((uintptr_t)grid / 4 % EMBER_VL)) % EMBER_VL; /* vector-aligned */
        out = grid + cells, wt = out + n * EMBER_VL;
        for (q = 0; q < cells; ++q) grid[q] = 0.0f;
        for (; j0 + EMBER_VL <= count; j0 += EMBER_VL)
            ember_dw3_blocked(y, x, w, bias, grid, out, wt, p, j0, cx.clamp, cx.lo, cx.hi, act, act_a, act_b);
    }
#endif
    for (j = j0, ci = (int)(j0 % C); j < count; ++j) {
        const float *EMBER_RESTRICT xc = x + j * in_plane;
        float *cur = buf + (ahead ? (j & 1) * size : 0), *next = buf + ((j + 1) & 1) * size;
        if (ahead)
            for (i = j == j0 ? 0 : 1; i < 2 && j + i < count; ++i) {
                if (s == 1) ember_dw_copy((i ? next : cur) + G, xc + i * in_plane, n);
                else ember_dw_split_rows(i ? next : cur, ps, gs, xc + i * in_plane, 0, H, W, OW, vec, x_end);
            }
        for (k = 0; k < mult; ++k) {
            const ptrdiff_t m = (ptrdiff_t)ci * mult + k;
            float *EMBER_RESTRICT ym = y + (j * mult + k) * n;
            for (i = 0; i < 9; ++i) t.w[i] = (ember_vf){0} + w[m * 9 + i];
            t.b = (ember_vf){0} + (bias ? bias[m] : 0.0f);
            if (s == 1 && split) {
                float *top = cur + G, *bot = cur + 3 * G + T;
                if (k == 0) {
                    ember_dw_copy(top, xc, T + G);
                    ember_dw_copy(bot - G, xc + n - T - G, T + G);
                }
                ember_dw3s1_run(ym, top, T, 0, r_top, &t, &cx);
                ember_dw3s1_run(ym + T, xc + T, n - 2 * T, r_mid, r_mid_last, &t, &cx);
                ember_dw3s1_run(ym + n - T, bot, T, r_bot, r_end, &t, &cx);
            } else if (s == 1) {
                ember_dw3s1_run(ym, cur + G, n, 0, r_end, &t, &cx);
            } else if (direct) {
#if EMBER_VL > 1
                ember_dw3s2_direct(ym, xc, buf, H, W, OH, OW, &t, &cx);
#endif
            } else {
                int oh0, oh1;
                for (oh0 = 0; oh0 < OH; oh0 = oh1) {
                    const float *at[4];
                    const ptrdiff_t q0 = (ptrdiff_t)oh0 * OW;
                    oh1 = OH - oh0 > rows ? oh0 + rows : OH;
                    if (!ahead && k == 0)
                        ember_dw_split_rows(cur, ps, gs, xc, 2 * oh0, 2 * oh1 < H ? 2 * oh1 : H, W, OW, vec, x_end);
                    /* a last chunk shorter than a vector has its one vector start in rows split before */
                    for (i = 0; i < 4; ++i) at[i] = cur + i * ps + gs + q0;
                    ember_dw3s2_run(ym + q0, at, (ptrdiff_t)(oh1 - oh0) * OW, 0, r_end, &t, &cx);
                }
            }
            if (!cx.clamp) ember_act_apply_f32(ym, n, act, act_a, act_b);
        }
        if (++ci == C) ci = 0;
    }
    return 1;
}
/*@end*/
