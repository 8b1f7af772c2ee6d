"""Scenario text to a document: what no parser should expand or recurse into is an ``InputError`` naming why,
and ordinary anchors and aliases still read."""

from __future__ import annotations

import time

import pytest

from solvers.document_text import MAX_YAML_VALUES, InputError, parse_text


def alias_bomb(levels: int) -> str:
    lines = ["l0: &l0 [" + ",".join(['"xxxxxxxx"'] * 10) + "]"]
    lines += [f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_a_yaml_alias_bomb_is_refused_from_its_nodes_in_milliseconds() -> None:
    """Ten levels of ten aliases: 520 bytes that write out to 1.1e10 values."""
    started = time.perf_counter()
    with pytest.raises(InputError, match="aliases"):
        parse_text(alias_bomb(10))
    assert time.perf_counter() - started < 1.0


def test_anchors_and_aliases_within_the_limit_read_as_their_values() -> None:
    text = "base: &layout {tp: 8, pp: 4}\ntraining: {layout: *layout}\n"
    assert parse_text(text) == {"base": {"tp": 8, "pp": 4}, "training": {"layout": {"tp": 8, "pp": 4}}}
    # four levels of ten: 11,111 values written out, well inside MAX_YAML_VALUES
    assert MAX_YAML_VALUES > 11_111 and len(parse_text(alias_bomb(4))["l3"]) == 10


@pytest.mark.parametrize("text", ["[" * 100_000, "a: " + "[" * 100_000, "{" * 100_000])
def test_a_document_nested_too_deeply_is_refused(text: str) -> None:
    with pytest.raises(InputError, match="nested too deeply"):
        parse_text(text)
