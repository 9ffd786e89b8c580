"""Robots as data (RobotSpec) behind a registry, one generic batched Robot, and
controllers generic over any serial arm."""
from robosim.agents.capabilities import Capabilities, Requirements, robot_capabilities
from robosim.agents.controllers import CONTROL_MODES
from robosim.agents.registry import DEFAULT_ROBOT, get_robot_spec, list_robots, register_robot
from robosim.agents.robot import Robot
from robosim.agents.spec import GripperSpec, JointGains, MobileBaseSpec, RobotSpec, ToolMount

__all__ = ["CONTROL_MODES", "DEFAULT_ROBOT", "Capabilities", "GripperSpec", "JointGains",
           "MobileBaseSpec", "Requirements", "Robot", "RobotSpec", "ToolMount", "get_robot_spec", "list_robots",
           "register_robot", "robot_capabilities"]
