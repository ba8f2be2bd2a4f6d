/* LeNet-5 on the board: weights in flash (const, from lenet.weights.txt), the mutable and activation
 * regions in RAM, one inference on a fixed test pattern (the same as examples/c), top-1 printed. */
#include <stdint.h>

#include "lenet.h"
#include "semihost.h"

GLOW_MEM_ALIGN(LENET_MEM_ALIGN) static const uint8_t constantWeight[LENET_CONSTANT_MEM_SIZE] = {
#include "lenet.weights.txt"
};
GLOW_MEM_ALIGN(LENET_MEM_ALIGN) static uint8_t mutableWeight[LENET_MUTABLE_MEM_SIZE];
GLOW_MEM_ALIGN(LENET_MEM_ALIGN) static uint8_t activations[LENET_ACTIVATIONS_MEM_SIZE];

static void put_uint(uint32_t v) {
    char buf[11];
    int i = 10;
    buf[i] = 0;
    do {
        buf[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    sh_puts(buf + i);
}

int main(void) {
    float *in = (float *)GLOW_GET_ADDR(mutableWeight, LENET_data);
    const float *prob = (const float *)GLOW_GET_ADDR(mutableWeight, LENET_prob);
    int i, best = 0;
    for (i = 0; i < LENET_data_SIZE; i++) in[i] = (float)((i * 7) % 17) / 16.0f - 0.5f;
    /* The entry point takes a plain pointer (Glow's signature); it only reads the weights. */
    if (lenet((uint8_t *)constantWeight, mutableWeight, activations) != 0) {
        sh_puts("the bundle failed\n");
        return 1;
    }
    for (i = 1; i < LENET_prob_SIZE; i++)
        if (prob[i] > prob[best]) best = i;
    sh_puts("top-1: ");
    put_uint((uint32_t)best);
    sh_puts(" (probability x 1e6: ");
    put_uint((uint32_t)(prob[best] * 1e6f + 0.5f));
    sh_puts(")\n");
    return 0;
}
