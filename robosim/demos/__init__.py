"""Demonstrations for imitation learning: generate scripted demos, convert their
control mode, render camera observations from recorded states (docs/imitation.md)."""
from robosim.demos.generate import GenerateReport, generate_demos

__all__ = ["GenerateReport", "generate_demos"]
