"""Learning from pixels: image encoders and augmentation, the pixel student (what it sees,
its file, its export), asymmetric SAC from pixels, success classifiers. Its distillation
from state teachers (``robot-rl distill-pixels``) is ``robot_rl.distill.pixels``."""

from robot_rl.vision.student import PixelPolicy, PixelPolicyConfig

__all__ = ["PixelPolicy", "PixelPolicyConfig"]
