"""The deploy artifact: a folder with ``policy.onnx``, ``policy.pt`` (TorchScript) and
``policy.json``, plus ``cost_critic.onnx`` / ``cost_critic.pt`` when the policy was trained
with a safety critic.

    from robot_rl.export import load_policy
    policy = load_policy("runs/reach__sac__0__.../export")
    action = policy(obs)                              # numpy (obs_dim,) -> (act_dim,)
    action, hold, rejected = policy.safe_action(obs)  # through the safety-critic gate

``load_policy`` (``robot_rl.export.policy``) needs numpy and onnxruntime only; it imports no
training code. Writing artifacts (``robot_rl.export.artifact.export_artifact``) needs torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from robot_rl.lazy import lazy_exports

if TYPE_CHECKING:
    from robot_rl.export.policy import ArtifactError, Policy, load_policy

_EXPORTS = {
    "ArtifactError": "robot_rl.export.policy",
    "Policy": "robot_rl.export.policy",
    "load_policy": "robot_rl.export.policy",
}
"""Where each exported name lives; imported on first use (``robot_rl.lazy``)."""

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = ["ArtifactError", "Policy", "load_policy"]
