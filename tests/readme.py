"""`make docs`: rewrite the README's generated blocks (the operator coverage table).

    python -m tests.readme          # rewrite README.md in place
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCK = re.compile(r"(<!-- operators:begin -->\n).*?(<!-- operators:end -->)", re.S)


def generated_operators() -> str:
    from nlq.mql.registry import coverage_markdown

    return coverage_markdown()


def render(text: str) -> str:
    """The README text with its operator block regenerated."""
    return BLOCK.sub(lambda m: m.group(1) + generated_operators() + m.group(2), text)


def main() -> int:
    text = README.read_text()
    new = render(text)
    if new != text:
        README.write_text(new)
        print("README.md: operator coverage regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
