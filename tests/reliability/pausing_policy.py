"""A policy for the signal tests: seeded random actions until the run has written
PAUSE_AFTER_EPISODES finished episode files, then it creates `paused` in the working
directory and sleeps in Python until a signal ends the process or the `paused` file is
gone (the test deleted the directory); then it goes on with random actions.

So the test signals a run that is provably at its moment (inside the episode loop, with
that many episodes on disk) however fast or loaded the machine is: a run can neither
finish before its signal nor be signalled before its moment."""
from __future__ import annotations

import os
import time

from robosim.record.policies import random


def finished_episodes(directory: str) -> int:
    """Episode files in the run's trajectory parts directory (0 when there is none yet)."""
    for name in os.listdir(directory):
        if name.endswith(".parts"):
            try:
                return sum(n.startswith("episode_") for n in os.listdir(os.path.join(directory, name)))
            except FileNotFoundError:
                return 0
    return 0


def factory(env):
    need = int(os.environ["PAUSE_AFTER_EPISODES"])
    act = random(env)
    resumed = False

    def policy(obs):
        nonlocal resumed
        if not resumed and finished_episodes(".") >= need:
            with open("paused", "w"):
                pass
            while os.path.exists("paused"):     # a signal's handler runs between these sleeps
                time.sleep(0.01)
            resumed = True
        return act(obs)

    return policy
