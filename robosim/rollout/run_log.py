"""RunLog: a learner's progress as CSV, JSON and a PNG learning curve (success rate and
return against env steps and wall time), each written atomically after every row."""
from __future__ import annotations

import csv
import io
import json
import os
import platform
from typing import Any

from robosim.core.atomic import write_bytes_atomic


class RunLog:
    """Rows of numbers keyed by column name, kept in `rows` and written to
    <out_dir>/log.csv, log.json ({"config": ..., "summary": ..., "rows": [...]}) and
    curve.png. Rows must hold "env_steps" and "wall_s"; the plot shows "eval_success"
    and "eval_return" where present. `command`, when given, is the command line that
    reproduces the run; config["command"] keeps it and config["machine"] records where
    the run ran (CPU model, core count, torch version)."""

    def __init__(self, out_dir: str, config: dict[str, Any], title: str, command: str | None = None):
        if not isinstance(out_dir, str) or not out_dir:
            raise ValueError(f"out_dir must be a non-empty path, got {out_dir!r}")
        os.makedirs(out_dir, exist_ok=True)
        self.out_dir, self.config, self.title = out_dir, dict(config), title
        if command is not None:
            self.config["command"] = command
        self.config.setdefault("machine", machine_description())
        self.rows: list[dict[str, Any]] = []
        self.summary: dict[str, Any] = {}

    def path(self, name: str) -> str:
        return os.path.join(self.out_dir, name)

    def add(self, row: dict[str, Any]) -> None:
        for key in ("env_steps", "wall_s"):
            if key not in row:
                raise ValueError(f"row must hold {key!r}, got keys {sorted(row)}")
        self.rows.append(dict(row))
        self.write()

    def add_eval(self, env_steps: int, wall_s: float, success: float, eval_return: float,
                 **extra: Any) -> dict[str, Any]:
        """Add one evaluation row and record in summary["reached"] the first env step and
        wall time (s) at which the success rate reached 0.9 and 0.95; returns the row."""
        row = {"env_steps": env_steps, "wall_s": round(wall_s, 2), "eval_success": success,
               "eval_return": round(eval_return, 4), **extra}
        reached = self.summary.setdefault("reached", {})
        for level in ("0.9", "0.95"):
            if success >= float(level) and level not in reached:
                reached[level] = {"env_steps": env_steps, "wall_s": row["wall_s"]}
        self.add(row)
        return row

    def write(self) -> None:
        columns = list(dict.fromkeys(k for row in self.rows for k in row))
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=columns)
        writer.writeheader()
        writer.writerows(self.rows)
        write_bytes_atomic(self.path("log.csv"), text.getvalue().encode())
        doc = {"config": self.config, "summary": self.summary, "rows": self.rows}
        write_bytes_atomic(self.path("log.json"), json.dumps(doc, indent=1).encode())
        self.plot()

    @classmethod
    def load(cls, out_dir: str, title: str) -> RunLog:
        """A RunLog over an existing <out_dir>/log.json (e.g. to redraw curve.png)."""
        with open(os.path.join(out_dir, "log.json")) as f:
            doc = json.load(f)
        log = cls(out_dir, doc["config"], title)
        log.rows, log.summary = doc["rows"], doc["summary"]
        return log

    def plot(self) -> None:
        """curve.png: eval success and return vs env steps (top) and vs wall time (bottom)."""
        evals = [r for r in self.rows if r.get("eval_success") is not None]
        if not evals:
            return
        import matplotlib
        import matplotlib.ticker

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(2, 2, figsize=(9, 6), constrained_layout=True)
        for col, (x_key, x_label) in enumerate((("env_steps", "env steps"), ("wall_s", "wall time (s)"))):
            x = [r[x_key] for r in evals]
            axes[0, col].plot(x, [r["eval_success"] for r in evals], marker=".")
            axes[0, col].set_ylim(-0.02, 1.02)
            axes[0, col].set_ylabel("eval success rate")
            axes[1, col].plot(x, [r.get("eval_return") for r in evals], marker=".", color="tab:orange")
            axes[1, col].set_ylabel("eval return")
            axes[1, col].set_xlabel(x_label)
            for row in (0, 1):
                axes[row, col].xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(5))
                axes[row, col].ticklabel_format(axis="x", style="sci", scilimits=(-3, 4))
        fig.suptitle(self.title)
        data = io.BytesIO()
        fig.savefig(data, format="png", dpi=80)
        plt.close(fig)
        write_bytes_atomic(self.path("curve.png"), data.getvalue())


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else platform.processor() (may be "")."""
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return cpu


def machine_description() -> dict[str, Any]:
    """{"cpu": model name, "cores": logical cores, "torch": version} of this machine."""
    import torch

    return {"cpu": cpu_model() or platform.machine(), "cores": os.cpu_count(), "torch": torch.__version__}
