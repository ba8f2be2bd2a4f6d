"""TFLite frontend: .tflite flatbuffers (subgraph 0, and those its IF/WHILE operators name) into ember's IR,
channels-last kept at the I/O."""

from ember.frontends.tflite.loader import load_tflite, read_tflite

__all__ = ["load_tflite", "read_tflite"]
