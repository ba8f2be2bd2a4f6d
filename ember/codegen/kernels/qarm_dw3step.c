/* The Cortex-M int8 kernels (qarm.c lists their files): the depthwise 3x3 steps (ember_qa_dw3_steps), four
 * outputs of a row from three plane rows (ember_qa_dw3_quad, _quad2), and with the DSP extension whole output
 * rows in assembly (ember_qa_dw3_row1 and the others that qarm_dw3.c's ember_qa_dw3_fast calls). */

/*@kernel ember_qa_dw3_steps requires ember_qarm*/
/* Outputs ow .. ow + 3 of a stride-1 3x3 window: o[0..3] plus three plane rows (from p, Wp int16 apart, p
 * 4-byte aligned; it reads p[0 .. 5] of each) times wv = per kernel row the pairs A (w0,w1) B (w2,0)
 * C (0,w0) D (w1,w2): with X0 X1 X2 the row's words (p0,p1) (p2,p3) (p4,p5), o0 += X0.A + X1.B,
 * o1 += X0.C + X1.D, o2 += X1.A + X2.B, o3 += X1.C + X2.D. 38 instructions for 36 multiply-adds (two
 * outputs at a time took 48); in assembly: the compiler spills around the weight words. */
#define EMBER_QA_DW3_ROW(OFS)                        \
    "ldrd %[x0], %[x1], [%[q]]\n\t"                  \
    "ldr %[x2], [%[q], #8]\n\t"                      \
    "ldrd %[wa], %[wb], [%[wv], #" #OFS "]\n\t"      \
    "smlad %[o0], %[x0], %[wa], %[o0]\n\t"           \
    "smlad %[o0], %[x1], %[wb], %[o0]\n\t"           \
    "smlad %[o2], %[x1], %[wa], %[o2]\n\t"           \
    "smlad %[o2], %[x2], %[wb], %[o2]\n\t"           \
    "ldrd %[wa], %[wb], [%[wv], #" #OFS "+8]\n\t"    \
    "smlad %[o1], %[x0], %[wa], %[o1]\n\t"           \
    "smlad %[o1], %[x1], %[wb], %[o1]\n\t"           \
    "smlad %[o3], %[x1], %[wa], %[o3]\n\t"           \
    "smlad %[o3], %[x2], %[wb], %[o3]\n\t"
/* Outputs ow .. ow + 3 of a stride-2 3x3 window, as ember_qa_dw3_quad (p: the plane at column 2 * ow; it
 * reads p[0 .. 9] of each row): with X0 .. X4 the row's words, o0 += X0.A + X1.B, o1 += X1.A + X2.B,
 * o2 += X2.A + X3.B, o3 += X3.A + X4.B. 39 instructions for 36 multiply-adds (one output at a time: 33
 * per output). */
#define EMBER_QA_DW3_ROW2(OFS)                       \
    "ldrd %[x0], %[x1], [%[q]]\n\t"                  \
    "ldr %[x2], [%[q], #8]\n\t"                      \
    "ldrd %[wa], %[wb], [%[wv], #" #OFS "]\n\t"      \
    "smlad %[o0], %[x0], %[wa], %[o0]\n\t"           \
    "smlad %[o0], %[x1], %[wb], %[o0]\n\t"           \
    "smlad %[o1], %[x1], %[wa], %[o1]\n\t"           \
    "smlad %[o1], %[x2], %[wb], %[o1]\n\t"           \
    "ldrd %[x0], %[x1], [%[q], #12]\n\t"             \
    "smlad %[o2], %[x2], %[wa], %[o2]\n\t"           \
    "smlad %[o2], %[x0], %[wb], %[o2]\n\t"           \
    "smlad %[o3], %[x0], %[wa], %[o3]\n\t"           \
    "smlad %[o3], %[x1], %[wb], %[o3]\n\t"
