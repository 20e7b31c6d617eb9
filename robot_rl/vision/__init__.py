"""Learning from pixels: image encoders and augmentation, the pixel student (what it sees,
its file, its export), asymmetric SAC from pixels, success classifiers. Its distillation
from state teachers (``robot-rl distill-pixels``) is ``robot_rl.distill.pixels``."""

from typing import TYPE_CHECKING

from robot_rl.lazy import lazy_exports

if TYPE_CHECKING:
    from robot_rl.vision.configs import PixelPolicyConfig
    from robot_rl.vision.student import PixelPolicy

_EXPORTS = {
    "PixelPolicy": "robot_rl.vision.student",
    "PixelPolicyConfig": "robot_rl.vision.configs",
}
"""Where each exported name lives; imported on first use (``robot_rl.lazy``)."""

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = ["PixelPolicy", "PixelPolicyConfig"]
