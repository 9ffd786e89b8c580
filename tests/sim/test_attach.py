"""Welds per env: a welded bar stays put, its neighbours fall as if no weld existed,
detach frees only the named envs, and set_state (plus separate mode's system renewal)
leaves welds as they are."""
from __future__ import annotations

import pytest
import torch

from robosim.sim import SimScene
from robosim.sim.isolation import IsolatedSimScene
from robosim.sim.objects import Box, RigidObject

N = 3


def build(isolation: str):
    sim = SimScene(N, 100, render=False) if isolation == "shared" else IsolatedSimScene(N, 100)
    sim.add_ground()
    post = sim.add_object("post", RigidObject([Box((0.02, 0.02, 0.2))], body="static", pose=(0, 0, 0.2)))
    bar = sim.add_object("bar", RigidObject([Box((0.2, 0.02, 0.02))], pose=(0.25, 0, 0.3)))
    sim.finalize()
    return sim, post, bar


@pytest.mark.parametrize("isolation", ["shared", "separate"])
def test_weld_holds_only_its_envs_and_survives_set_state(isolation):
    sim, post, bar = build(isolation)
    ref, _, ref_bar = build(isolation)              # the same scene, never welded
    start = bar.pose().clone()
    sim.welds.attach("hold", post, bar, torch.tensor([0, 2]))
    assert sim.welds.is_attached("hold").tolist() == [True, False, True]
    for _ in range(40):
        sim.step()
        ref.step()
    pose = bar.pose()
    assert torch.equal(pose[[0, 2]], start[[0, 2]])           # held exactly
    assert torch.equal(pose[1], ref_bar.pose()[1])            # env 1 as if no weld existed
    assert pose[1, 2] < 0.1                                   # and it fell

    sim.set_state(sim.get_state())
    sim.forget_history()                                      # separate mode: new PhysX systems
    sim.welds.detach("hold", torch.tensor([0]))
    assert sim.welds.is_attached("hold").tolist() == [False, False, True]
    for _ in range(40):
        sim.step()
    pose = bar.pose()
    assert pose[0, 2] < 0.1                                   # freed: it fell
    torch.testing.assert_close(pose[2], start[2], rtol=0, atol=1e-4)   # still held
    sim.close()
    ref.close()


def test_bad_welds_are_refused_before_anything_changes():
    sim, post, bar = build("shared")
    with pytest.raises(ValueError, match="child must be a dynamic body"):
        sim.welds.attach("w", bar, post)
    with pytest.raises(ValueError, match=r"env_idx must hold ints in \[0, 3\)"):
        sim.welds.attach("w", post, bar, torch.tensor([5]))
    with pytest.raises(ValueError, match="name must be an attached weld"):
        sim.welds.detach("nope")
    assert sim.welds.is_attached("w").tolist() == [False] * N
    sim.close()


@pytest.mark.parametrize("isolation", ["shared", "separate"])
def test_partial_reset_and_set_state_with_welds(isolation):
    """PickCube with its cube welded to the world 10 cm up in both envs: a partial reset
    of env 1 leaves env 0 bit for bit and both welds in place; the weld then holds env
    1's cube where the reset put it, and a restored state where it was saved."""
    import robosim

    env = robosim.make("PickCube-v1", num_envs=2, obs_mode="state", physics_isolation=isolation)
    try:
        env.reset(seed=0)
        cube, sim = env.task.cube, env.sim
        pose = cube.pose().clone()
        pose[:, 2] += 0.1
        cube.set_pose(pose)
        sim.welds.attach("lift", None, cube)
        for _ in range(3):
            env.step(None)
        assert torch.equal(cube.pose()[:, :3], pose[:, :3])       # held in the air
        saved = env.get_state()
        env.reset(seed=5, options={"env_idx": [1]})
        assert torch.equal(env.get_state()[0], saved[0])          # env 0 untouched
        assert sim.welds.is_attached("lift").tolist() == [True, True]
        placed = cube.pose()[1].clone()                           # on the table, where the reset put it
        for _ in range(3):
            env.step(None)
        torch.testing.assert_close(cube.pose()[1, :3], placed[:3], rtol=0, atol=1e-6)
        env.set_state(saved)
        for _ in range(3):
            env.step(None)
        torch.testing.assert_close(cube.pose()[:, :3], pose[:, :3], rtol=0, atol=1e-6)
    finally:
        env.close()


