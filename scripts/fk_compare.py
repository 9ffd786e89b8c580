"""robosim's SerialChain vs pytorch-kinematics: accuracy against PhysX and speed (CPU).

    .venv/bin/python scripts/fk_compare.py [--envs 16] [--repeats 50]

For every shipped robot: random arm configurations within the joint limits are written
into PhysX (one env each, drives holding them, gravity off), one physics step updates
the link poses, and both libraries' float64 FK of the TCP link (in the robot base frame,
moved to the env frame with the base pose) is compared with PhysX's float32 pose.
Speed: median wall time of FK and of the Jacobian for batches of 1, 64 and 1024
configurations (FK caches bypassed). Prints markdown tables."""
from __future__ import annotations

import argparse
import functools
import statistics
import time

import torch

import robosim
from robosim.agents import Robot, get_robot_spec
from robosim.agents.kinematics import SerialChain
from robosim.core.rotations import quat_to_matrix, rotation_log
from robosim.sim import SimScene


def _pk_chain(urdf: str, root: str, tip: str):
    import pytorch_kinematics as pk

    with open(urdf, "rb") as f:
        return pk.build_serial_chain_from_urdf(f.read(), end_link_name=tip, root_link_name=root).to(dtype=torch.float64)


def _pk_forward(chain, q):
    """pytorch-kinematics FK of q: (positions (B, 3), rotations (B, 3, 3))."""
    m = chain.forward_kinematics(q).get_matrix()
    return m[:, :3, 3], m[:, :3, :3]


def _uncached(fn, chain, q):
    """fn(q) after chain.forget(): the time a new batch of configurations pays."""
    chain.forget()
    return fn(q)


def _time(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    torch.set_num_threads(1)
    acc_rows, speed_rows = [], []
    for name in robosim.list_robots():
        spec = get_robot_spec(name)
        robot = Robot(spec, "pd_joint_pos")
        sim = SimScene(args.envs, 100)
        robot.load(sim)
        limits = robot.view.qlimits()[:robot.arm_dof]
        gen = torch.Generator().manual_seed(0)
        q = robot.rest_qpos(args.envs)
        low, high = limits[:, 0].clamp(min=-3.0), limits[:, 1].clamp(max=3.0)
        q[:, :robot.arm_dof] = low + (high - low) * torch.rand(args.envs, robot.arm_dof, generator=gen)
        robot.reset(q, torch.arange(args.envs))
        sim.step()
        q = robot.view.qpos()[:, :robot.arm_dof].double()
        physx = robot.view.link_pose(spec.tcp_link).double()
        ours = SerialChain(robot.urdf_path, spec.root_link, spec.tcp_link)
        try:
            theirs = _pk_chain(robot.urdf_path, spec.root_link, spec.tcp_link)
        except Exception as exc:   # its URDF parser is stricter than the URDF spec (limit effort/velocity)
            acc_rows.append(f"| {name} | pytorch-kinematics | cannot parse the URDF: {str(exc).splitlines()[-1]} | |")
            theirs = None
        base_rot = quat_to_matrix(robot.base_quat.double())
        base_pos = robot.base_position.double()
        results = {}
        fks = [("robosim", ours.forward)]
        if theirs is not None:
            fks.append(("pytorch-kinematics", functools.partial(_pk_forward, theirs)))
        for label, fk in fks:
            pos, rot = fk(q)
            pos = pos @ base_rot.T + base_pos
            rot = base_rot @ rot
            pos_err = (pos - physx[:, :3]).norm(dim=1).max().item()
            rot_err = rotation_log(rot @ quat_to_matrix(physx[:, 3:]).transpose(-1, -2)).norm(dim=1).max().item()
            results[label] = (pos, rot)
            acc_rows.append(f"| {name} | {label} | {pos_err:.2e} | {rot_err:.2e} |")
        if theirs is not None:
            agree = (results["robosim"][0] - results["pytorch-kinematics"][0]).abs().max().item()
            acc_rows.append(f"| {name} | robosim vs pytorch-kinematics (float64) | {agree:.2e} | |")
        for batch in (1, 64, 1024):
            qb = q[torch.arange(batch) % args.envs] + 1e-3 * torch.rand(batch, robot.arm_dof, dtype=torch.float64,
                                                                        generator=gen)

            fns = [functools.partial(_uncached, ours.forward, ours, qb),
                   functools.partial(_uncached, ours.jacobian, ours, qb)]
            if theirs is not None:
                fns[1:1] = [functools.partial(_pk_forward, theirs, qb)]
                fns.append(functools.partial(theirs.jacobian, qb))
            t = [f"{_time(f, args.repeats) * 1e3:.2f}" for f in fns]
            if theirs is None:
                t = [t[0], "-", t[1], "-"]
            speed_rows.append(f"| {name} | {batch} | " + " | ".join(t) + " |")
        sim.close()
    print("| robot | FK | max position error vs PhysX (m) | max rotation error vs PhysX (rad) |\n|---|---|---|---|")
    print("\n".join(acc_rows))
    print("\n| robot | batch | robosim FK (ms) | pytorch-kinematics FK (ms) | robosim Jacobian (ms) "
          "| pytorch-kinematics Jacobian (ms) |\n|---|---|---|---|---|---|")
    print("\n".join(speed_rows))


if __name__ == "__main__":
    main()
