"""Physics is written only through robosim/sim (issue: the GPU feedback loop): above the
sim layer no module imports SAPIEN, and none branches on the physics backend's name, so
physx_cpu, physx_cuda and physx_gpu_emulated run the same code there.

Allowed to touch SAPIEN: robosim/sim (the physics world), robosim/sensors (cameras and
lights live in SAPIEN's render worlds), robosim/agents (robots are built from URDFs) and
robosim/bench (its ceiling row measures raw PhysX on purpose)."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = ("robosim/sim/", "robosim/sensors/", "robosim/agents/", "robosim/bench/")
BACKEND_NAMES = {"physx_cpu", "physx_cuda", "physx_gpu_emulated"}


def _modules():
    for path in sorted([*ROOT.glob("robosim/**/*.py"), *ROOT.glob("tasks/**/*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(ALLOWED):
            yield rel, ast.parse(path.read_text(), filename=rel)


def _branch_on_backend(node: ast.Compare) -> bool:
    parts = [node.left, *node.comparators]
    named = any(isinstance(p, ast.Constant) and p.value in BACKEND_NAMES for p in parts)
    attribute = any(isinstance(p, ast.Attribute) and p.attr in ("backend", "sim_backend") for p in parts)
    return named or attribute


def test_no_sapien_import_and_no_backend_branch_above_sim():
    problems = []
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "sapien" for a in node.names):
                problems.append(f"{rel}:{node.lineno} imports sapien")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sapien":
                problems.append(f"{rel}:{node.lineno} imports from sapien")
            elif isinstance(node, ast.Compare) and _branch_on_backend(node):
                problems.append(f"{rel}:{node.lineno} branches on the backend: {ast.unparse(node)}")
    assert not problems, "\n".join(problems)


def test_the_check_finds_what_it_forbids():
    bad = ast.parse("import sapien\nif env.sim.backend == 'physx_cuda':\n    pass\n")
    kinds = [type(n).__name__ for n in ast.walk(bad)
             if isinstance(n, ast.Import) or (isinstance(n, ast.Compare) and _branch_on_backend(n))]
    assert kinds == ["Import", "Compare"]


# The emulation of SAPIEN's GPU system (one PhysxCpuSystem per sub-scene, ground planes
# copied between them) stays in its own modules: the shared GPU code runs on physx_cuda.
EMULATION = ("robosim/sim/gpu/emulation.py", "robosim/sim/gpu/emulation_render.py",
             "robosim/sim/gpu/emulation_shared.py")
EMULATION_ONLY_NAMES = {"PhysxCpuSystem", "PhysxCollisionShapePlane"}
EMULATION_IMPORTER = "robosim/sim/gpu/system.py"   # make_gpu_system picks the emulation


def _emulation_leaks(rel: str, tree: ast.AST) -> list[str]:
    if rel in EMULATION:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in EMULATION_ONLY_NAMES and rel.startswith("robosim/sim/gpu/"):
            found.append(f"{rel}:{node.lineno} uses {node.attr}")
        modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                   else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        if rel != EMULATION_IMPORTER and any(m.startswith("robosim.sim.gpu.emulation") for m in modules):
            found.append(f"{rel}:{node.lineno} imports the emulation")
    return found


def test_the_emulation_stays_in_its_modules():
    problems = []
    for path in sorted(ROOT.glob("robosim/**/*.py")):
        rel = path.relative_to(ROOT).as_posix()
        problems += _emulation_leaks(rel, ast.parse(path.read_text(), filename=rel))
    assert not problems, "\n".join(problems)


def test_the_emulation_check_finds_what_it_forbids():
    bad = ast.parse("import sapien\nfrom robosim.sim.gpu.emulation_shared import share_planes\n"
                    "system = sapien.physx.PhysxCpuSystem()\n")
    assert _emulation_leaks("robosim/sim/gpu/scene.py", bad) == [
        "robosim/sim/gpu/scene.py:2 imports the emulation", "robosim/sim/gpu/scene.py:3 uses PhysxCpuSystem"]
    assert _emulation_leaks("robosim/sim/gpu/emulation.py", bad) == []
