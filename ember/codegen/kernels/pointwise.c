/* 1x1 convolutions whose activation the matmul tile cannot apply in registers (Swish, HardSwish, Sigmoid,
 * ...: anything but Relu/Clip). The matmul kernel then runs the activation strip by strip, one call of a
 * few vectors per output row, which cost EfficientNet's and MobileNetV3's expand convolutions as much as
 * their products. Here the product runs over blocks of output columns sized to stay in L2, and the
 * activation over each row of a block in one long loop. */

/*@kernel ember_pointwise_act_f32 requires ember_matmul_f32*/
/* Bytes of output (M rows x block columns) per block: an L2 share, so the activation pass re-reads from L2. */
#define EMBER_PW_BLOCK_BYTES (128 * 1024)
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
