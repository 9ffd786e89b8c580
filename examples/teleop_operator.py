"""A scripted operator for the viewer's teleoperation: PickCube demonstrations recorded
through the same path a person's browser drags take.

    python examples/teleop_operator.py -n 20 --seed 0 --out runs/teleop20.h5
    python examples/bc.py --demos runs/teleop20.h5 --steps 5000 --out runs/bc_teleop

What runs is `robosim view PickCube-v1 --teleop --record FILE --physics-isolation
separate --time-scale 0`: one env in pd_ee_delta_pose, a viser Viewer, the live loop
(robosim.view.live.run_live), robosim.view.teleop.Teleop's gizmo and gripper button, and
the DemoRecorder that `--record` uses (every finished episode is written, successful or
not). Instead of a hand on the mouse, the operator below looks at the scene the viewer
draws (the drawn poses of the cube, the goal marker and the TCP frame, read back from the
viser scene graph after each step) and moves the gizmo through its server-side handle
(what a browser drag sets) and clicks the gripper button, as the teleop tests do:

  0  drag the gizmo 8 cm above the cube, turned to the cube's yaw; wait until the TCP is
     within 1.5 cm of it
  1  drag it down onto the cube; wait until the TCP is within 6 mm
  2  click "close gripper"; wait 5 steps
  3  drag it to the goal, offset by what it sees between the TCP and the cube (the cube
     hangs below the TCP); once the TCP has arrived, nudge it by the cube's remaining
     error to the goal (more than 1 cm)

It never reads the env's state or the task's objects: only the drawn scene. The actions
in the file are what Teleop.policy computed from the gizmo (the env's control mode), so
examples/bc.py, `robosim demos convert/export` and `robosim replay` take the file as they
take `robosim demos generate`'s.
"""
from __future__ import annotations

import argparse
import math
import socket
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

import robosim
from robosim.core.rotations import matrix_to_quat, quat_yaw
from robosim.demos.recorder import DemoRecorder
from robosim.envs.solutions import grasp_rotation
from robosim.record.files import check_output_path
from robosim.view import Viewer
from robosim.view.live import Controls, run_live
from robosim.view.teleop import OPEN, TELEOP_CONTROL_MODE, Teleop

TASK = "PickCube-v1"
ABOVE = 0.08         # m above the cube's centre to approach from
ARRIVED_ABOVE = 0.015
ARRIVED_DOWN = 0.006
CLOSE_STEPS = 5
NUDGE = 0.01         # m: cube-to-goal error the operator corrects once the TCP stopped
STOPPED = 0.005      # m: the TCP is "there" when this close to the gizmo


class _Done(Exception):
    """Raised from the step hook once the requested episodes are recorded (ends run_live)."""


