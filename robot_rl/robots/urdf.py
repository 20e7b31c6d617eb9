"""URDF in: a ROS 2 arm's ``robot_description`` (a file or its text) as one of our arms.

    spec = RobotSpec.from_urdf("ur5e.urdf", name="ur5e", tip_link="tool0", out="ur5e.xml")
    spec = RobotSpec.from_urdf(robot_description_xml, name="ur5e", tip_link="tool0")

(The other way, one of our arms as a URDF: ``robot_rl/robots/urdf_writer.py``.)

Import runs MuJoCo's URDF compiler on the description after four things are settled here,
from the URDF's own XML:

- **The arm**: the movable joints (revolute, prismatic) on the chain from ``base_link`` (the
  URDF's root link by default) to ``tip_link``, in chain order. Their position, velocity and
  effort limits come from each ``<limit>``; a joint without them (``continuous``, or an
  effort or velocity of 0) is refused. Movable joints off the chain become fixed, with a
  warning, unless named in ``gripper_joints``.
- **Meshes**: ``package://PKG/...`` is looked up in the ament index (a sourced ROS 2
  workspace), then under each ``search_paths`` folder (``DIR/PKG/...``), then in the folder
  of that name above the URDF; ``file://`` and relative names are read as paths. Visual
  geometry is left out (MuJoCo reads neither Collada nor textures; the physics needs
  collision geometry only). A collision mesh that is not found, or that MuJoCo cannot read
  (it reads STL, OBJ and MSH), is dropped with a warning where its link keeps other
  collision geometry (primitives), and refused where it would leave the link without any.
- **Actuators**: a torque motor per arm joint, its range the joint's effort limit; with
  ``gripper_joints``, one position actuator ``gripper`` on the first of them (URDF
  ``<mimic>`` tags, which MuJoCo turns into joint couplings, or couplings added here, move
  the rest with it).
- **Conventions of the built-in arm** (``assets/arm7.xml``): gravity compensated through
  the actuators (``actuatorgravcomp``), joint ``armature`` (rotor inertia; URDF has no field
  for it), arm geoms that touch the scene but not each other, and the end-effector site
  ``ee`` on ``tip_link`` at ``ee_offset``.

The result is written as the MJCF the spec uses (``out``; by default NAME.xml in the
imported-robots folder, ``robot_rl.robots.imported_dir``), so every process that builds the
scene (env-runners, nodes) reads the same file.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import mujoco

from robot_rl.errors import ModelError
from robot_rl.robots.mjcf import compile_spec

MOVABLE = ("revolute", "prismatic")
MESH_FORMATS = (".stl", ".obj", ".msh")
"""The mesh files MuJoCo reads."""
EE_SITE = "ee"
GRIPPER_ACTUATOR = "gripper"


@dataclasses.dataclass(frozen=True)
class UrdfJoint:
    """One ``<joint>`` of a URDF, as far as import needs it."""

    name: str
    type: str
    parent: str
    child: str
    lower: float | None
    upper: float | None
    velocity: float | None
    effort: float | None

    def limit(self, which: str) -> float:
        """One of its limits (lower, upper, velocity, effort), checked present by
        ``check_limits``."""
        value = getattr(self, which)
        assert value is not None, f"{self.name}: {which} limit not checked"
        return float(value)


@dataclasses.dataclass(frozen=True)
class ImportedArm:
    """What ``urdf_to_mjcf`` made of a URDF: its MJCF and what the RobotSpec names."""

    mjcf: Path
    """The MJCF written."""
    model: mujoco.MjModel
    """It compiled."""
    root_body: str
    joints: tuple[UrdfJoint, ...]
    """The arm's joints, base first (their actuators carry their names)."""
    ee_site: str
    gripper: tuple[UrdfJoint, ...]
    """The gripper's joints, the actuated one first (empty: no gripper)."""
    gripper_actuator: str


class UrdfWarning(UserWarning):
    """Something import changed or left out (a joint fixed, a mesh dropped)."""


