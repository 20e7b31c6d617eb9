"""Learning from pixels: image encoders and augmentation, the pixel student, and its
distillation from state teachers (``robot-rl distill-pixels``)."""

from robot_rl.vision.student import PixelPolicy, PixelPolicyConfig

__all__ = ["PixelPolicy", "PixelPolicyConfig"]
