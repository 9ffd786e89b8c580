"""A robot's URDF model, resolved, checked and parsed once per process.

`RobotModel.for_spec(spec)` resolves the spec's URDF path, grafts a tool URDF on when the
spec has a `ToolMount` (written once into a cache directory with absolute mesh paths),
checks that it parses and has the spec's joints and links, and keeps SAPIEN's parsed
`ArticulationBuilder`. `build(scene, pose)` then builds one copy per env from that
builder: the URDF (XML, mesh file lookups, link builders) is parsed once per process
instead of once per env (issue 8 point 9).
"""
from __future__ import annotations

import hashlib
import os
import xml.etree.ElementTree as ET
from collections.abc import Callable

import sapien

from robosim.agents.spec import RobotSpec, ToolMount
from robosim.core.atomic import write_bytes_atomic

_MESH_TAGS = ("mesh",)
# static friction, dynamic friction, restitution of a hand's fingertip links (ManiSkill3's
# allegro and dclaw tips)
FINGERTIP_MATERIAL = (2.0, 1.0, 0.0)
_CACHE_DIR = os.path.join(os.path.expanduser(os.environ.get("XDG_CACHE_HOME", "~/.cache")), "robosim", "robots")


def resolve_path(urdf: str | Callable[[], str], argument: str) -> str:
    """The URDF path of `urdf` (a path or a function returning one), checked to exist."""
    path = urdf() if callable(urdf) else urdf
    if not isinstance(path, (str, os.PathLike)) or not os.path.isfile(path):
        raise ValueError(f"{argument} must be the path of an existing URDF file, got {path!r}")
    return os.fspath(path)


def _parse_xml(path: str, argument: str) -> ET.Element:
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"{argument} must be a parsable URDF file, got {path!r} ({exc})") from None
    if root.tag != "robot":
        raise ValueError(f"{argument} must be a URDF file with a <robot> root element, got {path!r} "
                         f"(root <{root.tag}>)")
    return root


def _absolute_meshes(root: ET.Element, urdf_dir: str) -> None:
    for mesh in root.iter("mesh"):
        name = mesh.get("filename", "")
        if name.startswith("package://"):
            name = name[len("package://"):]
        if not os.path.isabs(name):
            mesh.set("filename", os.path.normpath(os.path.join(urdf_dir, name)))


def compose_tool(arm_path: str, tool: ToolMount) -> str:
    """Path of a URDF (in the robosim cache dir) = the arm + the tool's subtree below
    `tool.tool_root_link`, fixed to `tool.parent_link`. Written once per content hash."""
    tool_path = resolve_path(tool.urdf, "RobotSpec.tool.urdf")
    arm, extra = _parse_xml(arm_path, "RobotSpec.urdf"), _parse_xml(tool_path, "RobotSpec.tool.urdf")
    _absolute_meshes(arm, os.path.dirname(os.path.abspath(arm_path)))
    _absolute_meshes(extra, os.path.dirname(os.path.abspath(tool_path)))
    arm_links = {link.get("name") for link in arm.findall("link")}
    if tool.parent_link not in arm_links:
        raise ValueError(f"RobotSpec.tool.parent_link must be a link of {arm_path}, got {tool.parent_link!r}")
    links = {link.get("name"): link for link in extra.findall("link")}
    if tool.tool_root_link not in links:
        raise ValueError(f"RobotSpec.tool.tool_root_link must be a link of {tool_path}, got {tool.tool_root_link!r}")
    children: dict[str, list[ET.Element]] = {}
    for joint in extra.findall("joint"):
        children.setdefault(joint.find("parent").get("link"), []).append(joint)
    mount = ET.SubElement(arm, "joint", name=f"{tool.tool_root_link}_mount_joint", type="fixed")
    ET.SubElement(mount, "origin", xyz=" ".join(map(repr, tool.xyz)), rpy=" ".join(map(repr, tool.rpy)))
    ET.SubElement(mount, "parent", link=tool.parent_link)
    ET.SubElement(mount, "child", link=tool.tool_root_link)
    stack = [tool.tool_root_link]
    while stack:
        name = stack.pop()
        arm.append(links[name])
        for joint in children.get(name, []):
            arm.append(joint)
            stack.append(joint.find("child").get("link"))
    return cached_urdf(arm, os.path.splitext(os.path.basename(arm_path))[0])


