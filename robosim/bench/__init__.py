"""`robosim bench`: robosim's throughput against ManiSkill3 and the raw PhysX ceiling.

    robosim bench --quick --json bench_results/quick.json

Pytest-free on purpose: timing belongs in a report, never in a test assertion. The
parts: `cases` (what is timed), `ceiling` (the plain-SAPIEN scene), `runner`
(alternating schedule, medians, ratios, JSON); the sub-command is robosim.cli.bench.
"""
from robosim.bench.runner import BenchConfig, format_report, run, write_json_atomic

__all__ = ["BenchConfig", "format_report", "run", "write_json_atomic"]
