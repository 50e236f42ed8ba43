"""asrkit imports at module level.  An import inside a function is allowed only where a start-up cost
demands it, and then says so: a `# deferred: <why>` comment on the import's line or just above it (several
imports in a row may share one comment).

Read from the source with ast (nothing is imported).  The reasons asrkit defers today: TensorFlow's import
(~6 s) away from --help and from the TF-free paths (decoding from tables, model.json, the example servers'
option checks), the commands' library code away from their --help, scipy.signal away from audio reading that
needs no resampling, tqdm away from the launchers (which run on a bare Python 3), and wordfreq, which only
setup.cfg's recipe extra installs.
"""

import ast
import os

import asrkit

ROOT = os.path.dirname(os.path.abspath(asrkit.__file__))
MARKER = "# deferred:"


def function_imports(tree):
    """The import statements inside a function (at any depth) of a parsed module."""
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, True)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                if in_function:
                    found.append(child)
            else:
                visit(child, in_function)

    visit(tree, False)
    return found


def is_marked(node, lines, import_lines):
    """Whether a `# deferred:` comment is on the import's lines, or on the comment and import lines that run
    up to it without a gap."""
    if any(MARKER in lines[number - 1] for number in range(node.lineno, node.end_lineno + 1)):
        return True
    number = node.lineno - 1
    while number >= 1:
        text = lines[number - 1].strip()
        if MARKER in text and (text.startswith("#") or number in import_lines):
            return True
        if not (text.startswith("#") or number in import_lines):
            return False
        number -= 1
    return False


def unmarked_imports(source, name="<source>"):
    """["name:line import text"] of the imports inside functions that no `# deferred:` comment explains."""
    tree = ast.parse(source, name)
    lines = source.splitlines()
    imports = function_imports(tree)
    import_lines = {number for node in imports for number in range(node.lineno, node.end_lineno + 1)}
    return [f"{name}:{node.lineno} {lines[node.lineno - 1].strip()}"
            for node in imports if not is_marked(node, lines, import_lines)]


def asrkit_sources(root=ROOT):
    for directory, _, files in os.walk(root):
        for file_name in sorted(files):
            if file_name.endswith(".py"):
                yield os.path.join(directory, file_name)


def test_imports_inside_functions_say_why():
    found = []
    for path in asrkit_sources():
        with open(path, encoding="utf-8") as handle:
            found += unmarked_imports(handle.read(), os.path.relpath(path, os.path.dirname(ROOT)))
    assert not found, ("imports inside functions without a `# deferred: <why>` comment (move them to module "
                       "level, or say which start-up cost keeps them here):\n" + "\n".join(found))


def test_the_check_reads_markers_where_they_may_stand():
    source = '''
import os


def marked_above():
    # deferred: a reason
    # that goes on
    import json
    from asrkit import logs
    return json, logs


def marked_on_the_line():
    import json  # deferred: a reason
    return json


def unmarked():
    import json
    return json


def marker_too_far_up():
    # deferred: a reason

    import json
    return json


def nested():
    def inner():
        from asrkit import errors
        return errors
    return inner


class Holder:
    def method(self):
        import json
        return json
'''
    found = unmarked_imports(source)
    assert found == ["<source>:19 import json", "<source>:26 import json", "<source>:32 from asrkit import errors",
                     "<source>:39 import json"]


def test_module_level_imports_need_no_marker():
    assert unmarked_imports("import os\nif os.name:\n    import json\ntry:\n    import numpy\nexcept ImportError:\n"
                            "    numpy = None\n") == []
