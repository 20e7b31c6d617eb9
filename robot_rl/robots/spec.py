"""RobotSpec: everything the tasks, controllers and shield need to know about an arm.

Tasks are written against a RobotSpec, never against one robot. The built-in arm is one
spec (see ``robot_rl.robots.builtin``); a user's own MJCF plugs in through the same class:

    from robot_rl.robots import RobotSpec, register_robot
    register_robot("myarm", lambda: RobotSpec.from_mjcf("myarm.xml", name="myarm",
        joint_names=("j1", "j2", ...), ee_site="tool", qd_max=(2.0, ...), home=(0.0, ...)))

The MJCF holds one arm (no floor or table): its root body is attached to the scene's mount
point. Arm actuators must be torque actuators (``motor``/``general``) on the arm joints, one
per joint; controllers re-express them as needed (see ``robot_rl.controllers``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import mujoco
import numpy as np

from robot_rl.errors import ConfigError, ModelError
from robot_rl.robots.mjcf import compile_spec, load_mjcf

SPEC_FORMAT = "robot_rl.robot/1"
"""The ``format`` of a saved RobotSpec (``RobotSpec.save``)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class GripperSpec:
    """A parallel gripper driven by one position actuator."""

    actuator: str
    """Name of the position actuator that drives the fingers."""
    joints: tuple[str, ...]
    """Finger joints (slide), for observations."""
    pads: tuple[str, ...]
    """Finger bodies, for grasp (contact) sensing."""
    open_ctrl: float
    """Actuator control that opens the gripper fully."""
    closed_ctrl: float
    """Actuator control that closes the gripper fully."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class RobotSpec:
    """Description of one arm: model file, joints, limits, home pose, end effector, gripper.

    All per-joint tuples have one entry per arm joint, in ``joint_names`` order.
    """

    name: str
    """Registry name of the robot."""
    mjcf: Path
    """Path of the arm's MJCF file (the arm only, no scene)."""
    root_body: str
    """Root body of the arm, attached to the scene's mount point."""
    joint_names: tuple[str, ...]
    """Arm joints (hinge or slide), in the order used by actions and observations."""
    actuator_names: tuple[str, ...]
    """Torque actuator of each arm joint, same order as ``joint_names``."""
    ee_site: str
    """Site at the end effector (tool centre point)."""
    home: tuple[float, ...]
    """Home joint configuration [rad]."""
    q_min: tuple[float, ...]
    """Lower joint position limits [rad]."""
    q_max: tuple[float, ...]
    """Upper joint position limits [rad]."""
    qd_max: tuple[float, ...]
    """Joint velocity limits [rad/s]."""
    tau_max: tuple[float, ...]
    """Joint torque limits [Nm]."""
    kp: tuple[float, ...]
    """Default joint stiffness for the joint PD law [Nm/rad]."""
    kd: tuple[float, ...]
    """Default joint damping for the joint PD law [Nm s/rad]."""
    gripper: GripperSpec | None = None
    """The gripper, if the arm has one."""
    task_layout: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict,
                                                                    hash=False)
    """Task config fields this arm needs in place of the tasks' defaults (which are laid out
    for arm7's 0.85 m of reach), by task name: ``{"reach": {"target_lo": (...), ...}}``; a
    nested config's fields as a mapping (``{"safety": {"workspace_lo": (...)}}``). Applied
    where a task's config is made for the arm (``make_task_config(task, robot=NAME)``,
    ``--env.robot NAME``)."""
    mirror: tuple[float, ...] | None = None
    """The arm's mirror symmetry, if it has one: the sign (+1 or -1) of each joint's offset
    from ``home`` in the arm's mirror image about its base's x-z plane (y -> -y): the
    configuration ``home + mirror * (q - home)`` puts the end effector at (x, -y, z) where
    ``q`` puts it at (x, y, z), and its orientation S R S with S = diag(1, -1, 1). Used to
    mirror demonstrations (``robot_rl.data.mirror``). None: not mirror-symmetric, or not
    known."""

    @property
    def num_joints(self) -> int:
        return len(self.joint_names)

    def __post_init__(self) -> None:
        n = len(self.joint_names)
        for field in ("actuator_names", "home", "q_min", "q_max", "qd_max", "tau_max", "kp", "kd",
                      *(("mirror",) if self.mirror is not None else ())):
            value = getattr(self, field)
            if len(value) != n:
                raise ConfigError(
                    f"robot {self.name!r}: {field} has {len(value)} entries, expected {n} "
                    f"(one per joint in joint_names)"
                )
        lo, hi, home = (np.asarray(x) for x in (self.q_min, self.q_max, self.home))
        if np.any(lo >= hi):
            raise ConfigError(f"robot {self.name!r}: q_min must be below q_max for every joint")
        if np.any(home < lo) or np.any(home > hi):
            raise ConfigError(f"robot {self.name!r}: home pose is outside the joint limits")
        if min(self.qd_max) <= 0 or min(self.tau_max) <= 0:
            raise ConfigError(f"robot {self.name!r}: qd_max and tau_max must be positive")
        if self.mirror is not None and any(m not in (-1.0, 1.0) for m in self.mirror):
            raise ConfigError(f"robot {self.name!r}: mirror holds a sign (+1 or -1) per "
                              f"joint, got {self.mirror}")

    def load_spec(self) -> mujoco.MjSpec:
        """Parse the MJCF into an MjSpec, with errors naming the file."""
        return load_mjcf(self.mjcf)

    def _named(self) -> list[tuple[str, Sequence[str]]]:
        """(kind, names) of every object the spec refers to."""
        named: list[tuple[str, Sequence[str]]] = [
            ("joint", self.joint_names), ("actuator", self.actuator_names),
            ("site", (self.ee_site,)), ("body", (self.root_body,))]
        if self.gripper is not None:
            named += [("actuator", (self.gripper.actuator,)), ("joint", self.gripper.joints),
                      ("body", self.gripper.pads)]
        return named

    def _missing(self, kind: str, name: str) -> ModelError:
        return ModelError(f"{self.mjcf}: robot {self.name!r} names {kind} {name!r}, "
                          f"which the MJCF does not define")

    def check_names(self, spec: mujoco.MjSpec) -> None:
        """Check, before compiling, that every name in the spec exists in the parsed MJCF."""
        for kind, names in self._named():
            for name in names:
                if getattr(spec, kind)(name) is None:
                    raise self._missing(kind, name)

    def validate(self, model: mujoco.MjModel) -> None:
        """Check a compiled model: every name exists, each actuator drives its joint."""
        for kind, names in self._named():
            obj = getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}")
            for name in names:
                if mujoco.mj_name2id(model, obj, name) < 0:
                    raise self._missing(kind, name)
        for jname, aname in zip(self.joint_names, self.actuator_names, strict=True):
            act = model.actuator(aname)
            if act.trntype[0] != mujoco.mjtTrn.mjTRN_JOINT or act.trnid[0] != model.joint(jname).id:
                raise ModelError(f"{self.mjcf}: actuator {aname!r} must drive joint {jname!r}")

    def save(self, path: str | Path) -> Path:
        """Write the spec as JSON (``robot-rl robot import`` writes NAME.json beside
        NAME.xml); the MJCF's path is stored relative to the JSON's folder when inside it."""
        path = Path(path)
        data = dataclasses.asdict(self)
        mjcf, folder = self.mjcf.resolve(), path.parent.resolve()
        data["mjcf"] = str(mjcf.relative_to(folder) if mjcf.is_relative_to(folder) else mjcf)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"format": SPEC_FORMAT, **data}, indent=2) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> RobotSpec:
        """A spec ``save`` wrote; a missing or malformed file raises ConfigError naming it."""
        path = Path(path).resolve()
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise ConfigError(f"robot spec not found: {path}") from None
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}: not a robot spec ({e})") from None
        if not isinstance(data, dict) or data.pop("format", None) != SPEC_FORMAT:
            raise ConfigError(f"{path}: not a robot spec (no \"format\": \"{SPEC_FORMAT}\")")
        gripper = data.pop("gripper", None)
        try:
            fields: dict[str, Any] = {k: _tuples(v) for k, v in data.items()}
            if gripper is not None:
                gripper = GripperSpec(**_tuples(gripper))
            fields["mjcf"] = path.parent / fields["mjcf"]
            return cls(**fields, gripper=gripper)
        except (TypeError, KeyError) as e:
            raise ConfigError(f"{path}: not a robot spec ({e})") from None

    @classmethod
    def from_urdf(
        cls,
        source: str | Path,
        *,
        name: str,
        tip_link: str,
        home: Sequence[float] | None = None,
        kp: Sequence[float] | None = None,
        kd: Sequence[float] | None = None,
        out: str | Path | None = None,
        gripper_open: Literal["upper", "lower"] = "upper",
        **options: Any,
    ) -> RobotSpec:
        """Build a spec from a URDF file or ``robot_description`` string through MuJoCo's
        URDF compiler (``robot_rl.robots.urdf.urdf_to_mjcf``: what it reads, its ``options``,
        what it refuses); its MJCF is written to ``out`` (default: NAME.xml in the
        imported-robots folder). Limits come from each joint's ``<limit>``; ``home``
        defaults to the middle of each joint's range, the gains as in ``from_mjcf``; the
        gripper opens at its first joint's ``gripper_open`` limit (a parallel gripper's
        fingers: upper; a Robotiq 2F's knuckle: lower)."""
        from robot_rl.robots.urdf import imported_dir, urdf_to_mjcf

        arm = urdf_to_mjcf(source, name=name, tip_link=tip_link,
                           out=Path(out) if out is not None else imported_dir() / f"{name}.xml",
                           **options)
        q_min = tuple(j.limit("lower") for j in arm.joints)
        q_max = tuple(j.limit("upper") for j in arm.joints)
        tau = tuple(j.limit("effort") for j in arm.joints)
        kp_t, kd_t = default_gains(tau, kp, kd)
        gripper = None
        if arm.gripper:
            first = arm.gripper[0]
            ends = (first.limit("upper"), first.limit("lower"))
            opened, closed = ends if gripper_open == "upper" else ends[::-1]
            gripper = GripperSpec(actuator=arm.gripper_actuator,
                                  joints=tuple(j.name for j in arm.gripper),
                                  pads=tuple(j.child for j in arm.gripper),
                                  open_ctrl=opened, closed_ctrl=closed)
        names = tuple(j.name for j in arm.joints)
        robot = cls(
            name=name, mjcf=arm.mjcf, root_body=arm.root_body, joint_names=names,
            actuator_names=names, ee_site=arm.ee_site,
            home=tuple(home) if home is not None else mid_range(q_min, q_max),
            q_min=q_min, q_max=q_max, qd_max=tuple(j.limit("velocity") for j in arm.joints),
            tau_max=tau, kp=kp_t, kd=kd_t,
            gripper=gripper)
        robot.validate(arm.model)
        return robot

    @classmethod
    def from_mjcf(
        cls,
        path: str | Path,
        *,
        name: str,
        joint_names: Sequence[str],
        ee_site: str,
        qd_max: Sequence[float],
        home: Sequence[float] | None = None,
        kp: Sequence[float] | None = None,
        kd: Sequence[float] | None = None,
        actuator_names: Sequence[str] | None = None,
        gripper: GripperSpec | None = None,
    ) -> RobotSpec:
        """Build a spec from a user's MJCF, reading position and torque limits from it.

        Position limits come from the joints' ``range``; torque limits from the joint's
        ``actuatorfrcrange`` or else the actuator's ``forcerange``/``ctrlrange``. The root
        body is the first body under the worldbody. Actuators default to the ones that drive
        each joint. Gains default to a stiffness that settles in ~0.1 s for each joint's
        torque limit (kp = tau_max / 0.2 rad, kd = kp / 10).
        """
        path = Path(path)
        spec_probe = load_mjcf(path)
        model = compile_spec(spec_probe, path)
        ids = [_require(model, mujoco.mjtObj.mjOBJ_JOINT, j, path) for j in joint_names]
        if actuator_names is None:
            actuator_names = [_actuator_of(model, jid, path) for jid in ids]
        q_min, q_max, tau = [], [], []
        for jid, aname in zip(ids, actuator_names, strict=True):
            if not model.jnt_limited[jid]:
                raise ModelError(f"{path}: joint {model.joint(jid).name!r} needs a range")
            q_min.append(float(model.jnt_range[jid, 0]))
            q_max.append(float(model.jnt_range[jid, 1]))
            tau.append(_torque_limit(model, jid, aname, path))
        tau_t = tuple(tau)
        kp_t, kd_t = default_gains(tau_t, kp, kd)
        home_t = tuple(home) if home is not None else mid_range(q_min, q_max)
        root = spec_probe.worldbody.first_body()
        if root is None:
            raise ModelError(f"{path}: the MJCF has no body under <worldbody>")
        return cls(
            name=name, mjcf=path, root_body=root.name, joint_names=tuple(joint_names),
            actuator_names=tuple(actuator_names), ee_site=ee_site, home=home_t,
            q_min=tuple(q_min), q_max=tuple(q_max), qd_max=tuple(qd_max), tau_max=tau_t,
            kp=kp_t, kd=kd_t, gripper=gripper,
        )



