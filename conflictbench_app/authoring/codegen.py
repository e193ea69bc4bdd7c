"""Spec → Inform 7 source, deterministically (same spec, same bytes).

The story follows the "marked" protocol (TOOLCHAIN §2, engine/glulxe.py): a text-buffer window with rock 210 carries
one JSON state line, rewritten whenever the status line is drawn (every prompt: after accepted and refused commands,
parser errors, undo and restore); ``IdentifyGlkObject`` re-finds it after a restore in another process; an ending
prints ``@@END {json}`` and ends the story. All game logic is generated as Inform 6 (inside Inform 7 inclusions) so that
no author text is ever parsed as Inform 7: each spec action is an out-of-world Inform 7 action (Inform's clock never
moves) whose carry-out rule calls ``CB_Act(n)``; the scenario's own clock is a spec variable ticked by accepted actions.
"""

from __future__ import annotations

from conflictbench_app.authoring.expr import Condition, Effect, Value
from conflictbench_app.authoring.spec import ActionSpec, ScenarioSpec, StateVarSpec

GENERATOR_VERSION = 2
STATE_ROCK = 210
AUTHOR = "ConflictBench Studio"
_CHUNK = 400  # characters per I6 print statement, far below inform6's string limits


def generate_source(spec: ScenarioSpec) -> str:
    """The complete ``story.ni`` for a spec."""
    parts = [
        _header(spec),
        _i6_globals(spec),
        _i6_routines(spec),
        _i7_world(spec),
        _i7_actions(spec),
    ]
    return "\n\n".join(parts) + "\n"


# -- Inform 7 --------------------------------------------------------------------------------------------------


def _header(spec: ScenarioSpec) -> str:
    return "\n".join(
        [
            # The id alone: a bibliographic title cannot hold substitutions, and the banner is not printed anyway.
            f'"{spec.id}" by "{AUTHOR}"',
            "",
            f"[Generated from scenarios/{spec.id}/scenario.yaml by conflictbench_app.authoring (generator "
            f"v{GENERATOR_VERSION}). Do not edit: edit the spec and run `conflictbench scenarios build`.]",
            "",
            'The story headline is "A ConflictBench scenario".',
            "Use no scoring.",
        ]
    )


def _i7_world(spec: ScenarioSpec) -> str:
    return "\n".join(
        [
            'The Scenario Room is a room. The printed name of the Scenario Room is "[cb place name]".',
            'The description of the Scenario Room is "[cb place description]".',
            "To say cb place name: (- CB_PlaceName(); -).",
            "To say cb place description: (- CB_PlaceDescription(); -).",
            "When play begins: cb start.",
            "To cb start: (- CB_Start(); -).",
            "Rule for printing the banner text: do nothing.",
            # Inform's own in-world verbs (wait, take, jump...) would print "Time passes." and the like although the
            # scenario's clock never moves: refuse them. Our actions are out of world, so Before rules skip them.
            'Before doing something other than looking: say "That is not one of the actions here; type HELP for '
            'the list. Nothing changes and no time passes."; stop the action.',
            "Before constructing the status line: cb write state.",
            "To cb write state: (- CB_WriteState(); -).",
            "To cb act (N - a number): (- CB_Act({N}); -).",
        ]
    )


def _i7_actions(spec: ScenarioSpec) -> str:
    lines: list[str] = []
    first_words = sorted({w.split()[0] for a in spec.actions for w in a.words} | {"help", "status"})
    # Detach Inform's own grammar for these verbs, so that our literal lines are the only reading.
    lines += [f'Understand the command "{w}" as something new.' for w in first_words]
    builtin = [("help", "cbhelp", 0), ("status", "cbstatus", -1)]
    for words, name, n in builtin:
        lines += _i7_action(name, (words,), n)
    for i, action in enumerate(spec.actions, start=1):
        lines += _i7_action(_action_name(i), action.words, i)
    return "\n".join(lines)


def _i7_action(name: str, words: tuple[str, ...], n: int) -> list[str]:
    understood = " or ".join(f'"{w}"' for w in words)
    return [
        f"{name.capitalize()} is an action out of world applying to nothing.",
        f"Understand {understood} as {name}.",
        f"Carry out {name}: cb act {n}.",
    ]


def _action_name(i: int) -> str:
    """Inform 7 action names must be words: cbacta, cbactb, ... (specs have at most 26 actions)."""
    return "cbact" + chr(ord("a") + i - 1)


# -- Inform 6: state ---------------------------------------------------------------------------------------------


def _i6_globals(spec: ScenarioSpec) -> str:
    lines = [f"Global cbv_{v.name} = {_i6_value(v, v.initial)};" for v in spec.state]
    lines += ["Global cb_accepted = 0;", "Global cb_statewin = 0;", "", _r_identify()]
    return "Include (-\n" + "\n".join(lines) + '\n-) after "Definitions.i6t".'


def _i6_value(var: StateVarSpec, value: Value) -> str:
    if var.type == "bool":
        return "1" if value else "0"
    if var.type == "text":
        return str(var.values.index(str(value)))
    return str(int(value))


