"""robosim/core is the one home of rotations, atomic writes, observation trees and the
name registry (issue 21 item 4): nothing outside it defines a function or class under
one of its names, nothing outside its atomic module renames files into place, and core
itself imports nothing from the rest of robosim (every layer may import it).

A static check (AST): it reads the source and runs nothing.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = "robosim/core/"
SCANNED = ("robosim", "tasks", "examples")

# Names the copies had before they moved into core (private helpers and old spellings).
FORMER_NAMES = {"_write_atomic", "_save_atomic", "_FixedAxisRotation", "_umask", "_unlink_quietly", "_flatten",
                "_task_from_path"}

# Copies that live in files other helpers are rewriting while this test lands; the
# integrator switches them to robosim.core and deletes the entry. An entry whose copy is
# gone fails test_pending_copies_are_still_there, so this list can only shrink.
PENDING: set[tuple[str, str]] = set()

# Renames outside robosim/core/atomic.py, each with its reason.
RENAME_EXEMPT = {
    # recover renames a killed run's partial video to a name it has claimed, and on a
    # failed rename must keep the partial file (the only copy of the recording), which
    # replace_into_place would delete.
    "robosim/record/recover.py",
}
RENAME_CALLS = {("os", "replace"), ("os", "rename"), ("os", "renames"), ("shutil", "move")}
TEMP_FILE_CALLS = {("tempfile", "mkstemp")}


def _files(prefixes=SCANNED):
    for prefix in prefixes:
        for path in sorted((ROOT / prefix).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if ".venv" not in rel:
                yield rel, ast.parse(path.read_text(), filename=rel)


def core_names() -> set[str]:
    """Every top-level function and class name defined in robosim/core."""
    names = set()
    for _, tree in _files(["robosim/core"]):
        names |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    return names


def definitions(tree: ast.AST, names: set[str]) -> list[tuple[str, int]]:
    """(name, line) of every function/class definition (at any depth) named in `names`."""
    return [(n.name, n.lineno) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name in names]


def module_calls(tree: ast.AST, calls: set[tuple[str, str]]) -> list[tuple[str, int]]:
    """(module.function, line) of every call or import of one of `calls` (os.replace(...),
    `from os import replace`)."""
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and (n.value.id, n.attr) in calls:
            found.append((f"{n.value.id}.{n.attr}", n.lineno))
        elif isinstance(n, ast.ImportFrom) and any((n.module, a.name) in calls for a in n.names):
            found.append((f"from {n.module} import", n.lineno))
    return found


def test_core_defines_the_shared_names():
    names = core_names()
    assert {"quat_to_matrix", "matrix_to_quat", "yaw_quat", "quat_yaw", "wrap_angle", "write_bytes_atomic",
            "flatten_obs", "tree_map", "Registry"} <= names


def test_nothing_outside_core_defines_a_core_name():
    names = core_names() | FORMER_NAMES
    found = []
    for rel, tree in _files():
        if not rel.startswith(CORE):
            found += [f"{rel}:{line} defines {name}" for name, line in definitions(tree, names)
                      if (rel, name) not in PENDING]
    assert not found, "\n".join(found)


def test_pending_copies_are_still_there():
    for rel, name in sorted(PENDING):
        assert definitions(ast.parse((ROOT / rel).read_text()), {name}), \
            f"{rel} no longer defines {name}: delete its PENDING entry"


def test_only_core_atomic_renames_files_into_place():
    found = []
    for rel, tree in _files():
        if rel != "robosim/core/atomic.py" and rel not in RENAME_EXEMPT:
            found += [f"{rel}:{line} calls {call}" for call, line in module_calls(tree, RENAME_CALLS | TEMP_FILE_CALLS)]
    assert not found, "\n".join(found)


def test_core_imports_only_itself_the_standard_library_numpy_and_torch():
    allowed = set(sys.stdlib_module_names) | {"numpy", "torch"}
    found = []
    for rel, tree in _files(["robosim/core"]):
        for n in ast.walk(tree):
            modules = [a.name for a in n.names] if isinstance(n, ast.Import) else \
                [n.module or ""] if isinstance(n, ast.ImportFrom) and n.level == 0 else []
            found += [f"{rel}:{n.lineno} imports {m}" for m in modules
                      if m.split(".")[0] not in allowed and not (m == "robosim.core" or m.startswith("robosim.core."))]
            if isinstance(n, ast.ImportFrom) and n.level > 0:
                found.append(f"{rel}:{n.lineno} imports relatively")
    assert not found, "\n".join(found)


def test_the_checks_find_what_they_forbid():
    planted = ast.parse("import os\nfrom os import rename\n\ndef f(p):\n    def quat_yaw(q):\n        return q\n"
                        "    os.replace(p, p + '.x')\n\nclass Registry:\n    pass\n")
    assert sorted(definitions(planted, {"quat_yaw", "Registry"})) == [("Registry", 9), ("quat_yaw", 5)]
    assert sorted(module_calls(planted, RENAME_CALLS)) == [("from os import", 2), ("os.replace", 7)]
