"""benchmarks/tflm_arena.py: the re-implementation of TFLite Micro's GreedyMemoryPlanner that bench_mcu.py
compares ember's RAM with. Hand-computed plans: a wrong estimate would misstate that comparison."""

from __future__ import annotations

from benchmarks.tflm_arena import Buffer, greedy_plan


def test_largest_first_lowest_fitting_gap() -> None:
    # a [0,1] and c [2,3] never live together: both at 0; b [1,2] overlaps both, so it goes above them.
    assert greedy_plan([Buffer(96, 0, 1), Buffer(48, 1, 2), Buffer(96, 2, 3)]) == 144


def test_a_small_buffer_fills_a_gap_below_a_placed_one() -> None:
    # Placed largest first: x [0,0] at 0 (128), y [0,2] at 128 (64); z [1,2] overlaps y only: it fits in
    # the gap [0, 128) below y, so the arena stays 192 bytes (a first-come planner would need 256).
    assert greedy_plan([Buffer(128, 0, 0), Buffer(64, 0, 2), Buffer(64, 1, 2)]) == 192


def test_lifetimes_are_inclusive() -> None:
    # A buffer last read by operator 1 and one first written by operator 1 are both live at operator 1.
    assert greedy_plan([Buffer(64, 0, 1), Buffer(64, 1, 2)]) == 128
    assert greedy_plan([]) == 0
