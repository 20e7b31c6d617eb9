"""The compiled gradient step (``robot_rl.algos.compiled_update``) against the eager one."""

from __future__ import annotations

import pytest
import torch
import torch._inductor.config

from robot_rl.algos import SAC
from robot_rl.algos.configs import SACConfig, SafetyConfig
from robot_rl.errors import ConfigError
from robot_rl.finetune.residual_base import ExecutedActionSAC
from robot_rl.nstep import COST_DISCOUNT, DISCOUNT
from robot_rl.replay import ReplayBuffer


def _agent(compile: bool) -> SAC:
    """A residual's agent (critics scoring executed actions) with every term of the step:
    three critics and a random pair for the target, n-step discounts, the cost critic with a
    positive multiplier, the anchor's pull."""
    torch.manual_seed(0)
    sac = SACConfig(gamma=0.9, num_critics=3, critic_subset=2, actor_hidden=(16, 16),
                    critic_hidden=(16, 16), batch_size=64, anchor=0.2, compile=compile)
    agent = ExecutedActionSAC(6, 2, sac, SafetyConfig(mode="both", hidden=(16,),
                                                      lambda_init=0.5), scale=0.3, seed=1)
    agent.mean_anchor = 0.1
    return agent


def _buffer() -> ReplayBuffer:
    g = torch.Generator().manual_seed(2)
    n = 512
    buf = ReplayBuffer(n, 6, 2, extra={DISCOUNT: ((), torch.float32),
                                       COST_DISCOUNT: ((), torch.float32)})
    buf.add(torch.randn(n, 6, generator=g), torch.rand(n, 2, generator=g) * 2 - 1,
            torch.randn(n, generator=g), (torch.rand(n, generator=g) < 0.3).float(),
            torch.randn(n, 6, generator=g), (torch.rand(n, generator=g) < 0.1).float(),
            extra={DISCOUNT: torch.full((n,), 0.81), COST_DISCOUNT: torch.full((n,), 0.7)})
    return buf


def _train(compile: bool, steps: int) -> tuple[SAC, list[dict[str, float]]]:
    agent, buf = _agent(compile), _buffer()
    agent.observe(buf.obs)
    torch.manual_seed(3)  # the actor's samples: the same stream for both
    history = []
    for _ in range(steps):
        metrics = agent.update(buf.sample(64, agent.gen))
        history.append({k: float(v) for k, v in metrics.items()})
    return agent, history


@pytest.mark.slow
def test_compiled_step_follows_the_eager_step_for_100_updates():
    """Same seed, 100 updates: every parameter, optimizer moment and metric within float
    tolerance of the eager step's (inductor's random numbers set to eager's own, so both
    draw the same samples; otherwise only the arithmetic's rounding differs)."""
    eager, eager_metrics = _train(False, 100)
    with torch._inductor.config.patch(fallback_random=True):
        compiled, compiled_metrics = _train(True, 100)
    assert compiled.compiled is not None and eager.compiled is None
    assert compiled.updates == eager.updates == 100
    for (name, a), b in zip(eager.state_dict().items(), compiled.state_dict().values(),
                            strict=True):
        torch.testing.assert_close(b, a, atol=2e-4, rtol=1e-3, msg=name)
    for opt in ("critic_opt", "cost_opt", "actor_opt", "alpha_opt"):
        a, b = getattr(eager, opt).state_dict()["state"], getattr(compiled,
                                                                  opt).state_dict()["state"]
        for i in a:
            assert float(b[i]["step"]) == float(a[i]["step"]) == 100
            for key in ("exp_avg", "exp_avg_sq"):
                torch.testing.assert_close(b[i][key], a[i][key], atol=1e-5, rtol=1e-3)
    assert eager_metrics[0].keys() == compiled_metrics[0].keys()
    for first, second in zip(eager_metrics, compiled_metrics, strict=True):
        for key, value in first.items():
            assert second[key] == pytest.approx(value, rel=1e-3, abs=1e-4), key
    # the checkpoint of the compiled step resumes eagerly (one optimizer state)
    resumed = _agent(False)
    resumed.load_full_state(compiled.full_state())
    resumed.update(_buffer().sample(64, resumed.gen))
    assert resumed.updates == 101


def test_an_agent_whose_step_reads_a_generator_is_refused():
    from robot_rl.vision.pixel_sac import PixelSAC

    agent = SAC(4, 2, SACConfig(gamma=0.9), SafetyConfig(mode="off"))
    agent.eager_only = lambda: PixelSAC.eager_only(agent)  # type: ignore[method-assign]
    with pytest.raises(ConfigError, match="pixel SAC.*torch.Generator"):
        agent.compile_update()
