"""Keyboard teleoperation: keys and buttons that move the teleop gizmo in steps.

viser 1.1's browser client sends no key events to the server (its key handling only
moves the browser's own camera), so the keys are read in two real places instead:
- `KeyButtons`: buttons in the page's side panel (+x/-x/+y/-y/+z/-z, gripper);
- `TerminalKeys`: the terminal that runs `robosim view TASK --teleop keys` (stdin in
  cbreak mode when it is a terminal; any readable file descriptor otherwise), read
  without blocking once per control step by its `policy`.
Each key press moves the gizmo's target `step` m along an axis of env 0's frame; the
action is then computed by robosim.view.teleop.Teleop.policy, the gizmo's own path, so a
recording through keys is the same kind of demonstration as one through the gizmo.

Keys: w/s +x/-x, a/d +y/-y, q/e +z/-z, space toggles the gripper (others are ignored).
"""
from __future__ import annotations

import os
import select
import sys
from typing import Any

import numpy as np
import torch

from robosim.view.teleop import Teleop

KEY_STEP = 0.02   # m the gizmo moves per key press
MOVES = {"w": (0, 1.0), "s": (0, -1.0), "a": (1, 1.0), "d": (1, -1.0), "q": (2, 1.0), "e": (2, -1.0)}
GRIPPER_KEY = " "
_AXES = "xyz"


def check_step(step: Any) -> float:
    """`step` as a float in (0, 0.5] m; ValueError naming step otherwise."""
    if isinstance(step, bool) or not isinstance(step, (int, float)) or not 0 < step <= 0.5:
        raise ValueError(f"step must be a number in (0, 0.5] (m the gizmo moves per key press), got {step!r}")
    return float(step)


def press(teleop: Teleop, key: str, step: float = KEY_STEP) -> bool:
    """Apply one key to `teleop` (module docstring); returns whether the key means anything."""
    if key == GRIPPER_KEY:
        teleop.toggle_gripper()
        return True
    move = MOVES.get(key.lower())
    if move is None:
        return False
    axis, sign = move
    position = np.array(teleop.gizmo.position, np.float64)
    position[axis] += sign * step
    teleop.gizmo.position = position
    return True


class KeyButtons:
    """A "keys" folder of buttons in the viewer's side panel: one per move key (labelled
    with its axis and key) and the gripper; `buttons[key]` is the button of `key`."""

    def __init__(self, teleop: Teleop, step: float = KEY_STEP):
        self.step = check_step(step)
        gui = teleop.viewer.server.gui
        self.buttons: dict[str, Any] = {}
        with gui.add_folder("keys"):
            for key, (axis, sign) in MOVES.items():
                self.buttons[key] = gui.add_button(f"{'+' if sign > 0 else '-'}{_AXES[axis]} ({key})")
            self.buttons[GRIPPER_KEY] = gui.add_button("gripper (space)")
        for key, button in self.buttons.items():
            button.on_click(lambda _, key=key: press(teleop, key, self.step))


class TerminalKeys:
    """Keys typed into `stream` (a file object or descriptor; default sys.stdin) drive
    `teleop`. `policy(obs)` reads what has been typed (never waits) and returns the
    teleop action (1, A); close() gives the terminal its mode back."""

    def __init__(self, teleop: Teleop, stream: Any = None, step: float = KEY_STEP):
        self.teleop, self.step = teleop, check_step(step)
        stream = sys.stdin if stream is None else stream
        try:
            self.fd = stream if isinstance(stream, int) else stream.fileno()
        except (AttributeError, OSError) as err:
            raise TypeError(f"stream must be a file descriptor or a file object with a descriptor, "
                            f"got {type(stream).__name__}") from err
        self.ended = False
        self._saved = None
        if os.isatty(self.fd):   # keys arrive as typed, without Enter, and are not echoed
            import termios
            import tty

            self._saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)

    def poll(self) -> str:
        """Apply every key typed since the last call; returns the keys that meant something."""
        applied = []
        while not self.ended and select.select([self.fd], [], [], 0)[0]:
            data = os.read(self.fd, 256)
            if not data:   # end of input: nothing more will come
                self.ended = True
                break
            applied += [key for key in data.decode(errors="ignore") if press(self.teleop, key, self.step)]
        return "".join(applied)

    def policy(self, obs: Any) -> torch.Tensor:
        """float32 (1, A): the teleop action after the typed keys. On an episode's first
        step the gizmo is first put on the TCP (Teleop.policy), so keys read then count
        from the next step."""
        if int(self.teleop.env.elapsed_steps[0]) == 0:
            action = self.teleop.policy(obs)
            self.poll()
            return action
        self.poll()
        return self.teleop.policy(obs)

    def close(self) -> None:
        if self._saved is not None:
            import termios

            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            self._saved = None
