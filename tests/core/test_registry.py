"""robosim.core.registry.Registry: registration, lookup errors that list the known
names, built-ins loaded on first lookup, and 'package.module:Name' strings."""
from __future__ import annotations

import sys
import textwrap

import pytest

from robosim.core.registry import Registry, import_object


def _check(name, value):
    if not isinstance(value, int):
        raise ValueError(f"thing {name!r} must be an int, got {value!r}")
    return value


def make(import_paths=False):
    loaded = []

    def builtins(registry):
        loaded.append(1)
        registry.entries.setdefault("builtin", 0)

    return Registry("thing", "thing_id", "robosim.no_such_group", _check, builtins, import_paths=import_paths,
                    hint="Register it first."), loaded


def test_add_get_and_names():
    things, loaded = make()
    assert things.add("b", 2) == 2 and things.get("b") == 2 and loaded == []   # no discovery for a known name
    things.add("a", 1)
    assert things.names() == ["a", "b", "builtin"] and things.get("builtin") == 0
    with pytest.raises(ValueError, match="thing 'c' must be an int, got 'x'"):
        things.add("c", "x")
    assert "c" not in things.names()
    with pytest.raises(TypeError, match="a thing name must be a str, got 4 \\(int\\)"):
        things.add(4, 4)
    with pytest.raises(ValueError, match="a thing name must be a non-empty str, got ''"):
        things.add("", 4)


def test_unknown_and_non_str_names_are_refused_with_the_known_ones():
    things, _ = make()
    things.add("a", 1)
    with pytest.raises(ValueError, match=r"thing_id must be one of \['a', 'builtin'\], got 'zz'. Register it first."):
        things.get("zz")
    with pytest.raises(TypeError,
                       match=r"thing_id must be a thing name \(str\), one of \['a', 'builtin'\], got 3 \(int\)"):
        things.get(3)


def test_module_paths_are_imported_only_when_allowed(tmp_path, monkeypatch):
    (tmp_path / "registry_test_pkg.py").write_text(textwrap.dedent("""
        GOOD = 5
        BAD = "five"
        class Holder:
            VALUE = 6
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    closed, _ = make(import_paths=False)
    with pytest.raises(ValueError, match="thing_id must be one of"):
        closed.get("registry_test_pkg:GOOD")
    things, _ = make(import_paths=True)
    assert things.get("registry_test_pkg:GOOD") == 5 and "registry_test_pkg:GOOD" in things.names()
    with pytest.raises(ValueError, match="must be an int, got 'five'"):
        things.get("registry_test_pkg:BAD")
    with pytest.raises(ValueError, match="names module 'no_such_module_xyz', which cannot be imported"):
        things.get("no_such_module_xyz:GOOD")
    assert import_object("registry_test_pkg:Holder.VALUE", "policy") == 6
    with pytest.raises(ValueError, match="policy 'registry_test_pkg:MISSING': module 'registry_test_pkg' has no "
                                         "attribute 'MISSING'"):
        import_object("registry_test_pkg:MISSING", "policy")
    with pytest.raises(ValueError, match="policy must look like 'package.module:name', got 'a:b:c'"):
        import_object("a:b:c", "policy")
    with pytest.raises(ValueError, match="policy must look like 'module:callable', got 'no_colon'"):
        import_object("no_colon", "policy", example="module:callable")
    sys.modules.pop("registry_test_pkg", None)