/* One of them from its kernel row ROW; without the DSP extension the same sums in C, output j from the
 * words X[XS[j]], X[XS[j] + 1] (X[k] at p + 2 k) and the weight pairs wv[WS[j]], wv[WS[j] + 1]. */
#if EMBER_HAVE_ARM_DSP
#define EMBER_QA_DW3_QUADFN(NAME, ROW, XS, WS)                                                                     \
    EMBER_INLINE void NAME(int32_t o[4], const int16_t *p, int Wp, const uint32_t *wv) {                          \
        int32_t o0 = o[0], o1 = o[1], o2 = o[2], o3 = o[3];                                                      \
        uint32_t x0, x1, x2, wa, wb;                                                                              \
        const int16_t *q = p;                                                                                     \
        __asm__(ROW(0) "add %[q], %[q], %[rs]\n\t" ROW(16) "add %[q], %[q], %[rs]\n\t" ROW(32)                    \
                : [o0] "+r"(o0), [o1] "+r"(o1), [o2] "+r"(o2), [o3] "+r"(o3), [q] "+r"(q), [x0] "=&r"(x0),      \
                  [x1] "=&r"(x1), [x2] "=&r"(x2), [wa] "=&r"(wa), [wb] "=&r"(wb)                                  \
                : [rs] "r"(2 * Wp), [wv] "r"(wv)                                                                  \
                : "memory");                                                                                      \
        o[0] = o0, o[1] = o1, o[2] = o2, o[3] = o3;                                                               \
    }
#else
#define EMBER_QA_DW3_QUADFN(NAME, ROW, XS, WS)                                                                     \
    EMBER_INLINE void NAME(int32_t o[4], const int16_t *p, int Wp, const uint32_t *wv) {                          \
        static const int xs[4] = {XS}, ws[4] = {WS};                                                              \
        int i, j;                                                                                                 \
        for (i = 0; i < 3; ++i, p += Wp, wv += 4) {                                                               \
            const ember_qa_u32 *x = (const ember_qa_u32 *)(const void *)p;                                        \
            for (j = 0; j < 4; ++j)                                                                               \
                o[j] = ember_qa_smlad(x[xs[j] + 1], wv[ws[j] + 1], ember_qa_smlad(x[xs[j]], wv[ws[j]], o[j]));    \
        }                                                                                                         \
    }
#endif
#define EMBER_QA_DW3_XS1 0, 0, 1, 1
#define EMBER_QA_DW3_WS1 0, 2, 0, 2
#define EMBER_QA_DW3_XS2 0, 1, 2, 3
#define EMBER_QA_DW3_WS2 0, 0, 0, 0
EMBER_QA_DW3_QUADFN(ember_qa_dw3_quad, EMBER_QA_DW3_ROW, EMBER_QA_DW3_XS1, EMBER_QA_DW3_WS1)
EMBER_QA_DW3_QUADFN(ember_qa_dw3_quad2, EMBER_QA_DW3_ROW2, EMBER_QA_DW3_XS2, EMBER_QA_DW3_WS2)
#undef EMBER_QA_DW3_QUADFN
#undef EMBER_QA_DW3_XS1
#undef EMBER_QA_DW3_WS1
#undef EMBER_QA_DW3_XS2
#undef EMBER_QA_DW3_WS2
#undef EMBER_QA_DW3_ROW
#undef EMBER_QA_DW3_ROW2
#if EMBER_HAVE_ARM_DSP
/* A channel's output rows of n >= 1 outputs each (stored one row after the other from y) from the plane rows
 * q, q + wv[15] bytes, ..., each output requantised by the SSAT form with the zero point in ra (ops/qarm.py
 * `fold_zp`). wv: [0 .. 3] the bias four times (one LDM starts a step's sums), [4 .. 9] per kernel row the
 * words A = (w0, w1) and D = (w1, w2), [10 .. 12] mult, sh, ra, [13] the plane's row in bytes, [14] the rows
 * (>= 1), [15] the plane's bytes from one output row to the next. A row: n / 4 steps of four outputs, then its
 * n % 4 last from a step of two (n % 4 <= 2) or four (TBB picks). With X0 X1 X2 a kernel row's words (p0, p1)
 * (p2, p3) (p4, p5) at the step's first column, o0 += X0.A + p2 w2, o1 += p1 w0 + X1.D, o2 += X1.A + p4 w2,
 * o3 += p3 w0 + X2.D (stride 2, with the words X0 .. X4: o_j += X_j.A + X_{j+1}.lo w2): SMLAD for a pair of
 * products, SMLABT / SMLATB for one, so two weight words per kernel row (the pairs (w2, 0) and (0, w0) took
 * another load). Naked, all in registers (o0 .. o3 in r0 .. r3, q r4, row words r5 r6 r8, weight words r9 r10,
 * r11 the plane's row bytes, wv r12, y lr, the steps left r7; y's end and the step to the next row on the
 * stack): 54 instructions per step of stride 1 on a plane of fixed pitch (_row1p, where r11 keeps ra; stride 2,
 * _row2p: 57), 4 more where the rows lie r11 bytes apart; 6 a row (the _s variants, for rows under 4: 8). */
