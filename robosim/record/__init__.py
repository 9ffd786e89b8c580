"""Recording (mp4 videos, HDF5 trajectories), replay and policy evaluation."""
from robosim.record.replay import ReplayReport, replay
from robosim.record.trajectory import Episode, TrajectoryFile, TrajectoryWriter
from robosim.record.video import VideoWriter
from robosim.record.wrapper import RecordEpisode

__all__ = ["Episode", "RecordEpisode", "ReplayReport", "TrajectoryFile", "TrajectoryWriter", "VideoWriter",
           "replay"]
