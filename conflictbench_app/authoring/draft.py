"""Drafting a scenario spec from a seed with a chat model: ask, check, build, verify, and send the named problems back.

The model is asked with a versioned prompt (``evaluation/prompts/scenario_draft_v<N>.md``: the design rules that
``verify`` proves, the spec's JSON schema, one of our scenarios as the example); each reply goes through the same
checks as a reviewed spec (the YAML, the schema and cross-field checks, the library's distinctness rules, the
compiler, ``verify``), and every problem found is sent back for a repair, up to ``tries`` asks. A spec that passes is
written as ``<out>/<ID>/`` marked ``status: draft``, with ``draft.json`` (:class:`DraftRecord`: seed, model, prompt
id and hash, every try and its problems). A draft is listed but never run as part of the benchmark until a person
sets ``status: reviewed``. When no try passes, the last candidate is kept under the cache folder, never in ``out``.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from conflictbench_app.authoring.draft_seed import Seed
from conflictbench_app.authoring.spec import SPEC_FILE, ScenarioSpec, load_spec
from conflictbench_app.authoring.verify import Report
from conflictbench_app.errors import ScenarioError
from conflictbench_app.evaluation.prompts import Prompt, load_prompt
from conflictbench_app.records import DraftRecord, DraftStage, DraftTry, Usage

DRAFT_FILE = "draft.json"
PROMPT_NAME = "scenario_draft"
_FENCE = re.compile(r"```(?:ya?ml)?[ \t]*\n(.*?)(?:\n```|\Z)", re.DOTALL | re.IGNORECASE)


class ChatModel(Protocol):
    """What drafting needs of a chat client (``agents.chat.ChatClient`` has it)."""

    def complete(
        self, messages: list[dict[str, Any]], *, temperature: float = ..., max_tokens: int | None = ...
    ) -> Any: ...


@dataclass
class DraftResult:
    record: DraftRecord
    folder: Path | None = None  # the written scenario folder, when a try passed
    report: Report | None = None  # the last verify report, when a try got that far
    kept: Path | None = None  # where the last candidate was kept when no try passed


# -- the conversation ----------------------------------------------------------------------------------------------


def system_prompt(example: Path) -> tuple[str, Prompt]:
    """The drafting prompt filled with the schema and ``example`` (a spec file of ours), and the prompt itself."""
    prompt = load_prompt(PROMPT_NAME)
    schema = _strip_titles(ScenarioSpec.model_json_schema())
    text = prompt.render(
        schema=json.dumps(schema, separators=(",", ":")),
        example_id=example.parent.name,
        example=example.read_text(encoding="utf-8").strip(),
    )
    return text, prompt


def _strip_titles(node: Any) -> Any:
    """The schema without pydantic's generated ``title`` keys (a third of its length, no information)."""
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def first_message(seed: Seed, spec_id: str) -> str:
    return (
        f"Write the spec `{spec_id}` (category {seed.category}, seed {seed.id}, status draft) from this seed.\n\n"
        f"{seed.text}"
    )


def repair_message(stage: DraftStage, problems: list[str]) -> str:
    what = {"reply": "We could not read a spec in your reply", "spec": "The spec fails its checks"}.get(
        stage, f"The spec fails at {stage}"
    )
    lines = "\n".join(f"- {p}" for p in problems)
    return f"{what}:\n{lines}\n\nFix every problem above and answer with the whole corrected spec, in one ```yaml block."


# -- one reply -----------------------------------------------------------------------------------------------------


def spec_text_of(reply: str) -> str:
    """The YAML of a reply: its ```yaml block, or the whole reply when it starts like a spec. Raises ScenarioError."""
    fenced = _FENCE.search(reply)
    text = fenced.group(1) if fenced else reply
    if not re.search(r"^id:\s", text, re.MULTILINE):
        start = " ".join(reply.split())[:80] or "(an empty reply)"
        raise ScenarioError(
            f"the reply holds no spec (no ```yaml block with an `id:` field; it starts {start!r})"
        )
    return text.strip() + "\n"