def read_urdf(source: str | Path) -> tuple[ET.Element, Path, str]:
    """(root element, the folder relative paths start from, a name for messages) of a URDF
    file or a URDF string (``robot_description``)."""
    text: str | None = None
    if isinstance(source, str) and source.lstrip().startswith("<"):
        text, folder, label = source, Path.cwd(), "robot_description"
    else:
        path = Path(source)
        if not path.is_file():
            raise ModelError(f"URDF file not found: {path}")
        text, folder, label = path.read_text(), path.resolve().parent, str(path)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise ModelError(f"{label}: not valid XML ({e})") from None
    if root.tag != "robot":
        raise ModelError(f"{label}: a URDF's root element is <robot>, not <{root.tag}>")
    return root, folder, label


def urdf_joints(root: ET.Element) -> dict[str, UrdfJoint]:
    """The URDF's joints by name."""
    out = {}
    for j in root.findall("joint"):
        limit = j.find("limit")

        def num(attr: str, lim: ET.Element | None = limit) -> float | None:
            value = None if lim is None else lim.get(attr)
            return None if value is None else float(value)

        parent, child = j.find("parent"), j.find("child")
        if parent is None or child is None:
            raise ModelError(f"joint {j.get('name')!r} needs a <parent> and a <child> link")
        out[j.get("name", "")] = UrdfJoint(
            j.get("name", ""), j.get("type", ""), parent.get("link", ""),
            child.get("link", ""), num("lower"), num("upper"), num("velocity"), num("effort"))
    return out


def chain(joints: dict[str, UrdfJoint], links: Sequence[str], base: str, tip: str,
          label: str) -> list[UrdfJoint]:
    """The joints from ``base`` to ``tip``, base first."""
    for link in (base, tip):
        if link not in links:
            raise ModelError(f"{label}: no link named {link!r} (links: {', '.join(links)})")
    into = {j.child: j for j in joints.values()}
    path: list[UrdfJoint] = []
    link = tip
    while link != base:
        if link not in into:
            raise ModelError(f"{label}: link {tip!r} is not below {base!r}: no chain between "
                             f"them")
        path.append(into[link])
        link = into[link].parent
    return path[::-1]


def check_limits(joint: UrdfJoint, label: str) -> None:
    """A joint the arm moves needs position, velocity and effort limits."""
    if joint.type == "continuous":
        raise ModelError(f"{label}: joint {joint.name!r} is continuous (no position limits); "
                         f"our shield needs them: make it revolute with <limit lower= upper=>")
    if joint.lower is None or joint.upper is None or joint.lower >= joint.upper:
        raise ModelError(f"{label}: joint {joint.name!r} needs <limit lower= upper=> with "
                         f"lower < upper")
    if not joint.velocity or not joint.effort or joint.velocity <= 0 or joint.effort <= 0:
        raise ModelError(f"{label}: joint {joint.name!r} needs positive velocity and effort "
                         f"limits (<limit velocity= effort=>)")


def resolve_mesh(filename: str, folder: Path, search_paths: Sequence[Path]) -> Path | None:
    """The file a URDF mesh reference names, or None where it is not found."""
    if filename.startswith("package://"):
        package, _, rest = filename[len("package://"):].partition("/")
        candidates = [p / package / rest for p in search_paths]
        try:
            from ament_index_python.packages import (
                PackageNotFoundError,
                get_package_share_directory,
            )

            try:
                candidates.insert(0, Path(get_package_share_directory(package)) / rest)
            except (PackageNotFoundError, OSError):  # not in the index; no workspace sourced
                pass
        except ImportError:
            pass
        candidates += [p / rest for p in (folder, *folder.parents) if p.name == package]
    elif filename.startswith("file://"):
        candidates = [Path(filename[len("file://"):])]
    else:
        candidates = [folder / filename]
    return next((c.resolve() for c in candidates if c.is_file()), None)


