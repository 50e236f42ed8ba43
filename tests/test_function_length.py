"""No function in asrkit/ is longer than 80 lines: a longer one is a set of steps that want names of their own."""

import ast
import os

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "asrkit")
MAX_LINES = 80


def long_functions(root=ROOT, limit=MAX_LINES):
    found = []
    for directory, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    length = node.end_lineno - node.lineno + 1
                    if length > limit:
                        found.append(f"{os.path.relpath(path, root)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_is_longer_than_80_lines():
    assert not long_functions(), "\n".join(long_functions())


def test_the_check_finds_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "long.py").write_text(f"def long():\n{body}\n\n\ndef short():\n    return 1\n")
    assert long_functions(str(tmp_path)) == ["long.py:1 long (81 lines)"]