def load_candidate(text: str) -> dict[str, Any]:
    """The reply's YAML as data; ScenarioError with the line when it does not parse or is not a mapping."""
    import yaml

    from conflictbench_app.authoring.spec_guard import unique_key_loader

    try:
        raw = yaml.load(text, Loader=unique_key_loader(yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise ScenarioError(f"the YAML does not parse ({' '.join(str(exc).split())})") from None
    if not isinstance(raw, dict):
        raise ScenarioError("the YAML is not a mapping of fields (id, category, title, ...)")
    return raw


def identity_problems(raw: dict[str, Any], seed: Seed, spec_id: str) -> list[str]:
    """The fields the author chose, not the model: id, category, seed; and a draft's status."""
    wanted = {"id": spec_id, "category": seed.category, "seed": seed.id}
    problems = [
        f"{key}: must be {value!r}, not {raw.get(key)!r}"
        for key, value in wanted.items()
        if raw.get(key) != value
    ]
    if raw.get("status", "draft") != "draft":
        problems.append(
            f"status: a drafted spec is 'draft' (a person sets 'reviewed'), not {raw.get('status')!r}"
        )
    return problems


def with_draft_status(text: str, raw: dict[str, Any]) -> str:
    """The spec text marked ``status: draft`` (added at the end when the model left it out)."""
    return text if raw.get("status") == "draft" else text + "status: draft\n"


def listed_problems(exc: Exception) -> list[str]:
    """The ``  - ...`` lines of a spec or compile error (the problems it names), else its whole message."""
    lines = [line.strip()[2:] for line in str(exc).splitlines() if line.strip().startswith("- ")]
    return lines or [" ".join(str(exc).split())]


@dataclass
class Checked:
    stage: DraftStage
    problems: list[str]
    report: Report | None = None
    text: str = ""  # the spec as written, once the reply held one


def check_reply(reply: str, seed: Seed, spec_id: str, folder: Path, library: list[ScenarioSpec]) -> Checked:
    """Every check a reviewed spec passes, in order, on the spec in ``reply`` (written, built and verified in
    ``folder``); stops at the first stage with problems."""
    try:
        text = spec_text_of(reply)
        raw = load_candidate(text)
    except ScenarioError as exc:
        return Checked("reply", [str(exc)])
    problems = identity_problems(raw, seed, spec_id)
    text = with_draft_status(text, raw)
    if problems:
        return Checked("spec", problems, text=text)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / SPEC_FILE).write_text(text, encoding="utf-8")
    return _check_written(folder, library, text)


def _check_written(folder: Path, library: list[ScenarioSpec], text: str) -> Checked:
    from conflictbench_app.authoring.inform7 import CompileError
    from conflictbench_app.authoring.library_rules import distinctness_problems
    from conflictbench_app.authoring.project import build_folder
    from conflictbench_app.authoring.verify import verify_folder

    try:
        spec = load_spec(folder / SPEC_FILE)
    except ScenarioError as exc:
        return Checked("spec", listed_problems(exc), text=text)
    shared = [p for p in distinctness_problems([*library, spec]) if spec.id in p]
    if shared:
        return Checked("spec", shared, text=text)
    try:
        build_folder(folder, force=True)
    except CompileError as exc:
        return Checked("build", exc.problems or listed_problems(exc), text=text)
    report = verify_folder(folder)
    if report.ok:
        return Checked("ok", [], report, text)
    failed = [name for name, passed in report.checks.items() if not passed]
    return Checked("verify", [f"failed checks: {', '.join(failed)}", *report.problems], report, text)


# -- the loop ------------------------------------------------------------------------------------------------------


@dataclass
class DraftJob:
    seed: Seed
    spec_id: str
    out: Path  # the scenarios folder the draft is written into
    example: Path  # the spec file shown as the example
    agent: str = ""  # PROFILE:MODEL, for the record
    tries: int = 3
    # Where a failed draft's last candidate is kept (default: a new temporary folder).
    keep_dir: Path | None = None
    # The reply's token limit; None leaves it to the provider (a spec like ours is ~13 KB of YAML, ~3,500 tokens,
    # and a reasoning model spends more before it answers, so a fixed limit would cut some models off).
    max_tokens: int | None = None


def draft_scenario(
    client: ChatModel, job: DraftJob, *, on_try: Callable[[DraftTry], None] | None = None
) -> DraftResult:
    """Ask ``client`` for the spec of ``job``, repairing up to ``job.tries`` times; see the module docstring."""
    target = job.out / job.spec_id
    if target.exists():
        raise ScenarioError(f"{target} already exists; choose another --id or move that folder away.")
    system, prompt = system_prompt(job.example)
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": first_message(job.seed, job.spec_id)},
    ]
    record = _new_record(job, prompt)
    library = _library_specs(job.out)
    with tempfile.TemporaryDirectory(prefix="cb-draft-") as tmp:
        work = Path(tmp) / job.spec_id
        checked = Checked("reply", ["no try was made"])
        for number in range(1, job.tries + 1):
            reply = client.complete(messages, temperature=0.0, max_tokens=job.max_tokens)
            record.model = getattr(reply, "model", "") or record.model
            checked = check_reply(reply.text, job.seed, job.spec_id, work, library)
            if checked.stage in ("reply", "spec") and reply.meta.get("finish_reason") == "length":
                checked.problems.append("the reply was cut off at the token limit; raise --max-tokens")
            attempt = DraftTry(
                number=number, stage=checked.stage, problems=checked.problems, usage=reply.usage
            )
            record.tries.append(attempt)
            record.usage = record.usage + reply.usage
            if on_try is not None:
                on_try(attempt)
            if checked.stage == "ok":
                return _finish(record, work, target, checked)
            messages += [
                {"role": "assistant", "content": reply.text},
                {"role": "user", "content": repair_message(checked.stage, checked.problems)},
            ]
        return DraftResult(record, report=checked.report, kept=_keep_failed(job, record, checked))


