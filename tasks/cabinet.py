"""A procedural cabinet with one drawer, built in code from `assets/cabinet.json`.

Frames: the cabinet's root frame sits at the centre of its footprint on the ground, its
front faces -x. The drawer slides along -x (a prismatic joint, q = 0 closed, q = travel
fully open, m). The drawer link's frame is the drawer box's centre at q = 0 in the
root frame's orientation; its vertical bar handle stands `standoff` m in front (-x) of
the drawer front. The body's panels and the drawer never collide with each other
(PhysX skips parent-child pairs in an articulation), so only the robot and the handle
interact.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from robosim_assets import asset_path

from robosim.sim.objects import ArticulationModel, Box, Capsule, Joint, Link, Material

CABINET_JSON = asset_path("cabinet.json")


@dataclass(frozen=True)
class CabinetSpec:
    """Cabinet dimensions (m, full extents), drawer joint parameters and colours (RGBA)."""

    body: dict
    drawer: dict
    handle: dict

    @classmethod
    def load(cls, path: str | Path = CABINET_JSON) -> CabinetSpec:
        """Read a cabinet description (the layout of assets/cabinet.json)."""
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"path must be an existing cabinet JSON file, got {str(path)!r} (no such file)")
        data = json.loads(path.read_text())
        missing = {"body", "drawer", "handle"} - set(data)
        if missing:
            raise ValueError(f"cabinet JSON {str(path)!r} must have sections body, drawer, handle; "
                             f"missing {sorted(missing)}")
        for section in ("body", "drawer", "handle"):
            if not isinstance(data[section], dict):
                raise ValueError(f"cabinet JSON section {section!r} must be an object of sizes, "
                                 f"got {data[section]!r}")
        spec = cls(data["body"], data["drawer"], data["handle"])
        spec.check()
        return spec

    def check(self) -> None:
        """ValueError when the drawer does not fit inside the body or a size is not > 0."""
        for section, keys in (("body", ("depth", "width", "height", "wall")),
                              ("drawer", ("depth", "width", "height", "wall", "centre_height", "travel")),
                              ("handle", ("length", "radius", "standoff"))):
            for key in keys:
                value = getattr(self, section).get(key)
                if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                    raise ValueError(f"cabinet {section}.{key} must be a number > 0 (m), got {value!r}")
        b, d = self.body, self.drawer
        if d["width"] > b["width"] - 2 * b["wall"] or d["depth"] > b["depth"] - b["wall"]:
            raise ValueError(f"cabinet drawer ({d['depth']} x {d['width']} m) must fit inside the body "
                             f"({b['depth']} x {b['width']} m, walls {b['wall']} m)")
        if d["centre_height"] + d["height"] / 2 > b["height"] - b["wall"] or d["centre_height"] < d["height"] / 2:
            raise ValueError(f"cabinet drawer.centre_height must keep the drawer inside the body, got "
                             f"{d['centre_height']} m")
        if d["travel"] >= d["depth"]:
            raise ValueError(f"cabinet drawer.travel must be < drawer.depth ({d['depth']} m), got {d['travel']}")

    @property
    def travel(self) -> float:
        """Joint range of the drawer, m."""
        return float(self.drawer["travel"])

    @property
    def handle_in_drawer(self) -> tuple[float, float, float]:
        """Centre of the handle bar in the drawer link's frame, m."""
        return (-self.drawer["depth"] / 2 - self.handle["standoff"], 0.0, 0.0)

    @property
    def drawer_in_root(self) -> tuple[float, float, float]:
        """Drawer link origin (closed) in the cabinet root frame, m: its front flush with the body's."""
        return (-self.body["depth"] / 2 + self.drawer["depth"] / 2, 0.0, float(self.drawer["centre_height"]))


def _panel(size: tuple[float, float, float], centre: tuple[float, float, float], color) -> Box:
    return Box(tuple(s / 2 for s in size), pose=centre, color=color)


def body_shapes(spec: CabinetSpec) -> list:
    """The body: a box open at the front (top, bottom, back, two sides), root frame."""
    b = spec.body
    dx, dy, h, w, c = b["depth"], b["width"], b["height"], b["wall"], b.get("color", (0.55, 0.38, 0.24, 1.0))
    return [
        _panel((dx, dy, w), (0, 0, h - w / 2), c),                            # top
        _panel((dx, dy, w), (0, 0, w / 2), c),                                # bottom
        _panel((w, dy, h), (dx / 2 - w / 2, 0, h / 2), c),                    # back
        _panel((dx, w, h), (0, dy / 2 - w / 2, h / 2), c),                    # sides
        _panel((dx, w, h), (0, -dy / 2 + w / 2, h / 2), c),
    ]


def drawer_shapes(spec: CabinetSpec) -> list:
    """The drawer: an open-top box and a vertical bar handle on its front, drawer frame."""
    d, hd = spec.drawer, spec.handle
    dx, dy, dz, w = d["depth"], d["width"], d["height"], d["wall"]
    c, hc = d.get("color", (0.82, 0.7, 0.52, 1.0)), hd.get("color", (0.2, 0.2, 0.22, 1.0))
    hx = spec.handle_in_drawer[0]
    standoff_len = hd["standoff"] / 2
    vertical = (1.0, 0.0, 0.0, 0.0)
    # a capsule runs along its body x: rotate +x onto +z for the upright bar
    upright = (math.cos(math.pi / 4), 0.0, -math.sin(math.pi / 4), 0.0)
    bar_half = hd["length"] / 2 - hd["radius"]
    return [
        _panel((w, dy, dz), (-dx / 2 + w / 2, 0, 0), c),                      # front
        _panel((w, dy, dz), (dx / 2 - w / 2, 0, 0), c),                       # back
        _panel((dx, w, dz), (0, dy / 2 - w / 2, 0), c),                       # sides
        _panel((dx, w, dz), (0, -dy / 2 + w / 2, 0), c),
        _panel((dx, dy, w), (0, 0, -dz / 2 + w / 2), c),                      # bottom
        Capsule(hd["radius"], bar_half, pose=(hx, 0.0, 0.0, *upright), color=hc),
        # two standoffs joining the bar's ends to the front (along x)
        Box((standoff_len, 0.006, 0.006), pose=(hx + standoff_len, 0, bar_half, *vertical), color=hc),
        Box((standoff_len, 0.006, 0.006), pose=(hx + standoff_len, 0, -bar_half, *vertical), color=hc),
    ]


def cabinet_model(spec: CabinetSpec, pose=(0.0, 0.0, 0.0)) -> ArticulationModel:
    """The cabinet as an ArticulationModel: fixed body, one prismatic drawer (limits
    [0, travel] m along the root's -x) with the JSON's damping (N*s/m, a drive of
    stiffness 0) and friction (PhysX's joint friction coefficient: the drawer's weight
    times it resists sliding, so 0.3 holds it with about 0.3 * m * g N). Both are
    applied (tests/sim/test_joints.py)."""
    d = spec.drawer
    joint = Joint("prismatic", pose_in_parent=spec.drawer_in_root, axis=(-1.0, 0.0, 0.0), limits=(0.0, spec.travel),
                  damping=float(d.get("damping", 8.0)), friction=float(d.get("friction", 0.3)))
    links = [
        Link("body", body_shapes(spec)),
        Link("drawer", drawer_shapes(spec), parent="body", joint=joint, density=float(d.get("density", 400.0))),
    ]
    return ArticulationModel(links, pose=pose, fix_root=True, material=Material(1.0, 1.0, 0.0))