/* Three outputs of a kernel row (EMBER_QA_DW3_R1 without o3; ember_qa_dw3_row3p below). */
#define EMBER_QA_DW3_R3(OFS, B)                      \
    "ldrd r5, r6, [r4, #" B "]\n\t"                  \
    "ldr r8, [r4, #" B "+8]\n\t"                     \
    "ldrd r9, r10, [r12, #" #OFS "]\n\t"             \
    "smlad r0, r5, r9, r0\n\t"                       \
    "smlabt r0, r6, r10, r0\n\t"                     \
    "smlatb r1, r5, r9, r1\n\t"                      \
    "smlad r1, r6, r10, r1\n\t"                      \
    "smlad r2, r6, r9, r2\n\t"                       \
    "smlabt r2, r8, r10, r2\n\t"
#define EMBER_QA_DW3_R1(OFS, B)                      \
    EMBER_QA_DW3_R3(OFS, B)                          \
    "smlatb r3, r6, r9, r3\n\t"                      \
    "smlad r3, r8, r10, r3\n\t"
/* The same for o0 and o1 alone (a row's last one or two outputs). */
#define EMBER_QA_DW3_T1(OFS, B)                      \
    "ldrd r5, r6, [r4, #" B "]\n\t"                  \
    "ldrd r9, r10, [r12, #" #OFS "]\n\t"             \
    "smlad r0, r5, r9, r0\n\t"                       \
    "smlabt r0, r6, r10, r0\n\t"                     \
    "smlatb r1, r5, r9, r1\n\t"                      \
    "smlad r1, r6, r10, r1\n\t"
#define EMBER_QA_DW3_T2(OFS, B)                      \
    "ldrd r5, r6, [r4, #" B "]\n\t"                  \
    "ldr r8, [r4, #" B "+8]\n\t"                     \
    "ldrd r9, r10, [r12, #" #OFS "]\n\t"             \
    "smlad r0, r5, r9, r0\n\t"                       \
    "smlabt r0, r6, r10, r0\n\t"                     \
    "smlad r1, r6, r9, r1\n\t"                       \
    "smlabt r1, r8, r10, r1\n\t"
#define EMBER_QA_DW3_R2(OFS, B)                      \
    EMBER_QA_DW3_T2(OFS, B)                          \
    "ldrd r5, r6, [r4, #" B "+12]\n\t"               \
    "smlad r2, r8, r9, r2\n\t"                       \
    "smlabt r2, r5, r10, r2\n\t"                     \
    "smlad r3, r5, r9, r3\n\t"                       \
    "smlabt r3, r6, r10, r3\n\t"
