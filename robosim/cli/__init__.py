"""The `robosim` command: one module per sub-command (list_tasks, solve and its deprecated
name demo, bench, eval, replay, recover, demos, view), the options they share (options; --import
MODULE on every command and sub-command), and `main`, which turns a
ValueError/TypeError into one `robosim COMMAND: error: ...` line (exit status 2) and
SIGINT/SIGTERM into status 130/143 after the output files are closed (the caller's
SIGTERM handler is back in place when main returns).

This package is the top layer: it imports from every other robosim folder, and none
imports from it."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable

from robosim.cli.bench import add_bench_command
from robosim.cli.demos import add_demos_command
from robosim.cli.eval import add_eval_command
from robosim.cli.list_tasks import add_list_command
from robosim.cli.options import add_import_options, imported_modules
from robosim.cli.recover import add_recover_command
from robosim.cli.replay import add_replay_command
from robosim.cli.solve import add_solve_command
from robosim.cli.view import add_view_command

# The sub-commands in `robosim --help` order; each adder takes the argparse sub-parsers
# object and sets `func` (args -> exit status) on its parser.
COMMANDS: tuple[Callable, ...] = (add_list_command, add_solve_command, add_bench_command, add_eval_command,
                                  add_replay_command, add_recover_command, add_demos_command, add_view_command)


class Terminated(BaseException):
    """Raised by the SIGTERM handler so `finally` blocks close output files, as on Ctrl-C."""


def _on_sigterm(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)   # a repeated TERM must not cut the cleanup short
    raise Terminated()


def build_parser() -> argparse.ArgumentParser:
    """The `robosim` parser: every sub-command; it and each (sub-)command take --import MODULE."""
    parser = argparse.ArgumentParser(
        prog="robosim", description="Batched robot manipulation environments on SAPIEN/PhysX."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add_command in COMMANDS:
        add_command(sub)
    add_import_options(parser)   # every command can see tasks of the user's modules
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run `robosim ARGV` (default: sys.argv[1:]); returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    previous = None   # the caller's SIGTERM handler, put back on return (main may be called from Python)
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        if "" not in sys.path and os.getcwd() not in sys.path:   # user modules in cwd, as `python -m`
            sys.path.insert(0, os.getcwd())
        modules = imported_modules(args)
        if modules:
            from robosim.envs.registry import import_modules

            with warnings.catch_warnings():   # show the user's module what it imports from a moved path
                warnings.filterwarnings("default", category=DeprecationWarning, message="robosim")
                import_modules(modules)
        return args.func(args)
    except (ValueError, TypeError, FileNotFoundError, NotImplementedError) as err:  # one clear line, no traceback
        print(f"robosim {args.command}: error: {err}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Terminated) as err:   # files were closed on the way out
        name = "SIGINT" if isinstance(err, KeyboardInterrupt) else "SIGTERM"
        print(f"robosim {args.command}: interrupted by {name}; output files keep what was recorded",
              file=sys.stderr)
        return 130 if name == "SIGINT" else 143
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)

