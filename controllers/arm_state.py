"""ArmState: the measured state of the arm that controllers and the shield read.

The simulation builds it from the backend's live tensors (batched torch); the deploy loop
builds it from the robot's joint state and the same MJCF through MuJoCo (numpy, E = 1).
Controllers and the shield never see where it came from.
"""

from __future__ import annotations

import dataclasses

from robot_rl.controllers.xp import Array, matvec, namespace, to_numpy


@dataclasses.dataclass
class ArmState:
    """Arm state of E robots with n joints, batch first (numpy or torch, one kind throughout)."""

    q: Array
    """(E, n) joint positions [rad]."""
    qd: Array
    """(E, n) joint velocities [rad/s]."""
    ee_pos: Array
    """(E, 3) end-effector (tool centre point) position, world frame [m]."""
    ee_rot: Array
    """(E, 3, 3) end-effector orientation, world frame (columns are the tool axes)."""
    jac: Array
    """(E, 6, n) end-effector Jacobian over the arm joints: linear rows, then angular."""
    mass: Array | None = None
    """(E, n, n) joint-space mass matrix of the arm joints (torque controllers need it)."""
    drift: Array | None = None
    """(E, n) joint forces acting besides the commanded torque: Coriolis and centrifugal,
    joint damping and springs, with gravity taken as compensated (the shield's torque layers
    predict qdd = M^-1 (tau + drift)); None counts as zero."""

    gravity: Array | None = None
    """(E, n) the actuator-side gravity compensation torque: the actuators add it to the
    command and it counts against their torque limits; None counts as zero."""
    link_pos: Array | None = None
    """(E, n, 3) world position of each arm joint's body (the shield's floor layer keeps
    their collision geometry above the table); None: only the end effector is guarded."""
    link_rot: Array | None = None
    """(E, n, 3, 3) world orientation of each arm joint's body."""

    _mass_inv: Array | None = dataclasses.field(default=None, repr=False, compare=False)

    def numpy(self) -> ArmState:
        """The same state as numpy arrays (zero-copy views of CPU tensors)."""
        conv = to_numpy
        return ArmState(q=conv(self.q), qd=conv(self.qd), ee_pos=conv(self.ee_pos),
                        ee_rot=conv(self.ee_rot), jac=conv(self.jac), mass=conv(self.mass),
                        drift=conv(self.drift), gravity=conv(self.gravity),
                        link_pos=conv(self.link_pos),
                        link_rot=conv(self.link_rot))

    def mass_inv(self) -> Array:
        """(E, n, n) inverse mass matrix, computed once per state and shared by the
        controller and the shield."""
        if self._mass_inv is None:
            assert self.mass is not None, "this ArmState has no mass matrix"
            self._mass_inv = namespace(self.mass).linalg.inv(self.mass)
        return self._mass_inv

    @property
    def ee_vel(self) -> Array:
        """(E, 3) end-effector linear velocity [m/s]."""
        return matvec(self.jac[:, :3], self.qd)

    @property
    def ee_twist(self) -> Array:
        """(E, 6) end-effector linear and angular velocity."""
        return matvec(self.jac, self.qd)
