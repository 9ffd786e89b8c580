"""The layer rule of docs/design.md, read from the source: a module in robosim/F/ imports
robosim.X only when X is F or a folder before F in LAYERS, lazy imports inside
functions included, and no two folders import each other, directly or around a longer
circle. robosim/__init__.py and robosim/__main__.py are the top and exempt. `import
robosim` and `from robosim import name` are not folder imports: they import the top
package, which imports every layer, so only the top (and cli/ and view/, the layers
above the public API) may write them (test_only_the_top_imports_the_top_package)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "robosim"
LAYERS = ("core", "sim", "agents", "randomization", "sensors", "envs", "vector", "record", "demos", "rollout",
          "distributed", "bench", "view", "cli")
EXEMPT = ("__init__.py", "__main__.py")   # robosim/<these>: the top of the package
TOP_IMPORTERS = ("cli", "view")           # folders above the public API: may import `robosim` itself

# Known violations in modules that other work is changing, as (importing module, imported
# module) pairs. The integrator empties this list; never add to it to make a new import pass.
ALLOWED_UNTIL_FIXED: set[tuple[str, str]] = set()


def _folder_of(module: str) -> str | None:
    """'robosim.envs.base_env' -> 'envs'; None for `robosim` itself or a top-level name."""
    parts = module.split(".")
    if parts[0] != "robosim" or len(parts) < 2:
        return None
    return parts[1] if (ROOT / parts[1]).is_dir() or parts[1] in LAYERS else None


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _package_of(path: Path) -> list[str]:
    """The package a relative import in `path` starts from, as name parts."""
    parts = _module_name(path).split(".")
    return parts if path.name == "__init__.py" else parts[:-1]


def _imported_modules(source: str, package: list[str]) -> list[tuple[int, str]]:
    """(line, absolute module) for every import in `source`, at any depth (lazy ones too);
    `from robosim import X` yields robosim.X, relative imports are resolved against `package`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def _folder_imports() -> list[tuple[str, int, str, str, str]]:
    """(file, line, importing folder, imported folder, imported module) of every import of
    another folder from a module inside a folder of robosim/."""
    rows = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if len(rel.parts) == 1:
            assert rel.name in EXEMPT, f"robosim/{rel} is a module outside every layer folder"
            continue
        folder = rel.parts[0]
        for line, module in _imported_modules(path.read_text(), _package_of(path)):
            target = _folder_of(module)
            if target is not None and target != folder:
                rows.append((f"robosim/{rel}", line, folder, target, module))
    return rows


def test_every_folder_is_a_layer():
    folders = sorted(p.name for p in ROOT.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert [f for f in folders if f not in LAYERS] == []


def test_imports_go_only_to_earlier_layers():
    rank = {name: k for k, name in enumerate(LAYERS)}
    bad = [f"{file}:{line} ({folder}) imports {module} ({target})"
           for file, line, folder, target, module in _folder_imports()
           if rank[target] > rank[folder] and (_module_name(ROOT.parent / file), module) not in ALLOWED_UNTIL_FIXED]
    assert bad == []


def test_no_import_circle_between_folders():
    edges: dict[str, set[str]] = {}
    for _, _, folder, target, _ in _folder_imports():
        edges.setdefault(folder, set()).add(target)

    def reaches(start: str, goal: str) -> list[str] | None:
        stack, seen = [[start]], {start}
        while stack:
            trail = stack.pop()
            for nxt in sorted(edges.get(trail[-1], ())):
                if nxt == goal:
                    return trail + [nxt]
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(trail + [nxt])
        return None

    circles = {" -> ".join(c) for f in sorted(edges) if (c := reaches(f, f))}
    assert sorted(circles) == []


def top_package_imports(source: str, package: list[str]) -> list[int]:
    """Lines of `source` that import the top package itself: `import robosim` (any alias),
    `from robosim import X`, or a relative import that resolves to `robosim`."""
    return [line for line, module in _imported_modules(source, package) if module == "robosim"]


def test_only_the_top_imports_the_top_package():
    """A module below the top reaches what it needs through its layer's module
    (robosim.envs.make, robosim.core.version.__version__), never through `robosim`:
    importing the top package from a layer hides an upward dependency on every layer."""
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if (len(rel.parts) == 1 and rel.name in EXEMPT) or rel.parts[0] in TOP_IMPORTERS:
            continue
        bad += [f"robosim/{rel}:{line}" for line in top_package_imports(path.read_text(), _package_of(path))]
    assert bad == []


@pytest.mark.parametrize("source, expected", [
    ("import robosim", [1]),
    ("import numpy\nimport robosim as rs", [2]),
    ("from robosim import make", [1]),
    ("def f():\n    from .. import make", [2]),
    ("import robosim.envs\nfrom robosim.core.version import __version__\nfrom . import files", []),
])
def test_the_top_package_scan_sees_every_form(source, expected):
    assert top_package_imports(source, ["robosim", "record"]) == expected


@pytest.mark.parametrize("source, package, expected", [
    ("import robosim.envs.base_env", "robosim.record", {"envs"}),
    ("from robosim import sim, make", "robosim.record", {"sim"}),
    ("from ..envs import checks", "robosim.record", {"envs"}),
    ("from .. import vector", "robosim.record", {"vector"}),
    ("from . import files", "robosim.record", {"record"}),
    ("def f():\n    if True:\n        from robosim.cli.options import fail", "robosim.record", {"cli"}),
    ("import robosim\nimport numpy", "robosim.record", set()),
])
def test_the_scan_sees_every_import_form(source, package, expected):
    """The scan behind the checks above resolves absolute, from-package, relative and lazy
    imports to the folder they reach (a scan that saw none of them would always pass)."""
    folders = {_folder_of(m) for _, m in _imported_modules(source, package.split("."))} - {None}
    assert folders == expected