def _i6_routines(spec: ScenarioSpec) -> str:
    routines = [
        _r_open_window(),
        _r_write_state(spec),
        _r_start(spec),
        _r_status(spec),
        _r_help(spec),
        _r_dispatch(spec),
        *(_r_action(spec, i, a) for i, a in enumerate(spec.actions, start=1)),
        _r_tick(spec),
        _r_endings(spec),
    ]
    return "Include (-\n" + "\n\n".join(routines) + "\n-)."


def _r_identify() -> str:
    # Must precede Glulx.i6t's `#Stub IdentifyGlkObject`, hence its own inclusion after Definitions.i6t.
    return "\n".join(
        [
            "[ IdentifyGlkObject phase type ref rock;",
            "    if (phase == 0) { cb_statewin = 0; return; }",
            f"    if (phase == 1 && type == 0 && rock == {STATE_ROCK}) cb_statewin = ref;",
            "];",
        ]
    )


def _r_open_window() -> str:
    return "\n".join(
        [
            "[ CB_OpenStateWindow;",
            "    if (cb_statewin == 0)",
            f"        cb_statewin = glk_window_open(gg_mainwin, winmethod_Below+winmethod_Fixed, 2, wintype_TextBuffer, {STATE_ROCK});",
            "];",
        ]
    )


def _r_write_state(spec: ScenarioSpec) -> str:
    body = [
        "[ CB_WriteState str;",
        "    if (cb_statewin == 0) return;",
        "    str = glk_stream_get_current();",
    ]
    body += ["    glk_window_clear(cb_statewin);", "    glk_set_window(cb_statewin);"]
    body.append('    print "{~v~: 1, ~state~: {";')
    for k, var in enumerate(spec.state):
        sep = ", " if k else ""
        body.append(f'    print "{sep}~{var.name}~: "; {_i6_print_json(var)}')
    clock = f"cbv_{spec.clock.variable}"
    body.append(f'    print "}}, ~accepted~: ", cb_accepted, ", ~clock~: ", {clock}, "}}";')
    body += ["    glk_stream_set_current(str);", "];"]
    return "\n".join(body)


def _i6_print_json(var: StateVarSpec) -> str:
    g = f"cbv_{var.name}"
    if var.type == "bool":
        return f'if ({g}) print "true"; else print "false";'
    if var.type == "int":
        return f"print {g};"
    cases = " ".join(f'{i}: print "~{v}~";' for i, v in enumerate(var.values))
    return f"switch ({g}) {{ {cases} }}"


def _i6_print_value(var: StateVarSpec) -> str:
    g = f"cbv_{var.name}"
    if var.type == "bool":
        return f'if ({g}) print "yes"; else print "no";'
    if var.type == "int":
        unit = f' print "{_i6_text(" " + var.unit)}";' if var.unit else ""
        return f"print {g};{unit}"
    cases = " ".join(f'{i}: print "{v}";' for i, v in enumerate(var.values))
    return f"switch ({g}) {{ {cases} }}"


# -- Inform 6: text ----------------------------------------------------------------------------------------------


def _i6_text(text: str) -> str:
    """Escape text for the inside of an Inform 6 string (``~`` is a quote, ``^`` a newline, ``@`` an escape).

    ``@`` itself must be written ``@@64`` (``@{40}`` prints nothing); a digit right after such a decimal escape is
    escaped too, or Inform 6 would read it as part of the number.
    """
    out: list[str] = []
    prev, decimal = "", False
    for ch in text:
        code = ord(ch)
        if ch == "@" or (decimal and ch.isdigit()):
            out.append(f"@@{code}")
            decimal = True
            prev = ch
            continue
        decimal = False
        if ch == '"':
            out.append("~")
        elif ch == "\n":
            out.append("^")
        elif ch in "~^\\{}" or code > 126 or code < 32 or (ch == ")" and prev == "-"):
            out.append(f"@{{{code:X}}}")
        else:
            out.append(ch)
        prev = ch
    return "".join(out)


def _i6_say(text: str, *, newline: bool = True) -> str:
    """Print statements for a (possibly long) text, cut into chunks."""
    text = text.strip()
    chunks = [text[i : i + _CHUNK] for i in range(0, len(text), _CHUNK)] or [""]
    lines = [f'    print "{_i6_text(c)}";' for c in chunks]
    if newline:
        lines.append("    new_line;")
    return "\n".join(lines)


def _r_start(spec: ScenarioSpec) -> str:
    return "\n".join(
        [
            "[ CB_Start;",
            "    CB_OpenStateWindow();",
            _i6_say(spec.opening),
            "    new_line;",
            '    print "Type HELP to list the actions you can take.^";',
            "];",
            "[ CB_PlaceName;",
            _i6_say(spec.place, newline=False),
            "];",
            "[ CB_PlaceDescription;",
            _i6_say(f"{spec.time}. {spec.place_description}"),
            "    new_line; CB_Status();",
            "];",
        ]
    )


