/* 1x1 convolutions whose activation the matmul tile cannot apply in registers (Swish, HardSwish, Sigmoid,
 * ...: anything but Relu/Clip). The matmul kernel then runs the activation strip by strip, one call of a
 * few vectors per output row, which cost EfficientNet's and MobileNetV3's expand convolutions as much as
 * their products. Here the product runs over blocks of output columns sized to stay in L2, and the
 * activation over each row of a block in one long loop. */

/*@kernel ember_pw_block requires ember_prelude*/
/* Bytes of output (M rows x block columns) per block: an L2 share, so the activation pass re-reads from L2. */
#define EMBER_PW_BLOCK_BYTES (128 * 1024)
/*@end*/

/*@kernel ember_pointwise_act_f32 requires ember_matmul_f32 ember_pw_block*/
/* y (M x P, row stride y_sm) = act(w (M x C) * x (C x P, row stride x_sm) + bias); bias may be NULL. Blocks
 * are whole multiples of 64 columns (the matmul's strips at every vector width), at least 64; the last one
 * takes the rest. */
static void ember_pointwise_act_f32(float *y, ptrdiff_t y_sm, const float *x, ptrdiff_t x_sm, const float *w,
                                    const float *bias, int M, int C, int P, int act, float act_a, float act_b) {
    const int in_tile = act == EMBER_ACT_NONE || act == EMBER_ACT_RELU || act == EMBER_ACT_CLIP;
    int qb = (int)(EMBER_PW_BLOCK_BYTES / (4 * (ptrdiff_t)M)) / 64 * 64, q0, nq, m;
    if (qb < 64) qb = 64;
    for (q0 = 0; q0 < P; q0 += qb) {
        nq = P - q0 < qb + 64 ? P - q0 : qb; /* a rest under 64 columns joins the last block (no narrow strips) */
        ember_matmul_f32(y + q0, y_sm, w, C, 1, x + q0, x_sm, M, nq, C, 1.0f, bias, 1, 0, 1.0f,
                         in_tile ? act : EMBER_ACT_NONE, act_a, act_b);
        if (!in_tile)
            for (m = 0; m < M; ++m) ember_act_apply_f32(y + (ptrdiff_t)m * y_sm + q0, nq, act, act_a, act_b);
    }
}
/*@end*/

/*@kernel ember_conv_act_f32 requires ember_matmul_f32 ember_im2col_f32 ember_conv_geo ember_pw_block*/
/* The same for an ungrouped im2col convolution of one image (the stems: EfficientNet's 3x3 stride-2 + Swish,
 * MobileNetV3's + HardSwish): ember_conv_f32's im2col blocks, cut to EMBER_PW_BLOCK_BYTES of output (at most
 * `qb`, the pixels `col` has room for), each product then its activation row by row. `ps`: ember_im2col_f32's. */
static void ember_conv_act_f32(float *y, const float *x, const float *w, const float *bias, float *col,
                               const int32_t *p, int M, int qb, int act, float act_a, float act_b, ptrdiff_t ps) {
    const int C = p[EMBER_GEO_C], K = C * p[EMBER_GEO_K_D] * p[EMBER_GEO_K_H] * p[EMBER_GEO_K_W];
    const ptrdiff_t s_out = (ptrdiff_t)p[EMBER_GEO_OUT_D] * p[EMBER_GEO_OUT_H] * p[EMBER_GEO_OUT_W];
    int block = (int)(EMBER_PW_BLOCK_BYTES / (4 * (ptrdiff_t)M)) / 64 * 64, nq, m;
    ptrdiff_t q0;
    if (block < 64) block = 64;
    if (block > qb) block = qb;
    for (q0 = 0; q0 < s_out; q0 += block) {
        nq = s_out - q0 < block ? (int)(s_out - q0) : block;
        ember_im2col_f32(col, nq, x, C, ps, p, q0, nq);
        ember_matmul_f32(y + q0, s_out, w, K, 1, col, nq, M, nq, K, 1.0f, bias, 1, 0, 1.0f, EMBER_ACT_NONE, 0.0f, 0.0f);
        for (m = 0; m < M; ++m) ember_act_apply_f32(y + (ptrdiff_t)m * s_out + q0, nq, act, act_a, act_b);
    }
}
/*@end*/
