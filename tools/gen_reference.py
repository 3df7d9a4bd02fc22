"""Write docs/reference.md from the template, policy and test-suite JSON Schemas.

Usage: python tools/gen_reference.py [--check]
--check exits 1 when the checked-in file differs from what the schemas generate.
"""

from __future__ import annotations

import sys
from pathlib import Path

from webhook.authoring.reference import render_reference

TARGET = Path(__file__).resolve().parent.parent / "docs" / "reference.md"


def main(argv: list[str]) -> int:
    text = render_reference()
    if "--check" in argv:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET} is out of date: run python tools/gen_reference.py", file=sys.stderr)
            return 1
        return 0
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
