"""Recording (mp4 videos, HDF5 trajectories), replay, recovery after a kill, and policy
evaluation."""
from robosim.record.recover import RecoverReport, recover
from robosim.record.replay import ReplayReport, replay
from robosim.record.trajectory import Episode, TrajectoryFile, TrajectoryWriter
from robosim.record.video import VideoWriter
from robosim.record.wrapper import RecordEpisode

__all__ = ["Episode", "RecordEpisode", "RecoverReport", "ReplayReport", "TrajectoryFile", "TrajectoryWriter",
           "VideoWriter", "recover", "replay"]
