"""Episode datasets in the LeRobotDataset v3 layout: recording, reading, validation."""

from typing import TYPE_CHECKING

from robot_rl.lazy import lazy_exports

if TYPE_CHECKING:
    from robot_rl.data.format import DatasetError, DatasetSpec
    from robot_rl.data.reader import Dataset
    from robot_rl.data.writer import DatasetWriter

_EXPORTS = {
    "DatasetError": "robot_rl.data.format",
    "DatasetSpec": "robot_rl.data.format",
    "Dataset": "robot_rl.data.reader",
    "DatasetWriter": "robot_rl.data.writer",
}
"""Where each exported name lives; imported on first use (``robot_rl.lazy``)."""

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = ["Dataset", "DatasetError", "DatasetSpec", "DatasetWriter"]
