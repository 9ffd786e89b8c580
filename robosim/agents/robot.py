"""One generic batched robot: any fixed-base serial arm described by a RobotSpec.

qpos layout (N, dof): the spec's arm joints (rad), then its gripper joints (m or rad).
Poses are [x, y, z, qw, qx, qy, qz] in the env frame; end-effector actions are deltas
along the env frame's axes (rotated into the robot base frame when the base is yawed).
"""
from __future__ import annotations

import sapien
import torch

from robosim.agents.controllers import BaseVelocityController, GripperController, make_arm_controller
from robosim.agents.kinematics import SerialChain
from robosim.agents.model import RobotModel
from robosim.agents.robot_kinds import bind_kind_methods
from robosim.agents.spec import RobotSpec
from robosim.agents.step_math import StepMath, step_math
from robosim.core.rotations import matvec3, quat_to_matrix
from robosim.sim.scene import SimScene
from robosim.sim.views import ArticulationView


class Robot:
    """N copies of `spec` in a SimScene, with the controller of `control_mode`.

    Construction checks the spec, the control mode and the URDF (ValueError naming the
    argument) and parses nothing that is already parsed in this process; `load(sim)`
    builds one articulation per env at env origin + base pose."""

    def __init__(self, spec: RobotSpec, control_mode: str, base_position=None, base_quat=None,
                 name: str | None = None):
        """base_position (3,) m and base_quat (4,) wxyz: the base pose in the env frame (None:
        the spec's); name: the articulation's name in the scene (None: spec.name; two robots
        of one scene need two names)."""
        spec.validate()
        if spec.is_hand and control_mode.startswith("pd_ee"):
            raise ValueError(f"control_mode {control_mode!r} needs an arm chain to a tool centre point; robot "
                             f"{spec.name!r} is a hand (RobotSpec.fingertip_links): use one of "
                             f"{list(spec.control_modes)}")
        if control_mode not in spec.control_modes:
            raise ValueError(f"control_mode must be one that robot {spec.name!r} supports, one of "
                             f"{list(spec.control_modes)}, got {control_mode!r}")
        self.spec = spec
        self.control_mode = control_mode
        self.model = RobotModel.for_spec(spec)
        self.urdf_path = self.model.urdf_path
        position = spec.base_position if base_position is None else tuple(base_position)
        if len(position) != 3:
            raise ValueError(f"base_position must have 3 entries (x, y, z) m, got {position!r}")
        self.base_position = torch.tensor(position, dtype=torch.float32)
        quat = tuple(float(v) for v in (spec.base_quat if base_quat is None else base_quat))
        if len(quat) != 4:
            raise ValueError(f"base_quat must have 4 entries (w, x, y, z), got {base_quat!r}")
        self.name = spec.name if name is None else name
        self.base_quat = torch.tensor(quat, dtype=torch.float32)
        self._base_quat_wxyz = quat   # float64, as given: the build pose
        self._base_rotated = quat != (1.0, 0.0, 0.0, 0.0)
        if self._base_rotated and spec.mobile_base is not None:
            raise ValueError(f"base_quat of robot {spec.name!r} must be (1, 0, 0, 0): a mobile base turns with its "
                             f"yaw joint, got {quat!r}")
        # end-effector actions along env axes of a yawed base are turned into base axes
        self._turns_ee_axes = self._base_rotated and control_mode in ("pd_ee_delta_pos", "pd_ee_delta_pose")
        # a hand's finger joints form a tree: no chain, its tcp is the palm link's pose
        self.chain = None if spec.is_hand else SerialChain(self.urdf_path, spec.root_link, spec.tcp_link,
                                                           spec.tcp_offset)
        if self.chain is not None and tuple(self.chain.joint_names) != tuple(spec.arm_joints):
            raise ValueError(f"RobotSpec.arm_joints of {spec.name!r} must be the movable joints from "
                             f"{spec.root_link!r} to {spec.tcp_link!r} in order, {self.chain.joint_names}, "
                             f"got {list(spec.arm_joints)}")
        self.arm_dof = spec.arm_dof
        self.dof = spec.dof
        self.arm_start = spec.base_dof   # qpos layout: base joints (mobile), arm, gripper
        self._arm = slice(self.arm_start, self.arm_start + self.arm_dof)
        self.tcp_link = spec.tcp_link
        self.view: ArticulationView | None = None
        self.sim: SimScene | None = None
        self.body: StepMath = step_math("cpu")   # the step math of the scene's device, chosen at load
        self._last_tcp: tuple | None = None   # (version, qpos, tcp pose) of the last FK

    # -- build ------------------------------------------------------------------------
    def load(self, sim: SimScene) -> ArticulationView:
        """Add one robot per env to `sim`, placed at build time (GPU PhysX ignores the
        sub-scene offset in a later root-pose write, so the builder pose is the one
        that counts)."""
        spec = self.spec
        grip = spec.gripper
        gains = spec.drive_gains()

        def load_one(scene: sapien.Scene, env_index: int) -> sapien.physx.PhysxArticulation:
            # float32 like the views' origin arithmetic, so the pose equals a later reset's
            position = (sim.origins[env_index].float() + self.base_position).tolist()
            robot = self.model.build(scene, sapien.Pose(position, self._base_quat_wxyz), f"{self.name}_{env_index}",
                                     visuals=sim.render)
            if spec.disable_gravity:
                for link in robot.get_links():
                    link.disable_gravity = True
            for joint in robot.get_active_joints():
                # a joint the spec does not name fails the joint-order check below
                joint.set_drive_properties(*gains.get(joint.name, gains[spec.arm_joints[0]]))
            return robot

        self.sim = sim
        self.view = sim.load_articulations(self.name, load_one)
        if tuple(self.view.joint_names) != spec.joint_names:
            raise ValueError(f"RobotSpec of {spec.name!r}: the articulation's active joints must be the base "
                             f"joints (mobile), the arm joints then the gripper joints, {list(spec.joint_names)}; "
                             f"the URDF gives {self.view.joint_names}")
        device = sim.device
        self.body = body = step_math(device)
        limits = self.view.qlimits().to(device)
        self.arm = make_arm_controller(self.control_mode, limits[self._arm], self.chain,
                                       spec.joint_delta, spec.ee_max_pos, spec.ee_max_rot, body)
        self.gripper = GripperController(grip.closed, grip.open, len(grip.joints)) if grip else None
        low, high = self.arm.action_bounds()
        self.action_low, self.action_high = low.cpu(), high.cpu()    # CPU: becomes the gym space
        if grip:
            self.action_low = torch.cat([self.action_low, -torch.ones(1)])
            self.action_high = torch.cat([self.action_high, torch.ones(1)])
        self.base = None
        if spec.mobile_base is not None:
            self.base = BaseVelocityController(spec.mobile_base.max_forward, spec.mobile_base.max_turn, body)
            self.action_low = torch.cat([-torch.ones(2), self.action_low])
            self.action_high = torch.cat([torch.ones(2), self.action_high])
        bind_kind_methods(self)
        base_rot = quat_to_matrix(self.base_quat.double()).to(device)   # (3, 3) base -> env
        # float64 base pose in the body's kind; None: unrotated (FK skips the rotation)
        self._base_rot = body.array(base_rot) if self._base_rotated else None
        self._base_pos = body.array(self.base_position.double().to(device))
        self._env_to_base = body.array(base_rot.transpose(0, 1).float().contiguous())   # float32, for actions
        self._rest = torch.tensor(spec.rest_qpos, dtype=torch.float32)
        self._last_tcp = None
        if self.chain is not None:
            self.chain.forget()   # versions restart with a new scene
        return self.view

    # -- episode / control --------------------------------------------------------------
    def rest_qpos(self, n: int) -> torch.Tensor:
        """float32 (n, dof) rest configuration (CPU)."""
        return self._rest.expand(n, self.dof).clone()

    def reset(self, qpos: torch.Tensor, env_idx: torch.Tensor) -> None:
        """Place env_idx's robots at qpos (M, dof), at rest, with drive targets = qpos."""
        # the base stays where the builder put it (fixed root): no root-pose write, which
        # GPU PhysX would apply without the sub-scene offset
        self.view.set_qpos(qpos, env_idx)
        self.view.set_qvel(torch.zeros_like(qpos), env_idx)
        self.view.set_drive_targets(qpos, env_idx)

    def _to_base_axes(self, action):
        """End-effector action parts (N, 3k), body arrays, from env-frame axes to base-frame axes."""
        if not self._turns_ee_axes:
            return action
        parts = [matvec3(self._env_to_base, action[:, k:k + 3]) for k in range(0, action.shape[1], 3)]
        return self.body.cat(parts, 1)

    def apply_action(self, action: torch.Tensor) -> None:
        """Turn a clipped action (N, action_dim) into drive targets for all envs."""
        body = self.body
        action = body.array(action)
        qpos = body.array(self.view.qpos(copy=False))    # only read here
        arm = self.arm.targets(self._to_base_axes(action[:, :self.arm.action_dim]), qpos[:, :self.arm_dof],
                               self.sim.read_cache.version)
        if self.gripper is not None:
            arm = body.drive_targets(arm, self.gripper.width(action[:, -1:]), self.dof)
        self.view.set_drive_targets(arm)

    # -- readouts -----------------------------------------------------------------------
    # Every readout comes from reads kept per ReadCache version of the scene: the version
    # moves on every physics step and every state write, so a readout is never stale and
    # a step's evaluate, reward and obs share one read.
    @property
    def qpos(self) -> torch.Tensor:
        """float32 (N, dof) joint positions (mobile base x, y m, yaw rad; arm rad; then
        gripper), a copy (yours to modify)."""
        return self.view.qpos()

    @property
    def qvel(self) -> torch.Tensor:
        """float32 (N, dof) joint velocities (rad/s, m/s), a copy (yours to modify)."""
        return self.view.qvel()

    def base_pose(self) -> torch.Tensor:
        """float32 (N, 3) [x m, y m, yaw rad] of a mobile base in the env frame: its planar
        joints' positions added to the base position it was built at (ValueError for a
        robot without a mobile base)."""
        if self.base is None:
            raise ValueError(f"robot {self.spec.name!r} must have a RobotSpec.mobile_base for base_pose, got None")
        pose = self.view.qpos()[:, :3]
        pose[:, :2] += self.base_position[:2].to(pose.device)
        return pose

    def fingertip_poses(self) -> torch.Tensor:
        """float32 (N, F, 7) poses [xyz, wxyz] of the spec's F fingertip links, env frame
        (as PhysX last computed them: after a step, not after a state write)."""
        return torch.stack([self.view.link_pose(name) for name in self.spec.fingertip_links], dim=1)

    def fingertip_forces(self, obj, substeps: int = 1) -> torch.Tensor:
        """float32 (N, F, 3) N: contact force on each fingertip link from `obj` (an
        ActorView or (ArticulationView, link name)), env frame, through the scene's
        contact queries (robosim.sim.contacts; physx_cpu only)."""
        if not self.spec.fingertip_links:
            raise ValueError(f"robot {self.spec.name!r} must declare RobotSpec.fingertip_links for "
                             f"fingertip_forces, got ()")
        contacts = self.sim.contacts
        return torch.stack([contacts.pair_force((self.view, name), obj, substeps)
                            for name in self.spec.fingertip_links], dim=1)

    def arm_speed(self) -> torch.Tensor:
        """float32 (N,) Euclidean norm of the arm joints' velocities, rad/s (gripper left out)."""
        return torch.linalg.vector_norm(self.view.qvel(copy=False)[:, self._arm], dim=1)

    def is_static(self, threshold: float = 0.2) -> torch.Tensor:
        """bool (N,): arm_speed() < threshold (rad/s). (ManiSkill3's is_static compares
        the largest |arm joint velocity| instead of the norm.)"""
        return self.arm_speed() < threshold

    def is_between_jaws(self, obj_pos: torch.Tensor, half_width: float | torch.Tensor,
                        tcp_to_obj: torch.Tensor | None = None) -> torch.Tensor:
        """bool (N,): geometric grasp test, any backend (no contact query): the tcp is
        within 2 cm of the object's centre obj_pos (N, 3) (env frame, m) and the jaw gap
        is within [2 * half_width - 1 cm, 2 * half_width + 0.6 cm], for an object of half
        width `half_width` (m; a float or (N,)) across the jaws. `tcp_to_obj`: the (N,)
        distance |obj_pos - tcp| (m) when the caller has it already."""
        if tcp_to_obj is None:
            tcp_to_obj = torch.linalg.vector_norm(obj_pos - self.tcp_pose(copy=False)[:, :3], dim=1)
        width = self.gripper_width(self.view.qpos(copy=False))
        return (tcp_to_obj < 0.02) & (width > 2 * half_width - 0.01) & (width < 2 * half_width + 0.006)

    def is_grasping(self, obj, min_force: float = 0.5, min_angle_deg: float = 90.0) -> torch.Tensor:
        """bool (N,): contact grasp test (ManiSkill3's agents' rule, with the jaws' forces
        compared with each other instead of with per-robot closing axes): the contact
        force of each of the spec's two `gripper.pad_links` on `obj` (an ActorView or
        (ArticulationView, link name)) is at least `min_force` N, and the two forces are
        at least `min_angle_deg` degrees apart (they squeeze). Forces are those of the
        last physics substep (robosim.sim.contacts). physx_cpu only
        (NotImplementedError on physx_cuda); ValueError for a robot without two pad links."""
        grip = self.spec.gripper
        if grip is None or len(grip.pad_links) != 2:
            raise ValueError(f"robot {self.spec.name!r} must declare two RobotSpec.gripper.pad_links (its jaws) "
                             f"for is_grasping, got {None if grip is None else grip.pad_links!r}")
        return self.sim.contacts.is_grasping(obj, self.view, grip.pad_links, min_force, min_angle_deg)

    def tcp_pose(self, qpos: torch.Tensor | None = None, copy: bool = True) -> torch.Tensor:
        """float32 (N, 7) tool-centre-point pose [xyz, wxyz] in the env frame, from FK.

        With no qpos: FK of the current joint positions, reused until the next physics
        step or write (the scene's ReadCache version; no device synchronization). With
        qpos (N, dof) on the scene's device: FK of that; on CPU the last result is reused
        while qpos is bit-for-bit equal (reward, success check and obs of a step ask for
        the same q). Computed by the step-math body (robosim.agents.step_math).
        `copy=False` hands out the kept result itself, for callers that only read it
        (never modify it: later calls return it)."""
        last = self._last_tcp   # (version or None, qpos, tcp): mixed calls share it
        version = None
        if qpos is None:
            version = self.sim.read_cache.version
            if last is not None and last[0] == version:
                return last[2].clone() if copy else last[2]
            qpos = self.view.qpos(copy=False)   # only read here
        body = self.body
        q = body.array(qpos)
        if last is not None and body.same_bits(last[1], q):
            return last[2].clone() if copy else last[2]
        values = body.chain_values(self.chain, q[:, :self.arm_dof], version, jacobian=False)
        tcp = body.tcp_pose(values, self._base_rot, self._base_pos)
        self._last_tcp = (version, body.keep(q), tcp)
        return tcp.clone() if copy else tcp

    def gripper_width(self, qpos: torch.Tensor) -> torch.Tensor:
        """(N,) gap between the jaws, m (zeros for a robot without a gripper)."""
        grip = self.spec.gripper
        if grip is None:
            return qpos.new_zeros(qpos.shape[0])
        g = qpos[:, self._arm.stop:]
        if grip.width_is_joint_sum:
            if g.shape[1] == 2:   # in the body: numpy's one add costs less than torch's on CPU
                g = self.body.array(g)
                return self.body.tensor(g[:, 0] + g[:, 1])
            return g.sum(dim=1)
        frac = (g.mean(dim=1) - grip.closed) / (grip.open - grip.closed)
        return grip.width_closed + frac * (grip.width_open - grip.width_closed)