/* The three kernel rows of a step: r11 bytes apart, or EMBER_QA_DW3_PITCH int16 (immediate offsets). */
#define EMBER_QA_DW3_ROWS(ROW)                                                                                      \
    ROW(16, "0") "add r4, r4, r11\n\t" ROW(24, "0") "add r4, r4, r11\n\t" ROW(32, "0") "sub r4, r4, r11, lsl #1\n\t"
#define EMBER_QA_DW3_ROWSP(ROW) ROW(16, "0") ROW(24, "128") ROW(32, "256")
#define EMBER_QA_DW3_RQ(O, RA)                       \
    "smmla " O ", " O ", r9, " RA "\n\t"              \
    "asr " O ", " O ", r10\n\t"                       \
    "ssat " O ", #8, " O "\n\t"
/* The row functions' signature (naked: their assembly saves and restores what it uses) and the first steps
 * of most: r4 = q, lr = y, r12 = wv. */
#define EMBER_QA_DW3_NAKED(NAME)                                                                                    \
    EMBER_UNUSED EMBER_NOINLINE __attribute__((naked)) static void NAME(                                           \
        EMBER_UNUSED const int16_t *q, EMBER_UNUSED uint8_t *y, EMBER_UNUSED const uint32_t *wv, EMBER_UNUSED int n)
#define EMBER_QA_DW3_ENTRY "push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\tmov r4, r0\n\tmov lr, r1\n\tmov r12, r2\n\t"
/* One naked row function: ROWS (EMBER_QA_DW3_ROWS or _ROWSP), STEP and TWO (a step of four and of two, as
 * EMBER_QA_DW3_R1 and _T1), ADV (a step's bytes along the plane's row, 2^LOG), R11 (wv's byte offset for r11),
 * RQP (loads ra into RA where r11 does not keep it), CHK (a row's test for no step of four: the _s variants,
 * for n < 4, have it). */
