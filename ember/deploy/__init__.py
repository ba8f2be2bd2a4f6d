"""`ember deploy FILE.yml`: MACE-style deployment files built into one static library per target.

config.py reads and checks the YAML (MACE's keys and spellings), model.py fetches, checks and prepares
each model (checksum, tensors, obfuscation), registry.py writes the registry header and table that look
models up by name, build.py compiles every model with ember's API, archives them and validates/benchmarks.
"""
