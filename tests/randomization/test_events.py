"""Declared randomization events and object pools: per-env determinism whatever the batch
size or reset pattern, interval timing, bad declarations, flat memory."""
from __future__ import annotations

import os

import psutil
import pytest
import torch

import robosim
import robosim_tasks.pick_object  # noqa: F401  (registers PickObject-v1)

EVENTS = {
    "swap": {"mode": "reset", "target": "pool:object", "property": "variant", "dist": {"integers": [0, 3]}},
    "friction": {"mode": "reset", "target": "object:object", "property": "friction",
                 "dist": {"uniform": [0.5, 1.5]}, "probability": 0.5},
    "light": {"mode": "reconfigure", "target": "light", "property": "color",
              "dist": {"uniform": [[0.4, 0.4, 0.4], [1.0, 1.0, 1.0]]}},
    "gains": {"mode": "reset", "target": "robot", "property": "stiffness", "dist": {"uniform": [0.8, 1.2]}},
    "nudge": {"mode": "reset", "target": "object:object", "property": "position",
              "dist": {"uniform": [[-0.01, -0.01, 0.0], [0.01, 0.01, 0.0]]}},
    "push": {"mode": "interval", "target": "object:object", "property": "velocity",
             "dist": {"uniform": [[-0.2, -0.2, 0, 0, 0, 0], [0.2, 0.2, 0, 0, 0, 0]]},
             "period_s": {"uniform": [0.1, 0.3]}},
}
SEED, EPISODE_STEPS, EPISODES = 100, 12, 4


def run(num_envs: int, seed: int, offsets: list[int]) -> dict[int, list[dict]]:
    """Each env runs EPISODES episodes of EPISODE_STEPS steps, env j's episodes shifted by
    offsets[j] steps (partial resets at different times). Returns per env and episode:
    initial state, built assets, logged event values and interval firing steps."""
    env = robosim.make("PickObject-v1", num_envs=num_envs, seed=seed, randomization=EVENTS)
    out: dict[int, list[dict]] = {i: [] for i in range(num_envs)}
    try:
        env.reset(seed=seed)
        assets = env.task.rest_z.clone()
        ends = [EPISODE_STEPS + offsets[j] for j in range(num_envs)]
        logs_seen = 0

        def snapshot(idx):
            state = env.get_state()
            for i in idx:
                out[i].append({"state": state[i].clone(), "assets": assets[i].clone(), "events": []})

        snapshot(range(num_envs))
        for t in range(1, EPISODES * EPISODE_STEPS + max(offsets) + 1):
            env.step(None)
            for entry in list(env.randomization.log)[logs_seen:]:
                if entry["mode"] == "interval":
                    out[entry["env"]][-1]["events"].append((entry["event"], entry["step"], entry["value"]))
            done = [j for j in range(num_envs) if ends[j] == t and len(out[j]) < EPISODES]
            if done:
                logs_before = len(env.randomization.log)
                env.reset(options={"env_idx": torch.tensor(done)})
                snapshot(done)
                for entry in list(env.randomization.log)[logs_before:]:
                    out[entry["env"]][-1]["events"].append((entry["event"], entry["step"], entry["value"]))
                for j in done:
                    ends[j] = t + EPISODE_STEPS
            logs_seen = len(env.randomization.log)
    finally:
        env.close()
    return out


def _same(a: list[dict], b: list[dict]) -> None:
    assert len(a) == len(b) >= EPISODES - 1
    for k, (x, y) in enumerate(zip(a, b)):
        assert torch.equal(x["assets"], y["assets"]), k
        assert torch.equal(x["state"], y["state"]), k
        # interval firings inside the first EPISODE_STEPS steps of an episode
        fx = [e for e in x["events"] if e[1] < EPISODE_STEPS]
        fy = [e for e in y["events"] if e[1] < EPISODE_STEPS]
        assert fx == fy, k


@pytest.fixture(scope="module")
def single_env_runs():
    return {i: run(1, SEED + i, [0])[0] for i in (0, 3)}


@pytest.mark.parametrize("num_envs, offsets", [(5, [0] * 5), (5, [0, 2, 5, 1, 3]), (16, [j % 4 for j in range(16)])])
def test_env_i_is_the_same_for_any_batch_and_reset_pattern(single_env_runs, num_envs, offsets):
    runs = run(num_envs, SEED, offsets)
    for i, single in single_env_runs.items():
        _same(runs[i][1:], single[1:])   # episodes 1..3 start from partial resets
        assert torch.equal(runs[i][0]["assets"], single[0]["assets"])
        assert torch.equal(runs[i][0]["state"], single[0]["state"])


def test_interval_events_fire_at_drawn_periods(single_env_runs):
    dt = 1 / 20
    for episodes in single_env_runs.values():
        for episode in episodes:
            steps = [s for name, s, _ in episode["events"] if name == "push"]
            assert steps, "a 0.1-0.3 s timer must fire within 12 steps"
            gaps = [b - a for a, b in zip([0] + steps, steps)]
            assert all(round(0.1 / dt) <= g <= round(0.3 / dt) for g in gaps), gaps


