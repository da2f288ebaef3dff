#!/usr/bin/env python3
"""The numbers docs/architecture.md's before/after table quotes, measured on the tree.

Reads the C++ and Lua sources under src/sluice (tests and benchmarks left out, as they may use
any layer) and prints:
  - the imports between modules (the first folder under src/sluice), and every one that runs
    from a lower layer up to a higher one or across one layer, with the files that make it;
  - import cycles between modules;
  - virtual methods of the store port, switches over algorithm kinds outside algorithm/,
    literal kind numbers in Lua, hand-written status checks, std::cerr/fprintf(stderr) outside
    main and the logger, and the largest product files.

Usage: scripts/architecture_counts.py [--imports]   (from the repository's root)
"""
import re
import signal
import sys
from collections import defaultdict
from pathlib import Path

# Layers, lowest first (DESIGN.md §6): a module may include the modules of lower layers, and
# none of its own layer's other modules (the policy model knows nothing of accounts, a store
# nothing of policies' documents).
LAYERS = [
    ["core"],
    ["algorithm"],
    ["policy", "auth", "store"],
    ["db", "service", "simulate", "redis_module"],
    ["wire"],
    ["server", "client"],
    ["app"],
    ["bench"],
    ["cli"],
]
RANK = {module: rank for rank, modules in enumerate(LAYERS) for module in modules}
INCLUDE = re.compile(r'^\s*#\s*include\s+"sluice/([^"]+)"', re.M)


def product_sources(root):
    for path in sorted((root / "src/sluice").rglob("*")):
        if path.suffix not in (".h", ".cc") or not path.is_file():
            continue
        if re.search(r"_(test|benchmark)\.(h|cc)$|test_support|test_fixture", path.name):
            continue
        yield path


def module_of(root, path):
    parts = path.relative_to(root / "src/sluice").parts
    return parts[0] if len(parts) > 1 else "(top)"


def imports(root):
    """(from module, to module) -> the files making that import."""
    edges = defaultdict(list)
    for path in product_sources(root):
        source = module_of(root, path)
        for target in INCLUDE.findall(path.read_text(errors="replace")):
            if (root / "src/sluice" / target).exists():
                to = target.split("/")[0]
            else:
                continue  # include/sluice/: the public vocabulary, below every layer
            if to != source:
                edges[(source, to)].append(str(path.relative_to(root)))
    return edges


def cycles(edges):
    graph = defaultdict(set)
    for source, target in edges:
        graph[source].add(target)
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def count_lines(root, pattern, paths):
    regex = re.compile(pattern)
    return sum(len(regex.findall(p.read_text(errors="replace"))) for p in paths)


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # a pager or head may close the pipe early
    root = Path.cwd()
    sources = list(product_sources(root))
    edges = imports(root)
    upward = {e: files for e, files in edges.items()
              if RANK.get(e[1], -1) >= RANK.get(e[0], len(LAYERS))}
    if "--imports" in sys.argv:
        for (source, target), files in sorted(edges.items()):
            print(f"import {source} -> {target}: {len(files)}")
    print("imports from a layer up to a higher one or across its own: "
          f"{sum(map(len, upward.values()))}")
    for (source, target), files in sorted(upward.items()):
        print(f"  {source} -> {target}: {', '.join(sorted(set(files)))}")
    found = cycles(edges)
    print(f"import cycles between modules: {len(found)}")
    for component in found:
        print(f"  {' <-> '.join(component)}")
    store_port = [p for p in sources if p.parent.name == "store" and p.suffix == ".h"]
    virtuals = count_lines(root, r"\bvirtual\b(?![^;{]*~)", store_port)
    print(f"virtual methods of the store port (store/*.h): {virtuals}")
    outside = [p for p in sources if module_of(root, p) != "algorithm"]
    switches = count_lines(root, r"std::visit|holds_alternative<|get_if<", outside)
    print(f"switches over algorithm kinds outside algorithm/ (std::visit, holds_alternative, "
          f"get_if): {switches}")
    lua = sorted((root / "src/sluice").rglob("*.lua"))
    kinds = count_lines(root, r"kind\s*[=~<>]=?\s*[0-9]", lua)
    print(f"literal kind numbers in Lua (kind compared with a number): {kinds}")
    checks = r"if \(!\(?[\w.\->()]*\)?\.ok\(\)\)\s*(\{\s*)?return\b"
    print(f"hand-written status checks (if (!x.ok()) return ...): "
          f"{count_lines(root, checks, [p for p in sources if p.suffix == '.cc'])}")
    loggers = [p for p in sources if p.name not in ("main.cc",) and "logger" not in p.name]
    prints = count_lines(root, r"std::cerr|fprintf\(stderr", loggers)
    print(f"std::cerr / fprintf(stderr) outside main and the logger: {prints}")
    largest = sorted(((len(p.read_text(errors='replace').splitlines()), p) for p in sources
                      if p.suffix == ".cc"), reverse=True)[:6]
    print("largest product .cc files: " +
          ", ".join(f"{p.relative_to(root / 'src/sluice')} {n}" for n, p in largest))


if __name__ == "__main__":
    main()