class Operator:
    """Moves `teleop`'s gizmo and clicks its gripper button from what `viewer` draws of env 0."""

    def __init__(self, viewer: Viewer, teleop: Teleop):
        self.viewer, self.teleop = viewer, teleop
        self.phase, self.timer = 0, 0

    def new_episode(self) -> None:
        self.phase, self.timer = 0, 0

    def _seen(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """float64 drawn cube pose (7,), goal position (3,) and TCP position (3,), env 0's frame."""
        cube = self.viewer.body_pose(0, "cube").astype(np.float64)
        goal = self.viewer.body_pose(0, "goal")[:3].astype(np.float64)
        tcp = np.asarray(self.viewer.tcp_node.batched_positions[0], np.float64) - self.viewer.grid[0]
        return cube, goal, tcp

    def _drag(self, position: np.ndarray, wxyz: np.ndarray | None = None) -> None:
        self.teleop.gizmo.position = tuple(float(x) for x in position)
        if wxyz is not None:
            self.teleop.gizmo.wxyz = tuple(float(x) for x in wxyz)

    def look_and_act(self) -> None:
        """One glance at the freshly drawn scene after a step, and what the hand does."""
        self.viewer.update(force=True)   # the operator's screen shows this step
        cube, goal, tcp = self._seen()
        gizmo = np.asarray(self.teleop.gizmo.position, np.float64)
        to_gizmo = float(np.linalg.norm(gizmo - tcp))
        phase = self.phase
        if phase == 0 and self.timer == 0:
            yaw = quat_yaw(torch.as_tensor(cube[3:]).reshape(1, 4))
            wxyz = matrix_to_quat(grasp_rotation(yaw))[0].numpy()
            self._drag(cube[:3] + [0.0, 0.0, ABOVE], wxyz)
        elif phase == 0 and to_gizmo < ARRIVED_ABOVE:
            self.phase = 1
            self._drag(cube[:3])
        elif phase == 1 and to_gizmo < ARRIVED_DOWN:
            self.phase = 2
            if self.teleop.gripper == OPEN:
                self.teleop.gripper_button.value = True   # a click
        elif phase == 2 and self.timer >= CLOSE_STEPS:
            self.phase = 3
            self._drag(goal + (tcp - cube[:3]))
        elif phase == 3 and to_gizmo < STOPPED and np.linalg.norm(goal - cube[:3]) > NUDGE:
            self._drag(gizmo + (goal - cube[:3]))
        self.timer = 0 if self.phase != phase else self.timer + 1


@dataclass
class OperatorReport:
    episodes: int        # episodes recorded
    successes: int       # of them, those that ended in success
    steps: int           # control steps taken


def record_teleop_demos(out: str, episodes: int, seed: int = 0, port: int = 0, host: str = "127.0.0.1",
                        hz: float = 10.0, progress: bool = True) -> OperatorReport:
    """Record `episodes` operator-driven PickCube episodes (seeds seed, seed + 1, ...) to
    `out` (.h5) through the viewer's teleop path (module docstring). port 0: a free one."""
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be an int >= 1, got {episodes!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    out = check_output_path("out", out, (".h5",))
    port = port or _free_port(host)
    env = robosim.make(TASK, num_envs=1, seed=seed, render_mode="rgb_array", control_mode=TELEOP_CONTROL_MODE,
                       physics_isolation="separate")
    recorder = None
    report = OperatorReport(0, 0, 0)
    try:
        viewer = Viewer(env, port=port, host=host, hz=hz)
        try:
            controls = Controls(viewer, title=TASK, time_scale=0.0)
            recorder = DemoRecorder(env, out, keep=lambda episode: True)   # what --record keeps: every episode
            teleop = Teleop(viewer)
            operator = Operator(viewer, teleop)
            bar = tqdm(total=episodes, desc=f"teleop {TASK}", unit="ep", disable=not progress)

            def on_step(obs, action, reward, terminated, truncated, info) -> None:
                report.steps += 1
                if not bool(terminated[0] or truncated[0]):
                    operator.look_and_act()
                    return
                report.episodes += 1
                report.successes += bool(info["success"][0])
                bar.update(1)
                bar.set_postfix(success=f"{report.successes}/{report.episodes}")
                operator.new_episode()
                if report.episodes == episodes:
                    recorder.finish([0])   # written now; run_live would write it at the next reset
                    raise _Done

            try:
                run_live(recorder, viewer, teleop.policy, controls, seed=seed, on_step=on_step)
            except _Done:
                pass
            finally:
                bar.close()
        finally:
            viewer.close()
    finally:
        if recorder is not None:
            recorder.close(close_env=False)   # the finished episodes are written, also on Ctrl-C
        env.close()
    return report


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def main(argv=None) -> OperatorReport:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", "--episodes", type=int, default=20, help="episodes to record (default: 20)")
    p.add_argument("--seed", type=int, default=0, help="first episode seed; episode k uses seed + k (default: 0)")
    p.add_argument("--out", required=True, help="demos file to write (.h5)")
    p.add_argument("--port", type=int, default=0, help="viewer port (default: a free one)")
    p.add_argument("--host", default="127.0.0.1", help="viewer address (default: 127.0.0.1)")
    p.add_argument("--hz", type=float, default=10.0, help="the live loop's viewer updates per second at most")
    args = p.parse_args(argv)
    if args.episodes < 1:
        p.error(f"--episodes must be >= 1, got {args.episodes}")
    if args.seed < 0:
        p.error(f"--seed must be >= 0, got {args.seed}")
    if not (args.hz > 0 and math.isfinite(args.hz)):
        p.error(f"--hz must be a number > 0, got {args.hz}")
    try:
        check_output_path("--out", args.out, (".h5",))
        report = record_teleop_demos(args.out, args.episodes, args.seed, args.port, args.host, args.hz)
    except ValueError as err:
        p.error(str(err))
    print(f"{report.episodes} teleoperated episodes ({report.successes} successful, {report.steps} steps) "
          f"in {args.out}")
    return report


if __name__ == "__main__":
    main()
