"""SAC's gradient step as one compiled function (``SACConfig.compile``).

    agent.compile_update()                       # or SACConfig(compile=True)
    metrics = agent.update(batch)                # now one call of the compiled step

The eager ``SAC.update`` runs each loss's backward and its optimizer's step in turn: dozens
of small operations, each launched on its own (a kernel launch on a GPU, a few microseconds
of dispatch on a CPU). Here the same step is one function of tensors that ``torch.compile``
turns into one graph (FastTD3's and FastSAC's recipe; on a GPU a CUDA graph replays it):

1. the TD targets of the critics and the cost critic;
2. each critic's loss and its gradient (``torch.func.grad``), then its Adam step;
3. with the actor's turn, the actor's loss on the updated critics, its gradient and Adam
   step, then the temperature's;
4. Polyak averaging of the target networks.

The losses are the agent's own methods (``SAC.td_targets``, ``critic_loss``,
``cost_loss``, ``actor_loss``, ``temperature_loss``), called with
``torch.func.functional_call`` on views of its parameters, so the eager step and this one
compute the same thing by the same code. Adam is written out here with the semantics of
``torch.optim.Adam`` (no weight decay, no AMSGrad) on the optimizers' own state tensors
(``exp_avg``, ``exp_avg_sq``, ``step``), so a checkpoint holds one optimizer state whichever
step wrote it, and a run may switch between the two (a step with a critic regularizer,
Cal-QL's, always runs eagerly). The random numbers are drawn inside the graph
(``randn_like``); the ensemble subset of the TD target is drawn outside it, from the
agent's generator, as the eager step draws it. ``tests/robot_rl/test_compiled_update.py``
holds 100 compiled steps to 100 eager ones from the same seed.

What is not compiled, with the reason: an agent whose step reads a ``torch.Generator``
(``PixelSAC``'s image shifts and samples) or replaces the actor's update (AWAC in
``finetune.robot``) is refused at ``compile_update``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.func import functional_call, grad_and_value

from robot_rl.errors import ConfigError
from robot_rl.replay import Batch

Metrics = dict[str, torch.Tensor]
"""The step's metrics (``robot_rl.algos.sac.Metrics``)."""


class _Methods(nn.Module):
    """The agent's methods as one module's forward, for ``functional_call``: its
    parameters and buffers are the agent's, named ``agent.<name>``."""

    def __init__(self, agent: nn.Module):
        super().__init__()
        self.agent = agent

    def forward(self, method: str, *args: Any) -> Any:
        return getattr(self.agent, method)(*args)


class _AdamGroup:
    """One ``torch.optim.Adam``'s parameters and state, as tensors a compiled function
    updates in place (``torch.optim.Adam``'s arithmetic, its hyper-parameters fixed)."""

    def __init__(self, opt: torch.optim.Optimizer, names: dict[int, str]):
        if len(opt.param_groups) != 1:
            raise ConfigError("the compiled step takes optimizers of one parameter group")
        group = opt.param_groups[0]
        if group.get("weight_decay", 0) or group.get("amsgrad") or group.get("maximize"):
            raise ConfigError("the compiled step's Adam has no weight decay, AMSGrad or "
                              "maximize")
        params: list[nn.Parameter] = list(group["params"])
        self.names = [names[id(p)] for p in params]
        self.lr, (self.beta1, self.beta2), self.eps = (float(group["lr"]),
                                                       group["betas"], float(group["eps"]))
        for p in params:  # the state Adam makes at its first step, made now
            state = opt.state[p]
            if not state:
                state["step"] = torch.zeros((), dtype=torch.float32, device=p.device)
                state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["exp_avg_sq"] = torch.zeros_like(p,
                                                       memory_format=torch.preserve_format)
        self.step = [opt.state[p]["step"] for p in params]
        self.exp_avg = [opt.state[p]["exp_avg"] for p in params]
        self.exp_avg_sq = [opt.state[p]["exp_avg_sq"] for p in params]

    def tensors(self) -> list[torch.Tensor]:
        return [*self.step, *self.exp_avg, *self.exp_avg_sq]

    @torch.no_grad()
    def apply(self, params: dict[str, torch.Tensor], grads: dict[str, torch.Tensor]) -> None:
        """One Adam step of ``params`` (its names' tensors, updated in place) on ``grads``."""
        b1, b2 = self.beta1, self.beta2
        for i, name in enumerate(self.names):
            p, g = params[name], grads[name]
            step = self.step[i].add_(1.0)
            self.exp_avg[i].lerp_(g, 1.0 - b1)
            self.exp_avg_sq[i].mul_(b2).addcmul_(g, g, value=1.0 - b2)
            step_size = self.lr / (1.0 - b1 ** step)
            denom = (self.exp_avg_sq[i].sqrt() / (1.0 - b2 ** step).sqrt()).add_(self.eps)
            p.sub_(step_size * self.exp_avg[i] / denom)


