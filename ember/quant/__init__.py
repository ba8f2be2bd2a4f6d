"""Profile-guided int8 quantization (Glow's workflow): `ember profile` then `ember compile --quantize int8`.

data.py      calibration inputs: images (Pillow) and .npy/.npz arrays, with Glow's preprocessing options
profile.py   runs a capture build of the float bundle; per-tensor min/max/histogram -> profile.yaml
histogram.py the growing, exactly re-binned histogram profile.py accumulates
calibrate.py clipping ranges from a histogram: minmax, percentile, kl (entropy), mse
schema.py    ranges -> scale and zero point for Glow's four schemas; weight and bias parameters
quantize.py  the graph rewrite into ONNX QDQ form (QuantizeLinear/DequantizeLinear)
pipeline.py  the pass lists used for profiling and for quantized compiles
weights.py   weight-only compression (--weights fp16|bf16|int8)
"""