def _r_status(spec: ScenarioSpec) -> str:
    body = ["[ CB_Status;", '    print "Status: ";']
    for k, var in enumerate(spec.state):
        sep = " | " if k else ""
        body.append(f'    print "{sep}{_i6_text(var.label)}: "; {_i6_print_value(var)}')
    body += ['    print "^";', "];"]
    return "\n".join(body)


def _r_help(spec: ScenarioSpec) -> str:
    body = ["[ CB_Help;", '    print "Actions and prerequisites:^";']
    for action in spec.actions:
        body.append(_i6_say(help_line(action)))
    body.append(
        _i6_say(
            "Each action takes one turn unless it says otherwise. An action whose prerequisites are not met, or a "
            "command that is not understood, changes nothing and takes no time. HELP and STATUS take no time."
        )
    )
    body.append("];")
    return "\n".join(body)


def help_line(action: ActionSpec) -> str:
    """One ``help`` line, in the paper's format: ``- action: description (requires ...)``."""
    needs = "; ".join(p.says for p in action.preconditions) or "nothing"
    timing = "" if action.spends_turn else " Takes no time."
    return f"- {action.command}: {action.description.rstrip('.')} (requires {needs}).{timing}"


# -- Inform 6: actions -------------------------------------------------------------------------------------------


def _r_dispatch(spec: ScenarioSpec) -> str:
    cases = ["        0: CB_Help();", "        -1: CB_Status();"]
    cases += [f"        {i}: CB_A{i}();" for i in range(1, len(spec.actions) + 1)]
    return "\n".join(["[ CB_Act n;", "    switch (n) {", *cases, "    }", "];"])


def _r_action(spec: ScenarioSpec, i: int, action: ActionSpec) -> str:
    body = [f"[ CB_A{i} missing;"]
    for pre in action.preconditions:
        cond = _i6_condition(spec, _cond(pre.check))
        body.append(f"    if (~~({cond})) {{")
        body.append(
            f'        if (missing) print "; "; else print "{_i6_text(action.command.capitalize())} needs: ";'
        )
        body.append(f'        print "{_i6_text(pre.says)}"; missing = 1;')
        body.append("    }")
    body.append('    if (missing) { print ". Nothing changes and no time passes.^"; return; }')
    body.append("    cb_accepted++;")
    for text in action.effects:
        body += _i6_effect(spec, _eff(text))
    body.append(_i6_say(action.feedback))
    for choice in action.ending_choices:
        conds = " && ".join(f"({_i6_condition(spec, _cond(c))})" for c in choice.when) or "1"
        body.append(f"    if ({conds}) {{ CB_End_{choice.ending}(); return; }}")
    if action.spends_turn:
        body.append("    if (CB_Tick()) return;")
    body += ["    CB_Status();", "];"]
    return "\n".join(body)


def _cond(text: str) -> Condition:
    from conflictbench_app.authoring.expr import parse_condition

    return parse_condition(text)


def _eff(text: str) -> Effect:
    from conflictbench_app.authoring.expr import parse_effect

    return parse_effect(text)


def _i6_condition(spec: ScenarioSpec, cond: Condition) -> str:
    var = spec.var(cond.var)
    assert var is not None  # validated
    op = {"==": "==", "!=": "~=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}[cond.op]
    return f"cbv_{var.name} {op} {_i6_value(var, cond.value)}"


def _i6_effect(spec: ScenarioSpec, effect: Effect) -> list[str]:
    var = spec.var(effect.var)
    assert var is not None  # validated
    g = f"cbv_{var.name}"
    if effect.op == "=":
        return [f"    {g} = {_i6_value(var, effect.value)};"]
    sign = "+" if effect.op == "+=" else "-"
    return [
        f"    {g} = {g} {sign} {int(effect.value)};",
        f"    if ({g} < {var.min}) {g} = {var.min};",
        f"    if ({g} > {var.max}) {g} = {var.max};",
    ]


def _r_tick(spec: ScenarioSpec) -> str:
    g = f"cbv_{spec.clock.variable}"
    body = [
        "[ CB_Tick;",
        f"    {g}--;",
        f"    if ({g} <= 0) {{ {g} = 0; CB_End_{spec.clock.ending}(); rtrue; }}",
    ]
    if spec.clock.warning:
        body.append(f"    if ({g} == 1) {{")
        body.append(_i6_say(spec.clock.warning))
        body.append("    }")
    body += ["    rfalse;", "];"]
    return "\n".join(body)


def _r_endings(spec: ScenarioSpec) -> str:
    out = []
    for ending in spec.endings:
        favorable = "true" if ending.human_favorable else "false"
        out.append(
            "\n".join(
                [
                    f"[ CB_End_{ending.id};",
                    "    new_line;",
                    _i6_say(ending.text),
                    "    new_line;",
                    f'    print "*** {_i6_text(ending.title)} ***^";',
                    "    CB_WriteState();",
                    f'    print "@@64@@64END {{~ending~: ~{ending.id}~, ~human_favorable~: {favorable}}}^";',
                    "    deadflag = 3;",
                    "];",
                ]
            )
        )
    return "\n\n".join(out)
