"""ONNX frontend: .onnx files (and their external data) into ember's IR."""

from ember.frontends.onnx.loader import load_onnx

__all__ = ["load_onnx"]
