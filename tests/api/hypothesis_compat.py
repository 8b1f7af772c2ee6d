"""hypothesis-jsonschema 0.23 (used by schemathesis 3.x) calls ``many(...).more()`` and ``.reject()``, which
hypothesis removed from its internal ``many`` helper in favour of a context-manager protocol. This restores
the two methods for hypothesis-jsonschema only, with the semantics they had (draw "continue?" booleans with
the same probability; give up on an element after repeated rejections)."""

from __future__ import annotations

from typing import Any

import hypothesis.internal.conjecture.utils as cu


class LegacyMany:
    def __init__(self, data: Any, min_size: int, max_size: float, average_size: float) -> None:
        self.data = data
        self.min_size = min_size
        self.max_size = max_size
        self.p_continue = cu._calc_p_continue(average_size - min_size, max_size - min_size)
        self.count = 0
        self.rejections = 0
        self.force_stop = False

    def more(self) -> bool:
        if self.min_size == self.max_size:
            go_on = self.count < self.min_size
        else:
            forced: bool | None = None
            if self.force_stop:
                forced = False
            elif self.count < self.min_size:
                forced = True
            elif self.count >= self.max_size:
                forced = False
            go_on = self.data.draw_boolean(self.p_continue, forced=forced)
        if go_on:
            self.count += 1
        return go_on

    def reject(self, why: str | None = None) -> None:
        self.count -= 1
        self.rejections += 1
        if self.rejections > max(3, 2 * self.count):
            if self.count < self.min_size:
                self.data.mark_invalid(why)
            else:
                self.force_stop = True


class _CuShim:
    many = LegacyMany

    def __getattr__(self, name: str) -> Any:
        return getattr(cu, name)


def install() -> None:
    import hypothesis_jsonschema._from_schema as from_schema

    if not hasattr(cu.many, "more"):
        setattr(from_schema, "cu", _CuShim())  # noqa: B010 (the module has no such attribute in its stubs)
