/* Re-entrancy: one bundle, one shared constant region, two threads each with their own mutable
 * and activation regions, running different inputs concurrently many times. Every concurrent
 * result must equal, byte for byte, the result of a lone sequential run of the same input.
 * Usage: main WEIGHTS.bin INPUT0.bin INPUT1.bin OUTPUT0.bin OUTPUT1.bin */
#define _POSIX_C_SOURCE 200112L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "@name@.h"

#define ROUNDS 25
#define IN_BYTES (@NAME@_input_BYTES)
#define OUT_BYTES (@NAME@_output_BYTES)

GLOW_MEM_ALIGN(@NAME@_MEM_ALIGN) static uint8_t constantWeight[@NAME@_CONSTANT_MEM_SIZE];

typedef struct Worker {
    GLOW_MEM_ALIGN(@NAME@_MEM_ALIGN) uint8_t mutableWeight[@NAME@_MUTABLE_MEM_SIZE];
    GLOW_MEM_ALIGN(@NAME@_MEM_ALIGN) uint8_t activations[@NAME@_ACTIVATIONS_MEM_SIZE];
    uint8_t input[IN_BYTES];
    uint8_t expected[OUT_BYTES];
    int mismatches;
} Worker;

static Worker workers[2];

static int run_once(Worker *w) {
    memcpy(GLOW_GET_ADDR(w->mutableWeight, @NAME@_input), w->input, IN_BYTES);
    return @name@(constantWeight, w->mutableWeight, w->activations);
}

static void *loop(void *arg) {
    Worker *w = (Worker *)arg;
    int i;
    for (i = 0; i < ROUNDS; i++) {
        if (run_once(w) != 0 ||
            memcmp(GLOW_GET_ADDR(w->mutableWeight, @NAME@_output), w->expected, OUT_BYTES) != 0) {
            w->mismatches++;
        }
    }
    return NULL;
}

static int rw(const char *path, uint8_t *p, size_t n, int write) {
    FILE *f = fopen(path, write ? "wb" : "rb");
    size_t got;
    if (!f) return 1;
    got = write ? fwrite(p, 1, n, f) : fread(p, 1, n, f);
    fclose(f);
    return got != n;
}

int main(int argc, char **argv) {
    pthread_t t[2];
    int i;
    if (argc != 6) return 2;
    if (rw(argv[1], constantWeight, @NAME@_CONSTANT_MEM_SIZE, 0)) return 3;
    for (i = 0; i < 2; i++) {
        if (rw(argv[2 + i], workers[i].input, IN_BYTES, 0)) return 3;
        /* The reference: a lone run, nothing else in flight. */
        if (run_once(&workers[i]) != 0) return 4;
        memcpy(workers[i].expected, GLOW_GET_ADDR(workers[i].mutableWeight, @NAME@_output), OUT_BYTES);
        if (rw(argv[4 + i], workers[i].expected, OUT_BYTES, 1)) return 3;
        /* Dirty the regions so a run that depends on their previous content is caught. */
        memset(workers[i].activations, 0xA5, sizeof workers[i].activations);
        memset(workers[i].mutableWeight, 0xA5, sizeof workers[i].mutableWeight);
    }
    for (i = 0; i < 2; i++) {
        if (pthread_create(&t[i], NULL, loop, &workers[i]) != 0) return 5;
    }
    for (i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("mismatches: %d %d\n", workers[0].mismatches, workers[1].mismatches);
    return workers[0].mismatches + workers[1].mismatches ? 1 : 0;
}
