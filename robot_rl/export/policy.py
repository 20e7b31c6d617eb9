"""Load a deploy artifact: ``load_policy(path)`` returns a numpy-in, numpy-out policy.

This module imports numpy, json and onnxruntime (torch only for ``backend="torchscript"``)
and no training code, so the robot side stays small:

    policy = load_policy("export/")              # folder with policy.json, policy.onnx, ...
    a = policy(obs)                              # (obs_dim,) -> (act_dim,), or batched
    a, hold, rejected = policy.safe_action(obs)  # K candidates scored by the cost critic
    policy.reset()                               # a new episode (chunked policies)

A policy that sees cameras (``policy.json``'s ``images``: a pixel student) takes its images
next to the observation, each as its entry names it (key, shape (C, H, W), dtype; RGB uint8
channels first, depth float32 metres):

    a = policy(obs, images={"front.rgb": rgb, "wrist.rgb": rgb2})   # (C, H, W) or (B, C, H, W)

A chunked policy (``policy.json``'s ``chunk``: a diffusion or MLP policy predicting H
actions from the last T observations) is called the same way, one control step at a time:
it keeps each env's observation history and queue of actions (``ChunkExecutor``, imported
only for such artifacts), calls the graph when the queue runs out, draws the flow's noise
itself where the graph takes it, and counts each env's steps since its episode start for a
graph that sees a clock (``chunk``'s ``clock``: a residual run's one-step student).
``reset`` starts a new episode; ``chunk`` runs the graph on a history directly. A residual
artifact (``policy.json``'s ``residual``) corrects each of the chunk's actions with its
residual graph; one whose ``every`` is K > 1 decides a correction every K calls from each
env's episode start and holds it between (the correction is the graph's action less the
chunk's at the decision, added to the chunk's later actions and clipped to [-1, 1], as
``ResidualEnv`` trained it).

``policy.json`` is checked against the model files: a model whose input or output width
differs from the recorded observation and action sizes refuses to load.

Backends: ``onnx`` (default; onnxruntime, one thread, and for one observation a pre-bound
input/output buffer pair that halves onnxruntime's per-call overhead) or ``torchscript``
(``policy.pt`` and ``cost_critic.pt`` through torch).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from robot_rl.errors import RobotRLError

if TYPE_CHECKING:  # imported where used: the execution module brings torch
    from robot_rl.policies.execution import HeldCorrection

Backend = Literal["onnx", "torchscript"]
FORMAT = "robot_rl.policy"
VERSION = 1


class ArtifactError(RobotRLError):
    """A policy artifact is missing, malformed, or inconsistent with its metadata."""


GraphInput = tuple[str, tuple[int, ...], str]
"""One input of an exported graph: (name, shape without the batch axis, numpy dtype)."""


def graph_inputs(meta: dict[str, Any]) -> list[GraphInput]:
    """The policy graph's inputs per policy.json: the observation (the last T of them,
    flattened, for a chunked policy); for a flow policy whose noise the runtime draws, the
    noise (H A); for a policy that sees a clock, the steps since the episode's start (1,);
    for a policy that sees cameras, each image of ``images`` in order."""
    obs_dim, act_dim = int(meta["observation"]["dim"]), int(meta["action"]["dim"])
    chunk = meta.get("chunk")
    if not chunk:
        inputs: list[GraphInput] = [("obs", (obs_dim,), "float32")]
    else:
        inputs = [("obs", (int(chunk["obs_history"]) * obs_dim,), "float32")]
        if chunk.get("noise_input"):
            inputs.append(("noise", (int(chunk["horizon"]) * act_dim,), "float32"))
        if chunk.get("clock"):
            inputs.append(("step", (1,), "int64"))
    for im in meta.get("images") or []:
        inputs.append((str(im["key"]), tuple(int(d) for d in im["shape"]), str(im["dtype"])))
    return inputs


class Policy:
    """An exported policy (see module docstring). Thread-compatible, not thread-safe."""

    def __init__(self, path: str | Path, backend: Backend = "onnx", seed: int = 0):
        self.path = Path(path)
        meta_path = self.path / "policy.json"
        if not meta_path.is_file():
            raise ArtifactError(f"no policy.json in {self.path} (is it an exported artifact?)")
        try:
            self.meta: dict[str, Any] = json.loads(meta_path.read_text())
        except json.JSONDecodeError as e:
            raise ArtifactError(f"{meta_path} is not valid JSON: {e}") from None
        if self.meta.get("format") != FORMAT or self.meta.get("version") != VERSION:
            raise ArtifactError(f"{meta_path} is not a {FORMAT} v{VERSION} file")
        try:
            self.obs_dim = int(self.meta["observation"]["dim"])
            self.act_dim = int(self.meta["action"]["dim"])
            widths = sum(int(t["width"]) for t in self.meta["observation"]["layout"])
        except (KeyError, TypeError, ValueError) as e:
            raise ArtifactError(f"{meta_path} lacks a field: {e}") from None
        if widths != self.obs_dim:
            raise ArtifactError(f"{meta_path}: observation layout sums to {widths}, "
                                f"dim says {self.obs_dim}")
        if backend not in ("onnx", "torchscript"):
            raise ArtifactError(f"backend must be onnx or torchscript, got {backend!r}")
        files = self.meta.get("files") or {}
        ts = backend == "torchscript"
        policy_file = files.get("policy_torchscript" if ts else "policy_onnx")
        if policy_file is None:
            raise ArtifactError(f"{meta_path} names no policy file for backend {backend!r}")
        self.backend = backend
        chunk = self.meta.get("chunk") or {}
        try:
            self.horizon = int(chunk.get("horizon", 1))
            self.execute = int(chunk.get("execute", 1))
            self.obs_history = int(chunk.get("obs_history", 1))
            self.noise_input = bool(chunk.get("noise_input", False))
            ensemble = chunk.get("ensemble")
            self.ensemble = None if ensemble is None else float(ensemble)
            self.clock = tuple(int(p) for p in chunk.get("clock") or ())
            """The periods of the clock the graph sees (empty: none)."""
        except (TypeError, ValueError) as e:
            raise ArtifactError(f"{meta_path}: bad chunk entry: {e}") from None
        self.chunked = bool(chunk)
        """The graph predicts chunks (``policy.json`` has ``chunk``)."""
        inputs = graph_inputs(self.meta)
        first_image = 1 + int(self.noise_input) + int(bool(self.clock))
        self.images: list[GraphInput] = inputs[first_image:]
        """The images the policy sees: (key, (C, H, W), dtype) each, in the graph's order."""
        if self.images and self.chunked:
            raise ArtifactError(f"{meta_path}: a chunked policy with cameras is not supported")
        self._run = self._load(policy_file, inputs, self.horizon * self.act_dim, "policy")
        self._executor: Any = None
        safety = self.meta.get("safety") or {}
        cost_file = (safety.get("cost_critic") or {}).get("torchscript" if ts else "onnx")
        self._cost = None
        if cost_file is not None:
            self._cost = self._load(cost_file, [("obs", (self.obs_dim,), "float32"),
                                                ("action", (self.act_dim,), "float32")],
                                    None, "cost critic")
        residual = self.meta.get("residual")
        self._residual = None
        self.residual_every = 1
        """Calls per residual decision (``policy.json``'s ``residual.every``)."""
        self._held_correction: HeldCorrection | None = None
        """Each env's correction held between decisions (``residual_every`` > 1)."""
        if residual is not None:
            self._residual = self._load(residual["torchscript" if ts else "onnx"],
                                        [("obs", (self.obs_dim,), "float32"),
                                         ("base_action", (self.act_dim,), "float32")],
                                        self.act_dim, "residual")
            try:
                self.residual_every = int(residual.get("every", 1))
            except (TypeError, ValueError):
                self.residual_every = 0
            if self.residual_every < 1:
                raise ArtifactError(f"{meta_path}: residual.every must be an integer >= 1, "
                                    f"got {residual.get('every')!r}")
            if self.residual_every > 1:
                from robot_rl.policies.execution import HeldCorrection

                self._held_correction = HeldCorrection(self.residual_every)
        self.threshold = float(safety.get("threshold", np.inf))
        self.candidates = int(safety.get("candidates", 1))
        self.candidate_noise = float(safety.get("candidate_noise", 0.3))
        self.fallback = safety.get("fallback", "least_cost")
        self._rng = np.random.default_rng(seed)
        self._gate: Any = None

    # -- properties --------------------------------------------------------------------------

    @property
    def joint_names(self) -> list[str]:
        return list(self.meta["robot"]["joint_names"])

    @property
    def control_hz(self) -> float:
        return float(self.meta["control"]["rate_hz"])

    @property
    def has_cost_critic(self) -> bool:
        return self._cost is not None

    # -- inference ---------------------------------------------------------------------------

    @property
    def cameras(self) -> list[str]:
        """The cameras whose images the policy sees (empty for a state policy)."""
        return list(dict.fromkeys(k.rsplit(".", 1)[0] for k, _, _ in self.images))

    def __call__(self, obs: np.ndarray, images: dict[str, np.ndarray] | None = None
                 ) -> np.ndarray:
        """Action(s) in [-1, 1] to apply now for observation(s): (O,) -> (A,) or
        (B, O) -> (B, A); a policy that sees cameras also takes ``images`` ({key: (C, H, W)}
        or batched). A chunked policy keeps state between calls (module docstring)."""
        x = np.asarray(obs, dtype=np.float32)
        single = x.ndim == 1
        if x.shape[-1] != self.obs_dim or x.ndim not in (1, 2):
            raise ArtifactError(f"observation must be ({self.obs_dim},) or (B, {self.obs_dim}), "
                                f"got {x.shape}")
        x = x[None] if single else x
        if self.images:
            out = self._run(x, *self._image_arrays(images, single, x.shape[0]))
        elif self.chunked:
            if self._executor is None:
                from robot_rl.policies.execution import ChunkExecutor

                def chunk(hist: np.ndarray, steps: np.ndarray | None = None) -> np.ndarray:
                    return self.chunk(hist, steps=steps)

                self._executor = ChunkExecutor(chunk, self.horizon, self.execute,
                                               self.obs_history, self.ensemble,
                                               clock=bool(self.clock))
            out = self._executor(x)
            if self._residual is not None:
                out = self._corrected(x, out)
        else:
            out = self._run(x)
        return out[0] if single else out

    def _image_arrays(self, images: dict[str, np.ndarray] | None, single: bool, batch: int
                      ) -> list[np.ndarray]:
        if images is None:
            raise ArtifactError(f"{self.path} sees cameras: pass images "
                                f"{[k for k, _, _ in self.images]}")
        out = []
        for key, shape, dtype in self.images:
            if key not in images:
                raise ArtifactError(f"missing image {key!r}; the policy sees "
                                    f"{[k for k, _, _ in self.images]}")
            a = np.asarray(images[key])
            a = a[None] if single else a
            if a.shape != (batch, *shape):
                raise ArtifactError(f"image {key!r} must be {(batch, *shape)[int(single):]}, "
                                    f"got {a.shape[int(single):]}")
            out.append(np.ascontiguousarray(a, dtype=dtype))
        return out

    def reset(self, mask: np.ndarray | None = None) -> None:
        """Start a new episode for every env (or those in ``mask`` (B,) bool): a chunked
        policy drops its observation history and queued actions."""
        if self._executor is not None:
            self._executor.reset(mask)
        if self._held_correction is not None:
            self._held_correction.reset(None if mask is None else np.asarray(mask, bool))

    def _corrected(self, obs: np.ndarray, base: np.ndarray) -> np.ndarray:
        """(B, A) the residual's actions on the chunk's (B, A) now, holding each env's
        correction for ``residual_every`` calls."""
        if self._held_correction is None:
            return self.correct(obs, base)
        return self._held_correction(base, lambda d: self.correct(obs[d], base[d]))

    def chunk(self, obs_hist: np.ndarray, noise: np.ndarray | None = None,
              steps: np.ndarray | None = None) -> np.ndarray:
        """The graph on observation histories (B, T, O): chunks (B, H, A). A flow policy's
        noise (B, H, A) is drawn from N(0, I) unless given; a graph that sees a clock takes
        ``steps`` (B,), the control steps since each episode's start."""
        x = np.ascontiguousarray(np.asarray(obs_hist, dtype=np.float32).reshape(
            -1, self.obs_history * self.obs_dim))
        args: list[np.ndarray] = [x]
        if self.noise_input:
            if noise is None:
                noise = self._rng.standard_normal((x.shape[0], self.horizon * self.act_dim))
            args.append(np.ascontiguousarray(np.asarray(noise, dtype=np.float32).reshape(
                x.shape[0], -1)))
        if self.clock:
            if steps is None:
                raise ArtifactError(f"{self.path} sees a clock of periods {list(self.clock)}: "
                                    "pass the steps since each episode's start")
            args.append(np.asarray(steps, dtype=np.int64).reshape(x.shape[0], 1))
        return self._run(*args).reshape(-1, self.horizon, self.act_dim)

    def correct(self, obs: np.ndarray, base: np.ndarray) -> np.ndarray:
        """A residual artifact's actions (B, A) for observations (B, O) and the chunk
        policy's actions (B, A) at them (``policy.json``'s ``residual``)."""
        if self._residual is None:
            raise ArtifactError(f"{self.path} has no residual")
        return self._residual(np.ascontiguousarray(obs, dtype=np.float32),
                              np.ascontiguousarray(base, dtype=np.float32))

    def run_graph(self, *inputs: np.ndarray) -> np.ndarray:
        """The exported graph's raw output for its raw inputs (what the export checks)."""
        return self._run(*inputs)

    def cost(self, obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Estimated discounted cost (K,) of K candidate actions (K, A) at one obs (O,)."""
        if self._cost is None:
            raise ArtifactError(f"{self.path} has no cost critic (trained with --safety off)")
        a = np.asarray(actions, dtype=np.float32).reshape(-1, self.act_dim)
        x = np.broadcast_to(np.asarray(obs, dtype=np.float32), (a.shape[0], self.obs_dim))
        return self._cost(np.ascontiguousarray(x), a)

    def safe_action(self, obs: np.ndarray) -> tuple[np.ndarray, bool, bool]:
        """(action (A,), hold, rejected) through the safety-critic gate.

        Candidates: the policy's action first, then K-1 Gaussian perturbations of it
        (``candidate_noise``); the first under the threshold wins, else the least-cost one,
        or a hold when the artifact's fallback is "hold". Without a cost critic: the action.
        """
        return self.gate(obs, self(obs))

    def gate(self, obs: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, bool, bool]:
        """``safe_action`` for an action (A,) the policy already gave at ``obs``."""
        if self._cost is None or self.candidates <= 1:
            return a, False, False
        if self._gate is None:
            from robot_rl.algos.gate import ActionGate

            self._gate = ActionGate(self.threshold, self.fallback)
        noise = self._rng.standard_normal((self.candidates - 1, self.act_dim)) \
            * self.candidate_noise
        cands = np.concatenate([a[None], np.clip(a + noise, -1.0, 1.0)]).astype(np.float32)
        res = self._gate(cands[None], self.cost(obs, cands)[None])
        return res.action[0], bool(res.hold[0]), bool(res.rejected[0])

    # -- loading -----------------------------------------------------------------------------

    def _load(self, name: str, inputs: list[GraphInput], out_dim: int | None,
              what: str) -> Any:
        file = self.path / name
        if not file.is_file():
            raise ArtifactError(f"{what} file {file} is missing")
        if self.backend == "torchscript":
            return _torchscript(file, inputs, out_dim, what)
        return _onnx(file, inputs, out_dim, what)


def _onnx(file: Path, inputs: list[GraphInput], out_dim: int | None, what: str) -> Any:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1  # one small sample: threads only add latency
    opts.inter_op_num_threads = 1
    try:
        sess = ort.InferenceSession(str(file), opts, providers=["CPUExecutionProvider"])
    except Exception as e:
        raise ArtifactError(f"cannot load {what} {file}: {e}") from None
    got = [(i.name, tuple(i.shape[1:])) for i in sess.get_inputs()]
    want = [(n, shape) for n, shape, _ in inputs]
    if got != want:
        raise ArtifactError(f"{file}: inputs {got} do not match policy.json {want}")
    out_shape = sess.get_outputs()[0].shape
    if out_dim is not None and out_shape[-1] != out_dim:
        raise ArtifactError(f"{file}: output width {out_shape[-1]} does not match the action "
                            f"dim {out_dim} of policy.json")
    names = [n for n, _, _ in inputs]
    if out_dim is None:
        def run(*arrays: np.ndarray) -> np.ndarray:
            return sess.run(None, dict(zip(names, arrays, strict=True)))[0]

        return run
    # One sample at a time (the deploy loop): onnxruntime reads and writes these buffers in
    # place, which skips most of its per-call argument handling.
    ones = [np.zeros((1, *shape), np.dtype(dtype)) for _, shape, dtype in inputs]
    y1 = np.zeros((1, out_dim), np.float32)
    binding = sess.io_binding()
    for name, buf in zip(names, ones, strict=True):
        binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(buf))
    binding.bind_ortvalue_output(sess.get_outputs()[0].name, ort.OrtValue.ortvalue_from_numpy(y1))

    def run_one(*arrays: np.ndarray) -> np.ndarray:
        if arrays[0].shape[0] != 1:
            return sess.run(None, dict(zip(names, arrays, strict=True)))[0]
        for buf, a in zip(ones, arrays, strict=True):
            buf[...] = a
        sess.run_with_iobinding(binding)
        return y1.copy()

    return run_one


def _torchscript(file: Path, inputs: list[GraphInput], out_dim: int | None,
                 what: str) -> Any:
    import warnings

    import torch

    try:
        with warnings.catch_warnings():  # torch.jit.load is deprecated, libtorch still loads it
            warnings.simplefilter("ignore", DeprecationWarning)
            module = torch.jit.load(str(file), map_location="cpu").eval()
    except Exception as e:
        raise ArtifactError(f"cannot load {what} {file}: {e}") from None
    probe = [torch.zeros((1, *shape), dtype=getattr(torch, dtype)) for _, shape, dtype in inputs]
    try:
        with torch.no_grad():
            out = module(*probe)
    except Exception as e:
        raise ArtifactError(f"{file} does not accept inputs {inputs}: {e}") from None
    if out_dim is not None and out.shape[-1] != out_dim:
        raise ArtifactError(f"{file}: output width {out.shape[-1]} does not match the action "
                            f"dim {out_dim} of policy.json")

    def run(*arrays: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return module(*(torch.from_numpy(a) for a in arrays)).numpy()

    return run


def load_policy(path: str | Path, backend: Backend = "onnx", seed: int = 0) -> Policy:
    """The policy in artifact folder ``path`` (see module docstring)."""
    return Policy(path, backend=backend, seed=seed)
