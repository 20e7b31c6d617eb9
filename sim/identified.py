"""The arm's dynamics as identified from its own logs (``robot-rl sysid fit``), per joint.

    params = IdentifiedDynamics.load("arm7_params.json")
    params.apply(model, robot)          # the compiled model's arm becomes the identified one

Parameters (``PARAMS``), one value per arm joint (link ``k`` is every body arm joint ``k``
moves and no later joint does: the gripper's bodies count with the last link):

    link_mass       scale of the link's masses and inertias
    joint_damping   scale of the joint's damping
    armature        scale of the joint's armature (reflected rotor inertia)
    frictionloss    the joint's dry friction [Nm], absolute (a nominal arm often has none)
    actuator_gain   scale of the joint actuator's gain and bias: a position servo's stiffness
                    and damping, a motor's torque constant (as ``DRConfig.actuator_gain``)

Scales multiply the model's own values as compiled, so domain randomization, which scales the
same fields per env, is centred on the identified arm. ``write`` puts a batch of parameter
sets into per-env model fields (the fit's candidates, one per simulation); ``apply`` puts one
into a model.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import torch

from robot_rl.controllers.arm_model import body_links
from robot_rl.errors import ConfigError
from robot_rl.fileio import atomic_write
from robot_rl.robots import RobotSpec, get_robot
from robot_rl.sim.configs import PARAMS, DRConfig
from robot_rl.sim.randomization import SETCONST_FIELDS

SCALES = tuple(p for p in PARAMS if p != "frictionloss")
"""The parameters that scale a nominal value (1 = the model as compiled); each is also the
name of its ``DRConfig`` range."""
FORMAT = "robot_rl.identified/1"

# (model field, columns or None) written by each parameter
_FIELDS: dict[str, tuple[tuple[str, tuple[int, ...] | None], ...]] = {
    "link_mass": (("body_mass", None), ("body_inertia", (0, 1, 2))),
    "joint_damping": (("dof_damping", None),),
    "armature": (("dof_armature", None),),
    "frictionloss": (("dof_frictionloss", None),),
    "actuator_gain": (("actuator_gainprm", (0,)), ("actuator_biasprm", (1, 2))),
}
MIN_DR_HALF_WIDTH = 0.01
"""Narrowest half-width ``centred_dr`` gives a fitted parameter's range."""


@dataclasses.dataclass(frozen=True)
class ArmParamIndex:
    """Where the parameters of an arm live in a compiled model."""

    bodies: np.ndarray
    """(B,) the bodies the arm joints move."""
    body_link: np.ndarray
    """(B,) the link (arm joint index) of each."""
    dofs: np.ndarray
    """(n,) each arm joint's degree of freedom."""
    actuators: np.ndarray
    """(n,) each arm joint's actuator."""

    @staticmethod
    def of(model: mujoco.MjModel, robot: RobotSpec) -> ArmParamIndex:
        link = body_links(model, robot)
        bodies = np.flatnonzero(link >= 0)
        return ArmParamIndex(
            bodies=bodies, body_link=link[bodies],
            dofs=np.array([int(model.joint(j).dofadr[0]) for j in robot.joint_names]),
            actuators=np.array([int(model.actuator(a).id) for a in robot.actuator_names]))

    def rows(self, param: str) -> np.ndarray:
        """The model rows ``param`` writes: bodies (link_mass), dofs or actuators."""
        if param == "link_mass":
            return self.bodies
        return self.actuators if param == "actuator_gain" else self.dofs

    def per_row(self, param: str, values: torch.Tensor) -> torch.Tensor:
        """(E, rows) the per-joint ``values`` (E, n) spread over ``rows(param)``."""
        if param == "link_mass":
            return values[:, torch.as_tensor(self.body_link, device=values.device)]
        return values


Fields = Callable[[str], torch.Tensor]
"""model field name -> (E, ...) its values per simulation (a backend's ``model_field``)."""


def nominal_values(fields: Fields, index: ArmParamIndex, params: tuple[str, ...]
                   ) -> dict[str, torch.Tensor]:
    """The values ``write`` scales: each written field's rows (and columns) of the first
    simulation, read before any write."""
    out = {}
    for p in params:
        for field, cols in _FIELDS[p]:
            x = fields(field)[0]
            x = x[torch.as_tensor(index.rows(p), device=x.device)]
            out[field] = (x if cols is None else
                          x[:, torch.as_tensor(cols, device=x.device)]).clone()
    return out


def write(fields: Fields, nominal: Mapping[str, torch.Tensor], index: ArmParamIndex,
          values: Mapping[str, torch.Tensor], envs: torch.Tensor | slice = slice(None)) -> bool:
    """Write parameter sets into the simulations ``envs``: ``values[param]`` (E, n) per
    parameter present (scales of ``nominal``, frictionloss in Nm). Returns whether a field
    that MuJoCo derives constants from was written (commit the model then)."""
    derived = False
    for p, v in values.items():
        if p not in _FIELDS:
            raise ConfigError(f"unknown dynamics parameter {p!r}; known: {list(PARAMS)}")
        rows = index.rows(p)
        for field, cols in _FIELDS[p]:
            x = fields(field)
            per = index.per_row(p, v.to(x.dtype))  # (E, R)
            new = per if p == "frictionloss" else nominal[field] * (
                per if cols is None else per[..., None])
            ids, r = _env_index(envs, x), torch.as_tensor(rows, device=x.device)
            if cols is None:
                x[ids, r] = new
            else:
                x[ids[..., None], r[:, None], torch.as_tensor(cols, device=x.device)] = new
            derived |= field in SETCONST_FIELDS
    return derived


