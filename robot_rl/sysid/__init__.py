"""System identification: fit the arm's dynamics to its own recordings with the batched
simulator, so training starts from the measured arm (``robot-rl sysid``).

    excitation       the trajectory that makes the dynamics show (multisine, then steps)
    replay           a recording replayed under many candidate parameter sets in one batch
    fit              CMA-ES over those batches; values, uncertainty, errors before and after
"""