#define EMBER_QA_DW3_CHK "cmp r7, #0\n\tbeq 3f\n\t"
#define EMBER_QA_DW3_ROWFN(NAME, ROWS, STEP, TWO, ADV, LOG, R11, RQP, RA, CHK)                                    \
    EMBER_QA_DW3_NAKED(NAME) {                                                                                   \
    __asm__(EMBER_QA_DW3_ENTRY                                                                                   \
            "ldr r11, [r12, #" R11 "]\n\t"                                                                       \
            "ldr r1, [r12, #56]\n\t"                                                                             \
            "ldr r2, [r12, #60]\n\t"                                                                             \
            "mul r1, r1, r3\n\t"                                                                                 \
            "add r0, lr, r1\n\t" /* y's end */                                                                   \
            "lsrs r7, r3, #2\n\t"                                                                                \
            "sub r1, r2, r7, lsl #" LOG "\n\t" /* from a row's last step of four to the next row */              \
            "mov r2, r7\n\t"                                                                                     \
            "and r3, r3, #3\n\t"                                                                                 \
            /* sp + 0: y's end, 4: the step to the next row, 8: steps of four a row, 12: the last outputs */       \
            "push {r0, r1, r2, r3}\n\t"                                                                          \
            "1:\n\t"                                                                                             \
            CHK                                                                                                  \
            "0:\n\t"                                                                                             \
            "ldm r12, {r0, r1, r2, r3}\n\t"                                                                      \
            ROWS(STEP)                                                                                           \
            "add r4, r4, #" ADV "\n\t"                                                                           \
            "ldrd r9, r10, [r12, #40]\n\t"                                                                       \
            RQP                                                                                                  \
            EMBER_QA_DW3_RQ("r0", RA) EMBER_QA_DW3_RQ("r1", RA) EMBER_QA_DW3_RQ("r2", RA) EMBER_QA_DW3_RQ("r3", RA)\
            "strb r1, [lr, #1]\n\t"                                                                              \
            "strb r2, [lr, #2]\n\t"                                                                              \
            "strb r3, [lr, #3]\n\t"                                                                              \
            "strb r0, [lr], #4\n\t"                                                                              \
            "subs r7, r7, #1\n\t"                                                                                \
            "bne 0b\n\t"                                                                                         \
            "3:\n\t"                                                                                             \
            "ldr r7, [sp, #12]\n\t"                                                                              \
            "tbb [pc, r7]\n\t"                                                                                   \
            "4:\n\t"                                                                                             \
            ".byte (6f - 4b) / 2, (7f - 4b) / 2, (8f - 4b) / 2, (9f - 4b) / 2\n\t"                               \
            "6:\n\t" /* the next output row: y is right after this one's last output */                         \
            "ldm sp, {r5, r6, r7}\n\t"                                                                           \
            "add r4, r4, r6\n\t"                                                                                 \
            "cmp lr, r5\n\t"                                                                                     \
            "bne 1b\n\t"                                                                                         \
            "add sp, sp, #16\n\t"                                                                                \
            "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n\t"                                                     \
            "7:\n\t" /* one output left */                                                                       \
            "ldm r12, {r0, r1}\n\t"                                                                              \
            ROWS(TWO)                                                                                            \
            "ldrd r9, r10, [r12, #40]\n\t"                                                                       \
            RQP                                                                                                  \
            EMBER_QA_DW3_RQ("r0", RA)                                                                            \
            "strb r0, [lr], #1\n\t"                                                                              \
            "b 6b\n\t"                                                                                           \
            "8:\n\t" /* two */                                                                                   \
            "ldm r12, {r0, r1}\n\t"                                                                              \
            ROWS(TWO)                                                                                            \
            "ldrd r9, r10, [r12, #40]\n\t"                                                                       \
            RQP                                                                                                  \
            EMBER_QA_DW3_RQ("r0", RA) EMBER_QA_DW3_RQ("r1", RA)                                                  \
            "strb r1, [lr, #1]\n\t"                                                                              \
            "strb r0, [lr], #2\n\t"                                                                              \
            "b 6b\n\t"                                                                                           \
            "9:\n\t" /* three: a step of four */                                                                 \
            "ldm r12, {r0, r1, r2, r3}\n\t"                                                                      \
            ROWS(STEP)                                                                                           \
            "ldrd r9, r10, [r12, #40]\n\t"                                                                       \
            RQP                                                                                                  \
            EMBER_QA_DW3_RQ("r0", RA) EMBER_QA_DW3_RQ("r1", RA) EMBER_QA_DW3_RQ("r2", RA)                        \
            "strb r1, [lr, #1]\n\t"                                                                              \
            "strb r2, [lr, #2]\n\t"                                                                              \
            "strb r0, [lr], #3\n\t"                                                                              \
            "b 6b");                                                                                             \
    }
