"""POST /solve/: solve a scenario document synchronously, without storing anything (quick what-ifs)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.schema import LIMITS_MARKDOWN, openapi_schema
from api.solving import require_object, solve_document
from api.views.base import AuthenticatedAPIView
from solvers.report_schema import report_json_schema

SCENARIO_EXAMPLE = {
    "schema_version": 1,
    "model": {"preset": "llama3-8b"},
    "cluster": {"accelerator": "h100-sxm", "gpus": 64, "gpus_per_node": 8},
    "site": {"region": "quebec"},
    "training": {
        "seq_len": 8192,
        "global_batch_tokens": 4194304,
        "total_tokens": 1.0e12,
        "precision": "bf16",
        "layout": {"tp": 2, "pp": 1, "cp": 1, "microbatch_seqs": 1},
    },
    "economics": {"amortization_years": 3},
}


SOLVE_DESCRIPTION = (
    "Solve a whole scenario document (model, cluster, site, training, economics) and return the report "
    "document. Nothing is stored. A bad document is a 400 listing each broken rule with its field path. "
    "The report carries `ranges` (p10, p50, p90 of its headline figures keyed by the figure's path, e.g. "
    '`step.step_s`) and `ranges_method` (CONTRACT v1.1, additive; docs/CONVENTIONS.md "Ranges").\n'
    + LIMITS_MARKDOWN
)


class SolveView(AuthenticatedAPIView):
    """Solve a whole scenario document (model, cluster, site, training, economics) and return the report.

    Nothing is stored. The same validation and limits apply as to stored scenarios: a bad document is a 400
    listing each broken rule with its field path.
    """

    throttle_scope = "solve"
    read_scope_may_post = True  # it stores nothing: a read-only token may solve

    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={200: openapi_schema(report_json_schema())},
        tags=["solve"],
        description=SOLVE_DESCRIPTION,
        examples=[OpenApiExample("A 64-GPU Llama 3 8B plan", value=SCENARIO_EXAMPLE, request_only=True)],
    )
    def post(self, request: Request) -> Response:
        document = require_object(request.data)
        return Response(solve_document(document))
