"""The registry of a deployed library: `<library>.h` declares, and `<library>_registry.c` (compiled into
lib<library>.a) defines, one table of every model: its name, memory sizes, alignment, entry point and the
offsets, element types and shapes of its inputs and outputs, and a lookup by name. Every model runs in one
shared activation arena of `<LIB>_ACTIVATIONS_MEM_SIZE` bytes (the largest model's), as MACE engines share
one; so models on the same arena must take turns, never run at the same time."""

from __future__ import annotations

from typing import Any

_SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ .,:/+-=()[]")


def c_string(text: str) -> str:
    """A C string literal holding exactly `text`'s UTF-8 bytes: anything but plain characters as octal."""
    return '"' + "".join(chr(b) if chr(b) in _SAFE else f"\\{b:03o}" for b in text.encode()) + '"'


def header(lib: str, models: list[dict[str, Any]]) -> str:
    up = lib.upper()
    arena = max(m["memory"]["activations"] for m in models)
    align = max(m["memory"]["alignment"] for m in models)
    lines = [
        f"/* {lib}: the registry of a library built by `ember deploy`; do not edit. */",
        f"#ifndef EMBER_DEPLOY_{up}_H",
        f"#define EMBER_DEPLOY_{up}_H",
        "",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "",
        f"#define {up}_NUM_MODELS {len(models)}",
        "// One activation arena serves every model: the largest model's activations. Models that share it",
        "// must not run at the same time (give each thread its own arena to run models concurrently).",
        f"#define {up}_ACTIVATIONS_MEM_SIZE {arena}",
        f"#define {up}_MEM_ALIGN {align}",
        "",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
        "typedef struct {",
        "    const char *name;      /* the tensor's name in the (obfuscated) model */",
        "    size_t offset;         /* bytes into the model's mutable region */",
        '    const char *dtype;     /* "float32", "int8", ... */',
        "    uint32_t num_dims;",
        "    const int32_t *dims;",
        "    size_t bytes;",
        f"}} {lib}_tensor_t;",
        "",
        "typedef struct {",
        "    const char *name;      /* the model's key in the deployment file, or model_<i> when obfuscated */",
        "    size_t constant_mem_size;   /* the model's weights (NAME.weights.bin) */",
        "    size_t mutable_mem_size;    /* its inputs and outputs */",
        f"    size_t activations_mem_size; /* at most {up}_ACTIVATIONS_MEM_SIZE */",
        "    size_t mem_align;",
        "    int (*entry)(uint8_t *constantWeight, uint8_t *mutableWeight, uint8_t *activations);",
        "    uint32_t num_inputs;",
        f"    const {lib}_tensor_t *inputs;",
        "    uint32_t num_outputs;",
        f"    const {lib}_tensor_t *outputs;",
        f"}} {lib}_model_t;",
        "",
        f"extern const {lib}_model_t {lib}_models[{up}_NUM_MODELS];",
        "",
        "// The model of that name, or NULL.",
        f"const {lib}_model_t *{lib}_find_model(const char *name);",
        "",
    ]
    lines += [f"int {m['name']}(uint8_t *constantWeight, uint8_t *mutableWeight, uint8_t *activations);"
              for m in models]
    lines += ["", "#ifdef __cplusplus", "}", "#endif", f"#endif // EMBER_DEPLOY_{up}_H", ""]
    return "\n".join(lines)


def source(lib: str, models: list[dict[str, Any]], header_name: str, lookup: list[str]) -> str:
    """`lookup`: each model's name for <lib>_find_model (its key in the deployment file, or model_<i>)."""
    up = lib.upper()
    out = [f"/* {lib}: the model table of `ember deploy`; do not edit. */", f'#include "{header_name}"', ""]
    rows = []
    for i, m in enumerate(models):
        for kind in ("inputs", "outputs"):
            if not m[kind]:  # C99 has no empty arrays
                out.append(f"#define {kind}_{i} NULL")
                continue
            for j, e in enumerate(m[kind]):
                dims = ", ".join(str(d) for d in e["shape"]) or "0"
                out.append(f"static const int32_t dims_{i}_{kind}_{j}[] = {{{dims}}};")
            body = ",\n".join(
                f"    {{{c_string(e['name'])}, {e['offset']}u, {c_string(e['dtype'])}, {len(e['shape'])}u, "
                f"dims_{i}_{kind}_{j}, {e['bytes']}u}}" for j, e in enumerate(m[kind]))
            out.append(f"static const {lib}_tensor_t {kind}_{i}[] = {{\n{body}\n}};")
        mem = m["memory"]
        rows.append(f"    {{{c_string(lookup[i])}, {mem['constant']}u, {mem['mutable']}u, {mem['activations']}u, "
                    f"{mem['alignment']}u, {m['name']}, {len(m['inputs'])}u, inputs_{i}, {len(m['outputs'])}u, "
                    f"outputs_{i}}}")
    out += ["", f"const {lib}_model_t {lib}_models[{up}_NUM_MODELS] = {{", ",\n".join(rows), "};", ""]
    # No libc in a freestanding library: the string comparison is written out.
    out += [
        f"const {lib}_model_t *{lib}_find_model(const char *name) {{",
        "    int i;",
        f"    for (i = 0; i < {up}_NUM_MODELS; ++i) {{",
        f"        const char *a = {lib}_models[i].name, *b = name;",
        "        while (*a && *a == *b) {",
        "            ++a;",
        "            ++b;",
        "        }",
        f"        if (*a == *b) return &{lib}_models[i];",
        "    }",
        "    return NULL;",
        "}",
        "",
    ]
    return "\n".join(out)
