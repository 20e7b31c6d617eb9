"""The simulation's configs: domain randomization, the Warp backend's options, policy
cameras and their visual randomization. Plain dataclasses, importable without MuJoCo or
torch (``robot-rl ... --help`` reads them); the modules that act on them import them from
here."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Literal

from robot_rl.errors import ConfigError

if TYPE_CHECKING:
    import mujoco


DRPreset = Literal["off", "default", "strong"]
"""Named randomization (``dr_preset``): ``off`` nominal; ``default`` masses, armature and gains
+-10%, friction and damping +-20%, 0-20 ms of actuation delay; ``strong`` masses +-30%,
friction +-50%, damping x0.5-2, armature x0.7-1.5, gains +-25%, 0-60 ms of actuation delay."""


Range = tuple[float, float]


@dataclasses.dataclass(kw_only=True)
class DRConfig:
    """Ranges of the per-env randomization (uniform scales of the nominal values)."""

    link_mass: Range = (1.0, 1.0)
    """Scale of each robot link's mass (and inertia)."""
    friction: Range = (1.0, 1.0)
    """Scale of each geom's sliding friction."""
    joint_damping: Range = (1.0, 1.0)
    """Scale of each robot joint's damping."""
    armature: Range = (1.0, 1.0)
    """Scale of each robot joint's armature (reflected rotor inertia)."""
    actuator_gain: Range = (1.0, 1.0)
    """Scale of each robot actuator's gain and bias (PD stiffness and damping, torque constant)."""
    obs_noise_std: float = 0.0
    """Standard deviation of additive Gaussian observation noise."""
    action_delay: Range = (0.0, 0.0)
    """Actuation delay [s]: each env draws a whole number of control steps between these (at
    its control rate, rounded) at reset; its actions act that many steps late."""
    sensing_delay: Range = (0.0, 0.0)
    """Sensing delay [s], drawn the same way: the policy observes the state that many
    control steps ago (the critics' privileged terms stay current)."""

    def __post_init__(self) -> None:
        for f in ("link_mass", "friction", "joint_damping", "armature", "actuator_gain"):
            lo, hi = getattr(self, f)
            if not 0 < lo <= hi:
                raise ConfigError(f"dr.{f} must satisfy 0 < lo <= hi, got ({lo}, {hi})")
        if self.obs_noise_std < 0:
            raise ConfigError("dr.obs_noise_std must be >= 0")
        for f in ("action_delay", "sensing_delay"):
            lo, hi = getattr(self, f)
            if not 0 <= lo <= hi:
                raise ConfigError(f"dr.{f} must satisfy 0 <= lo <= hi seconds, got ({lo}, {hi})")

    def delay_steps(self, name: Literal["action_delay", "sensing_delay"],
                    control_dt: float) -> tuple[int, int]:
        """The fewest and most whole control steps of ``control_dt`` of a delay range."""
        lo, hi = getattr(self, name)
        return round(lo / control_dt), round(hi / control_dt)

    def describe(self) -> str:
        """The ranges that differ from nominal, in one line (delays in ms)."""
        parts = [f"{f} x{lo:g}-{hi:g}" for f in ("link_mass", "friction", "joint_damping",
                                                  "armature", "actuator_gain")
                 for lo, hi in [getattr(self, f)] if (lo, hi) != (1.0, 1.0)]
        if self.obs_noise_std:
            parts.append(f"obs noise {self.obs_noise_std:g}")
        for f in ("action_delay", "sensing_delay"):
            lo, hi = getattr(self, f)
            if hi:
                parts.append(f"{f.replace('_', ' ')} {1e3 * lo:g}-{1e3 * hi:g} ms")
        return ", ".join(parts) or "none"

    @staticmethod
    def upgrade_saved(data: dict[str, Any], control_dt: float) -> dict[str, Any]:
        """A saved ``DRConfig`` dict of an older version in today's fields: its
        ``action_delay_max`` (control steps) as ``action_delay`` (seconds)."""
        if "action_delay_max" not in data:
            return data
        data = dict(data)
        data["action_delay"] = (0.0, data.pop("action_delay_max") * control_dt)
        return data


def dr_preset(name: DRPreset) -> DRConfig:
    """A named randomization preset (``DR_PRESETS``)."""
    if name == "off":
        return DRConfig()
    if name == "default":
        return DRConfig(link_mass=(0.9, 1.1), friction=(0.8, 1.2), joint_damping=(0.8, 1.2),
                        armature=(0.9, 1.1), actuator_gain=(0.9, 1.1), obs_noise_std=0.005,
                        action_delay=(0.0, 0.02))
    if name == "strong":
        return DRConfig(link_mass=(0.7, 1.3), friction=(0.5, 1.5), joint_damping=(0.5, 2.0),
                        armature=(0.7, 1.5), actuator_gain=(0.75, 1.25), obs_noise_std=0.02,
                        action_delay=(0.0, 0.06))
    raise ConfigError(f"unknown dr preset {name!r}; valid presets: default, off, strong")


@dataclasses.dataclass(frozen=True, kw_only=True)
class WarpOptions:
    """Options of the Warp backend."""

    nconmax: int | None = None
    """Contacts per world (default: sized from the scene's collidable geom pairs)."""
    njmax: int | None = None
    """Constraint rows per world (default: sized from the scene)."""
    graph: bool = True
    """Capture physics calls as CUDA graphs (CUDA only)."""
    check_every: int = 50
    """Steps between checks of the buffers' overflow flags (each check waits for the GPU)."""


