"""Write the permission table of docs/security.md from ``ragmeter.service.permissions``.

python scripts/permission_table.py          # rewrite the table in docs/security.md
python scripts/permission_table.py --check  # exit 1 if the page's table is not current
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragmeter.service.permissions import permission_table

PAGE = Path(__file__).resolve().parent.parent / "docs" / "security.md"
BEGIN = "<!-- permission table: scripts/permission_table.py writes it -->\n"
END = "<!-- end of the permission table -->\n"


def rewritten(text: str) -> str:
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + permission_table() + text[end:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the page")
    args = parser.parse_args()
    text = PAGE.read_text(encoding="utf-8")
    fresh = rewritten(text)
    if args.check:
        if fresh != text:
            print(f"{PAGE}: the permission table is out of date; run {sys.argv[0]}")
            return 1
        return 0
    PAGE.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
