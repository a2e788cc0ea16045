"""Rows of results as a table: plain text for terminals and `print`, HTML for notebooks and the report."""

from __future__ import annotations

import html
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["table", "text_table", "text_table_of"]


def text_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Plain-text columns, each as wide as its longest cell, two spaces apart."""
    rows = [tuple(header)] + [tuple(str(c) for c in row) for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)


def text_table_of(rows: Iterable[Mapping[str, Any]], float_format: str = ".3g") -> str:
    """``text_table`` from a list of dicts with the same keys (the plain-text counterpart of ``table``):
    the first dict's keys head the columns, floats are written with ``float_format``."""
    rows = list(rows)
    if not rows:
        return "(no rows)"
    return text_table(list(rows[0]), [[format(v, float_format) if isinstance(v, float) else v for v in row.values()]
                                      for row in rows])


def table(rows: Iterable[Mapping[str, Any]]) -> str:
    """An HTML table from a list of dicts with the same keys (for results that are not timings)."""
    rows = list(rows)
    if not rows:
        return "<table></table>"
    cols = list(rows[0])

    def fmt(v):
        return f"{v:.4g}" if isinstance(v, float) else html.escape(str(v))

    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{fmt(r.get(c, ''))}</td>" for c in cols) + "</tr>"
                   for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"
