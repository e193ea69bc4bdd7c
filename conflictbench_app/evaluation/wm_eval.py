"""World-model quality (the paper's Tables 4 and 7): recorded trajectories replayed through several renderers, five
frames per clip judged by a vision-language model on four dimensions.

Each sampled episode's accepted actions are rebuilt into turns (:func:`worldmodel.chain.visual_turns`) and rendered
through every named renderer with the same prompt writer, through the clip cache (a repeat costs nothing). Every
clip, the base clip included, is judged once per dimension with that dimension's own versioned prompt; five frames
are sampled uniformly (:func:`five_frames`). Replies are read strictly: an unusable one is retried with the reason,
then stored as ``unparsed`` with no score. Judgments already scored by the same judge with the same prompt are
skipped, so a killed run resumes where it stopped.

Known difference from the paper: each renderer conditions a step clip on its own previous clip's last frame (as an
agent would see it), not on one shared frame.
"""

from __future__ import annotations

import functools
import random
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conflictbench_app.cancel import collect
from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.evaluation.judge import ChatLike, JsonAnswer, ask_json
from conflictbench_app.evaluation.prompts import Prompt, load_prompt
from conflictbench_app.records import ENDED_STATUSES, EpisodeRecord, Usage, WorldModelJudgment
from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.store.db import new_id, now
from conflictbench_app.worldmodel.types import Clip, ClipMissing, ClipSpec, TurnVisual, WorldModelError

FRAMES_PER_CLIP = 5
TOKENS_PER_IMAGE = 85  # a low-detail image on OpenAI-style APIs
TEXT_TOKENS = 450  # a dimension's prompt and the clip's instruction, about
REPLY_TOKENS = 80


@dataclass(frozen=True)
class Dimension:
    """One judged dimension: its own prompt, and the sub-scores the reply must carry (name -> maximum)."""

    name: str
    title: str
    prompt: str
    subs: dict[str, int]

    def required(self) -> dict[str, tuple[str, ...] | type]:
        return {**{sub: int for sub in self.subs}, "rationale": str}

    def check(self, value: dict[str, Any]) -> str:
        """The problem with a parsed reply (a sub-score that is not a whole number in range), or ""."""
        for sub, top in self.subs.items():
            item = value[sub]
            if isinstance(item, bool) or not 0 <= item <= top:
                return f"{sub!r} must be a whole number from 0 to {top}, not {item!r}"
        return ""

    def normalised(self, value: dict[str, Any]) -> dict[str, float]:
        return {sub: value[sub] / top for sub, top in self.subs.items()}


DIMENSIONS: tuple[Dimension, ...] = (
    Dimension(
        "instruction_following",
        "Instruction Following",
        "wm_instruction_following",
        {"instruction_following": 3},
    ),
    Dimension(
        "physical_plausibility",
        "Physical Plausibility",
        "wm_physical_plausibility",
        {"newton": 1, "mass": 1, "fluid": 1, "penetration": 1, "gravity": 1},
    ),
    Dimension("commonsense", "Commonsense", "wm_commonsense", {"frame_quality": 1, "temporal_quality": 1}),
    Dimension(
        "task_informativeness",
        "Task Visual Informativeness",
        "wm_task_informativeness",
        {"action_feedback": 1, "key_states": 1, "risk_visible": 1},
    ),
)


def five_frames(frame_count: int, count: int = FRAMES_PER_CLIP) -> list[int]:
    """``count`` frame numbers spread uniformly from the first frame to the last (49 frames: 0, 12, 24, 36, 48)."""
    if frame_count < 1:
        raise WorldModelError("A clip with no frames cannot be sampled.")
    if frame_count <= count:
        return list(range(frame_count))
    return [round(i * (frame_count - 1) / (count - 1)) for i in range(count)]


# -- renderers -------------------------------------------------------------------------------------------------


