"""The render farm: world models in Ray actors, one per GPU (``num_gpus=1``), or on a machine with no GPU a few
actors running a CPU renderer (schematic, tiny-Wan). Each actor builds its model (loads its weights) once.

A job is one scenario's chains, so one actor renders them in action-chain order (a clip is conditioned on its
parent's last frame, found in the content-keyed cache that the actors share on the cluster's filesystem).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from conflictbench_app.executors.ray_executor import ray_session, worker_env

RenderJob = tuple[Any, list[tuple[str, list[str]]]]  # (scenario, [(chain name, commands), ...])


def render_job(model: Any, job: RenderJob) -> list[dict[str, Any]]:
    """Render (or find in the cache) the base clip and every step clip of each chain of ``job``."""
    from conflictbench_app.worldmodel.chain import play_chain

    scenario, chains = job
    rows = []
    for name, commands in chains:
        played = play_chain(scenario, commands)
        clips = [model.base_clip(scenario)]
        clips += [model.step_clip(scenario, played.turns[: i + 1]) for i in range(len(played.turns))]
        rows.append(
            {
                "scenario": scenario.id,
                "chain": name,
                "clips": len(clips),
                "refused": played.refused,
                "hits": sum(c.cache_hit for c in clips),
                "seconds": sum(c.seconds for c in clips),
            }
        )
    return rows


class RenderActor:
    """One world model, built once, rendering the jobs it is sent."""

    def __init__(self, make_model: Callable[[], Any]) -> None:
        self.model = make_model()

    def name(self) -> str:
        return str(self.model.name)

    def render(self, job: RenderJob) -> list[dict[str, Any]]:
        return render_job(self.model, job)


def render_on_ray(
    make_model: Callable[[], Any], jobs: Sequence[RenderJob], *, address: str | None, actors: int | None
) -> Iterator[list[dict[str, Any]]]:
    """Each job's rows as it finishes, rendered by ``actors`` actors (default: one per GPU of the cluster, or 2
    on CPU)."""
    with ray_session(address) as ray:
        from ray.util import ActorPool

        gpus = int(ray.cluster_resources().get("GPU", 0))
        count = actors or gpus or 2
        options: dict[str, Any] = {"num_gpus": 1} if gpus else {"num_cpus": 1}
        actor_cls = ray.remote(RenderActor).options(**options, runtime_env={"env_vars": worker_env()})
        pool = ActorPool([actor_cls.remote(make_model) for _ in range(count)])
        yield from pool.map_unordered(lambda actor, job: actor.render.remote(job), list(jobs))
