/* Glow's dynamic bundle API: sizes, alignment and tensor offsets come from @name@_config at run
 * time (as in Glow's resnet50 "dynamic bundle" example), nothing from compile-time macros.
 * Usage: main WEIGHTS.bin INPUT_NAME INPUT.bin OUTPUT_NAME OUTPUT.bin */
#define _POSIX_C_SOURCE 200112L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "@name@.h"

static const SymbolTableEntry *getMutableWeightVar(const BundleConfig *config, const char *name) {
    uint64_t i;
    for (i = 0; i < config->numSymbols; i++) {
        if (!strcmp(config->symbolTable[i].name, name)) return &config->symbolTable[i];
    }
    return NULL;
}

static uint8_t *alignedAlloc(const BundleConfig *config, uint64_t size) {
    void *p = NULL;
    /* A zero-sized region still gets a valid, aligned pointer. */
    if (posix_memalign(&p, (size_t)config->alignment, (size_t)(size ? size : 1)) != 0) return NULL;
    return (uint8_t *)p;
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
    const BundleConfig *config = &@name@_config;
    const SymbolTableEntry *in, *out;
    uint8_t *constantWeight, *mutableWeight, *activations;
    if (argc != 6) return 2;
    in = getMutableWeightVar(config, argv[2]);
    out = getMutableWeightVar(config, argv[4]);
    if (!in || !out || in->kind != 1 || out->kind != 1) {
        fprintf(stderr, "symbol not found\n");
        return 5;
    }
    if (config->alignment < 16 || (config->alignment & (config->alignment - 1)) != 0) return 6;
    constantWeight = alignedAlloc(config, config->constantWeightVarsMemSize);
    mutableWeight = alignedAlloc(config, config->mutableWeightVarsMemSize);
    activations = alignedAlloc(config, config->activationsMemSize);
    if (!constantWeight || !mutableWeight || !activations) return 7;
    if (rw(argv[1], constantWeight, (size_t)config->constantWeightVarsMemSize, 0)) return 3;
    /* The table gives element counts; these tensors are float32. */
    if (rw(argv[3], mutableWeight + in->offset, (size_t)in->size * sizeof(float), 0)) return 3;
    if (@name@(constantWeight, mutableWeight, activations) != 0) return 4;
    if (rw(argv[5], mutableWeight + out->offset, (size_t)out->size * sizeof(float), 1)) return 3;
    printf("%s at %llu (%llu elements) -> %s at %llu (%llu elements)\n", in->name,
           (unsigned long long)in->offset, (unsigned long long)in->size, out->name,
           (unsigned long long)out->offset, (unsigned long long)out->size);
    free(constantWeight);
    free(mutableWeight);
    free(activations);
    return 0;
}