def cached_urdf(root: ET.Element, stem: str) -> str:
    """Path of `root` written as `<cache>/<stem>-<content hash>.urdf` (written once;
    concurrent processes write the same bytes, atomically)."""
    text = ET.tostring(root, encoding="unicode")
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = os.path.join(_CACHE_DIR, f"{stem}-{digest}.urdf")
    if not os.path.isfile(path):
        write_bytes_atomic(path, text.encode(), make_dirs=True)
    return path


class RobotModel:
    """A spec's checked URDF plus SAPIEN's parsed articulation builder (one per process)."""

    _cache: dict[tuple, RobotModel] = {}

    def __init__(self, spec: RobotSpec):
        path = resolve_path(spec.urdf, "RobotSpec.urdf")
        if spec.tool is not None:
            path = compose_tool(path, spec.tool)
        root = _parse_xml(path, "RobotSpec.urdf")
        self.urdf_path = path
        links = {link.get("name") for link in root.findall("link")}
        joints = {j.get("name") for j in root.findall("joint") if j.get("type") != "fixed"}
        for kind, names, known in (("link", (spec.root_link, spec.tcp_link) + spec.fingertip_links, links),
                                   ("joint", spec.joint_names, joints)):
            missing = [n for n in names if n not in known]
            if missing:
                raise ValueError(f"RobotSpec {spec.name!r}: every {kind} it names must be in {path}; "
                                 f"missing {missing}, the URDF has {sorted(known)}")
        self.spec = spec
        self._builder: sapien.wrapper.articulation_builder.ArticulationBuilder | None = None

    @classmethod
    def for_spec(cls, spec: RobotSpec) -> RobotModel:
        """The process-wide model of `spec` (checked and parsed on first use)."""
        key = (spec, spec.urdf() if callable(spec.urdf) else spec.urdf)
        model = cls._cache.get(key)
        if model is None:
            model = cls._cache[key] = cls(spec)
        return model

    def _parsed_builder(self, scene: sapien.Scene):
        if self._builder is None:
            loader = scene.create_urdf_loader()
            loader.fix_root_link = True
            if self.spec.gripper is not None:
                for link in self.spec.gripper.pad_links:
                    loader.set_link_material(link, *self.spec.gripper.pad_material)
            for link in self.spec.fingertip_links:
                loader.set_link_material(link, *FINGERTIP_MATERIAL)
            try:
                builders, actors, _ = loader.parse(self.urdf_path)
            except Exception as exc:   # urchin raises plain Exceptions / ValueErrors / KeyErrors
                raise ValueError(f"RobotSpec.urdf must be a URDF that SAPIEN can load, got {self.urdf_path!r} "
                                 f"({type(exc).__name__}: {exc})") from None
            if len(builders) != 1 or actors:
                raise ValueError(f"RobotSpec.urdf must describe one articulation, got {len(builders)} "
                                 f"articulations and {len(actors)} loose links in {self.urdf_path!r}")
            self._builder = builders[0]
        return self._builder

    def build(self, scene: sapien.Scene, pose: sapien.Pose, name: str,
              visuals: bool = True) -> sapien.physx.PhysxArticulation:
        """One articulation in `scene`, its root at `pose` (world frame of the scene);
        visuals=False builds no render body (a scene that never renders)."""
        builder = self._parsed_builder(scene)
        records = [lb.visual_records for lb in builder.link_builders]
        if not visuals:
            for lb in builder.link_builders:
                lb.visual_records = []
        try:
            return self._build(builder, scene, pose, name)
        finally:
            for lb, kept in zip(builder.link_builders, records):
                lb.visual_records = kept

    @staticmethod
    def _build(builder, scene: sapien.Scene, pose: sapien.Pose, name: str) -> sapien.physx.PhysxArticulation:
        builder.set_scene(scene)
        builder.initial_pose = pose
        robot = builder.build()
        robot.set_name(name)
        return robot
