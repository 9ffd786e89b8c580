"""The figures docs/learning.md and examples/results/tasks.json give for the unsolved PPO
runs (PushCube's settings on other tasks, one seed each), and the per-seed figures of
docs/imitation.md's imitation tables, against the run logs they come from."""
from __future__ import annotations

import json
import os
import re

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
RESULTS = os.path.join(ROOT, "examples", "results")


def _evals(run: str) -> list[dict]:
    with open(os.path.join(RESULTS, run, "log.json")) as f:
        return [r for r in json.load(f)["rows"] if r.get("eval_success") is not None]


def _pct(share: float) -> int:
    return round(100 * share)


# run: (best eval success, first and last eval return, {flag: (highest %, last %)})
UNSOLVED = {
    "roll_ppo_e8_s0": (0.03, (-2362, -2263), {"reached": (28, 16)}),
    "poke_ppo_e8_s0": (0.06, (-752, -629), {"is_peg_grasped": (34, 25), "is_peg_cube_fit": (19, 3)}),
    "liftpeg_ppo_e8_s0": (0.0, (-387, -386), {"is_peg_grasped": (50, 0), "is_peg_upright": (3, 0)}),
    "fetchpick_ppo_e8_s0": (0.0, (-475, -424), {"is_grasped": (0, 0)}),
    "twolift_ppo_e8_s0": (0.0, (-351, -259), {"is_lifted": (3, 0), "is_level": (100, 100)}),
    "twohandover_ppo_e8_s0": (0.0, (-731, -629), {"is_placed": (9, 9)}),
    "so100handover_ppo_e8_s0": (0.0, (-966, -25), {"is_placed": (0, 0)}),
}


@pytest.mark.parametrize("run", sorted(UNSOLVED))
def test_unsolved_run_figures_match_the_log(run):
    best, returns, flags = UNSOLVED[run]
    evals = _evals(run)
    assert len(evals) == 21   # "over its 21 evaluations"
    assert round(max(r["eval_success"] for r in evals), 2) == best
    assert (round(evals[0]["eval_return"]), round(evals[-1]["eval_return"])) == returns
    for flag, (highest, last) in flags.items():
        shares = [r[f"eval_ever_{flag}"] for r in evals]
        assert (_pct(max(shares)), _pct(shares[-1])) == (highest, last), flag


def test_the_docs_state_those_figures():
    with open(os.path.join(ROOT, "docs", "learning.md")) as f:
        prose = " ".join(f.read().split())
    for phrase in ("in up to 28% of an evaluation's episodes, 16% in the last", "grasped in up to 34%, 25% in the last",
                   "fitted to the cube in up to 19%, 3% in the last", "grasps the peg in up to 50% (0% in the last)",
                   "upright in at most 3%", "-387 at the first evaluation, -386 at the last",
                   "0% in every evaluation; return -475 -> -424",
                   "at most 3% of an evaluation's episodes (-351 -> -259)",
                   "in up to 9% (9% in the last)", "(-731 -> -629)", "rises from -966 to -25"):
        assert phrase in prose, phrase


ROW = re.compile(r"^\|(?P<cells>.*)\| `examples/results/imitation/(?P<stem>\w+)_s0`, `_s1`, `_s2` \|$")
ONE_RUN = re.compile(r"^\|(?P<cells>.*)\| `examples/results/imitation/(?P<run>\w+_s\d)` \|$")
SERIES = re.compile(r"[0-9.]+(, \**[0-9.]+\**)+")   # "0.69, 0.80, **0.89**"


def _series_rows(pattern: re.Pattern):
    """(match, the row's eval-success series cells) for each docs/imitation.md table row
    matching `pattern`."""
    with open(os.path.join(ROOT, "docs", "imitation.md")) as f:
        for line in f:
            match = pattern.match(line.strip())
            if match:
                cells = [c.strip() for c in match["cells"].split("|")]
                yield match, [c for c in cells if SERIES.fullmatch(c)]


def _assert_cell_equals_log(cell: str, run: str, may_show_step0: bool = False) -> None:
    """The series `cell` equals the eval success of `run`'s log at each evaluation after
    step 0 (or from step 0, where `may_show_step0` and the lengths say so), to the cell's
    rounding."""
    shown = [float(v.strip("* ")) for v in cell.split(",")]
    logged = [r["eval_success"] for r in _evals(f"imitation/{run}")]
    if not (may_show_step0 and len(shown) == len(logged)):
        logged = logged[1:]
    assert len(shown) == len(logged) and all(abs(a - b) <= 0.005 + 1e-9 for a, b in zip(shown, logged)), \
        (run, shown, logged)


def test_imitation_tables_per_seed_cells_match_the_logs():
    """Rows of docs/imitation.md with one cell per seed ("0.91, **0.915**": the eval
    success at each evaluation after step 0) and the three runs' log directories."""
    checked = 0
    for match, seeds in _series_rows(ROW):
        if len(seeds) != 3:
            continue
        for seed, cell in enumerate(seeds):
            _assert_cell_equals_log(cell, f"{match['stem']}_s{seed}")
        checked += 1
    assert checked >= 5   # StackCube's four rows and PickCube's --ignore-obs row


def test_imitation_tables_one_run_per_row_match_the_logs():
    """Rows of docs/imitation.md that name one run's log directory and give its eval
    success at each evaluation ("0.69, 0.80, **0.89**", from step 0 or after it): the
    cell equals the log (the PushT lane, StackCube Diffusion Policy and StackPyramid stage
    tables among them)."""
    checked = []
    for match, series in _series_rows(ONE_RUN):
        if len(series) == 1:
            _assert_cell_equals_log(series[0], match["run"], may_show_step0=True)
            checked.append(match["run"])
    assert {"pusht_bc_lane_s0", "pusht_bc_lane_s1", "pusht_bc_lane_s2", "stack_dp60k_ah15_noise_ema_s0",
            "stack_dp60k_ah15_noise_ema_s1", "stack_dp60k_ah15_noise_ema_s2", "pyramid_bc_stage_dart300_s0",
            "pyramid_bc_stage_dart300_s1", "pyramid_bc_stage_dart300_s2", "pyramid_bc_stage_noplace_select_s0",
            "pick_xarm7_bc_noqvel_s0", "pick_xarm7_bc_noqvel_s1", "pick_xarm7_bc_noqvel_s2"} \
        <= set(checked), checked
