"""The house's size rules for asrkit/: no function is longer than 80 lines (a longer one is a set of steps that want
names of their own), and none takes more than 12 parameters (more is a group of values that wants a name of its
own: a dataclass, or a NamedTuple for numba kernels)."""

import ast
import os

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "asrkit")
MAX_LINES = 80
MAX_PARAMETERS = 12


def functions(root):
    """(path relative to root, function node) of every function and method in root's Python files, in file order."""
    for directory, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read(), path)
            found = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for node in sorted(found, key=lambda node: node.lineno):
                yield os.path.relpath(path, root), node


def long_functions(root=ROOT, limit=MAX_LINES):
    found = []
    for path, node in functions(root):
        length = node.end_lineno - node.lineno + 1
        if length > limit:
            found.append(f"{path}:{node.lineno} {node.name} ({length} lines)")
    return found


def parameter_count(node):
    """A function's parameters, self or cls (a leading one of that name) not counted, *args and **kwargs one each."""
    arguments = node.args
    positional = arguments.posonlyargs + arguments.args
    count = len(positional) + len(arguments.kwonlyargs) + (arguments.vararg is not None) + \
        (arguments.kwarg is not None)
    return count - 1 if positional and positional[0].arg in ("self", "cls") else count


def many_parameters(root=ROOT, limit=MAX_PARAMETERS):
    found = []
    for path, node in functions(root):
        count = parameter_count(node)
        if count > limit:
            found.append(f"{path}:{node.lineno} {node.name} ({count} parameters)")
    return found


def test_no_function_is_longer_than_80_lines():
    assert not long_functions(), "\n".join(long_functions())


def test_the_check_finds_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "long.py").write_text(f"def long():\n{body}\n\n\ndef short():\n    return 1\n")
    assert long_functions(str(tmp_path)) == ["long.py:1 long (81 lines)"]


def test_no_function_takes_more_than_12_parameters():
    assert not many_parameters(), "\n".join(many_parameters())


def test_the_check_counts_parameters_as_the_rule_does(tmp_path):
    eleven = ", ".join(f"a{i}" for i in range(11))
    (tmp_path / "wide.py").write_text(
        f"class Wide:\n"
        f"    def method(self, {eleven}, last):\n        pass\n\n"  # 12 without self
        f"    @classmethod\n    def build(cls, {eleven}, *args, **kwargs):\n        pass\n\n"  # 13 without cls
        f"def plain({eleven}, last, *, key):\n    pass\n\n"  # 13, the keyword-only one counted
        f"async def fine(a, /, {eleven}):\n    pass\n")  # 12, the positional-only one counted
    assert many_parameters(str(tmp_path)) == ["wide.py:6 build (13 parameters)", "wide.py:9 plain (13 parameters)"]