def settle_meshes(root: ET.Element, folder: Path, search_paths: Sequence[Path],
                  label: str) -> None:
    """Drop visuals; point each collision mesh at its file, or drop it where the link keeps
    other collision geometry (refused where it would not)."""
    for link in root.findall("link"):
        for visual in link.findall("visual"):
            link.remove(visual)
        collisions = link.findall("collision")
        dropped = []
        for col in collisions:
            mesh = col.find("geometry/mesh")
            if mesh is None:
                continue
            name = mesh.get("filename", "")
            path = resolve_mesh(name, folder, search_paths)
            if path is not None and path.suffix.lower() in MESH_FORMATS:
                mesh.set("filename", str(path))
                continue
            why = "not found" if path is None else f"a {path.suffix} file MuJoCo cannot read"
            dropped.append((col, f"{name} ({why})"))
        if not dropped:
            continue
        if len(dropped) == len(collisions):
            raise ModelError(
                f"{label}: link {link.get('name')!r}: collision mesh "
                f"{'; '.join(d for _, d in dropped)}, and the link has no primitive collision "
                f"geometry to use instead. Source the workspace that holds the package "
                f"(ament index), or give search_paths (robot-rl robot import --search-path)")
        for col, desc in dropped:
            link.remove(col)
            warnings.warn(f"{label}: link {link.get('name')!r}: collision mesh {desc}; using "
                          f"the link's primitive collision geometry", UrdfWarning, stacklevel=3)


def fix_joints(root: ET.Element, names: Sequence[str], label: str) -> None:
    """Make the named joints fixed (movable joints off the arm's chain), with a warning."""
    if not names:
        return
    for j in root.findall("joint"):
        if j.get("name") in names:
            j.set("type", "fixed")
            for tag in ("axis", "limit", "mimic", "dynamics"):
                for el in j.findall(tag):
                    j.remove(el)
    warnings.warn(f"{label}: joints {', '.join(names)} are off the arm's chain and not "
                  f"gripper joints: fixed at 0", UrdfWarning, stacklevel=3)


def imported_dir() -> Path:
    """The folder ``robot-rl robot import`` writes arms into: ``$ROBOT_RL_ROBOTS``, else
    ``$XDG_CACHE_HOME/robot_rl/robots`` (``~/.cache/robot_rl/robots``)."""
    if folder := os.environ.get("ROBOT_RL_ROBOTS"):
        return Path(folder)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "robot_rl" / "robots"


def urdf_to_mjcf(
    source: str | Path,
    *,
    name: str,
    tip_link: str,
    out: Path,
    base_link: str | None = None,
    ee_offset: Sequence[float] = (0.0, 0.0, 0.0),
    gripper_joints: Sequence[str] = (),
    search_paths: Sequence[str | Path] = (),
    armature: float = 0.1,
    gripper_kp: float = 1000.0,
) -> ImportedArm:
    """The arm in a URDF file or ``robot_description`` string as MJCF, written to ``out``
    (module docstring; ``RobotSpec.from_urdf`` makes its spec)."""
    root, folder, label = read_urdf(source)
    joints = urdf_joints(root)
    links = [link.get("name", "") for link in root.findall("link")]
    children = {j.child for j in joints.values()}
    roots = [link for link in links if link not in children]
    if len(roots) != 1:
        raise ModelError(f"{label}: a URDF has one root link; found {roots or 'none'}")
    arm = [j for j in chain(joints, links, base_link or roots[0], tip_link, label)
           if j.type != "fixed"]
    if not arm:
        raise ModelError(f"{label}: no movable joint between {base_link or roots[0]!r} and "
                         f"{tip_link!r}")
    for j in arm:
        check_limits(j, label)
    arm_names = [j.name for j in arm]
    for g in gripper_joints:
        if g not in joints or joints[g].type not in MOVABLE:
            raise ModelError(f"{label}: gripper joint {g!r} is not a revolute or prismatic "
                             f"joint of the URDF")
        if g in arm_names:
            raise ModelError(f"{label}: gripper joint {g!r} is on the arm's chain")
        check_limits(joints[g], label)
    fix_joints(root, [j.name for j in joints.values() if j.type != "fixed" and
                      j.name not in arm_names and j.name not in gripper_joints], label)
    settle_meshes(root, folder, [Path(p) for p in search_paths], label)
    extension = ET.Element("mujoco")
    ET.SubElement(extension, "compiler", discardvisual="true", fusestatic="false",
                  strippath="false", balanceinertia="true")
    for old in root.findall("mujoco"):
        root.remove(old)
    root.insert(0, extension)
    try:
        spec = mujoco.MjSpec.from_string(ET.tostring(root, encoding="unicode"))
    except ValueError as e:
        raise ModelError(f"{label}: MuJoCo's URDF compiler: {e}") from None
    spec.modelname = name
    _arm_conventions(spec, arm, tip_link, ee_offset, armature)
    gripper = tuple(joints[g] for g in gripper_joints)
    if gripper:
        _gripper(spec, gripper, gripper_kp)
    model = compile_spec(spec, label)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(f"<!-- {name}: imported by robot-rl from {label} -->\n" + _mjcf(spec))
    return ImportedArm(mjcf=out, model=model, root_body=spec.worldbody.first_body().name,
                       joints=tuple(arm), ee_site=EE_SITE, gripper=gripper,
                       gripper_actuator=GRIPPER_ACTUATOR)


