"""The package layout enforces the one-way data flow: each subpackage of ``tpar`` imports only from
the ones before it (files -> graph -> evaluation -> model -> training -> reasoning -> runtime -> CLI), ``tpar``
never imports streamlit, and the app reaches the model only through the ``tpar`` API."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tpar"
#: lower number = earlier in the data flow; a module may import its own layer and earlier ones
LAYERS = {"errors": 0, "data": 1, "graph": 2, "evaluation": 3, "model": 4, "training": 5, "reasoning": 6, "runtime": 7,
          "cli": 8}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in the file, at any depth (function-level imports included);
    ``from tpar import __version__`` (defined first thing in the package root) is not counted."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "tpar" and [a.name for a in node.names] == ["__version__"]:
                continue
            out.append((node.lineno, node.module))
    return out


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "tpar" or len(parts) < 2:
        return None
    return LAYERS[parts[1]]


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name not in ("__init__.py", "__main__.py") or p.parent != PACKAGE)


def test_every_module_belongs_to_a_layer():
    for p in MODULES:
        top = p.relative_to(PACKAGE).parts[0].removesuffix(".py")
        assert top in LAYERS, f"{p.relative_to(ROOT)} is outside the known layers {sorted(LAYERS)}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_only_from_earlier_layers(path):
    own = LAYERS[path.relative_to(PACKAGE).parts[0].removesuffix(".py")]
    for line, module in imported_modules(path):
        assert module.split(".")[0] != "streamlit", f"{path.name}:{line} imports streamlit"
        if module == "tpar":
            pytest.fail(f"{path.name}:{line} imports the package root; import the module that defines the name")
        layer = layer_of(module)
        if layer is not None:
            assert layer <= own, (f"{path.relative_to(ROOT)}:{line} imports {module} (layer {layer}) from layer {own}: "
                                  "data flows one way")


def test_few_modules_at_the_top_level():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "cli.py", "errors.py"], top


def test_the_app_holds_no_model_logic():
    """The app imports tpar's API, never torch or the model's internals (layers, kernels, network)."""
    for p in sorted((ROOT / "app").rglob("*.py")):
        for line, module in imported_modules(p):
            assert module.split(".")[0] != "torch", f"{p.relative_to(ROOT)}:{line} imports torch"
            assert module not in ("tpar.model.layers", "tpar.model.kernels", "tpar.model.network"), \
                f"{p.relative_to(ROOT)}:{line} imports {module}"


def test_the_package_root_exports_what_the_readme_uses():
    import tpar

    for name in tpar.__all__:
        assert getattr(tpar, name) is not None, name


def readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_architecture_lists_every_module():
    """The tree in the README's Architecture section names exactly the modules tpar/ has."""
    text = readme()
    tree = text[text.index("## Architecture"):]
    tree = tree[tree.index("```") + 3:]
    tree = tree[:tree.index("```")]
    listed, section, folder = set(), "", ""
    for line in tree.splitlines():
        name = line.split()[0] if line.strip() else ""
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            section = name
        elif name.endswith("/"):
            folder = name
        elif name.endswith(".py") and section == "tpar/" and indent in (2, 4):
            listed.add((folder if indent == 4 else "") + name)
    actual = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
              if not (p.name == "__init__.py" and p.parent != PACKAGE)}
    assert listed == actual, (sorted(actual - listed), sorted(listed - actual))


def test_readme_python_examples_import():
    """Every import line of the README's Python examples runs, and names what it imports."""
    text = readme()
    blocks = [b.split("```", 1)[0] for b in text.split("```python")[1:]]
    lines = [ln for b in blocks for ln in b.splitlines() if ln.startswith(("from tpar", "import tpar"))]
    assert lines
    for ln in lines:
        exec(ln, {})


def test_no_function_in_the_package_is_longer_than_100_lines():
    long = []
    for p in MODULES + [PACKAGE / "__init__.py", PACKAGE / "__main__.py"]:
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 100:
                long.append(f"{p.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert not long, long


def test_the_model_never_imports_how_it_is_trained():
    for p in sorted((PACKAGE / "model").rglob("*.py")):
        for line, module in imported_modules(p):
            assert not module.startswith("tpar.training"), f"{p.relative_to(ROOT)}:{line} imports {module}"


def test_test_modules_share_helpers_only_through_the_helpers_module_and_fixtures():
    """No test file imports conftest or another test module (pytest's advice: fixtures, or a helpers module)."""
    for p in sorted((ROOT / "tests").rglob("*.py")):
        text = p.read_text(encoding="utf-8")
        for line, module in imported_modules(p):
            assert module != "conftest" and not module.startswith("test_"), f"{p.name}:{line} imports {module}"
        for row in text.splitlines():  # scripts the tests run in subprocesses too
            words = row.split()
            if words[:1] in (["from"], ["import"]) and len(words) > 1:
                assert words[1] != "conftest" and not words[1].startswith("test_"), f"{p.name}: {row.strip()}"


def test_tests_mirror_the_package_layout():
    """Each test module sits in the folder of the package stage it tests (tests/<stage>/), apart from the
    cross-cutting ones at the top (the architecture itself, the paper's experiments)."""
    stages = set(LAYERS) - {"errors"} | {"app"}
    for p in sorted((ROOT / "tests").rglob("test_*.py")):
        where = p.relative_to(ROOT / "tests").parts
        if len(where) == 1:
            assert p.name in ("test_architecture.py", "test_paper_experiments.py"), f"{p.name}: move it into tests/<stage>/"
        else:
            assert where[0] in stages, f"{p.relative_to(ROOT)}: tests/{where[0]}/ is not a stage of the package"


def test_no_app_script_writes_a_bare_expression_to_the_page():
    """Streamlit's "magic" writes every bare expression of a page script to the page (a tuple, a name, a string
    that is not a docstring), at any depth: a value computed for its side effect showed up as a grey line of
    datetimes on the Entity timeline (walk-through). Only calls, docstrings, yields and awaits are left alone."""
    import ast

    app = Path(__file__).resolve().parent.parent / "app"
    found = []
    for path in [app / "streamlit_app.py", *sorted((app / "views").glob("*.py")), app / "explorer.py"]:
        tree = ast.parse(path.read_text())  # the page scripts (explorer.py is imported: kept to the same rule)
        for parent in ast.walk(tree):
            for i, node in enumerate(getattr(parent, "body", []) if isinstance(getattr(parent, "body", None), list) else []):
                if not isinstance(node, ast.Expr) or isinstance(node.value, (ast.Call, ast.Yield, ast.YieldFrom, ast.Await)):
                    continue
                docstring = (i == 0 and isinstance(parent, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                             and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str))
                if not docstring:
                    found.append(f"{path.relative_to(app.parent)}:{node.lineno}")
    assert not found, found
