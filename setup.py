"""Package discovery that setup.cfg cannot express: every robosim sub-package, plus the
built-in tasks, which live in tasks/ but import as `robosim_tasks`, and robosim's own
asset data, which lives in assets/ and imports as `robosim_assets` (docs/design.md)."""
from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["robosim", "robosim.*"]) + ["robosim_tasks", "robosim_assets"],
    package_dir={"robosim_tasks": "tasks", "robosim_assets": "assets"},
    package_data={"robosim_assets": ["*.json", "*/*.json", "*/*.obj", "*/*.glb", "*/*.urdf"]},
)
