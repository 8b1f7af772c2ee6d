"""Fits ``solvers/catalog/step_uncertainty.json`` from the rows of ``python -m solvers validate``.

    python -m solvers.fit_step_uncertainty [--write]

One residual per published run (``solvers.step_uncertainty.residuals``), classed by dense or MoE and GPU count,
pooled where a class has too few runs (``solvers.step_uncertainty.fit``). The rows are those the default
calibration was set on, so the file says ``held_out: false``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from solvers.inputs import resolve
from solvers.published import load_example, step_rows
from solvers.step_uncertainty import PATH, fit, residuals, step_class


def _classified_validate_rows() -> list[tuple[str, float]]:
    out = []
    for example, residual in residuals(step_rows()).items():
        resolved = resolve(load_example(Path(example).name))
        out.append((step_class(moe=resolved.model.moe is not None, gpus=resolved.cluster.gpus), residual))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m solvers.fit_step_uncertainty", description=__doc__)
    parser.add_argument("--write", action="store_true", help=f"write {PATH.name}")
    args = parser.parse_args(argv)
    document = fit(
        _classified_validate_rows(),
        generated_by="python -m solvers.fit_step_uncertainty --write (rows of python -m solvers validate)",
        convention="log(actual step_s / predicted step_s), in sample: the default calibration was set on "
        "these runs, so the spread understates the error on new runs",
        held_out=False,
    )
    text = json.dumps(document, indent=2) + "\n"
    if args.write:
        PATH.write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
