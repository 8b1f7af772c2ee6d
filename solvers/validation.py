"""Predicted vs published runs of the validation corpus, in sample and held out (``python -m solvers validate``).

For every run of the corpus (``solvers.corpus``; the built-in cases of ``solvers.published`` while ``corpus/`` is
empty) four predictions are compared with the published figure, in MFU points (a time or a throughput becomes
the MFU it implies, ``solvers.fit.compare``):

* ``in_sample``: the solver's defaults, i.e. the step effects on with the constants of
  ``solvers/catalog/fitted_calibration.json`` (fitted to the whole corpus);
* ``held_out``: the same model with the constants refitted without the run's source (leave one source out).
  This is the headline figure;
* ``held_out_by_family`` (each run's error only): refitted without the run's whole publication family
  (``Corpus.families``: the releases of one vendor table, one MLPerf round's submitters on one implementation),
  so that a sister source does not inform its sibling's prediction; ``summary.held_out_by_family``;
* ``legacy`` and ``legacy_held_out``: every effect off, with the hand calibration of
  ``solvers.catalog.calibration``, and with only its efficiencies refitted without the source.

Strong-scaling series: the sign of the slope of MFU against log(GPUs), published vs held-out predicted.
Ablations (one model on one cluster, layouts vary): Kendall's tau between the published and the held-out
predicted throughputs (tokens/s), and whether the published best is within 3% of the predicted best (its
predicted throughput at least 0.97 of the highest). Targets (issue 13): held-out mean |error| <= 3 points, every run within 8, every slope
sign right, every tau >= 0.8 with the published best within 3%. How much the held-out mean owes to which sources
the corpus holds: ``source_bootstrap`` (the sources drawn again with replacement). Whether a report's step range
holds the published step as often as it claims: ``range_coverage``. How far apart sources are where they
publish the same configuration (a floor under the held-out error of those runs):
``solvers.source_agreement``.

Example: ``validation_document()["summary"]["held_out_mean_abs_points"]``.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import math
import statistics
from typing import Any

import numpy as np

from solvers.catalog.fitted import FITTED
from solvers.catalog.uncertainty import P90_Z
from solvers.corpus import MFU_METRICS, Corpus, corpus_hash
from solvers.fit import (
    BOUNDS,
    EFFECT_CONSTANTS,
    FAMILIES,
    LOSS,
    OPTIMISER,
    Prepared,
    compare,
    fit,
    held_out,
    kernel_constants,
    legacy_params,
    predict_row,
    prepare,
)
from solvers.gemm_shape import fit_shape_half_dim, load_kernel_sources
from solvers.published import ledger_rows, validation_corpus
from solvers.source_agreement import format_matched, matched_configurations
from solvers.step_uncertainty import MIN_RUNS, step_class
from solvers.step_uncertainty import fit as fit_uncertainty

TARGET_MEAN_POINTS = 3.0
TARGET_MAX_POINTS = 8.0
TARGET_TAU = 0.8
TARGET_BEST_WITHIN = 0.03


def catalog_params() -> dict[str, float]:
    """The constants the solver uses by default (``fitted_calibration.json``) in ``solvers.fit`` form."""
    constants = FITTED["constants"]
    efficiency = FITTED["compute_efficiency"]
    out = {f"eff_{family}": float(efficiency.get(family, efficiency["hopper"])) for family in FAMILIES}
    out.update({name: float(constants[name]) for name in EFFECT_CONSTANTS})
    return out


def _native(p: Prepared, row: dict[str, Any]) -> float:
    metric = p.run.metric
    return float(row[metric] if metric in MFU_METRICS or metric in ("step_s", "tokens_per_s") else row["mfu"])


def kendall_tau(a: list[float], b: list[float]) -> float:
    """Kendall's tau-a of two rankings: (concordant - discordant) pairs over all pairs. Example: [1,2,3] vs
    [1,3,2] -> (2 - 1) / 3 = 0.33."""
    n = len(a)
    if n < 2:
        return 1.0
    score = 0
    for i in range(n):
        for j in range(i + 1, n):
            score += int(np.sign(a[i] - a[j]) * np.sign(b[i] - b[j]))
    return score / (n * (n - 1) / 2)


def _slope(gpus: list[int], values: list[float]) -> float:
    x = np.log(np.array(gpus, dtype=float))
    return float(np.polyfit(x, np.array(values), 1)[0]) if len(set(gpus)) > 1 else 0.0


def within_source_scatter(runs: list[dict[str, Any]]) -> float:
    """In-sample MFU mean |error| in points once each source's own mean log ratio is taken out.

    Each run's predicted MFU is divided by ``exp(m_s)``, ``m_s`` the mean of ``in_sample.log_ratio`` over the
    runs of its source ``s`` (one throughput scale per source, the least-squares one in log space), and its
    error taken again. No held-out fit can learn such a scale (the source is left out), so this is the part
    of the error that lies inside sources: a held-out mean below it needs a better model of the runs' own
    differences, not of the differences between software stacks.
    Example: runs whose predictions are all 10% fast within their source give 0.0.
    """
    by_source: dict[str, list[float]] = {}
    for r in runs:
        by_source.setdefault(r["source"], []).append(r["in_sample"]["log_ratio"])
    scale = {source: math.exp(statistics.fmean(ratios)) for source, ratios in by_source.items()}
    return _mean_abs(
        [
            (r["in_sample"]["mfu_predicted"] / scale[r["source"]] - r["in_sample"]["mfu_published"]) * 100.0
            for r in runs
        ]
    )


# The share of a class's runs a calibrated p10-p90 band holds: the normal's mass within +-P90_Z (0.8).
BAND_SHARE = round(2.0 * statistics.NormalDist().cdf(P90_Z) - 1.0, 12)  # 0.8, not 0.7999999999999998

# The source bootstrap of the headline (``source_bootstrap``): resamples, the interval's level and the seed of
# its generator (fixed, so that validate prints the same interval on every run).
BOOTSTRAP_RESAMPLES = 4_000
BOOTSTRAP_LEVEL = 0.90
BOOTSTRAP_SEED = 13


def source_bootstrap(
    errors_by_source: list[list[float]],
    *,
    target: float = TARGET_MEAN_POINTS,
    resamples: int = BOOTSTRAP_RESAMPLES,
    level: float = BOOTSTRAP_LEVEL,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, Any]:
    """How much the held-out mean |error| depends on which sources the corpus happens to hold.

    The corpus is drawn again ``resamples`` times, each time k sources (k = the corpus' count) chosen with
    replacement, every run of a chosen source with it (the source is the unit of the leave-one-source-out
    fit, and runs of one source share its software and its reporting, so they are not independent draws).
    Each draw's figure is the mean |error| over its runs, as the headline: ``sum_i S_i / sum_i n_i`` over the
    chosen sources i, ``S_i`` the sum of |error| of source i's runs and ``n_i`` their count. Returns the
    ``level`` percentile interval of those means (``low``, ``high``; linear interpolation) and the share of draws
    at or below ``target``. The runs' errors are held as they are: the interval is the sampling spread of the
    corpus, not the refit of every draw (Efron and Tibshirani, An Introduction to the Bootstrap, 1993, ch. 13,
    percentile interval; resampling whole clusters, Davison and Hinkley, Bootstrap Methods and their
    Application, 1997, §3.8).

    Example: two sources with errors [1, 1] and [5] have the mean 2.33; the draws give 1 (both draws the first),
    5 (the second twice) or 2.33, so the 90% interval is [1, 5] and about three quarters of the draws are at or
    below 3.
    """
    if not 0.0 < level < 1.0 or resamples < 1:
        raise ValueError(
            f"source_bootstrap needs 0 < level < 1 and resamples >= 1, got {level} and {resamples}"
        )
    if not errors_by_source or any(not errors for errors in errors_by_source):
        raise ValueError("source_bootstrap needs at least one source, each with at least one run")
    sums = np.array([sum(abs(e) for e in errors) for errors in errors_by_source], dtype=float)
    counts = np.array([len(errors) for errors in errors_by_source], dtype=float)
    k = len(errors_by_source)
    draws = np.random.default_rng(seed).integers(0, k, size=(resamples, k))
    means = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return {
        "level": level,
        "low": float(low),
        "high": float(high),
        "resamples": resamples,
        "share_at_or_below_target": float(np.mean(means <= target)),
    }


def range_coverage(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """How often a report's p10-p90 range of the step time holds the published step, the classes fitted without
    the run's source.

    A report's step range is ``step_s x exp(mean + sigma z)`` with ``z`` from -1.2816 to 1.2816 (the normal's
    10th and 90th percentiles; ``solvers.ranges``) and the mean and sigma of its class (dense or MoE, GPU count)
    from the held-out log ratios ``r = log(actual step / predicted step)`` of the corpus
    (``solvers.step_uncertainty.fit``). Checked on the corpus itself that would be in sample, so for each source
    the classes are fitted again, by the same function, to the other sources' held-out ratios, and each of the
    source's runs is inside when its own held-out ratio lies in its class's band. A calibrated range holds 80%
    of the runs, 10% below and 10% above; more inside means ranges wider than the errors, fewer narrower. Not a
    nested cross-validation: the other sources' ratios come from folds whose constants saw this source. The band
    is the report's, with the class's sigma as if known (no allowance for estimating it from few runs), so a
    source is checked only when the others hold at least ``MIN_RUNS`` runs, the least a class is fitted on.

    Returns ``{"nominal": 0.8, "runs", "inside", "below", "above", "inside_interval", "by_kind": {"dense": {...},
    "moe": {...}}}`` (shares of the ``runs`` checked; a kind with no run is left out; with none checked the shares
    are None). ``inside_interval`` is the 90% interval of the share inside when the sources are drawn again
    (``source_bootstrap`` over each source's runs outside the band): a share from few sources is a rough one.
    Example: one source at r = 1.0 among sources near 0 lies above its band (its class, fitted without it,
    is narrow), so it counts in ``above``.
    """
    classified = [
        (r["source"], step_class(moe=r["moe"], gpus=r["gpus"]), r["held_out"]["log_ratio"]) for r in runs
    ]
    places: list[tuple[str, str, str]] = []  # (source, kind, "inside" | "below" | "above"), one per run
    for source in dict.fromkeys(src for src, _, _ in classified):
        others = [(cls, ratio) for src, cls, ratio in classified if src != source]
        # too few runs for a class of their own: this source's runs are not checked
        if len(others) < MIN_RUNS:
            continue
        classes = fit_uncertainty(others, generated_by="", convention="", held_out=True)["classes"]
        for src, cls, ratio in classified:
            if src != source:
                continue
            mean, sigma = classes[cls]["mean"], classes[cls]["sigma"]
            place = (
                "below"
                if ratio < mean - P90_Z * sigma
                else "above"
                if ratio > mean + P90_Z * sigma
                else "inside"
            )
            places.append((source, cls.split("/")[0], place))

    def shares(subset: list[tuple[str, str, str]]) -> dict[str, Any]:
        out: dict[str, Any] = {"runs": len(subset)}
        out.update({key: None for key in ("inside", "below", "above", "inside_interval")})
        if subset:
            out.update(
                {
                    key: sum(p == key for _, _, p in subset) / len(subset)
                    for key in ("inside", "below", "above")
                }
            )
            # the share outside, source by source, drawn again as the headline is (``source_bootstrap``)
            outside: dict[str, list[float]] = {}
            for src, _, p in subset:
                outside.setdefault(src, []).append(0.0 if p == "inside" else 1.0)
            b = source_bootstrap(list(outside.values()))
            out["inside_interval"] = [1.0 - b["high"], 1.0 - b["low"]]
        return out

    result: dict[str, Any] = {"nominal": BAND_SHARE, **shares(places)}
    result["by_kind"] = {
        kind: shares(subset) for kind in ("dense", "moe") if (subset := [x for x in places if x[1] == kind])
    }
    return result


def constants_across_folds(by_source: dict[str, dict[str, float]]) -> dict[str, dict[str, Any]]:
    """Each fitted constant's lowest and highest value over the leave-one-source-out folds, and the source
    whose leaving out gives it: how much one source moves the calibration. Example: the Blackwell efficiency
    at 1.7.0, 0.541 without mlperf-training-v51-dell and 0.610 without dgxc-benchmarking-2505."""
    names = dict.fromkeys(name for params in by_source.values() for name in params)
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        values = [(params[name], source) for source, params in by_source.items() if name in params]
        (low, low_source), (high, high_source) = min(values), max(values)
        out[name] = {"min": low, "min_without": low_source, "max": high, "max_without": high_source}
    return out


def _mean_abs(values: list[float]) -> float:
    return statistics.fmean(abs(v) for v in values) if values else 0.0


def family_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The held-out headline with each publication family left out as a whole (``held_out_by_family`` of each
    run), and for each family of several sources its mean error against the same runs held out one source at a time.

    Example: runs of sources ``a`` and ``b`` (family ``x``) 2 and 4 points off held out by family, 1 and 3 by
    source, and of ``c`` 5 points both ways: mean 11/3 points, and family ``x`` 3.0 against 2.0.
    """
    by_family: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        by_family.setdefault(r["family"], []).append(r)
    errors = [r["held_out_by_family"]["error_points"] for r in runs]
    return {
        "families": len(by_family),
        "mean_abs_points": _mean_abs(errors),
        "max_abs_points": max((abs(e) for e in errors), default=0.0),
        "within_8_points": sum(1 for e in errors if abs(e) <= TARGET_MAX_POINTS),
        "multi_source_families": [
            {
                "family": family,
                "sources": sorted({r["source"] for r in members}),
                "runs": len(members),
                "held_out_mean_abs_points": _mean_abs(
                    [r["held_out_by_family"]["error_points"] for r in members]
                ),
                "source_held_out_mean_abs_points": _mean_abs(
                    [r["held_out"]["error_points"] for r in members]
                ),
            }
            for family, members in sorted(by_family.items())
            if len({r["source"] for r in members}) > 1
        ],
    }


def step_error_percent(log_ratios: list[float]) -> dict[str, float]:
    """How far off a step time is, in percent of the predicted step: ``|exp(r) - 1| x 100`` for each log ratio
    ``r = log(actual step / predicted step)``, summarised as median, mean and 90th percentile (linear
    interpolation). MFU points understate the error of a run at low MFU (a mixture-of-experts run at 10% MFU
    that takes twice the predicted time is 5 points off); a budget scales with the step time itself.
    Example: ``step_error_percent([0.0, math.log(1.1), math.log(0.8)])`` has median 10.0, mean 10.0, p90 18.0.
    """
    if not log_ratios:
        return {"median": 0.0, "mean": 0.0, "p90": 0.0}
    pct = np.abs(np.expm1(np.array(log_ratios, dtype=float))) * 100.0
    return {
        "median": float(np.median(pct)),
        "mean": float(np.mean(pct)),
        "p90": float(np.percentile(pct, 90.0)),
    }


def validation_document(corpus: Corpus | None = None) -> dict[str, Any]:
    """``{"summary", "sources", "runs", "series", "ablations", "matched_configurations", "targets",
    "ledger_rows"}`` (module docstring)."""
    corpus = validation_corpus() if corpus is None else corpus
    prepared = prepare(corpus)
    legacy = prepare(corpus, effects=False)
    fixed = kernel_constants()
    # In sample means the constants fitted to the runs judged: the shipped calibration for its own corpus,
    # a fit to any other corpus given (``validate --corpus DIR``), which the shipped constants never saw.
    digest = corpus_hash(corpus)
    params = catalog_params() if digest == FITTED.get("corpus_sha256") else fit(prepared, fixed=fixed)
    in_rows = [predict_row(p, params) for p in prepared]
    held_rows, by_source = held_out(prepared, fixed=fixed)
    families = corpus.families()
    family_rows, _ = held_out(prepared, fixed=fixed, groups=families, reuse=held_rows)
    legacy_rows = [predict_row(p, legacy_params()) for p in legacy]
    legacy_held_rows, _ = held_out(legacy, effects=False)

    runs: list[dict[str, Any]] = []
    for i, p in enumerate(prepared):
        cols: dict[str, Any] = {}
        for name, row in (
            ("in_sample", in_rows[i]),
            ("held_out", held_rows[i]),
            ("legacy", legacy_rows[i]),
            ("legacy_held_out", legacy_held_rows[i]),
        ):
            predicted, published, log_ratio = compare(p, row)
            cols[name] = {
                "predicted": _native(p, row),
                # throughput, the ranking basis of an ablation: actual step = predicted step x e^log_ratio
                "tokens_per_s_predicted": float(row["tokens_per_s"]),
                "tokens_per_s_published": float(row["tokens_per_s"]) / math.exp(log_ratio),
                "mfu_predicted": predicted,
                "mfu_published": published,
                "error_points": error_points(predicted, published),
                "log_ratio": log_ratio,
            }
        family_predicted, family_published, family_log_ratio = compare(p, family_rows[i])
        runs.append(
            {
                "id": p.run.id,
                "source": p.run.source,
                "family": families.get(p.run.source, p.run.source),
                "metric": p.run.metric,
                "published": p.run.published,
                "gpus": p.gpus,
                "moe": p.is_moe,
                "series": p.run.series,
                "series_kind": p.run.series_kind,
                "ablation": p.run.ablation,
                **cols,
                "held_out_by_family": {
                    "error_points": error_points(family_predicted, family_published),
                    "log_ratio": family_log_ratio,
                },
            }
        )

    def errors(col: str, source: str | None = None) -> list[float]:
        return [r[col]["error_points"] for r in runs if source is None or r["source"] == source]

    sources = []
    for source in corpus.source_ids():
        if not any(r["source"] == source for r in runs):
            continue
        sources.append(
            {
                "source": source,
                "runs": sum(1 for r in runs if r["source"] == source),
                "in_sample_mean_abs_points": _mean_abs(errors("in_sample", source)),
                "held_out_mean_abs_points": _mean_abs(errors("held_out", source)),
                "held_out_max_abs_points": max(abs(e) for e in errors("held_out", source)),
                "legacy_mean_abs_points": _mean_abs(errors("legacy", source)),
                "legacy_held_out_mean_abs_points": _mean_abs(errors("legacy_held_out", source)),
                "constants_without_source": by_source.get(source, {}),
            }
        )

    series = []
    for name in sorted({r["series"] for r in runs if r["series"] and r["series_kind"] == "strong"}):
        members = sorted((r for r in runs if r["series"] == name), key=lambda r: r["gpus"])
        gpus = [r["gpus"] for r in members]
        published = _slope(gpus, [r["held_out"]["mfu_published"] for r in members])
        predicted = _slope(gpus, [r["held_out"]["mfu_predicted"] for r in members])
        series.append(
            {
                "series": name,
                "gpus": gpus,
                "published_slope": published,
                "predicted_slope": predicted,
                "sign_right": bool(np.sign(published) == np.sign(predicted)),
            }
        )

    ablations = []
    for name in sorted({r["ablation"] for r in runs if r["ablation"]}):
        members = [r for r in runs if r["ablation"] == name]
        # Ranked by throughput (tokens/s), which compares layouts, precisions and recompute policies alike.
        pub = [r["held_out"]["tokens_per_s_published"] for r in members]
        pred = [r["held_out"]["tokens_per_s_predicted"] for r in members]
        best_published = int(np.argmax(pub))
        within = pred[best_published] >= (1.0 - TARGET_BEST_WITHIN) * max(pred)
        ablations.append(
            {
                "ablation": name,
                "runs": [r["id"] for r in members],
                "kendall_tau": kendall_tau(pub, pred),
                "published_best": members[best_published]["id"],
                "predicted_best": members[int(np.argmax(pred))]["id"],
                "published_best_within_3pct": bool(within),
            }
        )

    held = errors("held_out")
    summary = {
        "runs": len(runs),
        "sources": len(sources),
        "held_out_mean_abs_points": _mean_abs(held),
        "held_out_max_abs_points": max((abs(e) for e in held), default=0.0),
        "held_out_within_8_points": sum(1 for e in held if abs(e) <= TARGET_MAX_POINTS),
        "held_out_mean_abs_points_bootstrap": source_bootstrap(
            [errors("held_out", src["source"]) for src in sources]
        ),
        "held_out_by_family": family_summary(runs),
        "held_out_step_error_percent": step_error_percent([r["held_out"]["log_ratio"] for r in runs]),
        "held_out_range_coverage": range_coverage(runs),
        "in_sample_mean_abs_points": _mean_abs(errors("in_sample")),
        "within_source_scatter_points": within_source_scatter(runs),
        "legacy_mean_abs_points": _mean_abs(errors("legacy")),
        "legacy_held_out_mean_abs_points": _mean_abs(errors("legacy_held_out")),
        "fitted_constants": params,
        "constants_across_folds": constants_across_folds(by_source),
        "corpus_sha256": digest,
        "calibration_corpus_sha256": FITTED.get("corpus_sha256", ""),
    }
    targets = {
        "held_out_mean_abs_le_3_points": summary["held_out_mean_abs_points"] <= TARGET_MEAN_POINTS,
        "every_run_within_8_points": summary["held_out_within_8_points"] == len(runs),
        # None: the corpus holds no strong-scaling series (no ablation), so the target is not tested.
        "every_strong_slope_sign_right": all(s["sign_right"] for s in series) if series else None,
        "every_ablation_tau_ge_0_8_and_best_within_3pct": all(
            a["kendall_tau"] >= TARGET_TAU and a["published_best_within_3pct"] for a in ablations
        )
        if ablations
        else None,
    }
    return {
        "summary": summary,
        "targets": targets,
        "sources": sources,
        "runs": runs,
        "series": series,
        "ablations": ablations,
        "matched_configurations": matched_configurations({p.run.id: p.run.scenario for p in prepared}, runs),
        "ledger_rows": ledger_rows(),
    }


def error_points(predicted_mfu: float, published_mfu: float) -> float:
    """A run's error in MFU points (positive: the model is faster than published): the unit of every target."""
    return (predicted_mfu - published_mfu) * 100.0


def fit_documents(corpus: Corpus | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(fitted_calibration.json, step_uncertainty.json)`` contents: the constants fitted to the whole corpus,
    and the held-out log ratios by class. Deterministic apart from the date."""
    corpus = validation_corpus() if corpus is None else corpus
    prepared = prepare(corpus)
    shape = fit_shape_half_dim(load_kernel_sources())
    fixed = {"shape_half_dim": shape.d_half}
    params = fit(prepared, fixed=fixed)
    held_rows, _ = held_out(prepared, fixed=fixed)
    classified = [
        (step_class(moe=p.is_moe, gpus=p.gpus), compare(p, row)[2])
        for p, row in zip(prepared, held_rows, strict=True)
    ]
    calibration = {
        "generated_by": "python -m solvers fit",
        "corpus_sha256": corpus_hash(corpus),
        "corpus_runs": len(corpus.runs),
        "corpus_sources": len(corpus.sources),
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
        "constants": {name: params[name] for name in EFFECT_CONSTANTS},
        "compute_efficiency": {family: params[f"eff_{family}"] for family in FAMILIES},
        "bounds": {name: list(bound) for name, bound in BOUNDS.items()},
        "loss": dict(LOSS),
        # Other SciPy releases may move a constant in its last printed digits.
        "optimiser": {**OPTIMISER, "scipy": importlib.metadata.version("scipy")},
        "shape_half_dim_fit": {
            "fitted_to": "corpus/kernels/*.yaml (python -m solvers fit; solvers.gemm_shape)",
            "rows": shape.rows,
            "plateau_tflops": shape.plateau_tflops,
            "rms_log_error": shape.rms_log_error,
        },
    }
    uncertainty = fit_uncertainty(
        classified,
        generated_by="python -m solvers fit",
        convention="log(actual step_s / predicted step_s), held out by source",
        held_out=True,
    )
    # The runs the model misses by more than the target when their source is held out: they are evidence
    # against the model where they lie, so the validated envelope leaves them out (solvers.envelope).
    missed = []
    for p, row in zip(prepared, held_rows, strict=True):
        error = error_points(*compare(p, row)[:2])
        if abs(error) > TARGET_MAX_POINTS:
            shown = round(error, 2)  # two decimals, unless they would round a miss onto the target (8.0014)
            missed.append(
                {"id": p.run.id, "held_out_error_points": shown if abs(shown) > TARGET_MAX_POINTS else error}
            )
    uncertainty["outside_target"] = {"max_abs_points": TARGET_MAX_POINTS, "runs": missed}
    return calibration, uncertainty


def _format_bootstrap(b: dict[str, Any]) -> str:
    return (
        f"held-out mean with the sources drawn again ({b['resamples']:,} times): {b['level']:.0%} interval "
        f"{b['low']:.2f}-{b['high']:.2f} points; at or below {TARGET_MEAN_POINTS:g} in "
        f"{b['share_at_or_below_target']:.0%} of the draws"
    )


def _format_coverage(c: dict[str, Any]) -> str:
    if not c["runs"]:
        return f"ranges: not checked (no source leaves {MIN_RUNS} runs to fit the classes on)"

    def interval(k: dict[str, Any]) -> str:
        low, high = k["inside_interval"]
        return f"[{low * 100:.0f}-{high * 100:.0f}%]"

    kinds = ", ".join(
        f"{kind} {k['inside']:.0%} of {k['runs']} {interval(k)}" for kind, k in c["by_kind"].items()
    )
    return (
        f"ranges: the step's p10-p90 band (classes fitted without the run's source) holds {c['inside']:.0%} of the "
        f"{c['runs']} runs held out {interval(c)} (nominal {BAND_SHARE:.0%}; {c['below']:.0%} below, {c['above']:.0%} above; "
        f"{kinds}; in brackets the 90% interval with the sources drawn again)"
    )


def _format_families(f: dict[str, Any], runs: int) -> str:
    several = f["multi_source_families"]
    if not several:
        return "held out by publication family: every family is one source (as above)"
    names = ", ".join(
        f"{m['family']} ({len(m['sources'])} sources, {m['held_out_mean_abs_points']:.2f} against "
        f"{m['source_held_out_mean_abs_points']:.2f} one source at a time)"
        for m in several
    )
    return (
        f"held out by publication family (a series' sources left out together: {names}): MFU mean |error| "
        f"{f['mean_abs_points']:.2f} points, max {f['max_abs_points']:.2f}, within {TARGET_MAX_POINTS:g} points "
        f"{f['within_8_points']}/{runs}"
    )


def format_validation(document: dict[str, Any]) -> str:
    """The validation as plain text: the held-out headline first, then sources, runs, series, ablations."""
    s = document["summary"]
    lines = [
        f"HELD OUT (leave one source out): MFU mean |error| {s['held_out_mean_abs_points']:.2f} points, max "
        f"{s['held_out_max_abs_points']:.2f}, within {TARGET_MAX_POINTS:g} points {s['held_out_within_8_points']}/{s['runs']} "
        f"({s['runs']} runs, {s['sources']} sources)",
        _format_bootstrap(s["held_out_mean_abs_points_bootstrap"]),
        _format_families(s["held_out_by_family"], s["runs"]),
        "held out as step time (|actual / predicted - 1|): median "
        f"{s['held_out_step_error_percent']['median']:.1f}%, mean {s['held_out_step_error_percent']['mean']:.1f}%, "
        f"90th percentile {s['held_out_step_error_percent']['p90']:.1f}%",
        _format_coverage(s["held_out_range_coverage"]),
        f"in sample {s['in_sample_mean_abs_points']:.2f} points; without the effects (hand calibration) "
        f"{s['legacy_mean_abs_points']:.2f} in sample, {s['legacy_held_out_mean_abs_points']:.2f} held out",
        f"inside sources (in sample, each source's own mean log ratio taken out): "
        f"{s['within_source_scatter_points']:.2f} points",
        "targets: "
        + ", ".join(
            f"{k} {'not tested (none in the corpus)' if v is None else 'met' if v else 'NOT met'}"
            for k, v in document["targets"].items()
        ),
        "",
        "constants across the held-out folds: lowest .. highest (the source left out)",
        *(
            f"  {name:<22} {c['min']:.3g} ({c['min_without']}) .. {c['max']:.3g} ({c['max_without']})"
            for name, c in s["constants_across_folds"].items()
            if c["min"] != c["max"]
        ),
        "",
        f"{'source':<28} {'runs':>4} {'in-sample':>10} {'held-out':>9} {'max':>6} {'legacy':>7} {'leg.held':>9}",
        "-" * 78,
    ]
    for src in document["sources"]:
        lines.append(
            f"{src['source']:<28} {src['runs']:>4} {src['in_sample_mean_abs_points']:>10.2f} "
            f"{src['held_out_mean_abs_points']:>9.2f} {src['held_out_max_abs_points']:>6.2f} "
            f"{src['legacy_mean_abs_points']:>7.2f} {src['legacy_held_out_mean_abs_points']:>9.2f}"
        )
    lines += [
        "",
        f"{'run':<52} {'metric':<8} {'published':>10} {'held-out':>10} {'err pts':>8} {'in-smp':>7}",
        "-" * 99,
    ]
    for r in document["runs"]:
        fmt = (lambda v: f"{v * 100:.1f}%") if r["metric"] in MFU_METRICS else (lambda v: f"{v:,.4g}")
        lines.append(
            f"{r['id'][:52]:<52} {r['metric']:<8} {fmt(r['published']):>10} {fmt(r['held_out']['predicted']):>10} "
            f"{r['held_out']['error_points']:>+8.2f} {r['in_sample']['error_points']:>+7.2f}"
        )
    if document["series"]:
        lines += ["", "strong-scaling series (slope of MFU per ln GPUs, held out)"]
        for x in document["series"]:
            lines.append(
                f"  {x['series']}: GPUs {x['gpus'][0]:,}-{x['gpus'][-1]:,}, published {x['published_slope']:+.4f}, "
                f"predicted {x['predicted_slope']:+.4f}, sign {'right' if x['sign_right'] else 'WRONG'}"
            )
    if document["ablations"]:
        lines += ["", "ablations (held out)"]
        for a in document["ablations"]:
            lines.append(
                f"  {a['ablation']}: Kendall tau {a['kendall_tau']:+.2f}, published best {a['published_best']}, "
                f"predicted best {a['predicted_best']}, within 3%: {'yes' if a['published_best_within_3pct'] else 'NO'}"
            )
    lines += ["", *format_matched(document["matched_configurations"])]
    if document["ledger_rows"]:
        lines += ["", "reliability and schedule (Llama 3 405B, solvers.published)"]
        for r in document["ledger_rows"]:
            lines.append(
                f"  {r['metric']}: predicted {r['predicted']:,.4g} vs published {r['published']:,.4g} {r['unit']}"
            )
    return "\n".join(lines)
