/* Classify one 28x28 image with the LeNet-5 bundle through its static API (NAME.h). The three memory
 * regions are static arrays; the weights are compiled in from NAME.weights.txt. Reads 784 raw float32
 * values from the file given as argv[1], else uses a fixed test pattern; prints each class's
 * probability and the top-1 class. */
#include <stdio.h>

#include "lenet.h"

GLOW_MEM_ALIGN(LENET_MEM_ALIGN) static uint8_t constantWeight[LENET_CONSTANT_MEM_SIZE] = {
#include "lenet.weights.txt"
};
GLOW_MEM_ALIGN(LENET_MEM_ALIGN) static uint8_t mutableWeight[LENET_MUTABLE_MEM_SIZE];
GLOW_MEM_ALIGN(LENET_MEM_ALIGN) static uint8_t activations[LENET_ACTIVATIONS_MEM_SIZE];

int main(int argc, char **argv) {
    float *in = (float *)GLOW_GET_ADDR(mutableWeight, LENET_data);
    const float *prob = (const float *)GLOW_GET_ADDR(mutableWeight, LENET_prob);
    int i, best = 0;
    if (argc > 1) {
        FILE *f = fopen(argv[1], "rb");
        if (f == NULL || fread(in, sizeof(float), LENET_data_SIZE, f) != LENET_data_SIZE) {
            fprintf(stderr, "%s: expected %d raw float32 values\n", argv[1], LENET_data_SIZE);
            return 1;
        }
        fclose(f);
    } else {
        for (i = 0; i < LENET_data_SIZE; i++) in[i] = (float)((i * 7) % 17) / 16.0f - 0.5f;
    }
    if (lenet(constantWeight, mutableWeight, activations) != 0) {
        fprintf(stderr, "the bundle failed\n");
        return 1;
    }
    for (i = 0; i < LENET_prob_SIZE; i++) {
        printf("class %d: %.9g\n", i, prob[i]);
        if (prob[i] > prob[best]) best = i;
    }
    printf("top-1: %d\n", best);
    return 0;
}
