"""`robosim bench --dry-run` still executes every path (robosim, ManiSkill3, ceiling).

A smoke test only: it runs a couple of steps per case and never looks at timings."""
import json

from robosim.cli import main


def test_dry_run_prints_table_and_writes_json(tmp_path, capsys):
    out = tmp_path / "results" / "bench.json"
    assert main(["bench", "--dry-run", "--no-progress", "--json", str(out)]) == 0

    text = capsys.readouterr().out
    assert "DRY RUN" in text and "ManiSkill3" in text and "PhysX ceiling" in text
    doc = json.loads(out.read_text())
    systems = {(c["system"], c["variant"]) for c in doc["cases"]}
    assert {("robosim", "step"), ("robosim", "reset_heavy"), ("maniskill", "step"),
            ("ceiling", "random"), ("ceiling", "hold"), ("ceiling", "replay")} <= systems
    assert all(len(c["runs"]) >= 1 and c["env_steps_per_s"] > 0 for c in doc["cases"])
    assert {r["control_mode"] for r in doc["ratios"]} == {"pd_ee_delta_pose", "pd_joint_delta_pos"}
    assert all(r["vs_lockstep_ceiling"] > 0 for r in doc["ratios"])
    assert "plain SAPIEN without render components" in text and "build/bare" in text
    assert all(row["bare_build_s"] > 0 and row["build_s"] > 0 for row in doc["build_times"])
    assert not [p.name for p in out.parent.iterdir() if p.name != "bench.json"]  # no temp file left


def test_bench_help_lists_modes(capsys):
    try:
        main(["bench", "--help"])
    except SystemExit as exit_:
        assert exit_.code == 0
    text = capsys.readouterr().out
    for option in ("--quick", "--dry-run", "--json"):
        assert option in text
