"""Handles kept past the life of their scene (sim.contacts, sim.welds, sim.wrenches, a
kept `sim`) raise a ValueError naming why, never reach PhysX: through a closed scene
SAPIEN used to crash the process (SIGSEGV, exit 139). Each case runs in its own Python,
so a crash fails the test instead of killing pytest."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

MAKE = """
env = robosim.make("PickCube-v1", num_envs=2, obs_mode="state", physics_isolation=ISOLATION)
env.reset(seed=0)
env.step(None)
cube = env.task.cube
"""

CASES = {
    # the case: contacts kept, env closed, queried (exit 139 before)
    "contacts_after_close": """
        contacts = env.sim.contacts
        env.close()
        contacts.net_force(cube)
    """,
    "contacts_over_a_control_step_after_close": """
        contacts = env.sim.contacts
        contacts.net_force(cube, substeps=5)
        env.close()
        contacts.net_force(cube, substeps=5)
    """,
    # a weld detached through the sim kept from before a reconfigure (exit 139 before)
    "weld_detached_after_reconfigure": """
        sim = env.sim
        sim.welds.attach("hold", None, cube)
        env.reset(seed=0, options={"reconfigure": True})
        sim.welds.detach("hold")
    """,
    "weld_attached_through_an_old_sim": """
        sim = env.sim
        env.reset(seed=0, options={"reconfigure": True})
        sim.welds.attach("hold", None, cube)
    """,
    "wrench_after_close": """
        wrenches = env.sim.wrenches
        env.close()
        wrenches.set(cube, torch.zeros(1, 6), [0])
    """,
    "contacts_taken_from_a_closed_sim": """
        sim = env.sim
        env.close()
        sim.contacts
    """,
}


@pytest.mark.parametrize("isolation", ["shared", "separate"])
def test_a_stale_handle_raises_a_named_value_error(isolation):
    """One Python runs every case (a fresh env each); it prints one line per case."""
    script = f"import torch, robosim\nISOLATION = {isolation!r}\n"
    for case, body in sorted(CASES.items()):
        indented = "".join(f"    {line}\n" for line in textwrap.dedent(body).strip().splitlines())
        script += (MAKE + "try:\n" + indented + "except ValueError as err:\n"
                   f"    print({case!r}, 'ValueError:', err, flush=True)\n"
                   f"else:\n    print({case!r}, 'no error', flush=True)\nenv.close()\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if line.split(" ", 1)[0] in CASES)
    for case in sorted(CASES):
        got = lines.get(case, f"did not finish: exit {done.returncode}, {done.stderr[-1500:]}")
        assert got.startswith("ValueError: sim.") and "belongs to a SimScene that was closed (the env was " \
            "closed, or rebuilt at reconfigure)" in got, f"{case}: {got}"
    assert done.returncode == 0, done.stderr[-1500:]
