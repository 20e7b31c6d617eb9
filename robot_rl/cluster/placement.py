"""Where Ray placed the calling actor (its node and process): the tests of placement and of
restarts read it."""

from __future__ import annotations

import os


def where() -> tuple[str, int]:
    """(Ray node id, process id) of the calling actor: where Ray placed it."""
    import ray

    return ray.get_runtime_context().get_node_id(), os.getpid()
