/* The int8 product of qgemm.c on AMX tiles (Sapphire Rapids and later Xeons): one TDPBSUD multiplies 16 rows of
 * weights by 16 pixels over 64 bytes of K, 16K multiply-adds where VPDPBUSD does 256. A packed block of pixels
 * (qgemm.c: X[k/4][pixel][k%4], 256 bytes a group of four k) is already the instruction's B operand, 16 groups of 16
 * pixels' words with a stride of 256 bytes, and the weights (M x Kp, row-major) its A operand, so nothing is
 * repacked. The sums go through memory (a tile store) to the epilogue of the AVX-512 tiles, requantised there as
 * they would have been.
 *
 * Linux hands a process the tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM): each product asks, with one
 * system call (74 ns on a Sapphire Rapids class Xeon; no state kept, so the bundle stays re-entrant), and runs the
 * AVX-512 tiles where the kernel refuses (before Linux 5.16, or a sandbox). The sums are exact int32 on both paths:
 * the bytes out are the same. K must be whole tiles: adding the last Kp % 64 bytes on VNNI after the tiles took
 * MobileNetV2's 96 -> 576 expand layers 1.33x their VNNI time, so such products stay on VNNI. */

/*@kernel ember_qamx requires ember_qgemm*/
#if EMBER_HAVE_AMX_INT8 && defined(EMBER_QRQ) && EMBER_QMR == 4 && EMBER_QNR == 64 && EMBER_QPB == 64 && \
    (!defined(EMBER_QAMX_ENABLE) || EMBER_QAMX_ENABLE)
#define EMBER_QAMX 1
/* Whether a product of M rows (output channels) and Kp bytes of K runs on tiles: whole tiles of 16 rows and 64 bytes of
 * K, and the process may use them (asked here, once per product). */
EMBER_UNUSED static int ember_qamx_ok(int M, int Kp) {
    long rc;
    if (M % 16 != 0 || Kp % 64 != 0 || M <= 0 || Kp <= 0) return 0;
    /* arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): 0 once granted, and every later request too */
    __asm__ volatile("syscall" : "=a"(rc) : "a"(158L), "D"(0x1023L), "S"(18L) : "rcx", "r11", "memory");
    return rc == 0;
}
/* LDTILECFG's 64 bytes as words: palette 1 (byte 0); tiles 0-7 of 64 bytes (colsb, bytes 16-31) by 16 rows (bytes
 * 48-55): tmm0-3 the sums, tmm4-5 weights, tmm6-7 pixels. */
static const uint64_t ember_qamx_cfg[8] = {1, 0, 0x0040004000400040u, 0x0040004000400040u,
                                           0, 0, 0x1010101010101010u, 0};
/* Sums of weight rows W[0 .. 16*mt) (mt 1 or 2) by the 32 pixels whose words start at X (a packed block's pixel j0),
 * over all of Kp, into acc (EMBER_QNR int32 a row): rows r, pixels j at acc[r * EMBER_QNR + j]. */
static void ember_qamx_tiles(int32_t *acc, const int8_t *W, int Kp, const uint8_t *X, int mt) {
    const ptrdiff_t ws = Kp, xs = 4 * EMBER_QPB, cs = 4 * EMBER_QNR;
    const int8_t *w1 = W + 16 * ws;
    int k0;
    __asm__ volatile("tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm2\n\ttilezero %%tmm3" ::: "memory");
    for (k0 = 0; k0 < Kp; k0 += 64) {
        const uint8_t *xk = X + (ptrdiff_t)k0 * EMBER_QPB; /* group k0 / 4 */
        __asm__ volatile("tileloadd (%0,%2,1), %%tmm4\n\t"
                         "tileloadd (%1,%3,1), %%tmm6\n\t"
                         "tileloadd 64(%1,%3,1), %%tmm7\n\t"
                         "tdpbsud %%tmm6, %%tmm4, %%tmm0\n\t"
                         "tdpbsud %%tmm7, %%tmm4, %%tmm1"
                         :
                         : "r"(W + k0), "r"(xk), "r"(ws), "r"(xs)
                         : "memory");
        if (mt == 2)
            __asm__ volatile("tileloadd (%0,%1,1), %%tmm5\n\t"
                             "tdpbsud %%tmm6, %%tmm5, %%tmm2\n\t"
                             "tdpbsud %%tmm7, %%tmm5, %%tmm3"
                             :
                             : "r"(w1 + k0), "r"(ws)
                             : "memory");
    }
    __asm__ volatile("tilestored %%tmm0, (%0,%1,1)\n\ttilestored %%tmm1, 64(%0,%1,1)" : : "r"(acc), "r"(cs) : "memory");
    if (mt == 2)
        __asm__ volatile("tilestored %%tmm2, (%0,%1,1)\n\ttilestored %%tmm3, 64(%0,%1,1)"
                         :
                         : "r"(acc + 16 * EMBER_QNR), "r"(cs)
                         : "memory");
}
/* Rows m0 .. m0+3 of acc's sums (EMBER_QNR a row, no corrections yet) for the n <= 16 pixels from pix, requantised in
 * registers as the AVX-512 tiles' are. */
static void ember_qamx_rq(const ember_qout *o, int m0, const int32_t *acc, ptrdiff_t pix, int n,
                          const ember_qrq_out *range) {
    ember_qv a[4][1];
    int r, v;
    for (r = 0; r < 4; ++r) a[r][0] = *(const ember_qv *)(const void *)(acc + r * EMBER_QNR) + o->corr[m0 + r];
    EMBER_QRQ_EPILOGUE(4, 1)
}
/* All M rows (M % 16 == 0) for the pb pixels of a packed block from pixel pix (Kp % 64 == 0), as ember_qgemm_block.
 * A block of fewer pixels reads its rows' words past pb too (the block's 256-byte rows: scratch, or the whole blocks
 * of a channel-blocked input), into sums nothing stores. */
static void ember_qamx_block(const ember_qout *o, const int8_t *W, int M, int Kp, const uint8_t *X, ptrdiff_t pix,
                             int pb) {
    int32_t acc[32 * EMBER_QNR] __attribute__((aligned(64)));
    ember_qrq_out range;
    const int rq = ember_qrq_setup(o, &range, M);
    int m0, j0, r;
    __asm__ volatile("ldtilecfg (%0)" : : "r"(ember_qamx_cfg) : "memory");
    for (m0 = 0; m0 < M; m0 += 32) {
        const int mt = M - m0 >= 32 ? 2 : 1;
        for (j0 = 0; j0 < pb; j0 += 32) ember_qamx_tiles(acc + j0, W + (ptrdiff_t)m0 * Kp, Kp, X + 4 * j0, mt);
        for (r = 0; r < 16 * mt; r += 4) {
            if (!rq) {
                ember_qstore_rows(o, m0 + r, 4, pix, 0, acc + r * EMBER_QNR, pb);
                continue;
            }
            for (j0 = 0; j0 < pb; j0 += 16)
                ember_qamx_rq(o, m0 + r, acc + r * EMBER_QNR + j0, pix + j0, pb - j0 < 16 ? pb - j0 : 16, &range);
        }
    }
    __asm__ volatile("tilerelease" ::: "memory");
}
#else
#define EMBER_QAMX 0
#endif
/*@end*/
