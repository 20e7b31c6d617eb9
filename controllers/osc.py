"""Operational-space control and Cartesian impedance, from MuJoCo's Jacobian and mass matrix.

With e = (p_target - p, orientation error) and the end-effector twist v = J qd:

    a     = Kp e - Kd v                       task-space command, Kd = 2 zeta sqrt(Kp)
    OSC:                 tau = J^T Lambda a   Lambda = (J M^-1 J^T + lambda I)^-1
    Cartesian impedance: tau = J^T a          (Kp in N/m and Nm/rad, no inertia shaping)
    both:                tau += (I - J^T Lambda J M^-1) M (kn (q_home - q) - dn qd)

The last term holds the redundant joints near the home posture without disturbing the end
effector (dynamically consistent null space). **Reference clamping**: e is limited to
``max_pos_error`` / ``max_rot_error`` before the gains, so however far the target is, the
commanded force stays bounded (Kp * max error, times Lambda for OSC) and contact forces
against the table stay bounded with stiff gains. Gravity is compensated by the model (the
arm's actuators, as on a torque-controlled arm); Coriolis terms are neglected.

Everything is batched array math (torch while training, numpy for one sample on the robot).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from robot_rl.controllers import fused_compiled, osc_compiled
from robot_rl.controllers.action_spaces import TargetKind, Targets
from robot_rl.controllers.arm_state import ArmState
from robot_rl.controllers.base import Controller
from robot_rl.controllers.compiled import arg, is_f64
from robot_rl.controllers.configs import OSCConfig
from robot_rl.controllers.ik import orientation_error
from robot_rl.controllers.xp import (
    Array,
    Constants,
    clamp_norm,
    matvec,
    mT,
    namespace,
    solve,
)
from robot_rl.errors import ConfigError

if TYPE_CHECKING:
    from robot_rl.controllers.shield import SafetyShield
    from robot_rl.robots import RobotSpec


class OperationalSpace(Controller):
    """OSC / Cartesian impedance torque controller (see module docstring)."""

    target_kind: TargetKind = "pose"
    in_model = False
    needs_mass = True

    def __init__(self, cfg: OSCConfig, robot: RobotSpec):
        super().__init__(robot)
        if min(cfg.pos_stiffness, cfg.rot_stiffness, cfg.max_pos_error, cfg.max_rot_error) <= 0:
            raise ConfigError("osc stiffnesses and maximum errors must be positive")
        if cfg.substeps < 1:
            raise ConfigError(f"osc substeps must be >= 1, got {cfg.substeps}")
        self.cfg = cfg
        self.substeps = cfg.substeps
        kp = np.array([cfg.pos_stiffness] * 3 + [cfg.rot_stiffness] * 3)
        self._kn = cfg.null_stiffness
        self._dn = 2.0 * np.sqrt(cfg.null_stiffness)
        self._c = Constants(kp=kp, kd=2.0 * cfg.damping_ratio * np.sqrt(kp), home=robot.home,
                            reg=np.eye(6) * cfg.singularity_damping)
        self._scalars = np.array([self._kn, self._dn, cfg.max_pos_error, cfg.max_rot_error,
                                  cfg.singularity_damping, float(cfg.decouple_inertia)])
        k = self._c.numpy
        self._gains = (arg(k("kp")), arg(k("kd")), arg(k("home")), self._scalars)
        """(kp (6,), kd (6,), home (n,), scalars) as the compiled law takes them."""
        osc_compiled.warm_up(robot.num_joints)
        fused_compiled.warm_up(robot.num_joints)

    compiled = True
    """Float64 numpy inputs run the compiled law (``osc_compiled``); False: always the array
    version below, the reference."""

    def torque(self, targets: Targets, state: ArmState) -> Array:
        assert targets.pos is not None and targets.rot is not None and state.mass is not None
        if self.compiled and all(is_f64(x) for x in (targets.pos, targets.rot, state.q,
                                                      state.mass)):
            return self._torque_compiled(targets, state)
        return self.torque_reference(targets, state)

    def _torque_compiled(self, targets: Targets, state: ArmState) -> np.ndarray:
        assert targets.pos is not None and targets.rot is not None and state.mass is not None
        c = arg
        return osc_compiled.osc_torque(
            c(targets.pos), c(targets.rot), c(state.q), c(state.qd), c(state.ee_pos),
            c(state.ee_rot), c(state.jac), c(state.mass), c(state.mass_inv()), *self._gains)

    def shielded_torque(self, targets: Targets, state: ArmState, shield: SafetyShield
                        ) -> tuple[Array, dict[str, Array]]:
        """The law and the shield's torque layers in one compiled call
        (``fused_compiled.osc_command``) where both run compiled; else one after the other."""
        fits = self.compiled and is_f64(targets.pos) and is_f64(targets.rot) \
            and is_f64(state.ee_rot)
        args = shield.torque_kernel_args(state) if fits else None
        if args is None:
            return super().shielded_torque(targets, state, shield)
        assert targets.pos is not None and targets.rot is not None
        # one tuple: mypy maps a second *tuple of mixed types onto the parameters wrongly
        inputs = (arg(targets.pos), arg(targets.rot), arg(state.ee_rot), *self._gains, *args)
        tau, flags = fused_compiled.osc_command(*inputs)
        return tau, shield.torque_flags(flags)

    def torque_reference(self, targets: Targets, state: ArmState) -> Array:
        """``torque`` as array operations (numpy or torch): the reference the compiled law is
        tested against, and the path for torch tensors."""
        assert targets.pos is not None and targets.rot is not None and state.mass is not None
        xp = namespace(state.q)
        c = self._c(state.q)
        kp, kd, home, reg = c["kp"], c["kd"], c["home"], c["reg"]
        cfg = self.cfg
        e_pos = clamp_norm(targets.pos - state.ee_pos, cfg.max_pos_error)
        e_rot = clamp_norm(orientation_error(state.ee_rot, targets.rot), cfg.max_rot_error)
        jac, mass = state.jac, state.mass
        acc = kp * xp.concatenate([e_pos, e_rot], axis=-1) - kd * matvec(jac, state.qd)
        # Null-space posture torque, and its image in task space to project out.
        tau0 = matvec(mass, self._kn * (home - state.q) - self._dn * state.qd)
        minv_jt = state.mass_inv() @ mT(jac)  # (E, n, 6) = M^-1 J^T
        lam_inv = jac @ minv_jt + reg  # (E, 6, 6)
        leak = matvec(mT(minv_jt), tau0)  # J M^-1 tau0
        if cfg.decouple_inertia:
            force = solve(lam_inv, (acc - leak)[..., None])[..., 0]
        else:
            force = acc - solve(lam_inv, leak[..., None])[..., 0]
        return tau0 + matvec(mT(jac), force)
