/* The int8 matrix product behind every integer convolution and matmul (qconv.c): int32 sums of int8
 * weights times packed activation bytes, and the epilogue that turns them into outputs.
 *
 * Weights W are M rows (output channels) x Kp int8 (K rounded up to 4, zero padded), packed at compile
 * time (or by ember_qpack_b at run time); the real weight is W + wofs[m] (wofs = 0 for symmetric int8
 * weights). Activations are packed per block of EMBER_QPB pixels as X[k/4][pixel][k%4] bytes, so that
 * four consecutive k of one pixel are one 32-bit word: the operand of the 4-way byte dot-product
 * instructions. The bytes are the activations seen as uint8 where the instruction multiplies unsigned by
 * signed bytes (x86 VPDPBUSD) and as int8 elsewhere; `flip` (0x80) turns one into the other, moving the
 * zero point by 128. With zv the activations' zero point in that view:
 *   sum_k (W + wofs)(X - zv) = acc - zv*rowsum - wofs*K*zv + wofs*colsum,   acc = sum_k W*X,
 * rowsum (sum_k W) is a compile-time table and colsum (sum_k X per pixel) is only needed when wofs != 0.
 *
 * The sums are exact int32 on every path, so every target gives the same bits. Paths, from the
 * compiler's predefined macros (so --target/--cpu decide): AVX-512 VNNI or AVX-VNNI (VPDPBUSD), AVX2 or
 * SSE2 ((V)PMADDWD on sign-extended bytes; AVX2's requantising tiles VPMADDUBSW where no weight is -128), AArch64 dot product (SDOT), Cortex-M DSP (SMLAD on SXTB16
 * pairs), other 128-bit SIMD (NEON, wasm: widened int16 products in generic vector code), portable C. A
 * tile is R rows x V vectors of pixels kept in registers over all of K; on AVX-512 its sums are
 * requantised there too (qvec.c; AVX2: ember_qf8) where the compile-time check of qlinear.py allows. */

/*@kernel ember_qblk requires ember_prelude*/
/* Byte offset of (pixel pix, channel c) in one image of a channel-blocked int8 tensor
 * (passes/int8_layout.py), bs bytes per block of 64 pixels: a block holds each channel quad's 64 words
 * in turn, a word the quad's four channels of one pixel. */
EMBER_INLINE ptrdiff_t ember_qblk_off(ptrdiff_t pix, int c, ptrdiff_t bs) {
    return (pix >> 6) * bs + (c >> 2) * 256 + (pix & 63) * 4 + (c & 3);
}
/*@end*/

/*@kernel ember_qgemm requires ember_qround ember_qrun ember_qv16 ember_qblk*/
#if EMBER_HAVE_AVX512_VNNI
#define EMBER_Q_PATH 1
#define EMBER_QVL 16 /* int32 lanes of a vector = pixels per vector */
#elif EMBER_HAVE_AVX_VNNI
#define EMBER_Q_PATH 1
#define EMBER_QVL 8
#elif EMBER_HAVE_AVX2
#define EMBER_Q_PATH 2
#define EMBER_QVL 4 /* VPMADDWD: 8 lanes, two per pixel */
#elif EMBER_HAVE_SSE2
#define EMBER_Q_PATH 2
#define EMBER_QVL 2 /* PMADDWD: 4 lanes, two per pixel */
#define EMBER_QMR 4
#define EMBER_QNV 2
#elif EMBER_HAVE_NEON_DOTPROD
#define EMBER_Q_PATH 3
#define EMBER_QVL 4
#elif EMBER_HAVE_ARM_DSP
#define EMBER_Q_PATH 4
#define EMBER_QVL 2 /* SMLAD: two pixels per step */
#elif EMBER_HAVE_NEON || EMBER_HAVE_WASM_SIMD
#define EMBER_Q_PATH 5
#define EMBER_QVL 4 /* 128-bit SIMD: int8 products widened to int16, summed in int32 */
#define EMBER_QMR 2
#define EMBER_QNV 2
#else
#define EMBER_Q_PATH 0
#define EMBER_QVL 4
#endif
#define EMBER_Q_UVIEW (EMBER_Q_PATH == 1) /* activations as uint8 (else int8) */
#ifndef EMBER_QMR
#define EMBER_QMR 4 /* rows of a full tile */
#define EMBER_QNV 4 /* vectors of pixels of a full tile; a narrow tile has 1 */
#endif
#define EMBER_QNR (EMBER_QNV * EMBER_QVL) /* pixels of a full tile */
#ifndef EMBER_QPB /* NAME.c's own on microcontrollers (ops/qlinear.py MCU_QPB) */
#define EMBER_QPB 64 /* pixels per packed activation block */
#endif
#if EMBER_Q_UVIEW
typedef uint8_t ember_qx;
#else
typedef int8_t ember_qx;
#endif
typedef int32_t ember_qi32u __attribute__((may_alias, aligned(1)));
/* The 4 weight bytes W[r][4g .. 4g+3] as one word. */
#define EMBER_QW(W, r, Kp, g) (*(const ember_qi32u *)(const void *)((W) + (ptrdiff_t)(r) * (Kp) + 4 * (g)))
#define EMBER_QXG(X, g) ((X) + (ptrdiff_t)(g) * EMBER_QPB * 4)

#if EMBER_Q_PATH == 1 || EMBER_Q_PATH == 3
typedef int32_t ember_qv __attribute__((vector_size(EMBER_QVL * 4), aligned(4)));
typedef int ember_qv16i __attribute__((vector_size(64))); /* the builtins' operand type */
/* acc += the 4-byte dot products of x and w, lane by lane. */
EMBER_INLINE ember_qv ember_qdot(ember_qv acc, ember_qv x, ember_qv w) {
#if EMBER_Q_PATH == 3
    __asm__("sdot %0.4s, %1.16b, %2.16b" : "+w"(acc) : "w"(x), "w"(w));
#elif EMBER_QVL == 16 && EMBER_CLANG
    acc = (ember_qv)__builtin_ia32_vpdpbusd512((ember_qv16i)acc, (ember_qv16i)x, (ember_qv16i)w);
#elif EMBER_QVL == 16 /* the builtin, not asm: GCC then keeps each sum in one register (no copies) */
    acc = (ember_qv)__builtin_ia32_vpdpbusd_v16si((ember_qv16i)acc, (ember_qv16i)x, (ember_qv16i)w);
#else
    __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(x), "x"(w));
#endif
    return acc;
}
#define EMBER_QTILE(NAME, R, V)                                                                         \
    static void NAME(int32_t *acc, const int8_t *W, int Kp, const uint8_t *X) {                        \
        ember_qv a[R][V], x[V];                                                                         \
        int r, v, g;                                                                                    \
        for (r = 0; r < R; ++r)                                                                         \
            for (v = 0; v < V; ++v) a[r][v] = (ember_qv){0};                                            \
        for (g = 0; g < Kp / 4; ++g) {                                                                  \
            for (v = 0; v < V; ++v) x[v] = ((const ember_qv *)(const void *)EMBER_QXG(X, g))[v];        \
            for (r = 0; r < R; ++r) {                                                                   \
                const ember_qv w = (ember_qv){0} + EMBER_QW(W, r, Kp, g);                               \
                for (v = 0; v < V; ++v) a[r][v] = ember_qdot(a[r][v], x[v], w);                         \
            }                                                                                           \
        }                                                                                               \
        for (r = 0; r < R; ++r)                                                                         \
            for (v = 0; v < V; ++v) *(ember_qv *)(void *)(acc + r * EMBER_QNR + v * EMBER_QVL) = a[r][v]; \
    }
#elif EMBER_Q_PATH == 2
/* Sign-extended: QVL pixels x 4 bytes as int16; one (V)PMADDWD gives each pixel two pair sums. */
#if EMBER_QVL == 4
#define EMBER_QPMADDWD __builtin_ia32_pmaddwd256
#else
#define EMBER_QPMADDWD __builtin_ia32_pmaddwd128
#endif
typedef int32_t ember_qv __attribute__((vector_size(EMBER_QVL * 8)));
typedef int32_t ember_qvx __attribute__((vector_size(EMBER_QVL * 4), aligned(4)));
typedef int8_t ember_qbx __attribute__((vector_size(EMBER_QVL * 4)));
typedef short ember_qhx __attribute__((vector_size(EMBER_QVL * 8)));
#if EMBER_QVL == 4
/* One VPMOVSXBW (from memory where it can): GCC's conversion is two halves, a shift and an insert. */
EMBER_INLINE ember_qhx ember_qwiden(ember_qvx v) {
    ember_qhx r;
    __asm__("vpmovsxbw %1, %0" : "=x"(r) : "xm"(v));
    return r;
}
#define EMBER_QWIDEN(v) ember_qwiden((ember_qvx)(v))
#else
#define EMBER_QWIDEN(v) __builtin_convertvector((ember_qbx)(v), ember_qhx)
#endif
#define EMBER_QTILE(NAME, R, V)                                                                         \
    static void NAME(int32_t *acc, const int8_t *W, int Kp, const uint8_t *X) {                        \
        ember_qv a[R][V];                                                                               \
        ember_qhx x[V];                                                                                 \
        int r, v, g, p;                                                                                 \
        for (r = 0; r < R; ++r)                                                                         \
            for (v = 0; v < V; ++v) a[r][v] = (ember_qv){0};                                            \
        for (g = 0; g < Kp / 4; ++g) {                                                                  \
            for (v = 0; v < V; ++v) x[v] = EMBER_QWIDEN(((const ember_qvx *)(const void *)EMBER_QXG(X, g))[v]); \
            for (r = 0; r < R; ++r) {                                                                   \
                const ember_qhx w = EMBER_QWIDEN((ember_qvx){0} + EMBER_QW(W, r, Kp, g));              \
                for (v = 0; v < V; ++v) a[r][v] += (ember_qv)EMBER_QPMADDWD(x[v], w);                   \
            }                                                                                           \
        }                                                                                               \
        for (r = 0; r < R; ++r)                                                                         \
            for (v = 0; v < V; ++v)                                                                     \
                for (p = 0; p < EMBER_QVL; ++p)                                                         \
                    acc[r * EMBER_QNR + v * EMBER_QVL + p] = a[r][v][2 * p] + a[r][v][2 * p + 1];       \
    }
