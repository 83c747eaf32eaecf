"""Seeded mutations of scenario and lab files, for tests/unit/test_fuzz_configs.py.

Each mutation turns the text of a real file (an example, a catalog scenario, a lab) into
a variant an adversary or a careless edit could produce: the attack classes of issue 18
(deep nesting, alias bombs, recursive aliases, NUL and control characters, bytes that
are not UTF-8, huge numbers, nan) and everyday mistakes (wrong types, unknown or missing
keys, duplicated keys, broken indentation, names with control characters), plus
``--set`` arguments of the same kinds. A variant is bytes: some are not UTF-8.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml


@dataclass(frozen=True)
class Variant:
    """One mutated file (and ``--set`` arguments), named for the failure message."""

    name: str
    data: bytes
    sets: tuple[str, ...] = field(default=())


# -- values an adversary puts where a value goes -------------------------------------------

HOSTILE_VALUES: list[Any] = [
    10**30, -(10**30), 2**63, -1, 0, float("nan"), float("inf"), "", " ", "x" * 5000,
    [], {}, None, True, "2024-13-45", "99999999999999999999h", "1e400",
    "guest1\n[global]\nexec_prerun=touch PWNED", "a\x1bb", "a\x00b", "../../etc/passwd",
    "${env:VB_FUZZ_UNSET}", "$(touch x)", "; rm -rf /", "é✓💥", [[[[[[1]]]]]],
    {"nested": {"deeper": [1, 2, {"x": None}]}},
]
HOSTILE_KEYS = ["x\x1by", "bad key", "a/b", "n\nx", "", "é", "-o", "__class__", "0", "deep" * 60]


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _laughs(levels: int, width: int) -> str:
    lines = [f"  l0: &l0 [{', '.join(['lol'] * width)}]"]
    for i in range(1, levels):
        lines.append(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


# -- text mutations ------------------------------------------------------------------------

def _insert(text: str, rng: random.Random, what: str) -> str:
    pos = rng.randrange(len(text) + 1)
    return text[:pos] + what + text[pos:]


def _value_lines(text: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines()) if re.match(r"\s*[\w.-]+: \S", line)]


def _replace_value(text: str, rng: random.Random, value: str) -> str:
    lines = text.splitlines()
    candidates = _value_lines(text)
    if not candidates:
        return text + f"\nx: {value}\n"
    i = rng.choice(candidates)
    key = lines[i].split(":", 1)[0]
    lines[i] = f"{key}: {value}"
    return "\n".join(lines) + "\n"


def m_nul(text: str, rng: random.Random) -> str | bytes:
    return _insert(text, rng, "\x00")


def m_control(text: str, rng: random.Random) -> str | bytes:
    return _insert(text, rng, rng.choice(["\x1b", "\x07", "\x08", "\x7f", "\u2028", "\ufeff"]))


def m_bad_utf8(text: str, rng: random.Random) -> str | bytes:
    raw = text.encode()
    pos = rng.randrange(len(raw) + 1)
    return raw[:pos] + rng.choice([b"\xff", b"\xc3", b"\xe9", b"\xed\xa0\x80"]) + raw[pos:]


def m_deep_value(text: str, rng: random.Random) -> str | bytes:
    return _replace_value(text, rng, _deep(rng.choice([40, 60, 500, 5000])))


def m_deep_mapping(text: str, rng: random.Random) -> str | bytes:
    depth = rng.choice([55, 300])
    return _replace_value(text, rng, "{a: " * depth + "1" + "}" * depth)


def m_laughs(text: str, rng: random.Random) -> str | bytes:
    bomb = "bomb:\n" + _laughs(rng.choice([6, 9]), rng.choice([9, 12]))
    return text + "\n" + bomb if rng.random() < 0.5 else bomb + text


def m_laughs_in_value(text: str, rng: random.Random) -> str | bytes:
    lines = text.splitlines()
    head = "x_anchors:\n" + _laughs(8, 10)
    candidates = _value_lines(text)
    if candidates:
        i = rng.choice(candidates)
        key = lines[i].split(":", 1)[0]
        lines[i] = f"{key}: *l7"
    return head + "\n".join(lines) + "\n"


def m_recursive_alias(text: str, rng: random.Random) -> str | bytes:
    return _replace_value(text, rng, rng.choice(["&r [*r]", "&r {a: *r}", "&r [1, [2, *r]]"]))


def m_undefined_alias(text: str, rng: random.Random) -> str | bytes:
    return _replace_value(text, rng, "*nowhere")


def m_truncate(text: str, rng: random.Random) -> str | bytes:
    return text[: rng.randrange(len(text) + 1)]


def m_drop_line(text: str, rng: random.Random) -> str | bytes:
    lines = text.splitlines()
    del lines[rng.randrange(len(lines))]
    return "\n".join(lines) + "\n"


def m_duplicate_line(text: str, rng: random.Random) -> str | bytes:
    lines = text.splitlines()
    i = rng.randrange(len(lines))
    lines.insert(i, lines[i])
    return "\n".join(lines) + "\n"


def m_indent(text: str, rng: random.Random) -> str | bytes:
    lines = text.splitlines()
    i = rng.randrange(len(lines))
    lines[i] = rng.choice(["\t", " ", "   "]) + lines[i]
    return "\n".join(lines) + "\n"


def m_huge_number(text: str, rng: random.Random) -> str | bytes:
    return _replace_value(text, rng, rng.choice(
        ["9" * 400, "-" + "9" * 30, "1e400", ".nan", "-.inf", "0x7fffffffffffffff", "1_000_000"]
    ))


def m_tag(text: str, rng: random.Random) -> str | bytes:
    return _replace_value(text, rng, rng.choice(
        ["!!python/object:os.system x", "!!binary '####'", "!!int abc", "!!timestamp x",
         "!!set {a, b}", "!!omap [a: 1]", "!custom 1", "2001-02-30"]
    ))


def m_huge_file(text: str, rng: random.Random) -> str | bytes:
    return text + "# " + "x" * (1024 * 1024 + 10) + "\n"


TEXT_MUTATIONS: list[Callable[[str, random.Random], str | bytes]] = [
    m_nul, m_control, m_bad_utf8, m_deep_value, m_deep_mapping, m_laughs, m_laughs_in_value,
    m_recursive_alias, m_undefined_alias, m_truncate, m_drop_line, m_duplicate_line, m_indent,
    m_huge_number, m_tag, m_huge_file,
]


# -- data mutations (the file parsed, changed, written back) -------------------------------

def _containers(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    out: list[tuple[tuple[Any, ...], Any]] = []
    if isinstance(data, dict | list):
        out.append((path, data))
        items = data.items() if isinstance(data, dict) else enumerate(data)
        for k, v in items:
            out.extend(_containers(v, (*path, k)))
    return out


def d_value(data: Any, rng: random.Random) -> None:
    _path, node = rng.choice(_containers(data))
    if isinstance(node, dict) and node:
        node[rng.choice(list(node))] = rng.choice(HOSTILE_VALUES)
    elif isinstance(node, list) and node:
        node[rng.randrange(len(node))] = rng.choice(HOSTILE_VALUES)


def d_unknown_key(data: Any, rng: random.Random) -> None:
    maps = [n for _, n in _containers(data) if isinstance(n, dict)]
    rng.choice(maps)[rng.choice(["colour", "extra_key", "nodes_", "verison"])] = 1


def d_delete_key(data: Any, rng: random.Random) -> None:
    maps = [n for _, n in _containers(data) if isinstance(n, dict) and n]
    node = rng.choice(maps)
    del node[rng.choice(list(node))]


def d_rename_key(data: Any, rng: random.Random) -> None:
    """A name (node, group, factor, vCenter...) with control characters or a slash."""
    maps = [n for _, n in _containers(data) if isinstance(n, dict) and n]
    node = rng.choice(maps)
    old = rng.choice(list(node))
    node[rng.choice(HOSTILE_KEYS) if rng.random() < 0.7 else f"{old}\n[global]"] = node.pop(old)


def d_many_items(data: Any, rng: random.Random) -> None:
    lists = [n for _, n in _containers(data) if isinstance(n, list) and n]
    if lists:
        node = rng.choice(lists)
        node.extend(node[-1:] * rng.choice([50, 1000]))


def d_wrong_type(data: Any, rng: random.Random) -> None:
    _path, node = rng.choice(_containers(data))
    if isinstance(node, dict) and node:
        key = rng.choice(list(node))
        value = node[key]
        node[key] = [value] if not isinstance(value, list) else {"v": value}


DATA_MUTATIONS: list[Callable[[Any, random.Random], None]] = [
    d_value, d_unknown_key, d_delete_key, d_rename_key, d_many_items, d_wrong_type,
]


def _dump(data: Any) -> str:
    try:
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    except (yaml.YAMLError, ValueError, TypeError):
        return yaml.safe_dump({"unrepresentable": True})


# -- --set arguments -----------------------------------------------------------------------

SETS: list[Callable[[random.Random], str]] = [
    lambda rng: f"x={_deep(rng.choice([60, 800]))}",
    lambda rng: "workload.params={" + "a: {" * 70 + "1" + "}" * 71,
    lambda rng: "name=a\x1bb",
    lambda rng: f"repeat={rng.choice(['-1', '0', '10000000', '.nan', 'x', '[1]'])}",
    lambda rng: f"phases.steady={rng.choice(['99999999999999999999h', '.inf', 'x', '-5s'])}",
    lambda rng: "factors.x.levels=[" + ",".join(str(i) for i in range(rng.choice([50, 200]))) + "]",
    lambda rng: rng.choice(["=1", "no-equals", "a..b=1", "0=1", "topology.0=1"]),
    lambda rng: "workload.params.extra={exec_prerun: 'touch PWNED'}",
    lambda rng: "settings.max_points=" + rng.choice(["0", "99999999999", "1"]),
    lambda rng: "x=&a [*a]",
    # Free text and hook values shown on terminals and in exports (issue 28).
    lambda rng: rng.choice(["description", "report.title", "label"]) + "="
    + rng.choice(['"\\e[31mred"', '"\\e]0;t\\a"', '"a\\0b"', '"\\ud83d\\udca5"', '"x\\x9b2J"']),
    lambda rng: "factors.fz.levels=[" + rng.choice(['"\\e[2J"', '"a\\nb"', '"\\a"', "ok"]) + "]",
    lambda rng: "factors.fz={hook: {node: n1, run: [sh, -c, 'tc {value}'], undo: [tc]}, "
    + "levels: [" + rng.choice(['"1ms\\nreboot"', '"$(reboot)"', "5ms"]) + "]}",
]


# -- variants ------------------------------------------------------------------------------

def variants(name: str, text: str, rng: random.Random, count: int) -> list[Variant]:
    """``count`` mutated variants of one file (text, data and --set mutations mixed)."""
    data = yaml.safe_load(text)
    out: list[Variant] = []
    for i in range(count):
        roll = rng.random()
        if roll < 0.5 or not isinstance(data, dict):
            mutate = rng.choice(TEXT_MUTATIONS)
            new = mutate(text, rng)
            raw = new.encode("utf-8", "surrogatepass") if isinstance(new, str) else new
            out.append(Variant(f"{name}#{i} {mutate.__name__}", raw))
        elif roll < 0.85:
            copy_ = yaml.safe_load(text)
            picked = rng.sample(DATA_MUTATIONS, k=rng.choice([1, 1, 2]))
            for mutate_data in picked:
                mutate_data(copy_, rng)
            names = "+".join(m.__name__ for m in picked)
            out.append(Variant(f"{name}#{i} {names}", _dump(copy_).encode()))
        else:
            sets = tuple(rng.choice(SETS)(rng) for _ in range(rng.choice([1, 2])))
            out.append(Variant(f"{name}#{i} --set", text.encode(), sets))
    return out
