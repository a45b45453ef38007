"""Count copy-pasted code: regions of at least WINDOW identical statements-lines found in two places.

A line is compared after stripping indentation; blank lines, comments and import lines are skipped, so a region
reindented or moved into another function still matches. Windows with little text in them (runs of closing
brackets, `else:`, `return None`) are ignored. Two places whose windows match line after line form one region,
however long; the report counts region pairs and lists the longest.

    python scripts/duplicates.py                 # the application code (tests excluded)
    python scripts/duplicates.py --tests         # the tests only
    python scripts/duplicates.py --list 20       # also print the 20 longest regions
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

WINDOW = 6
MIN_TEXT = 60  # letters and digits a window must hold to count


@dataclass(frozen=True)
class Line:
    path: str
    number: int  # 1-based line number in the file
    text: str


@dataclass(frozen=True)
class Region:
    first: tuple[str, int]
    second: tuple[str, int]
    lines: int


def source_lines(path: Path) -> list[Line]:
    kept = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = raw.strip()
        if not text or text.startswith("#") or text.startswith(("import ", "from ")):
            continue
        kept.append(Line(str(path), number, text))
    return kept


def tracked_python_files(root: Path, tests: bool) -> list[Path]:
    names = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=root, check=True, capture_output=True, text=True
    ).stdout.split()
    chosen = [name for name in names if name.startswith("tests/") == tests and not name.startswith("scripts/")]
    return [root / name for name in sorted(chosen)]


def find_regions(files: list[list[Line]]) -> list[Region]:
    places: dict[bytes, list[tuple[int, int]]] = defaultdict(list)
    for file_index, lines in enumerate(files):
        for start in range(len(lines) - WINDOW + 1):
            window = [line.text for line in lines[start : start + WINDOW]]
            if sum(ch.isalnum() for text in window for ch in text) < MIN_TEXT:
                continue
            places[hashlib.blake2b("\n".join(window).encode(), digest_size=16).digest()].append((file_index, start))

    matching: set[tuple[int, int, int, int]] = set()
    for occurrences in places.values():
        for a in range(len(occurrences)):
            for b in range(a + 1, len(occurrences)):
                (fa, ia), (fb, ib) = occurrences[a], occurrences[b]
                if fa == fb and abs(ia - ib) < WINDOW:
                    continue  # a line pattern repeating itself, not a copy
                matching.add((fa, ia, fb, ib))

    regions = []
    for fa, ia, fb, ib in matching:
        if (fa, ia - 1, fb, ib - 1) in matching:
            continue  # not the start of its region
        length = 1
        while (fa, ia + length, fb, ib + length) in matching:
            length += 1
        first, second = files[fa][ia], files[fb][ib]
        regions.append(Region((first.path, first.number), (second.path, second.number), length + WINDOW - 1))
    return sorted(regions, key=lambda region: (-region.lines, region.first, region.second))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", action="store_true", help="scan tests/ instead of the application code")
    parser.add_argument("--list", type=int, default=0, metavar="N", help="print the N longest regions")
    args = parser.parse_args()

    root = Path(__file__).resolve().parent.parent
    paths = tracked_python_files(root, tests=args.tests)
    regions = find_regions([source_lines(path) for path in paths])
    relative = {str(path): str(path.relative_to(root)) for path in paths}
    for region in regions[: args.list]:
        (a, la), (b, lb) = region.first, region.second
        print(f"{region.lines:4d} lines  {relative[a]}:{la}  {relative[b]}:{lb}")
    scope = "tests" if args.tests else "application code"
    print(f"{len(regions)} duplicated regions of {WINDOW}+ lines in {len(paths)} files ({scope})")


if __name__ == "__main__":
    main()
