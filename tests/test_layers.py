"""asrkit's packages form layers: a module imports only from its own layer and the layers below, and no modules
import each other round in a circle, whether the import is at module level or inside a function.

Read from the source with ast (nothing is imported), so a circle hidden by an import inside a function
fails here as one at module level would.
"""

import ast
import os

import asrkit

ROOT = os.path.dirname(os.path.abspath(asrkit.__file__))

# Top to bottom.  A package (or top-level module) may import from its own layer and any layer below.
LAYERS = [
    ("cli",),
    ("train",),
    # example_servers: the training example servers, their wire protocol and the trainers' client.
    ("example_servers",),
    # recognizer: a model package and recognition with it (no TensorFlow).
    ("recognizer",),
    # adapt: speaker adaptation of a trained network from a first pass's lattices (TensorFlow).
    ("sequence", "adapt"),
    # chain: LF-MMI's phone LM, denominator and numerator graphs and forward-backward, under train.lfmmi.
    ("decode", "tree", "chain"),
    # inference: the one inference core (NumPy front end and networks, a model dir's checkpoint read without
    # TensorFlow) that decoding, alignment, export and recognition share.
    ("nn", "align", "inference"),
    # training_examples: the messages, alignments and epoch orders the example servers and the trainers share.
    # ivector: i-vector extraction from features, below what may append them to a network's inputs.
    ("frontend", "augment", "graph", "training_examples", "ivector"),
    ("data", "lm", "hmm", "dictionary", "scoring"),
    # parallel: running a stage's jobs in or out of this process, on io and logs.
    ("io", "launch", "parallel"),
    # tf_runtime: importing TensorFlow quietly, on nothing of asrkit's; asrkit: the package (its version);
    # cache, numba_cache: the per-user cache of compiled code, and numba pointed at it before it is imported.
    # heap: giving the C heap's freed pages back to the system.
    ("logs", "errors", "tf_runtime", "asrkit", "cache", "numba_cache", "heap"),
]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}
# The package's public names that asrkit/__init__.py imports on first use (module __getattr__), so that
# `import asrkit` stays light: the one import allowed to go up, and only inside that function.
LAZY_EXPORTS = {("asrkit", "asrkit.recognizer.recognizer")}

def module_files():
    """{module name: path} of every module of asrkit."""
    modules = {}
    for directory, _, files in os.walk(ROOT):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                parts = os.path.relpath(path, os.path.dirname(ROOT))[:-3].split(os.sep)
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                modules[".".join(parts)] = path
    return modules


def imported_modules(module, path, modules):
    """[(imported asrkit module, line)] of every import statement in the file, at any depth."""
    package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            # `from package import module` imports the module; `from module import name` the module.
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for name in names:
            while name not in modules and "." in name:
                name = name.rsplit(".", 1)[0]
            if name in modules and name != module:
                found.append((name, node.lineno))
    return found


def import_graph():
    modules = module_files()
    return {module: imported_modules(module, path, modules) for module, path in modules.items()}


def layer_of(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def find_circle(graph):
    """One circle of imports as [a, b, ..., a], or None (depth-first search, iterative)."""
    state = {}  # module -> 1 while on the path, 2 when done
    for root in sorted(graph):
        if root in state:
            continue
        path, stack = [root], [iter(sorted({name for name, _ in graph[root]}))]
        state[root] = 1
        while stack:
            following = next(stack[-1], None)
            if following is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(following) == 1:
                return path[path.index(following):] + [following]
            elif following not in state:
                state[following] = 1
                path.append(following)
                stack.append(iter(sorted({name for name, _ in graph[following]})))
    return None


def test_no_import_circles():
    circle = find_circle(import_graph())
    assert circle is None, "import circle: " + " -> ".join(circle)


def test_every_package_has_a_layer():
    unplaced = sorted({layer_of(module) for module in module_files()} - set(RANK))
    assert not unplaced, f"place these in LAYERS: {unplaced}"


def upward_imports(graph):
    """["module (line n) imports higher"] for each import from a higher layer."""
    upward = []
    for module, imports in graph.items():
        for name, line in imports:
            if RANK.get(layer_of(name), 0) < RANK.get(layer_of(module), 0) and (module, name) not in LAZY_EXPORTS:
                upward.append(f"{module} (line {line}) imports {name}")
    return sorted(upward)


def test_imports_go_down_the_layers():
    upward = upward_imports(import_graph())
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


def test_the_checks_catch_a_circle_and_an_upward_import():
    graph = {"asrkit.a": [("asrkit.b", 1)], "asrkit.b": [("asrkit.c", 3)], "asrkit.c": [("asrkit.a", 9)]}
    assert find_circle(graph) == ["asrkit.a", "asrkit.b", "asrkit.c", "asrkit.a"]
    assert find_circle({"asrkit.a": [("asrkit.b", 1)], "asrkit.b": []}) is None
    graph = {"asrkit.example_servers.client": [("asrkit.train.examples", 25), ("asrkit.errors", 24)],
             "asrkit.train.trainer": [("asrkit.example_servers.client", 7)]}
    assert upward_imports(graph) == ["asrkit.example_servers.client (line 25) imports asrkit.train.examples"]
    assert layer_of("asrkit.parallel") == "parallel" and layer_of("asrkit") == "asrkit"


def test_function_level_and_relative_imports_are_read(tmp_path):
    source = tmp_path / "module.py"
    source.write_text("import os\nfrom . import sibling\n\ndef f():\n    from asrkit.train.examples import X\n")
    modules = {"asrkit.pkg.module": str(source), "asrkit.pkg.sibling": "", "asrkit.train.examples": ""}
    assert imported_modules("asrkit.pkg.module", str(source), modules) == [("asrkit.pkg.sibling", 2),
                                                                          ("asrkit.train.examples", 5)]