def build_renderer(
    spec: str, *, cache_dir: Path | None = None, clip: ClipSpec | None = None, **extra: Any
) -> Any:
    """A world model from ``schematic``, ``wan:PATH`` (a weights folder) or ``replay:DIR`` (a folder of clips named
    ``<scenario id>.mp4``, as the paper's base videos are); ``extra`` goes to its constructor (e.g. Wan's
    ``options``)."""
    from conflictbench_app.worldmodel import get_world_model

    name, _, arg = spec.partition(":")
    options: dict[str, Any] = {"cache_dir": cache_dir, "spec": clip, **extra}
    if name == "wan":
        if not arg:
            raise ConflictBenchError("Give the Wan weights folder: --renderers wan:PATH.")
        options["model_dir"] = Path(arg)
    elif name == "replay":
        if not arg or not Path(arg).is_dir():
            raise ConflictBenchError(f"replay:DIR needs an existing folder of clips, not {arg!r}.")
        options["import_dir"] = Path(arg)
    elif arg:
        raise ConflictBenchError(f"The {name} renderer takes no argument; write {name!r}, not {spec!r}.")
    return get_world_model(name, **{k: v for k, v in options.items() if v is not None})


# -- sampling --------------------------------------------------------------------------------------------------


def sample_episodes(store: Any, run_ids: Sequence[str], sample: int, seed: int) -> list[EpisodeRecord]:
    """Up to ``sample`` ended, unassisted episodes of the runs, seeded, stratified by category (taken in turn from
    each category's shuffled list, so a small sample still covers every category)."""
    by_category: dict[str, list[EpisodeRecord]] = {}
    for run_id in run_ids:
        store.get_run(run_id)
        for episode in store.episodes(run_id):
            if episode.status in ENDED_STATUSES and not episode.assisted:
                by_category.setdefault(episode.category, []).append(episode)
    rng = random.Random(seed)
    pools = []
    for category in sorted(by_category):
        pool = sorted(by_category[category], key=lambda e: e.id)
        rng.shuffle(pool)
        pools.append(pool)
    chosen: list[EpisodeRecord] = []
    while len(chosen) < sample and any(pools):
        for pool in pools:
            if pool and len(chosen) < sample:
                chosen.append(pool.pop(0))
    return chosen


@dataclass(frozen=True)
class ClipJob:
    """One clip to judge on one dimension."""

    renderer: str
    episode: EpisodeRecord
    step: int
    action: str
    clip: Clip
    dimension: Dimension
    prompt: Prompt


@dataclass
class WmEvalPlan:
    """What a run will do: the trajectories' turns, how many clips and judgments, and the cost estimate."""

    episodes: list[tuple[EpisodeRecord, Scenario, list[TurnVisual]]]
    renderers: list[str]
    clips: int = 0
    judgments: int = 0

    @property
    def frames(self) -> int:
        return self.judgments * FRAMES_PER_CLIP

    def estimate(self, model: str) -> dict[str, Any]:
        """Tokens and USD for every judgment (an upper bound: retries and resumed work are not subtracted)."""
        from conflictbench_app.agents.pricing import price_for

        prompt_tokens = self.judgments * (TEXT_TOKENS + FRAMES_PER_CLIP * TOKENS_PER_IMAGE)
        completion_tokens = self.judgments * REPLY_TOKENS
        price = price_for(model)
        usd = None if price is None else round(price.cost(prompt_tokens, completion_tokens), 4)
        return {
            "clips": self.clips,
            "judgments": self.judgments,
            "frames": self.frames,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "usd": usd,
        }


def plan(
    store: Any,
    run_ids: Sequence[str],
    renderers: Sequence[str],
    scenario_of: Callable[[str], Scenario],
    *,
    sample: int = 50,
    seed: int = 1,
) -> WmEvalPlan:
    """Sample the trajectories and count what judging them costs (nothing is rendered yet)."""
    from conflictbench_app.worldmodel.chain import visual_turns

    result = WmEvalPlan([], list(renderers))
    for episode in sample_episodes(store, run_ids, sample, seed):
        scenario = scenario_of(episode.scenario_id)
        turns = visual_turns(scenario, store.steps(episode.id), ending_id=episode.ending_id)
        result.episodes.append((episode, scenario, turns))
        result.clips += (len(turns) + 1) * len(renderers)
    result.judgments = result.clips * len(DIMENSIONS)
    return result


