"""Make tests/demos/fixtures/lerobot_pickcube: a tiny LeRobot v3.0 dataset written by
LeRobot's own writer (LeRobotDataset.create, add_frame, save_episode), for the test that
robosim imports a dataset it did not write and replays it exactly
(tests/demos/test_lerobot_import_fixture.py).

Two steps, in two Python environments (lerobot is not a robosim dependency: it pins a
torch that pulls a multi-GB CUDA build, so it stays out of robosim's venv and CI):

  1. in robosim's venv: record 2 scripted PickCube-v1 episodes (seed 3), first STEPS
     steps each, as plain arrays:
       .venv/bin/python scripts/make_lerobot_fixture.py record /tmp/pickcube_episodes.npz

  2. in a throwaway venv with lerobot 0.4.x (torch CPU installed first so that nothing
     pulls CUDA; lerobot 0.4.4 asks for torch<2.11 and torchvision<0.26 but its dataset
     writer runs on torch 2.13.0+cpu, installed as below):
       python3.11 -m venv /tmp/lerobot-venv
       /tmp/lerobot-venv/bin/pip install torch==2.13.0      # the CPU build
       /tmp/lerobot-venv/bin/pip install --no-deps lerobot==0.4.4
       /tmp/lerobot-venv/bin/pip install "datasets>=4,<5" "huggingface-hub>=0.34.2,<0.36" "av>=15,<16" \\
           jsonlines "packaging<26" draccus==0.10.0 "gymnasium>=1.1.1,<2" "deepdiff>=7,<9" termcolor \\
           einops pandas pyarrow imageio "accelerate>=1.10,<2" "setuptools<81" torchvision==0.28.* "numpy<2.3"
       /tmp/lerobot-venv/bin/python scripts/make_lerobot_fixture.py write /tmp/pickcube_episodes.npz \\
           tests/demos/fixtures/lerobot_pickcube

The PyPI torchvision wheel is a CUDA build whose C ops do not load on CPU torch; the
dataset writer uses none of them, so `write` skips torchvision's registration of their
meta kernels (the only import that needs them). Nothing else of LeRobot is changed.
"""
from __future__ import annotations

import argparse
import os
import sys
import types

TASK = "PickCube-v1"
SEED = 3
EPISODES = 2
STEPS = 12   # frames per episode: enough for contacts and motion, a few KB on disk


def record(out: str) -> None:
    """2 scripted PickCube-v1 episodes (separate physics, seeds 3 and 4), their first
    STEPS steps: states (E, STEPS, S) float32 (the state before each action), actions
    (E, STEPS, A) float32, rewards and success (E, STEPS), plus fps and the robot."""
    import numpy as np
    import torch

    from robosim.envs import make

    env = make(TASK, num_envs=1, physics_isolation="separate")
    policy = env.task.solution_policy()
    states, actions, rewards, success = [], [], [], []
    for k in range(EPISODES):
        env.reset(seed=SEED + k)
        rows: dict[str, list] = {"s": [], "a": [], "r": [], "ok": []}
        for _ in range(STEPS):
            rows["s"].append(env.get_state()[0].cpu().numpy())
            action = torch.as_tensor(policy(), dtype=torch.float32).reshape(1, -1)
            _, reward, _, _, info = env.step(action)
            rows["a"].append(action[0].cpu().numpy())
            rows["r"].append(float(reward[0]))
            rows["ok"].append(bool(info["success"][0]))
        states.append(rows["s"]), actions.append(rows["a"]), rewards.append(rows["r"]), success.append(rows["ok"])
    np.savez(out, states=np.float32(states), actions=np.float32(actions), rewards=np.float32(rewards),
             success=np.bool_(success), fps=env.task.control_freq, robot=env.robot.spec.name,
             instruction=type(env.task).instruction)
    env.close()
    print(f"wrote {out}: {EPISODES} episodes of {STEPS} steps of {TASK}")


def write(episodes: str, out_dir: str) -> None:
    """The arrays of `record` as a LeRobot v3.0 dataset at `out_dir`, by LeRobot's writer."""
    import numpy as np

    try:
        import torchvision  # noqa: F401
    except RuntimeError:   # the CUDA wheel's ops are missing on CPU torch (module docstring)
        for name in [m for m in sys.modules if m.startswith("torchvision")]:
            del sys.modules[name]
        sys.modules["torchvision._meta_registrations"] = types.ModuleType("torchvision._meta_registrations")
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    data = np.load(episodes)
    s, a = data["states"].shape[2], data["actions"].shape[2]
    features = {
        "observation.environment_state": {"dtype": "float32", "shape": (s,), "names": None},
        "action": {"dtype": "float32", "shape": (a,), "names": None},
        "next.reward": {"dtype": "float32", "shape": (1,), "names": None},
        "next.success": {"dtype": "bool", "shape": (1,), "names": None},
    }
    dataset = LeRobotDataset.create(repo_id="robosim/pickcube_lerobot_fixture", fps=int(data["fps"]),
                                    features=features, root=out_dir, robot_type=str(data["robot"]),
                                    use_videos=False)
    for k in range(len(data["states"])):
        for t in range(data["states"].shape[1]):
            dataset.add_frame({"observation.environment_state": data["states"][k, t],
                               "action": data["actions"][k, t],
                               "next.reward": data["rewards"][k, t:t + 1],
                               "next.success": data["success"][k, t:t + 1],
                               "task": str(data["instruction"])})
        dataset.save_episode()
    dataset.finalize()
    print(f"wrote {out_dir} with LeRobot's writer: {len(data['states'])} episodes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="step", required=True)
    r = sub.add_parser("record", help="in robosim's venv: record the episodes as arrays (.npz)")
    r.add_argument("out", help="the .npz to write")
    w = sub.add_parser("write", help="in a venv with lerobot: write the arrays as a LeRobot dataset")
    w.add_argument("episodes", help="the .npz of `record`")
    w.add_argument("out_dir", help="dataset directory to create (must not exist)")
    args = parser.parse_args()
    if args.step == "record":
        record(args.out)
    else:
        if os.path.exists(args.out_dir):
            sys.exit(f"error: out_dir {args.out_dir!r} must not exist")
        write(args.episodes, args.out_dir)


if __name__ == "__main__":
    main()
