"""Package discovery that setup.cfg cannot express: every robosim sub-package, plus the
built-in tasks, which live in tasks/ but import as `robosim_tasks` (DESIGN.md)."""
from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["robosim", "robosim.*"]) + ["robosim_tasks"],
    package_dir={"robosim_tasks": "tasks"},
)