#elif EMBER_Q_PATH == 5
typedef int8_t ember_qb16 __attribute__((vector_size(16)));
typedef int32_t ember_qv4 __attribute__((vector_size(16), aligned(4)));
typedef int16_t ember_qh16 __attribute__((vector_size(32)));
typedef int32_t ember_qw16 __attribute__((vector_size(64)));
/* 4 pixels x 4 bytes widened to int16 and multiplied by the row's 4 weights repeated (int8 x int8 fits
 * int16), the products widened into 16 int32 lanes: pixel p's sum is lanes 4p .. 4p+3. */
#define EMBER_QWIDEN(v4) __builtin_convertvector((ember_qb16)(v4), ember_qh16)
#define EMBER_QTILE(NAME, R, V)                                                                         \
    static void NAME(int32_t *acc, const int8_t *W, int Kp, const uint8_t *X) {                        \
        ember_qw16 a[R][V];                                                                             \
        ember_qh16 x[V];                                                                                \
        int r, v, g, p;                                                                                 \
        for (r = 0; r < R; ++r)                                                                         \
            for (v = 0; v < V; ++v) a[r][v] = (ember_qw16){0};                                          \
        for (g = 0; g < Kp / 4; ++g) {                                                                  \
            for (v = 0; v < V; ++v) x[v] = EMBER_QWIDEN(((const ember_qv4 *)(const void *)EMBER_QXG(X, g))[v]); \
            for (r = 0; r < R; ++r) {                                                                   \
                const ember_qh16 w = EMBER_QWIDEN((ember_qv4){0} + EMBER_QW(W, r, Kp, g));             \
                for (v = 0; v < V; ++v) a[r][v] += __builtin_convertvector(x[v] * w, ember_qw16);       \
            }                                                                                           \
        }                                                                                               \
        for (r = 0; r < R; ++r)                                                                         \
            for (v = 0; v < V; ++v)                                                                     \
                for (p = 0; p < 4; ++p)                                                                 \
                    acc[r * EMBER_QNR + v * 4 + p] =                                                    \
                        a[r][v][4 * p] + a[r][v][4 * p + 1] + a[r][v][4 * p + 2] + a[r][v][4 * p + 3];  \
    }
#elif EMBER_Q_PATH == 4
EMBER_INLINE uint32_t ember_qsx02(uint32_t x) {
    uint32_t r;
    __asm__("sxtb16 %0, %1" : "=r"(r) : "r"(x));
    return r;
}
EMBER_INLINE uint32_t ember_qsx13(uint32_t x) {
    uint32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}
