/* The Glow bundle guide's / NXP eIQ example's application, as a user writes it: the network's
 * header, three statically allocated regions aligned with GLOW_MEM_ALIGN, the constant region
 * filled from the weights text file, input written at GLOW_GET_ADDR, one call, top-1 printed.
 * The test substitutes @name@ (network name) and @NAME@ (its upper-case macro prefix). */
#include <stdint.h>
#include <stdio.h>

#include "@name@.h"

#define IMAGE_SIZE (28 * 28)
#define NUM_CLASSES 10

/* Statically allocate memory for constant weights (model weights) and initialize. */
GLOW_MEM_ALIGN(@NAME@_MEM_ALIGN)
uint8_t constantWeight[@NAME@_CONSTANT_MEM_SIZE] = {
#include "@name@.weights.txt"
};

/* Statically allocate memory for mutable weights (model input/output data). */
GLOW_MEM_ALIGN(@NAME@_MEM_ALIGN)
uint8_t mutableWeight[@NAME@_MUTABLE_MEM_SIZE];

/* Statically allocate memory for activations (model intermediate results). */
GLOW_MEM_ALIGN(@NAME@_MEM_ALIGN)
uint8_t activations[@NAME@_ACTIVATIONS_MEM_SIZE];

/* Bundle input data absolute address. */
uint8_t *inputAddr = GLOW_GET_ADDR(mutableWeight, @NAME@_input);

/* Bundle output data absolute address. */
uint8_t *outputAddr = GLOW_GET_ADDR(mutableWeight, @NAME@_output);

int main(int argc, char **argv) {
    FILE *f;
    float *out;
    int i, top = 0;
    if (argc != 2) {
        fprintf(stderr, "usage: %s IMAGE.f32\n", argv[0]);
        return 2;
    }
    f = fopen(argv[1], "rb");
    if (!f || fread(inputAddr, sizeof(float), IMAGE_SIZE, f) != IMAGE_SIZE) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 3;
    }
    fclose(f);

    /* Perform the computation. */
    if (@name@(constantWeight, mutableWeight, activations) != 0) {
        fprintf(stderr, "inference failed\n");
        return 4;
    }

    /* Get classification top-1. */
    out = (float *)outputAddr;
    for (i = 1; i < NUM_CLASSES; i++) {
        if (out[i] > out[top]) top = i;
    }
    printf("Top1 class = %d\n", top);
    printf("Confidence = %.6f\n", (double)out[top]);
    return 0;
}
