/* A multi-threaded bundle (--threads) under ThreadSanitizer: its own pool, and two application threads
 * that each run it on their own mutable and activation regions at the same time (one call gets the
 * pool, the other computes alone). Every result must equal, byte for byte, a lone run on one thread;
 * the pool is shut down and started again in between.
 * Usage: main WEIGHTS.bin INPUT0.bin INPUT1.bin OUTPUT0.bin OUTPUT1.bin */
#define _POSIX_C_SOURCE 200112L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "@name@.h"

#define ROUNDS 6
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
    memset(w->activations, 0xA5, sizeof w->activations); /* a run must not depend on what was there */
    memcpy(GLOW_GET_ADDR(w->mutableWeight, @NAME@_input), w->input, IN_BYTES);
    return @name@(constantWeight, w->mutableWeight, w->activations);
}

static int matches(Worker *w) {
    return memcmp(GLOW_GET_ADDR(w->mutableWeight, @NAME@_output), w->expected, OUT_BYTES) == 0;
}

static void *loop(void *arg) {
    Worker *w = (Worker *)arg;
    int i;
    for (i = 0; i < ROUNDS; i++)
        if (run_once(w) != 0 || !matches(w)) w->mismatches++;
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
    int i, round;
    if (argc != 6) return 2;
    if (rw(argv[1], constantWeight, @NAME@_CONSTANT_MEM_SIZE, 0)) return 3;
    if (@name@_set_threads(1000) != @NAME@_THREADS || @name@_set_threads(0) != 1) return 6;
    for (i = 0; i < 2; i++) {
        if (rw(argv[2 + i], workers[i].input, IN_BYTES, 0)) return 3;
        /* The reference: a lone run on one thread. */
        if (run_once(&workers[i]) != 0) return 4;
        memcpy(workers[i].expected, GLOW_GET_ADDR(workers[i].mutableWeight, @NAME@_output), OUT_BYTES);
        if (rw(argv[4 + i], workers[i].expected, OUT_BYTES, 1)) return 3;
    }
    @name@_set_threads(@NAME@_THREADS);
    for (round = 0; round < 2; round++) {
        /* A lone run on the pool, then both application threads at once. */
        for (i = 0; i < 2; i++)
            if (run_once(&workers[i]) != 0 || !matches(&workers[i])) workers[i].mismatches++;
        for (i = 0; i < 2; i++)
            if (pthread_create(&t[i], NULL, loop, &workers[i]) != 0) return 5;
        for (i = 0; i < 2; i++) pthread_join(t[i], NULL);
        @name@_shutdown(); /* joins the pool's threads; the next call starts them again */
    }
    printf("mismatches: %d %d\n", workers[0].mismatches, workers[1].mismatches);
    return workers[0].mismatches + workers[1].mismatches ? 1 : 0;
}
