#!/usr/bin/env python3
"""Checks docs/architecture.md's layer picture and table against CMakeLists.txt.

The layers are the `shardscope_layer(NAME DIR folder DEPS ...)` calls of CMakeLists.txt
(a layer declared in several branches of an `if` gets the union of their DEPS). The
doc's table under "## Layers" must have one row per layer with its folder and exactly
its DEPS (by folder name), and its level picture must put each layer on its level: one
above its highest dependency, core at 0. Prints every difference; exit 1 if any, 2 on
unreadable input.

Usage: check_architecture_doc.py [SOURCE_DIR]
"""

import re
import sys
from pathlib import Path

KEYWORDS = {"DIR", "DEPS", "LIBS", "EXCLUDE", "TEST_DEPS"}


def cmake_layers(text):
    """{layer: (folder, set of dependency layers)} from the shardscope_layer calls."""
    text = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    layers = {}
    for call in re.finditer(r"\bshardscope_layer\(([^)]*)\)", text):
        words = call.group(1).split()
        name, args, key = words[0], {}, None
        for word in words[1:]:
            if word in KEYWORDS:
                key = word
                args.setdefault(key, [])
            elif key:
                args[key].append(word)
        folder = args.get("DIR", [name])[0]
        old = layers.get(name)
        if old and old[0] != folder:
            raise ValueError(f"layer '{name}' is declared with folders {old[0]} and {folder}")
        deps = set(args.get("DEPS", [])) | (old[1] if old else set())
        layers[name] = (folder, deps)
    return layers


def section(text, heading):
    """The text of a '## heading' section, up to the next '## '."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not match:
        raise ValueError(f'no section "## {heading}"')
    return match.group(1)


def doc_table(layers_text):
    """{folder: set of dependency folders} from the '| layer | folder | depends on |' table."""
    rows = {}
    in_table = False
    for line in layers_text.splitlines():
        if line.startswith("| layer | folder | depends on |"):
            in_table = True
            continue
        if not in_table:
            continue
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if set(cells[0]) <= set("-: "):
            continue
        folders = re.findall(r"`src/([^`]+)`", cells[1])
        deps_cell = re.sub(r"\([^)]*\)", "", cells[2]).strip()
        deps = set() if deps_cell in ("—", "-", "") else {d.strip() for d in deps_cell.split(",")}
        for folder in folders:
            rows[folder] = deps
    return rows


def doc_levels(layers_text):
    """{folder: level} from the picture's lines '  N   folder folder …  # note'."""
    block = re.search(r"```\n(.*?)```", layers_text, re.S)
    if not block:
        raise ValueError("no level picture (a ``` block) in the Layers section")
    levels = {}
    for line in block.group(1).splitlines():
        match = re.match(r"\s*(\d+)\s+(.*)", line.split("#", 1)[0])
        if not match:
            continue
        for word in match.group(2).split():
            if re.fullmatch(r"[a-z_]+(/[a-z_]+)?", word):
                levels[word] = int(match.group(1))
    return levels


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)
    try:
        layers = cmake_layers((root / "CMakeLists.txt").read_text())
        layers_text = section((root / "docs/architecture.md").read_text(), "Layers")
        table = doc_table(layers_text)
        pictured = doc_levels(layers_text)
    except (OSError, ValueError) as e:
        print(f"check_architecture_doc: {e}", file=sys.stderr)
        return 2

    folder_of = {name: folder for name, (folder, _) in layers.items()}
    level = {}

    def level_of(name):
        if name not in level:
            deps = layers[name][1]
            level[name] = 1 + max((level_of(d) for d in deps), default=-1)
        return level[name]

    problems = []
    for name, (folder, deps) in sorted(layers.items()):
        want = {folder_of[d] for d in deps}
        if folder not in table:
            problems.append(f"layer '{name}' (src/{folder}) has no row in the table")
        elif table[folder] != want:
            problems.append(f"src/{folder}: the table says it depends on "
                            f"{', '.join(sorted(table[folder])) or '—'}; CMakeLists.txt says "
                            f"{', '.join(sorted(want)) or '—'}")
        if pictured.get(folder) != level_of(name):
            problems.append(f"src/{folder}: the picture puts it at level "
                            f"{pictured.get(folder, 'none')}; its deps put it at {level_of(name)}")
    for folder in sorted(set(table) - set(folder_of.values())):
        problems.append(f"the table has src/{folder}, which CMakeLists.txt does not declare")
    for folder in sorted(set(pictured) - set(folder_of.values())):
        problems.append(f"the picture has '{folder}', which CMakeLists.txt does not declare")

    for p in problems:
        print(f"docs/architecture.md: {p}", file=sys.stderr)
    if problems:
        return 1
    print(f"docs/architecture.md: the layers agree with CMakeLists.txt ({len(layers)} layers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