def _env_index(envs: torch.Tensor | slice, x: torch.Tensor) -> torch.Tensor:
    ids = torch.arange(x.shape[0], device=x.device)[envs]
    return ids[:, None]


@dataclasses.dataclass(kw_only=True)
class IdentifiedDynamics:
    """An arm's identified dynamics (see module docstring), as ``robot-rl sysid fit``
    writes them."""

    robot: str
    """Registry name of the robot the values are for."""
    joint_names: tuple[str, ...]
    values: dict[str, tuple[float, ...]]
    """Per parameter of ``PARAMS``, one value per joint (parameters not fitted: absent)."""
    std: dict[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)
    """The values' uncertainty (one standard deviation), per parameter and joint."""
    action_delay: float = 0.0
    """Time from a command's send to its effect [s]."""
    sensing_latency: float = 0.0
    """Age of a joint reading when it arrives [s]."""
    fit: dict[str, Any] = dataclasses.field(default_factory=dict)
    """How the values were found: data, trajectory error before and after, restarts."""

    def __post_init__(self) -> None:
        n = len(self.joint_names)
        for group in (self.values, self.std):
            for p, v in group.items():
                if p not in PARAMS:
                    raise ConfigError(f"unknown dynamics parameter {p!r}; known: "
                                      f"{list(PARAMS)}")
                if len(v) != n or not all(math.isfinite(x) for x in v):
                    raise ConfigError(f"{p} needs {n} finite values (one per joint), got {v}")
        for p, v in self.values.items():
            if (min(v) <= 0 if p in SCALES else min(v) < 0):
                raise ConfigError(f"{p} must be {'> 0' if p in SCALES else '>= 0'}, got {v}")
        if min(self.action_delay, self.sensing_latency) < 0:
            raise ConfigError("action_delay and sensing_latency must be >= 0")

    def check(self, robot: RobotSpec) -> None:
        """Refuse to apply values found for another robot or joint order."""
        if robot.name != self.robot or tuple(robot.joint_names) != self.joint_names:
            raise ConfigError(f"the identified dynamics are for robot {self.robot!r} with "
                              f"joints {list(self.joint_names)}; this is {robot.name!r} with "
                              f"{list(robot.joint_names)}")

    def apply(self, model: mujoco.MjModel, robot: RobotSpec | None = None) -> None:
        """Make ``model``'s arm the identified one (in place)."""
        robot = robot or get_robot(self.robot)
        self.check(robot)
        index = ArmParamIndex.of(model, robot)

        def fields(name: str) -> torch.Tensor:
            return torch.from_numpy(getattr(model, name))[None]

        nominal = nominal_values(fields, index, tuple(self.values))
        values = {p: torch.tensor([v], dtype=torch.float64) for p, v in self.values.items()}
        if write(fields, nominal, index, values):
            mujoco.mj_setConst(model, mujoco.MjData(model))

    def centred_dr(self, dr: DRConfig, width: float) -> DRConfig:
        """``dr`` with the ranges of the fitted scales set to 1 +- ``width`` times their
        largest relative standard deviation, at least ``MIN_DR_HALF_WIDTH`` and no wider than
        ``dr``'s own range for it (0.95 where ``dr`` does not randomize it): randomization
        around the identified arm, narrowed where the fit is sure. (A single link's mass is
        often poorly determined on its own while the arm's motion is not; its marginal
        standard deviation would widen the range past anything the data allow.)"""
        ranges: dict[str, Any] = {}  # DRConfig's range fields, by name
        for p in SCALES:
            if p not in self.values:
                continue
            v = np.asarray(self.values[p])
            s = np.asarray(self.std.get(p, np.zeros_like(v)))
            lo, hi = getattr(dr, p)
            cap = max(1.0 - lo, hi - 1.0) if (lo, hi) != (1.0, 1.0) else 0.95
            half = min(max(width * float(np.max(s / v)), MIN_DR_HALF_WIDTH), cap, 0.95)
            ranges[p] = (1.0 - half, 1.0 + half)
        return dataclasses.replace(dr, **ranges)

    # -- file ------------------------------------------------------------------------------

    def save(self, path: str | Path) -> None:
        d = {"format": FORMAT, **dataclasses.asdict(self)}
        text = (json.dumps(d, indent=1) + "\n").encode()
        atomic_write(Path(path), lambda f: f.write(text))

    @staticmethod
    def load(path: str | Path) -> IdentifiedDynamics:
        p = Path(path)
        try:
            d = json.loads(p.read_text())
        except FileNotFoundError:
            raise ConfigError(f"no identified-dynamics file at {p}") from None
        except (OSError, json.JSONDecodeError) as e:
            raise ConfigError(f"cannot read identified dynamics {p}: {e}") from None
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise ConfigError(f"{p} is not an identified-dynamics file (format {FORMAT!r}; "
                              "made by robot-rl sysid fit)")
        try:
            return IdentifiedDynamics(
                robot=str(d["robot"]), joint_names=tuple(d["joint_names"]),
                values={k: tuple(float(x) for x in v) for k, v in d["values"].items()},
                std={k: tuple(float(x) for x in v) for k, v in d.get("std", {}).items()},
                action_delay=float(d.get("action_delay", 0.0)),
                sensing_latency=float(d.get("sensing_latency", 0.0)),
                fit=dict(d.get("fit", {})))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ConfigError(f"{p} is malformed: {e!r}") from None