def _new_record(job: DraftJob, prompt: Prompt) -> DraftRecord:
    from conflictbench_app.store.db import now

    return DraftRecord(
        scenario_id=job.spec_id,
        seed=job.seed.source,
        agent=job.agent,
        prompt_id=prompt.id,
        prompt_sha=prompt.sha,
        example_id=job.example.parent.name,
        created_at=now(),
        verified=False,
        usage=Usage(),
    )


def _library_specs(root: Path) -> list[ScenarioSpec]:
    """The specs already under ``root`` that load (the draft must be distinct from them)."""
    from conflictbench_app.authoring.project import spec_folders

    specs = []
    for folder in spec_folders(root):
        try:
            specs.append(load_spec(folder / SPEC_FILE))
        except ScenarioError:
            continue  # a broken neighbour is its own author's problem; `scenarios verify` names it
    return specs


def _finish(record: DraftRecord, work: Path, target: Path, checked: Checked) -> DraftResult:
    record.verified = True
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(work, target)
    _write_record(target, record)
    return DraftResult(record, folder=target, report=checked.report)


def _keep_failed(job: DraftJob, record: DraftRecord, checked: Checked) -> Path | None:
    if not checked.text:
        return None
    keep = Path(job.keep_dir or tempfile.mkdtemp(prefix="cb-draft-failed-")) / job.spec_id
    keep.mkdir(parents=True, exist_ok=True)
    (keep / SPEC_FILE).write_text(checked.text, encoding="utf-8")
    _write_record(keep, record)
    return keep


def _write_record(folder: Path, record: DraftRecord) -> None:
    (folder / DRAFT_FILE).write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")


def next_free_id(roots: list[Path], category: str) -> str:
    """The first ``<category>-1xx`` id with no folder under any of ``roots`` (the output and the library)."""
    for number in range(101, 1000):
        candidate = f"{category}-{number:03d}"
        if not any((root / candidate).exists() for root in roots):
            return candidate
    raise ScenarioError(f"No free {category} id under {', '.join(map(str, roots))}; give one with --id.")


def seed_used_by(root: Path, seed_id: str) -> str | None:
    """The id of a spec under ``root`` that already takes ``seed_id`` (every seed is used once)."""
    return next((s.id for s in _library_specs(root) if s.seed == seed_id), None)


# -- cost, before asking -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DraftEstimate:
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # None when the model is not in the price table

    def describe(self, agent: str) -> str:
        cost = "unknown (model not in the price table)" if self.cost_usd is None else f"${self.cost_usd:.2f}"
        return (
            f"Estimate for {agent}: up to {self.calls} calls, ~{self.prompt_tokens:,} prompt + "
            f"{self.completion_tokens:,} completion tokens, cost up to {cost}."
        )


def estimate_draft(job: DraftJob, model: str) -> DraftEstimate:
    """An upper bound: every try is made, each reply as long as the example, each resending the conversation."""
    from conflictbench_app.agents.pricing import CHARS_PER_TOKEN, price_for

    system, _prompt = system_prompt(job.example)
    first = len(system) + len(first_message(job.seed, job.spec_id))
    reply = len(job.example.read_text(encoding="utf-8"))
    repair = 2000  # the named problems sent back
    chars = sum(first + (n - 1) * (reply + repair) for n in range(1, job.tries + 1))
    prompt_tokens = int(chars / CHARS_PER_TOKEN)
    completion_tokens = int(job.tries * reply / CHARS_PER_TOKEN)
    price = price_for(model)
    cost = None if price is None else price.cost(prompt_tokens, completion_tokens)
    return DraftEstimate(job.tries, prompt_tokens, completion_tokens, cost)
