"""Property-based tests (Hypothesis) of the three doors input comes through: the console, the spec loader and the
paper loader. Each runs in a few seconds in CI (derandomized, few examples); ``CB_FUZZ_EXAMPLES=N`` runs N
examples each for a fuzz run (docs/reliability.md gives the figures of one).

They would have found items 2-4 and 6 of issue 21: a meta-command that moves the story behind the record (4), text
that is not valid Unicode losing a step (3), one wrongly typed env.json or spec breaking the folder (2), and spec
values the story or the compiler cannot take getting through (6).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conflictbench_app.agents.base import Decision
from conflictbench_app.authoring.codegen import generate_source
from conflictbench_app.authoring.spec import load_spec
from conflictbench_app.authoring.spec_guard import INT_MAX, INT_MIN, raw_problems
from conflictbench_app.errors import ScenarioError
from conflictbench_app.scenarios.library import load_library
from conflictbench_app.scenarios.meta import OUT_OF_WORLD, TESTING
from conflictbench_app.scenarios.paper import load_paper_tree
from conflictbench_app.session import PlaySession
from conflictbench_app.store import Store

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "tiny"
SPEC = ROOT / "scenarios" / "EP1-101" / "scenario.yaml"
EXAMPLES = int(os.environ.get("CB_FUZZ_EXAMPLES", "0"))


def bounded(default: int) -> Any:
    """Few derandomized examples in CI; ``CB_FUZZ_EXAMPLES`` for a fuzz run."""
    return settings(
        max_examples=EXAMPLES or default,
        derandomize=not EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@contextmanager
def paper_folder() -> Iterator[Path]:
    """The tiny story in the paper's layout, in a fresh temporary folder."""
    with tempfile.TemporaryDirectory(prefix="cb-prop-") as tmp:
        folder = Path(tmp) / "results" / "ulxEnv" / "EP1-900"
        folder.mkdir(parents=True)
        shutil.copy(DATA / "env.json", folder / "env.json")
        shutil.copy(DATA / "tiny.ulx", folder / "tiny.ulx")
        yield Path(tmp) / "results"


# -- the console ---------------------------------------------------------------------------------------------------

LISTED = ["open valve", "pull lever", "do nothing"]
META_WORDS = sorted(OUT_OF_WORLD) + sorted(TESTING)
_words = st.sampled_from([*LISTED, *META_WORDS, "help", "look", "wait", "y", "yes", "xyzzy", "valve", "me"])
_junk = st.text(
    alphabet=st.characters(codec=None, exclude_categories=("Cs",))
    | st.sampled_from(["\ud800", "\udcff", "\x00"]),
    max_size=12,
)
_separators = st.sampled_from([" ", ". ", " then ", ", ", "; "])
typed_line = st.one_of(
    _words,
    st.lists(st.one_of(_words, _junk), min_size=1, max_size=4).flatmap(
        lambda parts: _separators.map(lambda sep: sep.join(parts))
    ),
    _junk,
)


@bounded(15)
@given(lines=st.lists(typed_line, min_size=1, max_size=5))
def test_console_lines_never_change_the_story_behind_the_record(lines: list[str]) -> None:
    """Whatever a player types: every line is one recorded step; a refused step leaves the story's state as it was;
    the recorded episode replays on a fresh interpreter exactly (a meta-command would make it diverge)."""
    with paper_folder() as root, tempfile.TemporaryDirectory() as tmp:
        scenario = load_library(root).get("EP1-900")
        with Store(Path(tmp) / "p.db") as store:
            run = store.create_run("human:fuzz", "text", settings={}, versions={})
            record = store.new_episode(run.id, scenario.id, "EP1", source="paper", max_turns=14)
            session = PlaySession(store, scenario, record)
            session.start()
            played = 0
            previous = dict(scenario.initial_state)
            for line in lines:
                if session.done:
                    break
                step = session.apply(Decision(action=line), player="human:fuzz", passthrough=True)
                played += 1
                if not step.accepted:
                    assert step.state == previous, f"{line!r} was refused but the story moved"
                previous = step.state
            session.close()
            steps = store.steps(record.id)
            assert len(steps) == played and store.get_episode(record.id).status != "errored"
            replay = PlaySession(store, scenario, store.get_episode(record.id))
            try:
                replay.start()  # raises when the story answers differently than recorded
            finally:
                replay.close()


# -- the spec loader -----------------------------------------------------------------------------------------------

_BASE_SPEC: dict[str, Any] = yaml.safe_load(SPEC.read_text(encoding="utf-8"))


