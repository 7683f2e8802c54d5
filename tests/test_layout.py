"""tests/ itself: it mirrors the package, and no test module imports another (what tests share lives in
factories, fakes, worlds and helpers, which any test may import)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
WHOLE_BOT = {"e2e", "fakes"}  # tests of the running bot as a whole, and of the fakes themselves
OF_TESTS = {"test_layout.py"}  # this file: it checks tests/, not a module of the bot


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, dotted name) of each module `path` imports, names imported from a package included."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def is_test_module(name: str) -> bool:
    parts = name.split(".")
    return (
        parts[0] == "tests"
        and parts[-1].startswith("test_")
        and ROOT.joinpath(*parts).with_suffix(".py").is_file()
    )


def test_no_test_module_imports_another_test_module() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in sorted(TESTS.rglob("test_*.py"))
        for line, name in imported_modules(path)
        if is_test_module(name)
    ]
    assert offenders == [], "move what they share into a factory, fake, world or helpers module"


def test_tests_mirror_the_package() -> None:
    """tests/X/ tests bot/X/ (tests/cogs/ tests cogs/); tests/test_X.py and tests/test_X_more.py test bot/X."""
    astray: list[str] = []
    for folder in sorted(p for p in TESTS.iterdir() if p.is_dir() and (p / "__init__.py").is_file()):
        package = ROOT / folder.name if folder.name == "cogs" else ROOT / "bot" / folder.name
        if folder.name not in WHOLE_BOT and not (package / "__init__.py").is_file():
            astray.append(f"tests/{folder.name}/ has no package {package.relative_to(ROOT)}/")
    modules = {p.stem for p in (ROOT / "bot").glob("*.py")} | {
        p.name for p in (ROOT / "bot").iterdir() if (p / "__init__.py").is_file()
    }
    for path in sorted(TESTS.glob("test_*.py")):
        name = path.stem.removeprefix("test_")
        if path.name not in OF_TESTS and not any(name == m or name.startswith(f"{m}_") for m in modules):
            astray.append(f"tests/{path.name} tests no module of bot/")
    assert astray == []
