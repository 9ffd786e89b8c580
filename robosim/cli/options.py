"""Options shared by the `robosim` sub-commands: --import on every (sub-)command,
argument types (WxH sizes, JSON cameras, KEY=VALUE task parameters),
--robot/--task-param, the robosim.make keyword arguments built from them, and the
one-line error a command prints."""
from __future__ import annotations

import argparse
import json
import sys

IMPORT_DEST = "imports_level"   # + the parser's depth: argparse copies a sub-parser's defaults over its parent's


def add_import_options(parser: argparse.ArgumentParser, depth: int = 0) -> None:
    """--import MODULE (repeatable) on `parser` and on every sub-command below it, so it
    is accepted at any position: `robosim --import m demos generate ...`, `robosim demos
    --import m generate ...`, `robosim demos generate --import m ...`. Each level keeps its
    own list; imported_modules(args) joins them."""
    parser.add_argument("--import", dest=f"{IMPORT_DEST}{depth}", metavar="MODULE", action="append", default=[],
                        help="import MODULE before resolving task ids, so tasks it registers with "
                             "@robosim.register_task are found (repeatable); a task id may also be "
                             "'package.module:TaskClass'")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):   # an alias maps to the same parser
                add_import_options(child, depth + 1)


def imported_modules(args: argparse.Namespace) -> list[str]:
    """Every --import MODULE of the command line, outermost level first."""
    levels = sorted((k for k in vars(args) if k.startswith(IMPORT_DEST)), key=lambda k: int(k[len(IMPORT_DEST):]))
    return [module for level in levels for module in getattr(args, level)]


def parse_size(text: str) -> tuple[int, int]:
    """'WxH' -> (width, height) ints; argparse type of --render-size / --sensor-size."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT such as 256x256, got {text!r}") from None
    return w, h


def parse_camera(text: str) -> dict:
    """A JSON object -> dict; argparse type of --camera."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(
            f"expected a JSON object such as '{{\"yaw\": 90}}', got {text!r} ({err})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object such as '{{\"yaw\": 90}}', got {text!r}")
    return value


def parse_task_param(text: str) -> tuple[str, object]:
    """'key=value' -> (key, value): value parsed as JSON, else kept as the string."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE such as cube_half_size=0.025, got {text!r}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value


def _per_slot(text: str, what: str, pair: str, example: str) -> str | dict[str, str]:
    """`text` itself, or SLOT=VALUE[,SLOT=VALUE...] as {slot: value}; ArgumentTypeError
    naming `what` for a malformed pair."""
    if "=" not in text:
        return text
    pairs = [item.partition("=") for item in text.split(",")]
    if any(not slot.strip() or not sep or not value.strip() for slot, sep, value in pairs):
        raise argparse.ArgumentTypeError(f"expected a {what} or {pair}[,{pair}...] such as {example}, got {text!r}")
    return {slot.strip(): value.strip() for slot, _, value in pairs}


def parse_robot(text: str) -> str | dict[str, str]:
    """--robot value: a robot name, or SLOT=NAME[,SLOT=NAME...] for a task of several
    robots ('left=panda,right=xarm7' -> {'left': 'panda', 'right': 'xarm7'})."""
    return _per_slot(text, "robot name", "SLOT=NAME", "left=panda,right=panda")


def parse_control_mode(text: str) -> str | dict[str, str]:
    """--control-mode value: a mode for every robot, or SLOT=MODE[,SLOT=MODE...] naming
    every slot of a task of several robots ('left=pd_ee_delta_pose,right=pd_joint_delta_pos')."""
    return _per_slot(text, "control mode", "SLOT=MODE", "left=pd_ee_delta_pose,right=pd_joint_delta_pos")


def add_control_mode_option(p: argparse.ArgumentParser, help_text: str = "control mode (default: the task's)") -> None:
    """--control-mode MODE | SLOT=MODE,... (robosim.make's control_mode)."""
    p.add_argument("--control-mode", default=None, type=parse_control_mode, metavar="MODE | SLOT=MODE,...",
                   help=f"{help_text}; for a task of several robots, SLOT=MODE pairs naming every slot "
                        f"(left=pd_ee_delta_pose,right=pd_joint_delta_pos)")


def add_make_options(p: argparse.ArgumentParser) -> None:
    """--robot and --task-param: what robosim.make(task, robot=..., **task_params) takes."""
    p.add_argument("--robot", default=None, type=parse_robot, metavar="NAME | SLOT=NAME,...",
                   help="robot name for every robot of the task, or SLOT=NAME pairs for a task of several "
                        "robots (left=panda,right=xarm7; slots not named keep their default) (default: the "
                        "task's default robots)")
    p.add_argument("--task-param", dest="task_params", type=parse_task_param, action="append", default=[],
                   metavar="KEY=VALUE",
                   help="task parameter passed to robosim.make (repeatable); VALUE is parsed as JSON "
                        "(0.025, true, [1, 2]), else taken as a string")


def add_render_size_option(p: argparse.ArgumentParser) -> None:
    """--render-size WxH of the video tiles (eval, replay)."""
    p.add_argument("--render-size", type=parse_size, default=(256, 256), help="video tile size WxH (default 256x256)")


def add_sim_backend_option(p: argparse.ArgumentParser, help_text: str) -> None:
    """--sim-backend, one of robosim.sim.backends.SIM_BACKENDS (default physx_cpu)."""
    from robosim.sim.backends import SIM_BACKENDS

    p.add_argument("--sim-backend", default="physx_cpu", choices=SIM_BACKENDS, help=help_text)


def make_options(args: argparse.Namespace) -> dict:
    """robosim.make keyword arguments from --robot/--task-param; the task's check_parameters
    raises ValueError naming an unknown key (TypeError for a wrongly typed value)."""
    import robosim

    params = dict(args.task_params)
    robosim.get_task(args.task).check_parameters(params)
    return {"robot": args.robot, **params}


def fail(command: str, err: Exception, status: int = 2) -> int:
    """Print `robosim COMMAND: error: ERR` on stderr; return the exit status."""
    print(f"robosim {command}: error: {err}", file=sys.stderr)
    return status
