"""The validated envelope's data file (solvers/envelope.py), its filter and support blocks agreeing
(solvers/search/envelope.py), and the search document's best report carrying its support as a solve does."""

from __future__ import annotations

import copy

import pytest

from solvers import envelope as envelope_data
from solvers import solve
from solvers.errors import ScenarioError
from solvers.inputs import resolve
from solvers.published import load_example
from solvers.search import SearchSpace, search_resolved
from solvers.search.document import search_document
from solvers.search.envelope import features_of_runs, inside_mask, support_blocks

LLAMA3_405B = "llama3-405b-16384.yaml"
# the corpus run of corpus/llama3-2024.yaml that names examples/llama3-405b-16384.yaml
LLAMA3_405B_CORPUS_RUN = "llama3-2024-405b-16384gpu-8k"


# ---------------------------------------------------------------------------------------------------------
# the data file: a run held out for missing the target must stay out
# ---------------------------------------------------------------------------------------------------------


def test_a_corpus_run_the_model_misses_does_not_reenter_as_its_published_case(monkeypatch) -> None:
    """solvers/envelope.py: "A corpus run that the model misses by more than the validation target when its
    source is held out ... is left out"; the published case of the same example is the same run (the module
    dedups them by resolved document), so the identical document must not come back in under the published
    case's id."""
    monkeypatch.setattr(envelope_data, "read_outside_target", lambda: (8.0, {LLAMA3_405B_CORPUS_RUN: 9.0}))
    document = envelope_data.envelope_document()
    assert LLAMA3_405B_CORPUS_RUN in {s["id"] for s in document["skipped"]}
    held_out = resolve(load_example(LLAMA3_405B)).document_hash
    back_in = []
    for run in document["runs"]:
        if run["source"] == "published":
            stem = run["id"]
            if resolve(load_example(f"{stem}.yaml")).document_hash == held_out:
                back_in.append(stem)
    assert back_in == [], f"the held-out run is back in the envelope as {back_in}"


# ---------------------------------------------------------------------------------------------------------
# the filter and the support block must agree: a feature that does not apply is inside
# ---------------------------------------------------------------------------------------------------------


def _llama3_only_envelope():
    """An envelope of one validated run: Llama 3 405B's published TP8 CP1 PP16 layout (no context parallelism,
    so no validated run has a tokens_per_cp_rank value)."""
    r = resolve(load_example(LLAMA3_405B))
    return r, features_of_runs([("llama3", "llama3-2024", r.model, r.cluster, r.training, r.layouts)])


def test_a_validated_runs_own_layout_is_inside_an_envelope_of_itself() -> None:
    """tokens_per_cp_rank does not apply at cp 1 ("NaN ... always inside"), and ``support_blocks`` says so;
    ``inside_mask`` (the search's filter) must agree when no validated run of the class uses cp > 1: the run's
    own layout is inside an envelope of itself."""
    r, envelope = _llama3_only_envelope()
    block = support_blocks(
        model=r.model, cluster=r.cluster, training=r.training, layouts=r.layouts, envelope=envelope
    )[0]
    assert block["within_validated"] is True and block["distance"] == 0.0
    inside, first = inside_mask(
        model=r.model, cluster=r.cluster, training=r.training, layouts=r.layouts, envelope=envelope
    )
    assert bool(inside[0]) is True, f"filtered out as outside by {first[0]}"


def test_a_search_keeps_the_validated_layout_when_no_run_uses_context_parallelism() -> None:
    """The same through the search: a space holding only the published layout, judged against an envelope made
    of that very run, keeps it."""
    _, envelope = _llama3_only_envelope()
    auto_doc = load_example(LLAMA3_405B)
    auto_doc["training"]["layout"] = "auto"
    auto = resolve(auto_doc)
    space = SearchSpace(
        tp=(8,),
        cp=(1,),
        pp=(16,),
        ep=(1,),
        expert_tp=(0,),
        microbatch_seqs=(1,),
        schedule=("interleaved",),
        virtual_stages=(8,),
        sequence_parallel=(True,),
        zero_stage=(3,),
        fsdp_reshard_after_forward=(False,),
        recompute=("none",),
        grad_reduce_dtype=("fp32",),
    )
    try:
        result = search_resolved(auto, space=space, within_validated=True, envelope=envelope)
    except ScenarioError as exc:
        pytest.fail(f"the validated layout itself was refused: {exc.first.message}")
    assert result.evaluated == 1


# ---------------------------------------------------------------------------------------------------------
# CONTRACT.md v1.1 "Support": a search or layout: auto result carries search.support
# ---------------------------------------------------------------------------------------------------------


def test_the_search_best_report_carries_search_support_as_an_auto_solve_does() -> None:
    """CONTRACT.md: "A search or `layout: auto` result carries `search.support` for its layout" (and
    ``SearchSummary`` has within_validated and support). An auto solve's report has both under ``search``, and
    so has the search document's best report of the same layout."""
    doc = load_example("auto-llama3-70b-1024xh100.yaml")
    report = solve(copy.deepcopy(doc))
    best = search_document(copy.deepcopy(doc), top=0)["best"]
    assert report["layout"] == best["layout"]
    assert "support" in report["search"] and "within_validated" in report["search"]
    assert best["search"].get("support") == report["search"]["support"]
    assert best["search"].get("within_validated") == report["search"]["within_validated"]
