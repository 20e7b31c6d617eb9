"""Episode datasets in the LeRobotDataset v3 layout: recording, reading, validation."""

from robot_rl.data.format import DatasetError, DatasetSpec
from robot_rl.data.reader import Dataset
from robot_rl.data.writer import DatasetWriter

__all__ = ["Dataset", "DatasetError", "DatasetSpec", "DatasetWriter"]