def test_same_seed_same_assets_in_two_makes_and_reset_seed_rebuilds():
    a = robosim.make("PickObject-v1", num_envs=3)          # unseeded: entropy build
    b = robosim.make("PickObject-v1", num_envs=3, seed=7)
    try:
        _, info = a.reset(seed=7)                          # a seeded full reset rebuilds with seeds 7..9
        assert info["reconfigure"].all()
        b.reset(seed=7)
        assert torch.equal(a.task.rest_z, b.task.rest_z)
        assert torch.equal(a.get_state(), b.get_state())
        _, info = b.reset(seed=7)
        assert not info["reconfigure"].any()                     # same seeds: the assets are already those
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("events, field", [
    ({"e": {"mode": "reset", "target": "object:cube", "property": "mass", "dist": {"uniform": [0.3, 0.1]}}},
     "low <= high"),
    ({"e": {"mode": "reset", "target": "object:cube", "property": "mass", "dist": {"uniform": [-1.0, 0.1]}}},
     ">= 1e-06"),
    ({"e": {"mode": "reset", "target": "object:cube", "property": "friction", "dist": -0.5}}, "'friction'"),
    ({"e": {"mode": "reset", "target": "object:cube", "property": "mass", "dist": 0.1, "probability": 1.5}},
     "probability"),
    ({"e": {"mode": "reset", "target": "object:nothing", "property": "mass", "dist": 0.1}}, "'nothing'"),
    ({"e": {"mode": "reset", "target": "object:cube", "property": "charm", "dist": 0.1}}, "'property'"),
    ({"e": {"mode": "sometimes", "target": "object:cube", "property": "mass", "dist": 0.1}}, "'mode'"),
    ({"e": {"mode": "interval", "target": "object:cube", "property": "velocity", "dist": [0.0] * 6,
            "period_s": 0.0}}, "period_s"),
    ({"e": {"mode": "reset", "target": "object:cube", "property": "scale", "dist": 1.2}}, "reconfigure"),
    ({"goal_color": None}, "removes a default event"),
])
def test_bad_declarations_name_the_event_and_field(events, field):
    with pytest.raises(ValueError) as err:
        robosim.make("PickCube-v1", num_envs=1, randomization=events)
    assert field in str(err.value)
    assert "randomization" in str(err.value)


def test_pool_size_zero_is_refused():
    with pytest.raises(ValueError, match="pool_size"):
        robosim.make("PickObject-v1", num_envs=1, pool_size=0)


def test_memory_flat_over_reconfigures_and_swaps():
    env = robosim.make("PickObject-v1", num_envs=4, seed=0)
    proc = psutil.Process(os.getpid())
    try:
        for _ in range(20):                              # warm-up
            env.reset(options={"reconfigure": True})
        base = proc.memory_info().rss
        for _ in range(300):
            env.reset(options={"reconfigure": True})
        after_reconfigure = proc.memory_info().rss
        for _ in range(750):                             # 4 envs x 750 = 3,000 pool swaps
            env.reset()
        after_swaps = proc.memory_info().rss
    finally:
        env.close()
    growth = max(after_reconfigure, after_swaps) / base - 1
    print(f"RSS after warm-up {base / 2**20:.0f} MiB; after 300 reconfigures {after_reconfigure / 2**20:.0f} MiB; "
          f"after 3,000 pool swaps {after_swaps / 2**20:.0f} MiB ({growth:+.1%})")
    assert growth < 0.05


TWO_PROCESS_SCRIPT = """
import hashlib, torch, robosim, robosim_tasks.pick_object
from tests_events_spec import EVENTS
env = robosim.make("PickObject-v1", num_envs=3, seed=11, randomization=EVENTS)
env.reset(seed=11)
gen = torch.Generator().manual_seed(0)
h = hashlib.sha256()
for t in range(15):
    action = torch.rand(3, *env.single_action_space.shape, generator=gen) * 2 - 1
    env.step(action)
    h.update(env.get_state().numpy().tobytes())
    if t == 7:
        env.reset(options={"env_idx": torch.tensor([1])})
print(h.hexdigest())
"""


def test_two_processes_same_seed_same_randomized_trajectory(tmp_path):
    import json
    import subprocess
    import sys

    (tmp_path / "tests_events_spec.py").write_text(f"EVENTS = {json.dumps(EVENTS)}\n")
    (tmp_path / "run.py").write_text(TWO_PROCESS_SCRIPT)
    digests = [subprocess.run([sys.executable, "run.py"], cwd=tmp_path, capture_output=True, text=True, check=True,
                              timeout=300).stdout.strip() for _ in range(2)]
    assert len(digests[0]) == 64 and digests[0] == digests[1]


def test_recorded_randomized_episodes_replay_with_their_assets(tmp_path):
    from robosim.record.replay import replay
    from robosim.record.trajectory import TrajectoryFile
    from robosim.record.wrapper import RecordEpisode

    path = str(tmp_path / "po.h5")
    env = RecordEpisode(robosim.make("PickObject-v1", num_envs=2, seed=21, randomization=EVENTS), trajectory=path)
    try:
        env.reset(seed=21)
        assets = env.task.rest_z.clone()
        for _ in range(8):
            env.step(torch.zeros(2, *env.single_action_space.shape))
    finally:
        env.close()
    spec = TrajectoryFile(path).spec
    assert spec.randomization == EVENTS and spec.seed == [21, 22]
    rebuilt = robosim.make(spec.replace(obs_mode="none"))
    try:
        assert torch.equal(rebuilt.task.rest_z, assets)      # the same objects are rebuilt
    finally:
        rebuilt.close()
    report = replay(path, mode="states", progress=False)
    assert report.episodes == 2 and report.worst == 0