#define EMBER_QA_DW3_PITCH 64 /* int16: ember_qa_dw3_row1p/2p's plane rows, 128 bytes (EMBER_QA_DW3_ROWSP) */
#define EMBER_QA_DW3_ROWFNS(NAME, ROWS, STEP, TWO, ADV, LOG, R11, RQP, RA)                                        \
    EMBER_QA_DW3_ROWFN(NAME, ROWS, STEP, TWO, ADV, LOG, R11, RQP, RA, "")                                         \
    EMBER_QA_DW3_ROWFN(NAME##s, ROWS, STEP, TWO, ADV, LOG, R11, RQP, RA, EMBER_QA_DW3_CHK)
EMBER_QA_DW3_ROWFNS(ember_qa_dw3_row1, EMBER_QA_DW3_ROWS, EMBER_QA_DW3_R1, EMBER_QA_DW3_T1, "8", "3", "52",
                    "ldr r8, [r12, #48]\n\t", "r8")
EMBER_QA_DW3_ROWFNS(ember_qa_dw3_row2, EMBER_QA_DW3_ROWS, EMBER_QA_DW3_R2, EMBER_QA_DW3_T2, "16", "4", "52",
                    "ldr r8, [r12, #48]\n\t", "r8")
EMBER_QA_DW3_ROWFNS(ember_qa_dw3_row1p, EMBER_QA_DW3_ROWSP, EMBER_QA_DW3_R1, EMBER_QA_DW3_T1, "8", "3", "48", "",
                    "r11")
EMBER_QA_DW3_ROWFNS(ember_qa_dw3_row2p, EMBER_QA_DW3_ROWSP, EMBER_QA_DW3_R2, EMBER_QA_DW3_T2, "16", "4", "48", "",
                    "r11")
#undef EMBER_QA_DW3_ROWFNS
#undef EMBER_QA_DW3_CHK
#undef EMBER_QA_DW3_ROWFN
/* ember_qa_dw3_row1p for rows of 6 outputs (VWW's 6 x 6 maps), each row one step of six where a step of four and
 * one of two took 89 instructions: 80, the sums in r0 .. r3, r5, r6, the row words in r7 .. r10, the weight
 * words in r11, lr, y and y's end and the plane's row step on the stack. */
#define EMBER_QA_DW3_R6(OFS, B)                      \
    "ldrd r7, r8, [r4, #" B "]\n\t"                  \
    "ldrd r9, r10, [r4, #" B "+8]\n\t"               \
    "ldrd r11, lr, [r12, #" #OFS "]\n\t"             \
    "smlad r0, r7, r11, r0\n\t"                      \
    "smlabt r0, r8, lr, r0\n\t"                      \
    "smlatb r1, r7, r11, r1\n\t"                     \
    "smlad r1, r8, lr, r1\n\t"                       \
    "smlad r2, r8, r11, r2\n\t"                      \
    "smlabt r2, r9, lr, r2\n\t"                      \
    "smlatb r3, r8, r11, r3\n\t"                     \
    "smlad r3, r9, lr, r3\n\t"                       \
    "smlad r5, r9, r11, r5\n\t"                      \
    "smlabt r5, r10, lr, r5\n\t"                     \
    "smlatb r6, r9, r11, r6\n\t"                     \
    "smlad r6, r10, lr, r6\n\t"
#define EMBER_QA_DW3_RQ6(O) "smmla " O ", " O ", r7, r9\n\tasr " O ", " O ", r8\n\tssat " O ", #8, " O "\n\t"
EMBER_QA_DW3_NAKED(ember_qa_dw3_row6p) {
    __asm__("push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\t"
            "mov r4, r0\n\t"
            "mov r12, r2\n\t"
            "mov r0, r1\n\t"
            "ldr r1, [r12, #56]\n\t"
            "add r1, r1, r1, lsl #1\n\t"
            "add r1, r0, r1, lsl #1\n\t" /* y's end: 6 outputs a row */
            "ldr r2, [r12, #60]\n\t"
            "push {r0, r1, r2}\n\t" /* sp + 0: y, 4: y's end, 8: the plane's row step */
            "0:\n\t"
            "ldm r12, {r0, r1, r2, r3}\n\t"
            "mov r5, r0\n\t"
            "mov r6, r0\n\t"
            EMBER_QA_DW3_R6(16, "0") EMBER_QA_DW3_R6(24, "128") EMBER_QA_DW3_R6(32, "256")
            "ldrd r7, r8, [r12, #40]\n\t"
            "ldr r9, [r12, #48]\n\t"
            EMBER_QA_DW3_RQ6("r0") EMBER_QA_DW3_RQ6("r1") EMBER_QA_DW3_RQ6("r2") EMBER_QA_DW3_RQ6("r3")
            EMBER_QA_DW3_RQ6("r5") EMBER_QA_DW3_RQ6("r6")
            "ldr r10, [sp]\n\t"
            "strb r1, [r10, #1]\n\t"
            "strb r2, [r10, #2]\n\t"
            "strb r3, [r10, #3]\n\t"
            "strb r5, [r10, #4]\n\t"
            "strb r6, [r10, #5]\n\t"
            "strb r0, [r10], #6\n\t"
            "ldrd r7, r8, [sp, #4]\n\t"
            "str r10, [sp]\n\t"
            "add r4, r4, r8\n\t"
            "cmp r10, r7\n\t"
            "bne 0b\n\t"
            "add sp, sp, #12\n\t"
            "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}");
}
#undef EMBER_QA_DW3_R6
#undef EMBER_QA_DW3_RQ6
/* Rows of 3 outputs (VWW's 3 x 3 maps, and its 6 x 6 to 3 x 3 stride 2) in one step of three: about 45
 * instructions a row where the _s variants' step of four took 64. r3 holds the fourth row word at stride 2. */
#define EMBER_QA_DW3_R32(OFS, B)                     \
    "ldrd r5, r6, [r4, #" B "]\n\t"                  \
    "ldrd r8, r3, [r4, #" B "+8]\n\t"                \
    "ldrd r9, r10, [r12, #" #OFS "]\n\t"             \
    "smlad r0, r5, r9, r0\n\t"                       \
    "smlabt r0, r6, r10, r0\n\t"                     \
    "smlad r1, r6, r9, r1\n\t"                       \
    "smlabt r1, r8, r10, r1\n\t"                     \
    "smlad r2, r8, r9, r2\n\t"                       \
    "smlabt r2, r3, r10, r2\n\t"
#define EMBER_QA_DW3_ROW3FN(NAME, ROW)                                                                            \
    EMBER_QA_DW3_NAKED(NAME) {                                                                                   \
        __asm__(EMBER_QA_DW3_ENTRY                                                                               \
                "ldr r7, [r12, #56]\n\t"                                                                         \
                "add r7, r7, r7, lsl #1\n\t"                                                                     \
                "add r7, lr, r7\n\t" /* y's end: 3 outputs a row */                                              \
                "ldr r11, [r12, #48]\n\t"                                                                        \
                "ldr r0, [r12, #60]\n\t"                                                                         \
                "push {r0, r1}\n\t" /* sp + 0: the plane's row step */                                           \
                "0:\n\t"                                                                                         \
                "ldm r12, {r0, r1, r2}\n\t"                                                                      \
                ROW(16, "0") ROW(24, "128") ROW(32, "256")                                                       \
                "ldrd r9, r10, [r12, #40]\n\t"                                                                   \
                EMBER_QA_DW3_RQ("r0", "r11") EMBER_QA_DW3_RQ("r1", "r11") EMBER_QA_DW3_RQ("r2", "r11")           \
                "strb r1, [lr, #1]\n\t"                                                                          \
                "strb r2, [lr, #2]\n\t"                                                                          \
                "strb r0, [lr], #3\n\t"                                                                          \
                "ldr r5, [sp]\n\t"                                                                               \
                "add r4, r4, r5\n\t"                                                                             \
                "cmp lr, r7\n\t"                                                                                 \
                "bne 0b\n\t"                                                                                     \
                "add sp, sp, #8\n\t"                                                                             \
                "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}");                                                   \
    }
EMBER_QA_DW3_ROW3FN(ember_qa_dw3_row3p, EMBER_QA_DW3_R3)
EMBER_QA_DW3_ROW3FN(ember_qa_dw3_row32p, EMBER_QA_DW3_R32)
#undef EMBER_QA_DW3_ROW3FN
#undef EMBER_QA_DW3_R3
#undef EMBER_QA_DW3_R32
#undef EMBER_QA_DW3_RQ
#undef EMBER_QA_DW3_R1
#undef EMBER_QA_DW3_R2
#undef EMBER_QA_DW3_T1
#undef EMBER_QA_DW3_T2
#undef EMBER_QA_DW3_ROWS
#undef EMBER_QA_DW3_ROWSP
#endif
/*@end*/