RenderMode = Literal["video", "policy"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class VisualDR:
    """Ranges of the visual randomization (all 0: none)."""

    camera_pos: float = 0.0
    """Camera position jitter, +- per axis [m]."""
    camera_rot: float = 0.0
    """Camera orientation jitter: a rotation of up to this angle about a random axis [rad]."""
    fovy: float = 0.0
    """Vertical field of view jitter, +- [deg]."""
    light: float = 0.0
    """Light brightness scale in [1 - light, 1 + light], position jitter +- light / 2 [m]."""
    color: float = 0.0
    """Colour jitter of every geom, +- per RGB channel (colours in [0, 1])."""
    rgb_noise: float = 0.0
    """Pixel noise std [levels of 255]."""
    depth_noise: float = 0.0
    """Depth noise std at 1 m [m]; at distance z it is this times z^2."""
    depth_holes: float = 0.0
    """Fraction of depth pixels missing (0), in 4x4 blocks."""
    frame_rate: float = 0.0
    """Camera frame rate [fps] (0: a frame every control step), with ``frame_latency``
    making the images older than the state (``sim.frame_age``; applied by the env)."""
    frame_latency: float = 0.0
    """Camera latency, drawn per episode in [0, this] [s]."""

    @property
    def ages_frames(self) -> bool:
        """Whether the env shows frames older than the state."""
        return self.frame_rate > 0 or self.frame_latency > 0

    def validate(self) -> None:
        bad = [f.name for f in dataclasses.fields(self) if getattr(self, f.name) < 0]
        if bad or self.light >= 1.0 or self.depth_holes >= 1.0:
            raise ConfigError(f"visual randomization ranges must be >= 0 (light and "
                              f"depth_holes < 1); got {self}")

    @property
    def scene(self) -> bool:
        """Whether any scene term is on (those need the OpenGL renderer)."""
        return any((self.camera_pos, self.camera_rot, self.fovy, self.light, self.color))


@dataclasses.dataclass(frozen=True)
class CameraConfig:
    """Which scene cameras a policy sees, and how."""

    names: tuple[str, ...] = ("front",)
    """Camera names in the scene (the task's model)."""
    height: int = 96
    width: int = 96
    depth: bool = False
    """Also render depth [m]."""
    mode: RenderMode = "policy"
    """OpenGL render mode (cpu backend); the Warp renderer has one look."""
    visual: VisualDR = dataclasses.field(default_factory=VisualDR)
    """Visual domain randomization (``sim.visual_dr``; default none)."""

    def image_shapes(self) -> dict[str, tuple[int, int, int]]:
        """(C, H, W) of each image, by key: ``{camera}.rgb`` (uint8) and, with depth,
        ``{camera}.depth`` (float32 [m])."""
        out: dict[str, tuple[int, int, int]] = {}
        for name in self.names:
            out[f"{name}.rgb"] = (3, self.height, self.width)
            if self.depth:
                out[f"{name}.depth"] = (1, self.height, self.width)
        return out

    def validate(self) -> None:
        self.visual.validate()
        if not self.names:
            raise ConfigError("name at least one camera")
        if self.height < 1 or self.width < 1:
            raise ConfigError(f"camera size must be positive, got {self.height}x{self.width}")

    def check_scene(self, model: mujoco.MjModel) -> None:
        """Refuse cameras ``model``'s scene does not have, naming the ones it has."""
        names = [model.camera(i).name for i in range(model.ncam)]
        unknown = [c for c in self.names if c not in names]
        if unknown:
            raise ConfigError(f"unknown camera(s) {unknown}; cameras of this scene: "
                              f"{', '.join(names) or 'none'}")


VisualPreset = Literal["off", "default", "strong"]


VISUAL_PRESETS: dict[str, VisualDR] = {
    "off": VisualDR(),
    "default": VisualDR(camera_pos=0.01, camera_rot=0.03, fovy=2.0, light=0.3, color=0.08,
                        rgb_noise=3.0, depth_noise=0.002, depth_holes=0.02, frame_rate=30.0,
                        frame_latency=0.05),
    "strong": VisualDR(camera_pos=0.03, camera_rot=0.08, fovy=5.0, light=0.6, color=0.2,
                       rgb_noise=8.0, depth_noise=0.005, depth_holes=0.08, frame_rate=15.0,
                       frame_latency=0.08),
}
"""``default``: a camera mounted and calibrated by hand, room light, a D4xx's depth at
arm's length (~2 mm at 1 m), a 30 fps stream with up to 50 ms of latency (a D4xx over USB
at 30 fps delivers frames ~30 ms after capture); ``strong``: for policies that must survive
a remount or a slower camera."""


PARAMS: dict[str, str] = {
    "link_mass": "scale of each arm link's masses and inertias",
    "joint_damping": "scale of each arm joint's damping",
    "armature": "scale of each arm joint's armature",
    "frictionloss": "each arm joint's dry friction [Nm]",
    "actuator_gain": "scale of each arm actuator's gain and bias",
}
"""The identified parameters, one value per arm joint, in this order."""


ExpertStyle = Literal["scripted", "multimodal", "human", "multimodal-human"]


WEB_PORT, GRPC_PORT = 9090, 9876
"""Default ports of Rerun's web viewer and of the recording server it reads from."""