# -- judging ---------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def clip_frame_urls(
    path: Path, last_frame: Path, frame_count: int
) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The five frames of a clip as JPEG data URLs (at most 512 px a side) and their frame numbers. Kept for the
    clip's other dimensions: a clip is decoded once, not once per dimension."""
    from conflictbench_app.worldmodel.video import data_url, encode_image, load_png, read_frames

    indices = five_frames(frame_count)
    frames = list(read_frames(path, indices))
    if len(frames) != len(indices):
        raise WorldModelError(
            f"The clip {path} has fewer frames than its record says; delete its cache entry."
        )
    if indices[-1] == frame_count - 1 and last_frame.is_file():
        frames[-1] = load_png(last_frame)  # the lossless last frame, as agents are shown it
    return tuple(data_url(encode_image(f, max_side=512)) for f in frames), tuple(indices)


def judge_messages(job: ClipJob) -> tuple[list[dict[str, Any]], list[int]]:
    """The dimension's prompt, then the instruction and the five frames (JPEG data URLs, low detail)."""
    urls, indices = clip_frame_urls(job.clip.path, job.clip.last_frame, job.clip.frames)
    text = (
        f"Instruction given to the video model:\n{job.clip.prompt.strip() or '(none)'}\n\n"
        f"Action shown: {job.action or '(the opening scene, no action yet)'}\n"
        f"The {len(urls)} frames follow, in order (frame numbers {', '.join(map(str, indices))} of "
        f"{job.clip.frames})."
    )
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for url in urls:
        parts.append({"type": "image_url", "image_url": {"url": url, "detail": "low"}})
    return [{"role": "system", "content": job.prompt.text}, {"role": "user", "content": parts}], list(indices)


def judge_clip(client: ChatLike, job: ClipJob, max_attempts: int) -> tuple[JsonAnswer, list[int]]:
    """Extract the frames and ask the judge about one dimension (called from worker threads)."""
    messages, indices = judge_messages(job)
    dimension = job.dimension
    answer = ask_json(
        client, messages, dimension.required(), max_attempts=max_attempts, check=dimension.check
    )
    return answer, indices


def judgment_record(
    job: ClipJob,
    answer: JsonAnswer,
    indices: list[int],
    judge: str,
    batch: str,
    renderer_info: dict[str, Any],
) -> WorldModelJudgment:
    value = answer.value
    subs = job.dimension.normalised(value) if value is not None else {}
    return WorldModelJudgment(
        id=new_id(),
        batch=batch,
        renderer=job.renderer,
        backend=job.clip.backend,
        weights_id=str(job.clip.meta.get("revision", renderer_info.get("revision", ""))),
        renderer_settings=renderer_info.get("settings", {}),
        clip_key=job.clip.key,
        clip_path=str(job.clip.path),
        run_id=job.episode.run_id,
        episode_id=job.episode.id,
        scenario_id=job.episode.scenario_id,
        category=job.episode.category,
        step=job.step,
        action=job.action,
        dimension=job.dimension.name,
        status="scored" if value is not None else "unparsed",
        score=round(sum(subs.values()) / len(subs), 6) if subs else None,
        subscores=subs,
        rationale=str((value or {}).get("rationale", "")).strip(),
        frames=indices,
        judge=judge,
        model=answer.model,
        prompt_id=job.prompt.id,
        prompt_sha=job.prompt.sha,
        replies=answer.replies,
        attempts=len(answer.replies),
        usage=answer.usage,
        created_at=now(),
        meta={"problems": answer.problems},
    )


@dataclass
class WmProgress:
    """One event of a wm-eval run: ``rendered``, ``missing`` (a replay folder lacks the clip), ``skipped`` (already
    scored), ``judged`` or ``failed`` (the judge could not be reached; nothing stored)."""

    action: str
    renderer: str
    episode_id: str
    step: int
    dimension: str = ""
    judgment: WorldModelJudgment | None = None
    error: str = ""


@dataclass
class WmEvalResult:
    events: list[WmProgress] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)

    def count(self, action: str) -> int:
        return sum(1 for e in self.events if e.action == action)


