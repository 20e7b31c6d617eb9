"""A rich ``Table`` as a Markdown table: a benchmark prints one and writes the other, for the
docs' performance pages."""

from __future__ import annotations

from rich.table import Table


def table_markdown(table: Table) -> str:
    """The header and rows of ``table`` (its cells as text) as a Markdown table."""
    lines = ["| " + " | ".join(str(c.header) for c in table.columns) + " |",
             "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(str(x) for x in row) + " |"
              for row in zip(*(c._cells for c in table.columns), strict=True)]
    return "\n".join(lines) + "\n"