class CompiledUpdate:
    """``SAC.update`` as one compiled function (see the module docstring); ``agent``: the
    ``robot_rl.algos.sac.SAC`` whose step it is (not imported here: SAC builds this)."""

    def __init__(self, agent: Any):
        agent.check_compilable()
        self.agent = agent
        cfg = agent.cfg
        self.module = _Methods(agent)
        named = dict(agent.named_parameters()) | dict(agent.named_buffers())
        self.tensors = {f"agent.{k}": v.detach() for k, v in named.items()}
        """Every parameter and buffer of the agent: detached views of the same storage, so
        the modules that act and export see each step's values."""
        names = {id(p): f"agent.{k}" for k, p in agent.named_parameters()}
        self.critic = _AdamGroup(agent.critic_opt, names)
        self.cost = None if agent.cost_opt is None else _AdamGroup(agent.cost_opt, names)
        self.actor = _AdamGroup(agent.actor_opt, names)
        self.alpha = _AdamGroup(agent.alpha_opt, names)
        self.polyak = [([names[id(p)] for p in target.parameters()],
                        [names[id(p)] for p in source.parameters()])
                       for target, source in agent.polyak_pairs()]
        self.cuda = agent.device.type == "cuda"
        self.bf16 = cfg.bf16 and self.cuda
        """bf16 autocast of the networks' forward passes (``SACConfig.bf16``; GPU only)."""
        self._anchor = torch.zeros((), device=agent.device)
        """The weight of ``SACConfig.anchor`` now, as a tensor (a number would be compiled
        in, and the residual fades it every step)."""
        if self.cuda and cfg.cuda_graphs:
            for t in [*self.tensors.values(), self._anchor, agent.lagrange.param,
                      *(t for g in self._groups() for t in g.tensors())]:
                torch._dynamo.mark_static_address(t)
        mode = "reduce-overhead" if self.cuda and cfg.cuda_graphs else None
        self._fn: Callable[..., Metrics] = torch.compile(self._step, mode=mode, dynamic=False)
        self.compile_seconds: dict[bool, float] = {}
        """Seconds of each graph's first call (with and without the actor's turn): its
        compile, or its load from torch's cache (the benchmarks report them)."""

    def _groups(self) -> list[_AdamGroup]:
        return [g for g in (self.critic, self.cost, self.actor, self.alpha) if g is not None]

    def step(self, batch: Batch, subset: torch.Tensor, with_actor: bool) -> Metrics:
        """One compiled gradient step on ``batch``; ``subset``: the critics whose minimum
        forms the TD target; ``with_actor``: the actor's and temperature's turn too."""
        agent = self.agent
        if agent.cfg.anchor > 0:
            self._anchor.fill_(agent.mean_anchor)
        if self.cuda and agent.cfg.cuda_graphs:
            torch.compiler.cudagraph_mark_step_begin()
        first = with_actor not in self.compile_seconds
        t0 = time.perf_counter()
        metrics = self._fn(batch.obs, batch.action, batch.reward, batch.cost, batch.next_obs,
                           batch.terminated, dict(batch.extra), subset, with_actor)
        if first:
            if self.cuda:
                torch.cuda.synchronize(agent.device)
            self.compile_seconds[with_actor] = time.perf_counter() - t0
        # a CUDA graph's outputs are overwritten by its next replay: copies leave with them
        return {k: v.clone() for k, v in metrics.items()} if self.cuda else metrics

    def _call(self, method: str, *args: Any, params: dict[str, torch.Tensor] | None = None
              ) -> Any:
        """The agent's ``method`` on its tensors, those in ``params`` replacing theirs."""
        tensors = self.tensors if params is None else self.tensors | params
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.bf16):
            return functional_call(self.module, tensors, (method, *args))

    def _grad(self, group: _AdamGroup, loss: Callable[..., tuple[torch.Tensor, Any]]) -> Any:
        """The Adam step of ``group``'s parameters on the gradient of ``loss(params)``,
        which returns (loss, aux); the aux."""
        params = {n: self.tensors[n] for n in group.names}
        grads, (_, aux) = grad_and_value(loss, has_aux=True)(params)
        group.apply(self.tensors, grads)
        return aux

    def _step(self, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor,
              cost: torch.Tensor, next_obs: torch.Tensor, terminated: torch.Tensor,
              extra: dict[str, torch.Tensor], subset: torch.Tensor, with_actor: bool
              ) -> Metrics:
        """The function compiled: the eager ``SAC._eager_update`` of tensors."""
        agent = self.agent
        batch = Batch(obs, action, reward, cost, next_obs, terminated, extra)
        x, next_x = self._call("normalize", obs), self._call("normalize", next_obs)
        y, yc = self._call("td_targets", batch, next_x, subset)

        def critic_loss(params: dict[str, torch.Tensor]) -> tuple[torch.Tensor, Metrics]:
            loss, _, m = self._call("critic_loss", x, action, y, params=params)
            return loss, m

        metrics = self._grad(self.critic, critic_loss)
        if self.cost is not None:
            m = self._grad(self.cost, lambda p: self._call("cost_loss", x, action, yc,
                                                            params=p))
            metrics |= m
        if with_actor:
            lam: float | torch.Tensor = agent.lagrange.param.detach() \
                if agent.safety_cfg.lagrangian else 0.0
            anchor: float | torch.Tensor = self._anchor if agent.cfg.anchor > 0 else 0.0

            def actor_loss(params: dict[str, torch.Tensor]
                           ) -> tuple[torch.Tensor, tuple[torch.Tensor, Metrics]]:
                loss, logp, m = self._call("actor_loss", batch, x, lam, anchor,
                                           params=params)
                return loss, (logp.detach(), m)

            logp, m = self._grad(self.actor, actor_loss)
            metrics |= m
            m = self._grad(self.alpha, lambda p: self._call("temperature_loss", logp,
                                                             params=p))
            metrics |= m | {"charts/alpha": self.tensors["agent.log_alpha"].exp()}
        with torch.no_grad():
            for target, source in self.polyak:
                torch._foreach_lerp_([self.tensors[n] for n in target],
                                     [self.tensors[n] for n in source], agent.cfg.tau)
        return metrics