def default_gains(tau_max: Sequence[float], kp: Sequence[float] | None,
                  kd: Sequence[float] | None) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(kp, kd) as given, else a stiffness that settles in ~0.1 s at each joint's torque limit
    (kp = tau_max / 0.2 rad) and kd = kp / 10."""
    kp_t = tuple(kp) if kp is not None else tuple(t / 0.2 for t in tau_max)
    return kp_t, tuple(kd) if kd is not None else tuple(k / 10.0 for k in kp_t)


def mid_range(q_min: Sequence[float], q_max: Sequence[float]) -> tuple[float, ...]:
    """The middle of each joint's range (a home pose where none is given)."""
    return tuple((a + b) / 2 for a, b in zip(q_min, q_max, strict=True))


def _tuples(value: Any) -> Any:
    """JSON's lists as tuples, at every depth (the spec's per-joint fields and layouts)."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def _require(model: mujoco.MjModel, obj: mujoco.mjtObj, name: str, path: Path) -> int:
    idx = mujoco.mj_name2id(model, obj, name)
    if idx < 0:
        raise ModelError(f"{path}: no {obj.name[6:].lower()} named {name!r}")
    return idx


def _actuator_of(model: mujoco.MjModel, jid: int, path: Path) -> str:
    for a in range(model.nu):
        joint_driven = model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT
        if joint_driven and model.actuator_trnid[a, 0] == jid:
            return model.actuator(a).name
    raise ModelError(f"{path}: joint {model.joint(jid).name!r} has no actuator")


def _torque_limit(model: mujoco.MjModel, jid: int, aname: str, path: Path) -> float:
    if model.jnt_actfrclimited[jid]:
        return float(np.max(np.abs(model.jnt_actfrcrange[jid])))
    a = model.actuator(aname)
    if model.actuator_forcelimited[a.id]:
        return float(np.max(np.abs(a.forcerange)))
    if model.actuator_ctrllimited[a.id]:
        return float(np.max(np.abs(a.ctrlrange)) * abs(a.gear[0]))
    raise ModelError(f"{path}: actuator {aname!r} has no force or control range to take "
                     f"a torque limit from")