EMBER_INLINE int32_t ember_qsmlad(uint32_t a, uint32_t b, int32_t acc) {
    int32_t r;
    __asm__("smlad %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
    return r;
}
/* R (1 or 2) rows x pixel pairs: each word of 4 bytes split into two halfword pairs (bytes 0,2 and
 * 1,3) that SMLAD multiplies and adds; a pair's unpacking serves two rows, a row's two pixels. */
#define EMBER_QTILE(NAME, R, V)                                                                         \
    static void NAME(int32_t *acc, const int8_t *W, int Kp, const uint8_t *X) {                        \
        int r, j, g;                                                                                    \
        for (j = 0; j < V * EMBER_QVL; j += 2)                                                          \
            for (r = 0; r < R; r += 2) {                                                                \
                int32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0;                                             \
                for (g = 0; g < Kp / 4; ++g) {                                                          \
                    const ember_qi32u *xg = (const ember_qi32u *)(const void *)(EMBER_QXG(X, g) + 4 * j); \
                    const uint32_t x0 = (uint32_t)xg[0], x1 = (uint32_t)xg[1];                          \
                    const uint32_t x002 = ember_qsx02(x0), x013 = ember_qsx13(x0);                      \
                    const uint32_t x102 = ember_qsx02(x1), x113 = ember_qsx13(x1);                      \
                    const uint32_t w0 = (uint32_t)EMBER_QW(W, r, Kp, g);                                \
                    const uint32_t w002 = ember_qsx02(w0), w013 = ember_qsx13(w0);                      \
                    a00 = ember_qsmlad(w013, x013, ember_qsmlad(w002, x002, a00));                      \
                    a01 = ember_qsmlad(w013, x113, ember_qsmlad(w002, x102, a01));                      \
                    if (R > 1) {                                                                        \
                        const uint32_t w1 = (uint32_t)EMBER_QW(W, r + 1, Kp, g);                        \
                        const uint32_t w102 = ember_qsx02(w1), w113 = ember_qsx13(w1);                  \
                        a10 = ember_qsmlad(w113, x013, ember_qsmlad(w102, x002, a10));                  \
                        a11 = ember_qsmlad(w113, x113, ember_qsmlad(w102, x102, a11));                  \
                    }                                                                                   \
                }                                                                                       \
                acc[r * EMBER_QNR + j] = a00;                                                           \
                acc[r * EMBER_QNR + j + 1] = a01;                                                       \
                if (R > 1) {                                                                            \
                    acc[(r + 1) * EMBER_QNR + j] = a10;                                                 \
                    acc[(r + 1) * EMBER_QNR + j + 1] = a11;                                             \
                }                                                                                       \
            }                                                                                           \
    }
#else
/* Portable: one dot product over K per (row, pixel), so that a few registers suffice (microcontrollers)
 * and compilers do not unroll a whole tile into one huge block. */
#define EMBER_QTILE(NAME, R, V)                                                                         \
    static void NAME(int32_t *acc, const int8_t *W, int Kp, const uint8_t *X) {                        \
        int r, j, g;                                                                                    \
        for (r = 0; r < R; ++r)                                                                         \
            for (j = 0; j < V * EMBER_QVL; ++j) {                                                       \
                const int8_t *w = W + (ptrdiff_t)r * Kp;                                                \
                const ember_qx *x = (const ember_qx *)X + 4 * j;                                        \
                int32_t s = 0;                                                                          \
                for (g = 0; g < Kp / 4; ++g, w += 4, x += EMBER_QPB * 4)                                \
                    s += w[0] * x[0] + w[1] * x[1] + w[2] * x[2] + w[3] * x[3];                         \
                acc[r * EMBER_QNR + j] = s;                                                             \
            }                                                                                           \
    }
#endif
EMBER_QTILE(ember_qtile_full, EMBER_QMR, EMBER_QNV)
EMBER_QTILE(ember_qtile_narrow, EMBER_QMR, 1)
EMBER_QTILE(ember_qtile_row, 1, 4)
EMBER_QTILE(ember_qtile_row_narrow, 1, 1)
#if EMBER_Q_PATH == 1 && EMBER_QNV == 4
/* Tiles of 2 and 3 vectors, so that a block of 33 .. 48 pixels (a 7x7 map has 49) does not compute
 * a whole vector of idle lanes; only where the wide registers make that vector expensive. */
#define EMBER_QTILE23 1
/* not inlined: the full tile inlined alone keeps its registers (with these too, it spills) */
__attribute__((noinline)) static void ember_qtile_v2(int32_t *acc, const int8_t *W, int Kp, const uint8_t *X);
__attribute__((noinline)) static void ember_qtile_v3(int32_t *acc, const int8_t *W, int Kp, const uint8_t *X);
EMBER_QTILE(ember_qtile_v2, EMBER_QMR, 2)
EMBER_QTILE(ember_qtile_v3, EMBER_QMR, 3)
#endif

#if EMBER_Q_PATH == 1 && EMBER_QVL == 16 && defined(EMBER_QV16)
/* The tile of EMBER_QTILE requantised in registers (qvec.c) and stored as bytes: tile row r is output
 * row m0 + r at pixels pix .. pix + n - 1 (n <= V * 16). Where the caller's float check holds, or TFLite's integer
 * requantisation (ember_qrq_setup: qvec.c ember_qt16).
 * While it runs, it prefetches the next tile's rows of weights (contiguous, 4 * Kp bytes) into L2: a
 * layer's weights are otherwise first read from DRAM or L3 by 4 short strided streams that the hardware
 * prefetchers follow late (a 7x7 map's one block of pixels reads each weight once; measured with caches
 * flushed before each run: ResNet-50 int8 6% faster). Past the last row it prefetches bytes it never
 * reads, which is harmless: a prefetch does not fault. */
#define EMBER_QRQ 1
/* The layer's requantisation constants; limit: the sums are first clamped to [-lim, lim], which changes
 * no output (qlinear.py `float_limit`: every sum beyond saturates) and keeps them in the float path's range. */
typedef struct {
    ember_qv16_out q;
    ember_qv16_i lim;
    int limit;
    int tfl; /* TFLite's requantisation instead: ember_qt16_kind of every row (qvec.c), else -1 */
} ember_qrq_out;
/* The epilogue of EMBER_QTILE_RQ: the sums a[R][V] (corrections included) of rows m0 .. m0+R-1 for the n pixels
 * from pix requantised and stored (o, m0, pix, n, range, r, v in scope); qamx.c's tiles end with it too. */
#define EMBER_QRQ_EPILOGUE(R, V)                                                                        \
        { /* the layer's constants copied first: stores through byte pointers may alias anything not \
             visibly local, and the compiler would reload them after every vector */                   \
            const ember_qrq_out rg = *range;                                                            \
            const ptrdiff_t rs = o->rs;                                                                 \
            const int32_t *const mult = o->mult + m0, *const shift = o->shift + m0;                     \
            if (rg.tfl >= 0) { /* TFLite's integer requantisation, each row its own constants */         \
                ember_qv16_i q[R][V];                                                                   \
                EMBER_UNROLL for (r = 0; r < R; ++r) {                                                  \
                    ember_qt16 t;                                                                       \
                    ember_qt16_init(&t, rg.tfl, (ember_qv16_i){0} + mult[r], (ember_qv16_i){0} + shift[r], o->out); \
                    EMBER_UNROLL for (v = 0; v < V; ++v) q[r][v] = ember_qt16_rq((ember_qv16_i)a[r][v], &t); \
                }                                                                                       \
                if (R == 4 && o->blk) {                                                                 \
                    uint8_t *const y = ember_qblk_at(o, m0, pix);                                       \
                    EMBER_UNROLL for (v = 0; v < V; ++v)                                                \
                        ember_qv16_store_words(y + 64 * v, ember_qv16_words(q[0][v], q[1 % R][v], q[2 % R][v], \
                                                                            q[3 % R][v]), n - 16 * v);   \
                } else if (o->ps > 1) { /* pixels ps apart (rs 1): a channel quad's words, or each row's bytes */ \
                    const ptrdiff_t ps = o->ps;                                                         \
                    uint8_t *const y = o->y + m0 + pix * ps;                                            \
                    EMBER_UNROLL for (v = 0; v < V; ++v) {                                              \
                        if (R == 4)                                                                     \
                            ember_qv16_scatter_words(y + 16 * v * ps, ps, ember_qv16_words(q[0][v], q[1 % R][v], \
                                                     q[2 % R][v], q[3 % R][v]), n - 16 * v);            \
                        else                                                                            \
                            EMBER_UNROLL for (r = 0; r < R; ++r)                                        \
                                ember_qv16_scatter(y + r + 16 * v * ps, ps,                             \
                                                   __builtin_convertvector(q[r][v], ember_qv16_b), n - 16 * v); \
                    }                                                                                   \
                } else {                                                                                \
                    uint8_t *const y = o->y + m0 * rs + pix;                                            \
                    EMBER_UNROLL for (r = 0; r < R; ++r)                                                \
                        EMBER_UNROLL for (v = 0; v < V; ++v)                                            \
                            ember_qv16_store(y + r * rs + 16 * v, __builtin_convertvector(q[r][v], ember_qv16_b), \
                                             n - 16 * v <= 0 ? 0 : n - 16 * v < 16 ? n - 16 * v : 16);   \
                }                                                                                       \
            } else if (R == 4 && o->blk) { /* a channel quad's words (m0 % 4 == 0), one vector per 16 pixels */ \
                uint8_t *const y = ember_qblk_at(o, m0, pix);                                           \
                ember_qv16_f mf[4];                                                                     \
                EMBER_UNROLL for (r = 0; r < 4; ++r) mf[r] = (ember_qv16_f){0} + ember_qv16_mult(mult[r], shift[r]); \
                EMBER_UNROLL for (v = 0; v < V; ++v)                                                    \
                    ember_qv16_store_words(y + 64 * v, ember_qrq_words(a[0][v], a[1 % R][v], a[2 % R][v], \
                                                                       a[3 % R][v], mf, &rg), n - 16 * v); \
            } else if (o->ps > 1) { /* pixels ps apart (rs 1), as above */                              \
                const ptrdiff_t ps = o->ps;                                                             \
                uint8_t *const y = o->y + m0 + pix * ps;                                                \
                ember_qv16_f mf[R];                                                                     \
                EMBER_UNROLL for (r = 0; r < R; ++r) mf[r] = (ember_qv16_f){0} + ember_qv16_mult(mult[r], shift[r]); \
                EMBER_UNROLL for (v = 0; v < V; ++v) {                                                  \
                    if (R == 4)                                                                         \
                        ember_qv16_scatter_words(y + 16 * v * ps, ps, ember_qrq_words(a[0][v], a[1 % R][v], \
                                                 a[2 % R][v], a[3 % R][v], mf, &rg), n - 16 * v);       \
                    else                                                                                \
                        EMBER_UNROLL for (r = 0; r < R; ++r)                                            \
                            ember_qv16_scatter(y + r + 16 * v * ps, ps, ember_qrq_bytes((ember_qv16_i)a[r][v], mf[r], &rg), \
                                               n - 16 * v);                                             \
                }                                                                                       \
            } else {                                                                                    \
                uint8_t *const y = o->y + m0 * rs + pix;                                                \
                EMBER_UNROLL for (r = 0; r < R; ++r) {                                                  \
                    const ember_qv16_f mf = (ember_qv16_f){0} + ember_qv16_mult(mult[r], shift[r]);      \
                    EMBER_UNROLL for (v = 0; v < V; ++v)                                                \
                        ember_qrq_put(y + r * rs + 16 * v, n - 16 * v, (ember_qv16_i)a[r][v], mf, &rg);  \
                }                                                                                       \
            }                                                                                           \
        }
#define EMBER_QTILE_RQ(NAME, R, V)                                                                      \
    static void NAME(const ember_qout *o, int m0, const int8_t *W, int Kp, const uint8_t *X,            \
                     ptrdiff_t pix, int n, const ember_qrq_out *range) {                                \
        ember_qv a[R][V], x[V];                                                                         \
        const uint8_t *xg = X, *const end = X + (ptrdiff_t)Kp * EMBER_QPB;                             \
        const int8_t *w = W, *pf = W + (ptrdiff_t)R * Kp;                                              \
        int r, v, step = 0;                                                                             \
        EMBER_UNROLL for (r = 0; r < R; ++r) /* the sums start at the row's corrections */             \
            EMBER_UNROLL for (v = 0; v < V; ++v) a[r][v] = (ember_qv){0} + o->corr[m0 + r];             \
        do { /* Kp >= 4: a loop with no zero-trip path keeps the sums in registers */                  \
            if ((step++ & 3) == 0) { /* the next 4 rows of weights into L2, a line per 4 steps (below) */ \
                __builtin_prefetch(pf, 0, 2);                                                           \
                pf += 64;                                                                               \
            }                                                                                           \
            EMBER_UNROLL for (v = 0; v < V; ++v) x[v] = ((const ember_qv *)(const void *)xg)[v];        \
            EMBER_UNROLL for (r = 0; r < R; ++r) {                                                      \
                const ember_qv wr = (ember_qv){0} + *(const ember_qi32u *)(const void *)(w + (ptrdiff_t)r * Kp); \
                EMBER_UNROLL for (v = 0; v < V; ++v) a[r][v] = ember_qdot(a[r][v], x[v], wr);           \
            }                                                                                           \
            xg += 4 * EMBER_QPB;                                                                        \
            w += 4;                                                                                     \
        } while (xg != end);                                                                            \
        EMBER_QRQ_EPILOGUE(R, V)                                                                        \
    }
#endif

/* Where and how a product's int32 sums become outputs. kind 0: int32 sums; 1: requantised bytes. */
typedef struct {
    uint8_t *y;
    int kind;
    ptrdiff_t rs, ps;      /* element strides of an output row (channel) and pixel */
    const int32_t *corr;   /* per row: bias - zv*rowsum - wofs*K*zv */
    const int32_t *wofs;   /* per row weight offset, or NULL */
    const int32_t *colsum; /* per pixel of the block (when wofs) */
    const int32_t *mult, *shift;
    int32_t zp, lo, hi;
    const int32_t *out; /* [zp, lo, hi, sums below 2^24, float path holds, its clamp] (ember_qrq_setup) */
    uint8_t *row;       /* EMBER_QTAIL * Kp bytes for qblock.c's tail pixels, or NULL */
    int blk;            /* y is channel-blocked (ember_qblk_at; rs: bytes per block of pixels), else rows */
    int w127;           /* no weight is -128 (ember_qw127): AVX2's VPMADDUBSW tiles are exact */
    int amx;            /* the blocks run on AMX tiles (qamx.c ember_qamx_ok) */
} ember_qout;
/* The output kind and requantisation of o (its other fields are the caller's). */
static void ember_qout_init(ember_qout *o, int kind, const int32_t *mult, const int32_t *shift, const int32_t *out) {
    o->kind = kind;
    o->mult = mult;
    o->shift = shift;
    o->zp = out[EMBER_QOUT_ZP];
    o->lo = out[EMBER_QOUT_LO];
    o->hi = out[EMBER_QOUT_HI];
    o->out = out;
    o->blk = 0;
    o->w127 = 0;
    o->amx = 0;
}
/* Whether none of the n weight bytes W is -128 (set by callers where the tiles may use it): the compiler's
 * answer in out[EMBER_QOUT_W127], or for weights known only at run time, a scan. */
EMBER_UNUSED EMBER_INLINE int ember_qw127(const int32_t *out, const int8_t *W, ptrdiff_t n) {
    int8_t m = 0;
    ptrdiff_t i;
    if (out[EMBER_QOUT_W127] >= 0) return out[EMBER_QOUT_W127];
    for (i = 0; i < n; ++i) m |= (int8_t)(W[i] == -128); /* no early exit: vectorizes */
    return !m;
}
/* A channel-blocked tensor (qpack.c) stores channel c of pixel p at byte (p / 64) * 64C + (c / 4) * 256 +
 * (p % 64) * 4 + c % 4: blocks of 64 pixels, in them the words of four channels that a product's
 * packed block (X) holds. The byte of output row m at pixel pix of o (o->blk). */
EMBER_INLINE uint8_t *ember_qblk_at(const ember_qout *o, int m, ptrdiff_t pix) {
    return o->y + ember_qblk_off(pix, m, o->rs);
}

#if EMBER_Q_PATH == 2 && EMBER_HAVE_AVX2 && defined(__FMA__)
/* AVX2's requantisation of a tile row in float (qvec.c explains why it is exact: one fused multiply-add
 * rounded to nearest even, the default MXCSR mode, to 1.5 * 2^23 plus the integer), where qlinear.py's
 * float_limit holds (out[EMBER_QOUT_FLOAT]); the int64 arithmetic it replaces has no AVX2 instructions
 * for its shifts and was most of an int8 network's time. y[j * ps] for the n <= 16 sums acc + c. */
#define EMBER_QF8 1
typedef int32_t ember_qf8i __attribute__((vector_size(32)));
typedef float ember_qf8f __attribute__((vector_size(32)));
typedef int32_t ember_qf8iu __attribute__((vector_size(32), aligned(4), may_alias));
/* VPMAXSD, VPMINSD by asm: clang (zig cc, the x86_64 target's compiler) has no builtins for them. */
EMBER_INLINE ember_qf8i ember_qf8_max(ember_qf8i a, ember_qf8i b) {
    __asm__("vpmaxsd %1, %0, %0" : "+x"(a) : "x"(b));
    return a;
}
EMBER_INLINE ember_qf8i ember_qf8_min(ember_qf8i a, ember_qf8i b) {
    __asm__("vpminsd %1, %0, %0" : "+x"(a) : "x"(b));
    return a;
}
/* Row sums acc + c (n <= 16, the rest ignored) requantised into the int32 lanes of r[0], r[1]. */
EMBER_INLINE void ember_qf8_row(ember_qf8i *r, const int32_t *acc, int n, int32_t c, int32_t mult, int shift,
                                const int32_t *out) {
    union { uint32_t u; float f; } p2;
    int32_t a[16];
    int j, h;
    ember_qf8f m;
    const ember_qf8f bias = (ember_qf8f){0} + 12582912.0f;
    const ember_qf8i off = (ember_qf8i){0} + (0x4B400000 - out[EMBER_QOUT_ZP]), lo = (ember_qf8i){0} + out[EMBER_QOUT_LO],
                     hi = (ember_qf8i){0} + out[EMBER_QOUT_HI], lim = (ember_qf8i){0} + out[EMBER_QOUT_LIMIT];
    p2.u = (uint32_t)(127 - shift) << 23;
    m = (ember_qf8f){0} + (float)mult * p2.f;
    for (j = 0; j < 16; ++j) a[j] = j < n ? acc[j] : 0;
    for (h = 0; h < 2; ++h) {
        ember_qf8i v = *(const ember_qf8iu *)(const void *)(a + 8 * h) + c;
        ember_qf8f t;
        if (out[EMBER_QOUT_LIMIT]) {
            v = ember_qf8_min(v, lim);
            v = ember_qf8_max(v, -lim);
        }
        t = __builtin_convertvector(v, ember_qf8f);
        __asm__("vfmadd213ps %2, %1, %0" : "+x"(t) : "x"(m), "x"(bias));
        v = (ember_qf8i)t - off;
        v = ember_qf8_max(v, lo);
        r[h] = ember_qf8_min(v, hi);
    }
}
static void ember_qf8_run(uint8_t *EMBER_RESTRICT y, ptrdiff_t ps, const int32_t *acc, int n, int32_t c, int32_t mult,
                          int shift, const int32_t *out) {
    ember_qf8i r[2];
    int j;
    ember_qf8_row(r, acc, n, c, mult, shift, out);
    for (j = 0; j < n; ++j) y[j * ps] = (uint8_t)r[j >> 3][j & 7];
}
#endif
/* Row m's sums acc[0 .. n) for the pixels from `pix` (j0 of the block) become outputs. */
static void ember_qstore(const ember_qout *o, int m, ptrdiff_t pix, int j0, const int32_t *acc, int n) {
    const int32_t c = o->corr[m], wo = o->wofs ? o->wofs[m] : 0;
    const int32_t *cs = o->colsum + j0;
    const ptrdiff_t ps = o->ps, at = o->blk ? ember_qblk_at(o, m, pix) - o->y : m * o->rs + pix * ps;
    int j;
    if (o->kind == 0) {
        int32_t *y = (int32_t *)(void *)o->y + at;
        for (j = 0; j < n; ++j) y[j * ps] = acc[j] + c + (wo ? wo * cs[j] : 0);
    } else {
        uint8_t *EMBER_RESTRICT y = o->y + at;
        const int32_t mult = o->mult[m], shift = o->shift[m], zp = o->zp, lo = o->lo, hi = o->hi;
#ifdef EMBER_QF8
        if (!wo && n <= 16 && o->out[EMBER_QOUT_FLOAT]) {
            ember_qf8_run(y, ps, acc, n, c, mult, shift, o->out);
            return;
        }
#endif
        if (ps == 1 && !wo && n > 16) { /* vectorized in runs of 64: not worth it for a few sums */
            ember_qrun(y, acc, n, c, mult, shift, zp, lo, hi);
        } else if (!wo && n > 16) { /* strided (channel-blocked rows: ps 4) AVX-512 rows of up to 64 pixels: as a
                                       run, then placed (scalar: most of a TFLite model's time on VNNI hosts) */
            uint8_t b[64];
            int t;
            for (j = 0; j < n; j += 64) {
                const int r = n - j < 64 ? n - j : 64;
                ember_qrun(b, acc + j, r, c, mult, shift, zp, lo, hi);
                for (t = 0; t < r; ++t) y[(j + t) * ps] = b[t];
            }
        } else if (!wo && n > 4) { /* a narrow tile's row (AVX2, SSE2), or strided (channel-blocked rows: ps 4):
                                      the scalar int64 loop took most of their time */
            ember_qrun16(y, ps, acc, n, c, mult, shift, zp, lo, hi);
        } else
            for (j = 0; j < n; ++j)
                y[j * ps] = (uint8_t)ember_q_requant((int64_t)acc[j] + c + (int64_t)wo * cs[j], mult, shift, zp, lo,
                                                     hi);
    }
}

/* Rows m0 .. m0+R-1 of a tile (acc: EMBER_QNR sums a row) for the n pixels from `pix` become outputs. On
 * AVX2, a channel quad of a channel-blocked output goes out as whole words (byte t of a pixel's word:
 * row m0 + t) instead of byte by byte. */
static void ember_qstore_rows(const ember_qout *o, int m0, int R, ptrdiff_t pix, int j0, const int32_t *acc, int n) {
    int r;
#ifdef EMBER_QF8
    if (R == 4 && o->blk && o->kind == 1 && !o->wofs && n <= 16 && (m0 & 3) == 0 && o->out[EMBER_QOUT_FLOAT]) {
        typedef uint32_t u8v __attribute__((vector_size(32)));
        ember_qf8i q[4][2];
        uint8_t *const y = ember_qblk_at(o, m0, pix);
        int h, j;
        for (r = 0; r < 4; ++r)
            ember_qf8_row(q[r], acc + r * EMBER_QNR, n, o->corr[m0 + r], o->mult[m0 + r], o->shift[m0 + r], o->out);
        for (h = 0; h < 2; ++h) {
            const u8v b = (u8v){0} + 255u;
            const u8v w = ((u8v)q[0][h] & b) | ((u8v)q[1][h] & b) << 8 | ((u8v)q[2][h] & b) << 16 | (u8v)q[3][h] << 24;
            if (n >= 8 * h + 8) *(ember_qf8iu *)(void *)(y + 32 * h) = (ember_qf8i)w;
            else /* a partial vector: its words one by one (no calls: the bundle is freestanding) */
                for (j = 0; j < n - 8 * h; ++j) *(ember_qi32u *)(void *)(y + 32 * h + 4 * j) = (int32_t)w[j];
        }
        return;
    }
#endif
    if (R == 4 && o->blk && o->kind == 1 && !o->wofs && n > 16 && n <= 64 && (m0 & 3) == 0) {
        /* AVX-512's rows of up to 64 pixels: each row requantised as a run, a channel quad then written as whole
         * words (byte t of a pixel's word: row m0 + t), not byte by byte 4 bytes apart */
        uint8_t b[4][64];
        uint8_t *const y = ember_qblk_at(o, m0, pix);
        int j;
        for (r = 0; r < 4; ++r)
            ember_qrun(b[r], acc + r * EMBER_QNR, n, o->corr[m0 + r], o->mult[m0 + r], o->shift[m0 + r], o->zp, o->lo,
                       o->hi);
        for (j = 0; j < n; ++j)
            *(ember_qi32u *)(void *)(y + 4 * j) = (int32_t)((uint32_t)b[0][j] | (uint32_t)b[1][j] << 8 |
                                                            (uint32_t)b[2][j] << 16 | (uint32_t)b[3][j] << 24);
        return;
    }
    for (r = 0; r < R; ++r) ember_qstore(o, m0 + r, pix, j0, acc + r * EMBER_QNR, n);
}

#ifdef EMBER_QRQ
/* Whether the tiles of the product o (M rows) requantise in registers: requantised bytes, pixels contiguous, no
 * weight offsets, and out = [zp, lo, hi, exact, ok, lim] saying the float path holds (qlinear.py `float_limit`) or
 * TFLite's shift codes that ember_qt16_kind takes; and its constants. */
static int ember_qrq_setup(const ember_qout *o, ember_qrq_out *r, int M) {
    const int32_t *out = o->out;
    r->q = ember_qv16_range(out);
    r->limit = out[EMBER_QOUT_LIMIT] != 0;
    r->lim = (ember_qv16_i){0} + out[EMBER_QOUT_LIMIT];
    r->tfl = o->kind == 1 ? ember_qt16_kind(o->shift, M, out) : -1;
    return o->kind == 1 && (o->ps == 1 || o->blk || o->rs == 1) && !o->wofs && (r->tfl >= 0 || out[EMBER_QOUT_FLOAT]);
}
/* Sums v (corrections included) of one output row requantised. */
EMBER_INLINE ember_qv16_b ember_qrq_bytes(ember_qv16_i v, ember_qv16_f mf, const ember_qrq_out *range) {
    if (range->limit) v = ember_qv16_limit(v, range->lim);
    return ember_qv16_requant(v, mf, &range->q);
}
/* ... and stored at y: min(n, 16) of them (none if n <= 0). */
EMBER_INLINE void ember_qrq_put(uint8_t *y, int n, ember_qv16_i v, ember_qv16_f mf, const ember_qrq_out *range) {
    ember_qv16_store(y, ember_qrq_bytes(v, mf, range), n < 0 ? 0 : n < 16 ? n : 16);
}
/* Sums v0 .. v3 of a channel quad requantised into the quad's words (ember_qv16_words). */
EMBER_INLINE ember_qv16_i ember_qrq_words(ember_qv v0, ember_qv v1, ember_qv v2, ember_qv v3, const ember_qv16_f *mf,
                                          const ember_qrq_out *range) {
    ember_qv16_i q[4] = {(ember_qv16_i)v0, (ember_qv16_i)v1, (ember_qv16_i)v2, (ember_qv16_i)v3};
    int t;
    for (t = 0; t < 4; ++t) {
        if (range->limit) q[t] = ember_qv16_limit(q[t], range->lim);
        q[t] = ember_qv16_clamp(ember_qv16_scaled(q[t], mf[t], &range->q), &range->q);
    }
    return ember_qv16_words(q[0], q[1], q[2], q[3]);
}
EMBER_QTILE_RQ(ember_qtile_full_rq, EMBER_QMR, EMBER_QNV)
EMBER_QTILE_RQ(ember_qtile_narrow_rq, EMBER_QMR, 1)
EMBER_QTILE_RQ(ember_qtile_row_rq, 1, 4)
EMBER_QTILE_RQ(ember_qtile_row_narrow_rq, 1, 1)
#define EMBER_QTILE_RQ_DECL(NAME)                                                                       \
    __attribute__((noinline)) static void NAME(const ember_qout *o, int m0, const int8_t *W, int Kp,    \
                                               const uint8_t *X, ptrdiff_t pix, int n, const ember_qrq_out *range)
EMBER_QTILE_RQ_DECL(ember_qtile_v2_rq);
EMBER_QTILE_RQ_DECL(ember_qtile_v3_rq);
EMBER_QTILE_RQ(ember_qtile_v2_rq, EMBER_QMR, 2)
EMBER_QTILE_RQ(ember_qtile_v3_rq, EMBER_QMR, 3)
#endif

#if defined(EMBER_QF8) && EMBER_QVL == 4
/* AVX2's tiles requantised in registers, as the AVX-512 ones are (EMBER_QTILE_RQ, same drivers and
 * signature): a tile's sums are never stored as int32 and reloaded. A sum vector holds 4 pixels as two
 * VPMADDWD lanes each; a horizontal add of two of them and a 64-bit lane permute give 8 pixels' sums in
 * order, which ember_qf8's float requantisation (exact where qlinear.py's float_limit holds) turns into
 * bytes, and a channel quad of a channel-blocked output into whole words. For small K (MobileNet's
 * 1x1 layers: 16 .. 96) the store of int32 sums and the scalar pair sums took most of the layer. */
#define EMBER_QRQ2 1
typedef long long ember_qf8q __attribute__((vector_size(32)));
typedef uint8_t ember_qf8b __attribute__((vector_size(8)));
typedef uint64_t ember_qu64u __attribute__((may_alias, aligned(1)));
/* tfl: the product requantises with TFLite's integer arithmetic instead (quant.c ember_qt8_rq; shift codes
 * 64 + k or 128 + k, the same kind for every row), in registers too. */
typedef struct {
    ember_qf8i off, lo, hi, lim;
    ember_qf8i tl, th, tzp; /* TFLite's clamp before the zero point, and the zero point */
    int limit, tfl;
    int one; /* gemmlowp's two roundings as one (quant.c ember_qt8_rqa; qlinear.py one_rounding proved it) */
    int uns; /* lo >= 0: bytes by unsigned saturation (ember_qf8_pack_words) */
    ember_qf8i blo, bhi, wzp; /* lo, hi in every byte, the zero point in every int16 */
} ember_qrq_out;
/* As the AVX-512 ember_qrq_setup: whether o requantises in registers (in float, or TFLite's way), and its
 * constants. */
static int ember_qrq_setup(const ember_qout *o, ember_qrq_out *r, int M) {
    const int32_t *out = o->out;
    (void)M;
    r->off = (ember_qf8i){0} + (0x4B400000 - out[EMBER_QOUT_ZP]);
    r->lo = (ember_qf8i){0} + out[EMBER_QOUT_LO];
    r->hi = (ember_qf8i){0} + out[EMBER_QOUT_HI];
    r->lim = (ember_qf8i){0} + out[EMBER_QOUT_LIMIT];
    r->limit = out[EMBER_QOUT_LIMIT] != 0;
    r->tfl = o->kind == 1 && o->shift[0] >= EMBER_Q_TFL && o->shift[0] < 3 * EMBER_Q_TFL;
    r->tl = (ember_qf8i){0} + (out[EMBER_QOUT_LO] - out[EMBER_QOUT_ZP]);
    r->th = (ember_qf8i){0} + (out[EMBER_QOUT_HI] - out[EMBER_QOUT_ZP]);
    r->tzp = (ember_qf8i){0} + out[EMBER_QOUT_ZP];
    r->one = r->tfl && out[EMBER_QOUT_ONE];
    r->uns = out[EMBER_QOUT_LO] >= 0;
    r->blo = (ember_qf8i){0} + (int32_t)(0x01010101u * (uint8_t)out[EMBER_QOUT_LO]);
    r->bhi = (ember_qf8i){0} + (int32_t)(0x01010101u * (uint8_t)out[EMBER_QOUT_HI]);
    r->wzp = (ember_qf8i){0} + (int32_t)(0x00010001u * (uint16_t)out[EMBER_QOUT_ZP]);
    return o->kind == 1 && (o->ps == 1 || o->blk || o->rs == 1) && !o->wofs && (out[EMBER_QOUT_FLOAT] || r->tfl);
}
/* mult * 2^-shift as a float (exact: 24 significant bits). */
EMBER_INLINE float ember_qf8_mult(int32_t mult, int shift) {
    union { uint32_t u; float f; } p2;
    p2.u = (uint32_t)(127 - shift) << 23;
    return (float)mult * p2.f;
}
/* The 8 pixels' sums of two pair-sum vectors (pixels 0-3, 4-7), in pixel order. */
EMBER_INLINE ember_qf8i ember_qf8_sum8(ember_qv a0, ember_qv a1) {
    const ember_qf8i s = (ember_qf8i)__builtin_ia32_phaddd256((ember_qf8i)a0, (ember_qf8i)a1); /* 0 1 4 5 2 3 6 7 */
    return (ember_qf8i)__builtin_ia32_permdi256((ember_qf8q)s, 0xD8);
}
/* ember_q_requant of the 8 sums v (corrections included) as int32 lanes in [lo, hi] (ember_qf8_row). */
EMBER_INLINE ember_qf8i ember_qf8_rq(ember_qf8i v, ember_qf8f m, const ember_qrq_out *rg) {
    ember_qf8f t;
    if (rg->limit) {
        v = ember_qf8_min(v, rg->lim);
        v = ember_qf8_max(v, -rg->lim);
    }
    t = __builtin_convertvector(v, ember_qf8f);
    __asm__("vfmadd213ps %2, %1, %0" : "+x"(t) : "x"(m), "x"((ember_qf8f){0} + 12582912.0f));
    v = (ember_qf8i)t - rg->off;
    v = ember_qf8_max(v, rg->lo);
    return ember_qf8_min(v, rg->hi);
}
/* The first n (none if n <= 0, at most 8) lanes of q as bytes to y. */
EMBER_INLINE void ember_qf8_put(uint8_t *y, ember_qf8i q, int n) {
    int j;
    if (n >= 8) *(ember_qu64u *)(void *)y = (uint64_t)__builtin_convertvector(q, ember_qf8b);
    else
        for (j = 0; j < n; ++j) y[j] = (uint8_t)q[j];
}
/* A channel quad's 8 pixels (q0 .. q3: its channels' lanes) as words: byte t of word j is q[t]'s lane j. */
EMBER_INLINE ember_qf8i ember_qf8_words(ember_qf8i q0, ember_qf8i q1, ember_qf8i q2, ember_qf8i q3) {
    typedef uint32_t u8v __attribute__((vector_size(32)));
    const u8v b = (u8v){0} + 255u;
    return (ember_qf8i)(((u8v)q0 & b) | ((u8v)q1 & b) << 8 | ((u8v)q2 & b) << 16 | (u8v)q3 << 24);
}
/* Those words, the first n at y (none if n <= 0). */
EMBER_INLINE void ember_qf8_put_words(uint8_t *y, ember_qf8i q0, ember_qf8i q1, ember_qf8i q2, ember_qf8i q3, int n) {
    const ember_qf8i w = ember_qf8_words(q0, q1, q2, q3);
    int j;
    if (n >= 8) *(ember_qf8iu *)(void *)y = w;
    else
        for (j = 0; j < n; ++j) *(ember_qi32u *)(void *)(y + 4 * j) = w[j];
}
/* The same words (or one row's bytes: ember_qf8_scatter) to y, y + ps, y + 2 ps, ...: a channels-last output's
 * pixels ps bytes apart, or a matrix product's rows. */
EMBER_INLINE void ember_qf8_scatter_words(uint8_t *y, ptrdiff_t ps, ember_qf8i q0, ember_qf8i q1, ember_qf8i q2,
                                          ember_qf8i q3, int n) {
    const ember_qf8i w = ember_qf8_words(q0, q1, q2, q3);
    int j;
    for (j = 0; j < n && j < 8; ++j) *(ember_qi32u *)(void *)(y + j * ps) = w[j];
}
EMBER_INLINE void ember_qf8_scatter(uint8_t *y, ptrdiff_t ps, ember_qf8i q, int n) {
    int j;
    for (j = 0; j < n && j < 8; ++j) y[j * ps] = (uint8_t)q[j];
}
/* A channel quad's 8 pixels as the first n words at y (none if n <= 0) from q0 .. q3, its channels' lanes
 * requantised before the zero point: packed to int16 with signed saturation, the zero point added saturating
 * (the same as adding it first: sums past int16 saturate either way), packed to bytes (unsigned where lo >= 0,
 * where [lo, hi] holds the same bytes either way) and clamped to [lo, hi] 32 bytes at once; one byte shuffle
 * makes each pixel's word of four channels. 8 operations a quad where ember_qf8_put_words and the clamps and
 * zero points of its int32 lanes took 21. */
EMBER_INLINE void ember_qf8_pack_words(uint8_t *y, ember_qf8i q0, ember_qf8i q1, ember_qf8i q2, ember_qf8i q3, int n,
                                       const ember_qrq_out *rg) {
    typedef char b32 __attribute__((vector_size(32)));
    typedef short h16 __attribute__((vector_size(32)));
    /* bytes per 128-bit half: channel c of pixel j at 4c + j -> word j (pixels 0-3 low half, 4-7 high) */
    const b32 order = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                       0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
    h16 a = (h16)__builtin_ia32_packssdw256(q0, q1), b = (h16)__builtin_ia32_packssdw256(q2, q3);
    b32 c;
    int j;
    __asm__("vpaddsw %1, %0, %0" : "+x"(a) : "x"(rg->wzp));
    __asm__("vpaddsw %1, %0, %0" : "+x"(b) : "x"(rg->wzp));
    if (rg->uns) {
        c = (b32)__builtin_ia32_packuswb256(a, b);
        __asm__("vpmaxub %1, %0, %0\n\tvpminub %2, %0, %0" : "+x"(c) : "x"(rg->blo), "x"(rg->bhi));
    } else {
        c = (b32)__builtin_ia32_packsswb256(a, b);
        __asm__("vpmaxsb %1, %0, %0\n\tvpminsb %2, %0, %0" : "+x"(c) : "x"(rg->blo), "x"(rg->bhi));
    }
    c = (b32)__builtin_ia32_pshufb256(c, order);
    if (n >= 8) *(ember_qf8iu *)(void *)y = (ember_qf8i)c;
    else
        for (j = 0; j < n; ++j) *(ember_qi32u *)(void *)(y + 4 * j) = ((ember_qf8i)c)[j];
}
/* A tile's epilogue: S[R][H] holds the sums of rows m0 .. m0+R-1 for H vectors of 8 pixels from pix (no
 * corrections yet); adds each row's correction, requantises in registers and stores the first n pixels, as
 * a channel quad's words into a channel-blocked y or as bytes into rows. */
#define EMBER_QTILE_OUT(R, H, S)                                                                        \
    { /* constants copied first: byte stores may alias anything not visibly local */                   \
        const ember_qrq_out rg = *range;                                                                \
        const ptrdiff_t rs = o->rs;                                                                     \
        const int32_t *const mult = o->mult + m0, *const shift = o->shift + m0, *const corr = o->corr + m0; \
        ember_qf8i q[R][H];                                                                             \
        const int pk = rg.one && R == 4 && o->blk; /* ember_qf8_pack_words' zero point and clamp */        \
        int qr, qh;                                                                                     \
        if (rg.tfl) { /* TFLite's integer requantisation; gemmlowp's rounding (Micro's, LiteRT's convolutions) \
                         with k >= 31 from the row's 4 constants, where ember_qt8_init's 16 vectors took as long \
                         as the sums of a tile of small K */                                           \
            EMBER_UNROLL for (qr = 0; qr < R; ++qr) {                                                   \
                const int k = shift[qr] & 63;                                                           \
                if (rg.one) { /* gemmlowp's as one rounding (k >= 32): the row's 3 constants */         \
                    const ember_qt8i qm = (ember_qt8i){0} + mult[qr], qs = (ember_qt8i){0} + (k - 32);   \
                    const ember_qt8q qd = (ember_qt8q){0} + (((long long)1 << (k - 1)) + (1LL << 30));    \
                    EMBER_UNROLL for (qh = 0; qh < H; ++qh) {                                           \
                        q[qr][qh] = ember_qt8_rqa(S[qr][qh] + corr[qr], qm, qm, qd, qd, qs);             \
                        if (!pk) q[qr][qh] = ember_qt8_clamp(q[qr][qh], rg.tl, rg.th) + rg.tzp;          \
                    }                                                                                   \
                } else if (shift[qr] >= 2 * EMBER_Q_TFL && k >= 31) { /* gemmlowp's: the row's 4 constants */ \
                    const int rsh = k - 31;                                                             \
                    const int32_t msk = (int32_t)(((uint32_t)1 << rsh) - 1u);                           \
                    const ember_qt8i qm = (ember_qt8i){0} + mult[qr], qs = (ember_qt8i){0} + rsh,        \
                                     qk = (ember_qt8i){0} + msk, qh2 = (ember_qt8i){0} + (msk >> 1);     \
                    EMBER_UNROLL for (qh = 0; qh < H; ++qh)                                             \
                        q[qr][qh] = ember_qt8_rqd(S[qr][qh] + corr[qr], qm, qm, qs, qk, qh2, rg.tl, rg.th, rg.tzp); \
                } else {                                                                                \
                    ember_qt8 t;                                                                        \
                    ember_qt8_init(&t, mult[qr], shift[qr], o->zp, o->lo, o->hi);                       \
                    EMBER_UNROLL for (qh = 0; qh < H; ++qh) q[qr][qh] = ember_qt8_rq(S[qr][qh] + corr[qr], &t); \
                }                                                                                       \
            }                                                                                           \
        } else {                                                                                        \
            EMBER_UNROLL for (qr = 0; qr < R; ++qr) {                                                   \
                const ember_qf8f mf = (ember_qf8f){0} + ember_qf8_mult(mult[qr], shift[qr]);             \
                EMBER_UNROLL for (qh = 0; qh < H; ++qh) q[qr][qh] = ember_qf8_rq(S[qr][qh] + corr[qr], mf, &rg); \
            }                                                                                           \
        }                                                                                               \
        if (pk) {                                                                                       \
            uint8_t *const y = ember_qblk_at(o, m0, pix);                                               \
            EMBER_UNROLL for (qh = 0; qh < H; ++qh)                                                     \
                ember_qf8_pack_words(y + 32 * qh, q[0][qh], q[1 % R][qh], q[2 % R][qh], q[3 % R][qh], n - 8 * qh, &rg); \
        } else if (R == 4 && o->blk) { /* a channel quad's words (m0 % 4 == 0) */                       \
            uint8_t *const y = ember_qblk_at(o, m0, pix);                                               \
            EMBER_UNROLL for (qh = 0; qh < H; ++qh)                                                     \
                ember_qf8_put_words(y + 32 * qh, q[0][qh], q[1 % R][qh], q[2 % R][qh], q[3 % R][qh], n - 8 * qh); \
        } else if (o->ps > 1) { /* pixels ps apart (rs 1): a channel quad's words, or each row's bytes */ \
            const ptrdiff_t ps = o->ps;                                                                 \
            uint8_t *const y = o->y + m0 + pix * ps;                                                    \
            EMBER_UNROLL for (qh = 0; qh < H; ++qh) {                                                   \
                if (R == 4)                                                                             \
                    ember_qf8_scatter_words(y + 8 * qh * ps, ps, q[0][qh], q[1 % R][qh], q[2 % R][qh], q[3 % R][qh], \
                                            n - 8 * qh);                                                \
                else                                                                                    \
                    EMBER_UNROLL for (qr = 0; qr < R; ++qr) ember_qf8_scatter(y + qr + 8 * qh * ps, ps, q[qr][qh], n - 8 * qh); \
            }                                                                                           \
        } else {                                                                                        \
            uint8_t *const y = o->y + m0 * rs + pix;                                                    \
            EMBER_UNROLL for (qr = 0; qr < R; ++qr)                                                     \
                EMBER_UNROLL for (qh = 0; qh < H; ++qh) ember_qf8_put(y + qr * rs + 8 * qh, q[qr][qh], n - 8 * qh); \
        }                                                                                               \
    }
#define EMBER_QTILE_RQ(NAME, R, V)                                                                      \
    static void NAME(const ember_qout *o, int m0, const int8_t *W, int Kp, const uint8_t *X,            \
                     ptrdiff_t pix, int n, const ember_qrq_out *range) {                                \
        ember_qv a[R][V + (V & 1)]; /* an odd V's last pair: a vector of zeros */                       \
        ember_qhx x[V];                                                                                 \
        const uint8_t *xg = X, *const end = X + (ptrdiff_t)Kp * EMBER_QPB;                             \
        const int8_t *w = W;                                                                            \
        int r, v, h;                                                                                    \
        EMBER_UNROLL for (r = 0; r < R; ++r)                                                            \
            EMBER_UNROLL for (v = 0; v < V + (V & 1); ++v) a[r][v] = (ember_qv){0};                     \
        do { /* Kp >= 4 */                                                                              \
            EMBER_UNROLL for (v = 0; v < V; ++v) x[v] = EMBER_QWIDEN(((const ember_qvx *)(const void *)xg)[v]); \
            EMBER_UNROLL for (r = 0; r < R; ++r) {                                                      \
                const ember_qhx wr = EMBER_QWIDEN((ember_qvx){0} + *(const ember_qi32u *)(const void *)(w + (ptrdiff_t)r * Kp)); \
                EMBER_UNROLL for (v = 0; v < V; ++v) a[r][v] += (ember_qv)EMBER_QPMADDWD(x[v], wr);     \
            }                                                                                           \
            xg += 4 * EMBER_QPB;                                                                        \
            w += 4;                                                                                     \
        } while (xg != end);                                                                            \
        {                                                                                               \
            ember_qf8i s[R][(V + 1) / 2];                                                               \
            EMBER_UNROLL for (r = 0; r < R; ++r)                                                        \
                EMBER_UNROLL for (h = 0; h < (V + 1) / 2; ++h) s[r][h] = ember_qf8_sum8(a[r][2 * h], a[r][2 * h + 1]); \
            EMBER_QTILE_OUT(R, (V + 1) / 2, s);                                                         \
        }                                                                                               \
    }
EMBER_QTILE_RQ(ember_qtile_full_rqw, EMBER_QMR, EMBER_QNV)
EMBER_QTILE_RQ(ember_qtile_narrow_rqw, EMBER_QMR, 1)
EMBER_QTILE_RQ(ember_qtile_row_rqw, 1, 4)
EMBER_QTILE_RQ(ember_qtile_row_narrow_rqw, 1, 1)
EMBER_QTILE_RQ(ember_qtile_v2_rqw, EMBER_QMR, 2)
EMBER_QTILE_RQ(ember_qtile_v3_rqw, EMBER_QMR, 3)
/* Where no weight is -128 (o->w127): VPMADDUBSW multiplies unsigned by signed bytes and adds pairs into
 * int16, twice the products of a VPMADDWD and no widening of bytes. With x the int8 view bytes,
 * |x| (VPSIGNB x by x: -128 gives the byte 0x80, 128 unsigned) times w * sign(x) (VPSIGNB w by x, exact
 * for w in [-127, 127]) is w * x, and a pair's sum is at most 2 * 128 * 127 = 32512: never saturated.
 * VPMADDWD by ones then adds the pairs into one int32 lane per pixel: V8 vectors of 8 pixels. Only the
 * activations' loads read past a narrow tile's pixels (still inside the packed block of 64). */
typedef char ember_qb32 __attribute__((vector_size(32)));
typedef char ember_qb32u __attribute__((vector_size(32), aligned(1), may_alias));
typedef short ember_qh16 __attribute__((vector_size(32)));
#define EMBER_QTILE_RQS(NAME, R, V8)                                                                    \
    static void NAME(const ember_qout *o, int m0, const int8_t *W, int Kp, const uint8_t *X,            \
                     ptrdiff_t pix, int n, const ember_qrq_out *range) {                                \
        ember_qf8i a[R][V8];                                                                            \
        ember_qb32 x[V8], ax[V8];                                                                       \
        const ember_qh16 ones = (ember_qh16){0} + 1;                                                    \
        const uint8_t *xg = X, *const end = X + (ptrdiff_t)Kp * EMBER_QPB;                             \
        const int8_t *w = W, *pf = W + (ptrdiff_t)R * Kp;                                              \
        int r, v, step = 0;                                                                             \
        EMBER_UNROLL for (r = 0; r < R; ++r)                                                            \
            EMBER_UNROLL for (v = 0; v < V8; ++v) a[r][v] = (ember_qf8i){0};                            \
        do { /* Kp >= 4 */                                                                              \
            if ((step++ & 3) == 0) { /* the next rows' weights into L2, as EMBER_QTILE_RQ's AVX-512 tiles */ \
                __builtin_prefetch(pf, 0, 2);                                                           \
                pf += 64;                                                                               \
            }                                                                                           \
            EMBER_UNROLL for (v = 0; v < V8; ++v) {                                                     \
                x[v] = *(const ember_qb32u *)(const void *)(xg + 32 * v);                               \
                ax[v] = __builtin_ia32_psignb256(x[v], x[v]);                                           \
            }                                                                                           \
            EMBER_UNROLL for (r = 0; r < R; ++r) {                                                      \
                const ember_qb32 wr = (ember_qb32)((ember_qf8i){0} + *(const ember_qi32u *)(const void *)(w + (ptrdiff_t)r * Kp)); \
                EMBER_UNROLL for (v = 0; v < V8; ++v)                                                   \
                    a[r][v] += (ember_qf8i)__builtin_ia32_pmaddwd256(                                   \
                        __builtin_ia32_pmaddubsw256(ax[v], __builtin_ia32_psignb256(wr, x[v])), ones);  \
            }                                                                                           \
            xg += 4 * EMBER_QPB;                                                                        \
            w += 4;                                                                                     \
        } while (xg != end);                                                                            \
        EMBER_QTILE_OUT(R, V8, a);                                                                      \
    }
EMBER_QTILE_RQS(ember_qtile_full_rqs, EMBER_QMR, 2)
EMBER_QTILE_RQS(ember_qtile_narrow_rqs, EMBER_QMR, 1)
EMBER_QTILE_RQS(ember_qtile_row_rqs, 1, 2)
/* The drivers' tiles (qblock.c): VPMADDUBSW where the weights allow, else VPMADDWD. */
#define EMBER_QTILE_PICK(NAME, FAST, SLOW)                                                              \
    static void NAME(const ember_qout *o, int m0, const int8_t *W, int Kp, const uint8_t *X,            \
                     ptrdiff_t pix, int n, const ember_qrq_out *range) {                                \
        if (o->w127) FAST(o, m0, W, Kp, X, pix, n, range);                                              \
        else SLOW(o, m0, W, Kp, X, pix, n, range);                                                      \
    }
EMBER_QTILE_PICK(ember_qtile_full_rq, ember_qtile_full_rqs, ember_qtile_full_rqw)
EMBER_QTILE_PICK(ember_qtile_narrow_rq, ember_qtile_narrow_rqs, ember_qtile_narrow_rqw)
EMBER_QTILE_PICK(ember_qtile_row_rq, ember_qtile_row_rqs, ember_qtile_row_rqw)
EMBER_QTILE_PICK(ember_qtile_row_narrow_rq, ember_qtile_row_rqs, ember_qtile_row_narrow_rqw)
EMBER_QTILE_PICK(ember_qtile_v2_rq, ember_qtile_narrow_rqs, ember_qtile_v2_rqw)
EMBER_QTILE_PICK(ember_qtile_v3_rq, ember_qtile_full_rqs, ember_qtile_v3_rqw)
/* Whether ember_qgemv8_rq applies to o: requantised bytes, no weight offsets, no weight -128, and the float
 * path or TFLite's (rg: ember_qrq_setup's constants). */
EMBER_INLINE int ember_qgemv8_ok(const ember_qout *o, ember_qrq_out *rg) {
    ember_qrq_setup(o, rg, 0);
    return o->kind == 1 && !o->wofs && o->w127 && (rg->tfl || o->out[EMBER_QOUT_FLOAT]);
}
/* Rows m0 .. m0+7 of a matrix-vector product (one pixel, `pix`, whose Kp int8 view bytes are x; a fully-
 * connected layer's one row), requantised in registers: VPMADDUBSW as the RQS tiles (|x| times w * sign(x)),
 * 32 values of K a step, each load of x shared by the 8 rows; the 8 rows' sums reduced into one vector,
 * lane r row m0 + r, requantised with each row's own constants and stored, 8 bytes at once where the rows'
 * outputs are adjacent. Where each row's sum went alone through VPMADDWD on widened bytes, a scalar
 * horizontal sum and ember_qstore, those were most of a layer of a few pixels. */
static void ember_qgemv8_rq(const ember_qout *o, int m0, const int8_t *W, int Kp, const uint8_t *x, ptrdiff_t pix,
                            const ember_qrq_out *rg) {
    const ember_qh16 ones = (ember_qh16){0} + 1;
    const int8_t *const w = W + (ptrdiff_t)m0 * Kp;
    ember_qf8i a[8], s, q;
    int32_t tail[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int r, k = 0;
    for (r = 0; r < 8; ++r) a[r] = (ember_qf8i){0};
    const int8_t *pf = w + 8 * (ptrdiff_t)Kp; /* the next 8 rows, 8 * Kp contiguous bytes */
    for (; k + 32 <= Kp; k += 32) {
        const ember_qb32 xv = *(const ember_qb32u *)(const void *)(x + k), ax = __builtin_ia32_psignb256(xv, xv);
        /* the next group's rows into cache while this one's are summed, 256 bytes a step (all of them over
         * Kp / 32 steps): the 8 row streams are each too short (Kp bytes) for the hardware prefetchers, and
         * a fully-connected layer's weights come from L3 or memory (without this, MobileNetV2's 1280 x 1000
         * took longer than the single sequential stream of the row-by-row loop) */
        __builtin_prefetch(pf, 0, 3);
        __builtin_prefetch(pf + 64, 0, 3);
        __builtin_prefetch(pf + 128, 0, 3);
        __builtin_prefetch(pf + 192, 0, 3);
        pf += 256;
        EMBER_UNROLL for (r = 0; r < 8; ++r) {
            const ember_qb32 wr = *(const ember_qb32u *)(const void *)(w + (ptrdiff_t)r * Kp + k);
            a[r] += (ember_qf8i)__builtin_ia32_pmaddwd256(
                __builtin_ia32_pmaddubsw256(ax, __builtin_ia32_psignb256(wr, xv)), ones);
        }
    }
    if (k + 16 <= Kp) { /* 16 more values as a half step (a 1x1 of 112 input channels has 3.5 steps) */
        typedef char b16 __attribute__((vector_size(16)));
        typedef char b16u __attribute__((vector_size(16), aligned(1), may_alias));
        typedef short h8 __attribute__((vector_size(16)));
        typedef int32_t i4 __attribute__((vector_size(16)));
        const b16 xv = *(const b16u *)(const void *)(x + k), ax = __builtin_ia32_psignb128(xv, xv);
        EMBER_UNROLL for (r = 0; r < 8; ++r) {
            const b16 wr = *(const b16u *)(const void *)(w + (ptrdiff_t)r * Kp + k);
            const i4 p = (i4)__builtin_ia32_pmaddwd128(
                (h8)__builtin_ia32_pmaddubsw128(ax, __builtin_ia32_psignb128(wr, xv)), (h8){1, 1, 1, 1, 1, 1, 1, 1});
            a[r] += (ember_qf8i){p[0], p[1], p[2], p[3], 0, 0, 0, 0};
        }
        k += 16;
    }
    for (; k < Kp; ++k) /* the last Kp % 16 values */
        for (r = 0; r < 8; ++r) tail[r] += w[(ptrdiff_t)r * Kp + k] * (int8_t)x[k];
    { /* lane r of s: row r's sum (each horizontal add works within 128-bit halves) */
        const ember_qf8i h01 = (ember_qf8i)__builtin_ia32_phaddd256(a[0], a[1]),
                         h23 = (ember_qf8i)__builtin_ia32_phaddd256(a[2], a[3]),
                         h45 = (ember_qf8i)__builtin_ia32_phaddd256(a[4], a[5]),
                         h67 = (ember_qf8i)__builtin_ia32_phaddd256(a[6], a[7]);
        const ember_qf8i u = (ember_qf8i)__builtin_ia32_phaddd256(h01, h23), /* rows 0-3, low | high halves */
            v = (ember_qf8i)__builtin_ia32_phaddd256(h45, h67);
        s = (ember_qf8i)__builtin_ia32_permti256((ember_qf8q)u, (ember_qf8q)v, 0x20) +
            (ember_qf8i)__builtin_ia32_permti256((ember_qf8q)u, (ember_qf8q)v, 0x31);
    }
    s += *(const ember_qf8iu *)(const void *)tail + *(const ember_qf8iu *)(const void *)(o->corr + m0);
    if (rg->tfl) {
        ember_qt8 t;
        ember_qt8_init(&t, o->mult[m0], o->shift[m0], o->zp, o->lo, o->hi);
        ember_qt8_oct(&t, o->mult + m0, o->shift + m0);
        ember_qt8_one(&t, o->out[EMBER_QOUT_ONE]);
        q = ember_qt8_rq(s, &t);
    } else {
        ember_qf8f mf;
        for (r = 0; r < 8; ++r) mf[r] = ember_qf8_mult(o->mult[m0 + r], o->shift[m0 + r]);
        q = ember_qf8_rq(s, mf, rg);
    }
    if (!o->blk && o->rs == 1) ember_qf8_put(o->y + m0 + pix * o->ps, q, 8);
    else
        for (r = 0; r < 8; ++r)
            *(o->blk ? ember_qblk_at(o, m0 + r, pix) : o->y + (m0 + r) * o->rs + pix * o->ps) = (uint8_t)q[r];
}
#endif

/*@end*/
