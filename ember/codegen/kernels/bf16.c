/* bfloat16 weights (--weights bf16): stored as their 16 bits, widened to float32 when a run starts. */

/*@kernel ember_bf16_to_f32 requires ember_prelude*/
/* A bfloat16 is the upper half of a float32: widening is exact, a 16-bit shift. Written on the float's
 * bits as uint32, so it needs no FPU (Cortex-M0, soft-float RISC-V) and vectorizes as integer work. */
static void ember_bf16_to_f32(uint32_t *EMBER_RESTRICT dst, const uint16_t *EMBER_RESTRICT src, size_t n) {
    size_t i;
    for (i = 0; i < n; ++i) dst[i] = (uint32_t)src[i] << 16;
}
/*@end*/