def run_wm_eval(
    store: Any,
    work: WmEvalPlan,
    models: dict[str, Any],
    client: ChatLike,
    judge: str,
    *,
    concurrency: int = 1,
    max_attempts: int = 3,
    progress: Callable[[WmProgress], None] | None = None,
) -> WmEvalResult:
    """Render every clip of the plan through every renderer (``models``: name -> world model), then judge what is
    not yet scored, ``concurrency`` judgments at a time; each judgment is stored as it arrives (main thread)."""
    result = WmEvalResult()

    def report(item: WmProgress) -> None:
        result.events.append(item)
        if progress is not None:
            progress(item)

    prompts = {d.name: load_prompt(d.prompt) for d in DIMENSIONS}
    done = store.wm_scored_keys(judge)
    jobs: list[ClipJob] = []
    for renderer in work.renderers:
        for clip, episode, step, action in _render_all(work, renderer, models[renderer], report):
            for dimension in DIMENSIONS:
                prompt = prompts[dimension.name]
                job = ClipJob(renderer, episode, step, action, clip, dimension, prompt)
                if (renderer, clip.key, dimension.name, prompt.sha) in done:
                    report(WmProgress("skipped", renderer, episode.id, step, dimension.name))
                else:
                    jobs.append(job)
    info = {name: _renderer_info(model) for name, model in models.items()}
    batch = new_id()
    with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="wm-judge") as pool:
        futures = {pool.submit(judge_clip, client, job, max_attempts): job for job in jobs}

        def store_one(future: Future[tuple[JsonAnswer, list[int]]]) -> None:
            job = futures[future]
            report(_store_judgment(store, job, future, judge, batch, info[job.renderer], result))

        collect(futures, store_one, threading.Event())
    return result


def _render_all(
    work: WmEvalPlan, renderer: str, model: Any, report: Callable[[WmProgress], None]
) -> list[tuple[Clip, EpisodeRecord, int, str]]:
    """Every clip of every sampled trajectory through one renderer; a clip a replay folder lacks is reported."""
    out = []
    for episode, scenario, turns in work.episodes:
        for step in range(len(turns) + 1):
            action = turns[step - 1].action if step else ""
            try:
                clip = model.step_clip(scenario, turns[:step]) if step else model.base_clip(scenario)
            except ClipMissing as exc:
                report(WmProgress("missing", renderer, episode.id, step, error=str(exc)))
                break  # the chain's later clips need this one
            report(WmProgress("rendered", renderer, episode.id, step))
            out.append((clip, episode, step, action))
    return out


def _renderer_info(model: Any) -> dict[str, Any]:
    return {"revision": model.revision, "settings": model.settings()}


def _store_judgment(
    store: Any,
    job: ClipJob,
    future: Future[tuple[JsonAnswer, list[int]]],
    judge: str,
    batch: str,
    info: dict[str, Any],
    result: WmEvalResult,
) -> WmProgress:
    event = WmProgress("judged", job.renderer, job.episode.id, job.step, job.dimension.name)
    try:
        answer, indices = future.result()
    except ConflictBenchError as exc:
        event.action, event.error = "failed", str(exc)
        return event
    event.judgment = store.add_wm_judgment(judgment_record(job, answer, indices, judge, batch, info))
    result.usage = result.usage + answer.usage
    return event


def judged_frames(judgment: WorldModelJudgment, *, max_side: int = 240) -> list[bytes]:
    """The frames the judge saw for ``judgment`` (its recorded frame numbers, from its cached clip; the clip's
    lossless last frame where the judge got it) as JPEG bytes, for showing beside the score. Raises
    :class:`WorldModelError` when the clip is no longer in the cache."""
    from conflictbench_app.worldmodel.cache import LAST_NAME
    from conflictbench_app.worldmodel.video import encode_image, load_png, read_frames, video_info

    path = Path(judgment.clip_path)
    if not path.is_file():
        raise WorldModelError(
            f"The clip {path} is no longer in the clip cache; run the same wm-eval again to render it."
        )
    frames = list(read_frames(path, judgment.frames))
    last = path.parent / LAST_NAME
    if (
        frames
        and len(frames) == len(judgment.frames)
        and last.is_file()
        and judgment.frames[-1] == video_info(path)[0] - 1
    ):
        frames[-1] = load_png(last)
    return [encode_image(f, max_side=max_side) for f in frames]
