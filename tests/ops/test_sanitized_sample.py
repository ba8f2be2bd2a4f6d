"""A sample of ONNX node tests through scripts/sanitize_sweep.py: each bundle's C built into the C driver
with -Wall -Wextra -Werror and ASan+UBSan, run and compared (the whole sweep is a script: minutes)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("ember_sanitize_sweep", ROOT / "scripts" / "sanitize_sweep.py")
assert _spec is not None and _spec.loader is not None
sweep = importlib.util.module_from_spec(_spec)
sys.modules["ember_sanitize_sweep"] = sweep
_spec.loader.exec_module(sweep)

# Found by the sweep: one direction of a half-precision cast left the other conversion unused, and an
# elementwise loop over an empty tensor compared a size_t with 0 (both -Werror failures).
SAMPLE = ["test_cast_FLOAT_to_FLOAT16", "test_cast_FLOAT16_to_FLOAT", "test_cumsum_2d_axis_1",
          "test_cumsum_1d_reverse_exclusive", "test_conv_with_strides_padding", "test_softmax_axis_1",
          "test_maxpool_2d_pads", "test_gather_negative_indices", "test_mish", "test_reduce_l1_empty_set_expanded",
          # Integer C with undefined cases guarded: INT_MIN % -1 and x % 0, shifts by the width or more.
          "test_mod_mixed_sign_int8", "test_bitshift_left_int8_shift_ge_width",
          "test_bitshift_right_int32_negative_shift",
          # Run-time class indices (one past the classes, ignored) and an FFT over run-time windowed frames.
          "test_nllloss_NCd1d2d3_sum_weight_high_ii", "test_sce_mean_weight_ii_3d_log_prob", "test_stft_with_window",
          "test_einsum_batch_diagonal", "test_gridsample_bicubic", "test_roialign_mode_max",
          "test_gather_elements_negative_indices", "test_scatter_elements_with_reduction_max",
          "test_top_k_same_values_2d",
          # The transformer kernels: KV cache concatenation, mask broadcast, causal frontier and qk output;
          # padding (nonpad) with a boolean mask; partial interleaved rotation.
          "test_attention_4d_with_past_and_present_qk_matmul_bias_3d_mask_causal",
          "test_attention_4d_causal_nonpad_attn_mask_composition", "test_rotary_embedding_with_interleaved_rotary_dim"]


@pytest.mark.parametrize("name", SAMPLE)
def test_node_bundle_is_sanitizer_clean(name: str) -> None:
    _, outcome, detail = sweep.sweep_one(name)
    assert outcome == "clean", f"{name}: {outcome}\n{detail}"