def test_weld_to_an_articulation_link_follows_it():
    """A cube glued to a moving prismatic link (a tool on a gripper) moves with it."""
    from robosim.sim.objects import ArticulationModel, Joint, Link

    sim = SimScene(2, 100, render=False)
    sim.add_ground()
    slider = sim.add_articulation("slider", ArticulationModel([
        Link("base", [Box((0.02, 0.02, 0.02))]),
        Link("carriage", [Box((0.02, 0.02, 0.02))], parent="base",
             joint=Joint("prismatic", pose_in_parent=(0.1, 0, 0), axis=(1, 0, 0), limits=(0.0, 0.2),
                         stiffness=1000.0, damping=100.0)),
    ], pose=(0, 0, 0.3)))
    tool = sim.add_object("tool", RigidObject([Box(0.01)], pose=(0.1, 0, 0.2)))   # 10 cm below the carriage
    sim.finalize()
    sim.step()   # PhysX computes link poses at a step or a qpos write (a built, never stepped link is at 0)
    sim.welds.attach("glue", (slider, "carriage"), tool, torch.tensor([0]))
    start = tool.pose().clone()
    slider.set_drive_targets(torch.tensor([[0.1], [0.1]]))
    for _ in range(100):
        sim.step()
    moved = tool.pose()[0, :3] - start[0, :3]
    torch.testing.assert_close(moved, torch.tensor([0.1, 0.0, 0.0]), rtol=0, atol=2e-3)   # carried along
    assert tool.pose()[1, 2] < 0.02                                                      # env 1: fell
    sim.close()


def test_weld_snapshot_puts_back_which_welds_hold():
    """restore_welds(weld_snapshot()) detaches the welds made since and makes again the
    ones detached since, in exactly the envs of the snapshot; the re-made weld holds the
    pose set_state then writes."""
    sim, post, bar = build("shared")
    sim.welds.attach("hold", post, bar, torch.tensor([0, 1]))
    saved, snapshot = sim.get_state(), sim.weld_snapshot()
    sim.welds.detach("hold", torch.tensor([1]))
    sim.welds.attach("glue", None, bar, torch.tensor([2]))
    for _ in range(40):
        sim.step()
    assert bar.pose()[1, 2] < 0.1                                        # env 1 freed: it fell
    sim.restore_welds(snapshot)
    assert sim.welds.is_attached("hold").tolist() == [True, True, False]
    assert sim.welds.is_attached("glue").tolist() == [False, False, False]
    sim.set_state(saved)
    sim.forget_history()
    for _ in range(40):
        sim.step()
    pose = bar.pose()
    torch.testing.assert_close(pose[:2], saved[:2, sim.state_layout()["bar"]["pose"]], rtol=0, atol=1e-4)   # held
    assert pose[2, 2] < 0.1                                                   # unglued: it fell
    sim.restore_welds(None)                                                   # no snapshot: no welds
    assert not sim.welds.is_attached("hold").any()
    other, other_post, other_bar = build("shared")
    assert other.weld_snapshot() is None                                      # no weld was ever made
    with pytest.raises(ValueError, match="snapshot must be a weld_snapshot"):
        other.restore_welds(snapshot)
    sim.close()
    other.close()


@pytest.mark.parametrize("isolation", ["shared", "separate"])
def test_a_weld_made_after_a_save_point_is_gone_after_the_restore(isolation):
    """A sorting-style task welds the cube to the world mid-episode. Restoring the saved
    state with the welds saved alongside (SimScene.weld_snapshot/restore_welds, what
    save_state/restore_state keep) repeats the run after the save; restoring without
    them left the weld holding from the first step and the run diverged."""
    import robosim

    env = robosim.make("PickCube-v1", num_envs=2, obs_mode="state", physics_isolation=isolation)
    try:
        env.reset(seed=3)
        actions = torch.linspace(-1, 1, 8 * 2 * env.single_action_space.shape[0]).reshape(8, 2, -1)
        sid, welds = env.save_state(), env.sim.weld_snapshot()

        def run(kept_weld: bool) -> torch.Tensor:
            env.restore_state(sid)
            env.sim.restore_welds(welds)
            env.set_state(env._saved_states[sid].state)   # re-anchor at the saved poses, as restore_state does
            if kept_weld:   # what restore_state left before the welds were saved: the first run's weld
                env.sim.welds.attach("sorted", None, env.task.cube, torch.tensor([0]))
            states = []
            for t, action in enumerate(actions):
                if t == 2:
                    env.sim.welds.attach("sorted", None, env.task.cube, torch.tensor([0]))
                env.step(action)
                states.append(env.get_state().clone())
            return torch.stack(states)

        first = run(kept_weld=False)
        assert env.sim.welds.is_attached("sorted").tolist() == [True, False]
        stale = run(kept_weld=True)            # held from step 0: the run diverges
        again = run(kept_weld=False)           # restore_welds detached it: the run repeats
        assert not torch.equal(stale, first)
        if isolation == "separate":
            assert torch.equal(again, first)       # bit for bit
        else:
            torch.testing.assert_close(again, first, rtol=0, atol=1e-4)
    finally:
        env.close()