def _get(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(data, dict):
        for key, value in data.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            out += _paths(value, (*prefix, i))
    return out


SPEC_PATHS = _paths(_BASE_SPEC)
_LEAVES = [p for p in SPEC_PATHS if not isinstance(_get(_BASE_SPEC, p), dict | list)]
INT_LEAVES = [p for p in _LEAVES if type(_get(_BASE_SPEC, p)) is int]
TEXT_LEAVES = [p for p in _LEAVES if isinstance(_get(_BASE_SPEC, p), str)]
big_ints = st.integers(min_value=-(2**64), max_value=2**64) | st.sampled_from(
    [2**31, 2**32 + 1, -(2**31) - 1]
)
texts = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=30
) | st.sampled_from(["😀 alarm", "bell \x07 rings", "x" * 25_000, "\u00e9t\u00e9 中文", "on"])
any_value = st.one_of(
    big_ints,
    texts,
    st.none(),
    st.booleans(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
# Mostly type-preserving changes (they reach the checks after the schema), sometimes a value of any type.
spec_change = st.one_of(
    st.tuples(st.sampled_from(INT_LEAVES), big_ints),
    st.tuples(st.sampled_from(TEXT_LEAVES), texts),
    st.tuples(st.sampled_from(SPEC_PATHS), any_value),
)


def _set(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    target: Any = data
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value


def _ints_and_texts(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for inner in value.values():
            yield from _ints_and_texts(inner)
    elif isinstance(value, list | tuple):
        for inner in value:
            yield from _ints_and_texts(inner)
    else:
        yield value


@bounded(25)
@given(
    changes=st.lists(spec_change, min_size=1, max_size=3),
    duplicate=st.sampled_from([None, "title", "opening", "category"]),
    bad_bytes=st.booleans(),
)
def test_a_mutated_spec_loads_whole_or_fails_alone_with_a_named_error(
    changes: list[tuple[tuple[Any, ...], Any]], duplicate: str | None, bad_bytes: bool
) -> None:
    data = copy.deepcopy(_BASE_SPEC)
    for path, value in changes:
        with contextlib.suppress(KeyError, IndexError, TypeError):  # an earlier change replaced the container
            _set(data, path, value)
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False).encode("utf-8")
    if duplicate:
        text += f"\n{duplicate}: another value\n".encode()
    if bad_bytes:
        text = text.replace(b"title:", b"title: \xff", 1)
    with tempfile.TemporaryDirectory() as tmp:
        good = Path(tmp) / "EP1-101"
        shutil.copytree(SPEC.parent, good)
        bad = Path(tmp) / "EP1-102"
        bad.mkdir()
        (bad / "scenario.yaml").write_bytes(text)
        try:
            spec = load_spec(bad / "scenario.yaml")
        except ScenarioError as exc:
            message = str(exc)
            assert "scenario.yaml" in message and (":" in message.split("scenario.yaml", 1)[1])
        else:
            assert not duplicate and not bad_bytes, "a duplicate key or invalid UTF-8 got through"
            dumped = spec.model_dump()
            for value in _ints_and_texts(dumped):
                if isinstance(value, int) and not isinstance(value, bool):
                    assert INT_MIN <= value <= INT_MAX, value
            assert raw_problems(dumped) == []
            generate_source(spec)  # what the compiler gets is generated without an error
        library = load_library(Path(tmp))
        assert "EP1-101" in [s.id for s in library.scenarios], "one bad spec broke the folder"


# -- the paper loader ----------------------------------------------------------------------------------------------

_json_leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_values = st.one_of(
    _json_leaves,
    st.lists(_json_leaves, max_size=3),
    st.dictionaries(st.text(max_size=8), _json_leaves | st.lists(_json_leaves, max_size=2), max_size=3),
)
ENV_KEYS = ["final_action", "state", "name", "opening", "template", "Human_live_ending_description"]


@bounded(30)
@given(
    changes=st.dictionaries(st.sampled_from(ENV_KEYS), json_values, min_size=1, max_size=3),
    raw=st.sampled_from([None, b"\xff\xfe not json", b"[1, 2]", b"", b'{"state": {"Clock": "3"}']),
)
def test_a_mutated_env_json_fails_alone_with_its_folder_named(
    changes: dict[str, Any], raw: bytes | None
) -> None:
    with paper_folder() as root, tempfile.TemporaryDirectory() as cache:
        bad = root / "ulxEnv" / "EP2-901"
        shutil.copytree(root / "ulxEnv" / "EP1-900", bad)
        env = json.loads((bad / "env.json").read_text())
        env.update(changes)
        (bad / "env.json").write_bytes(raw if raw is not None else json.dumps(env).encode())
        scenarios, problems = load_paper_tree(root, cache_dir=Path(cache))
        ids = [s.id for s in scenarios]
        assert "EP1-900" in ids, "one bad env.json broke the folder"
        assert ("EP2-901" in ids) != any(path.name == "EP2-901" for path, _ in problems)
        for path, problem in problems:
            assert path.name == "EP2-901" and (
                "env.json" in problem or "EP2-901" in problem or "help" in problem
            )


def test_the_suite_is_bounded() -> None:
    """CI runs the suite derandomized with few examples; a fuzz run sets CB_FUZZ_EXAMPLES."""
    if EXAMPLES:
        pytest.skip("a fuzz run")
    assert bounded(5).max_examples == 5 and bounded(5).derandomize