def _mjcf(spec: mujoco.MjSpec) -> str:
    """The spec as MJCF, with each body's placement at full precision (MuJoCo writes six
    digits, 1e-6 m of error at the end of a 1 m arm)."""
    root = ET.fromstring(spec.to_xml())
    for el in root.iter("body"):
        body = spec.body(el.get("name", ""))
        if body is not None:
            el.set("pos", " ".join(repr(float(x)) for x in body.pos))
            el.set("quat", " ".join(repr(float(x)) for x in body.quat))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"


def _arm_conventions(spec: mujoco.MjSpec, arm: Sequence[UrdfJoint], tip_link: str,
                     ee_offset: Sequence[float], armature: float) -> None:
    """Torque motors, gravity compensation through them, armature, collision bits and the
    end-effector site (module docstring)."""
    for body in spec.bodies:
        if body.name != "world":
            body.gravcomp = 1.0
    for geom in spec.geoms:
        geom.contype, geom.conaffinity = 2, 1
    for j in arm:
        joint = spec.joint(j.name)
        joint.armature = armature
        joint.actgravcomp = True
        act = spec.add_actuator(name=j.name, target=j.name,
                                trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        act.ctrlrange = [-j.limit("effort"), j.limit("effort")]
    tip = spec.body(tip_link)
    if tip is None:
        raise ModelError(f"tip link {tip_link!r} did not survive the URDF compiler")
    if spec.site(EE_SITE) is not None:
        raise ModelError(f"the URDF already has a site named {EE_SITE!r}")
    tip.add_site(name=EE_SITE, pos=list(map(float, ee_offset)), size=[0.01, 0.01, 0.01],
                 group=3)


def _gripper(spec: mujoco.MjSpec, joints: Sequence[UrdfJoint], kp: float) -> None:
    """A position actuator on the first gripper joint; the others follow it (their
    ``<mimic>`` coupling, or one added here)."""
    first = joints[0]
    coupled = {e.name1 for e in spec.equalities} | {e.name2 for e in spec.equalities}
    for j in joints[1:]:
        if j.name not in coupled:
            eq = spec.add_equality(type=mujoco.mjtEq.mjEQ_JOINT, name1=j.name,
                                   name2=first.name, objtype=mujoco.mjtObj.mjOBJ_JOINT)
            eq.data[:5] = [0.0, 1.0, 0.0, 0.0, 0.0]
    for j in joints:
        spec.joint(j.name).actgravcomp = False
    act = spec.add_actuator(name=GRIPPER_ACTUATOR, target=first.name,
                            trntype=mujoco.mjtTrn.mjTRN_JOINT)
    act.set_to_position(kp=kp, kv=kp / 25.0)
    act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
    act.ctrlrange = [first.limit("lower"), first.limit("upper")]
    act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
    act.forcerange = [-first.limit("effort"), first.limit("effort")]
