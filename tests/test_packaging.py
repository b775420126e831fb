"""What the repository promises about itself: its documents are inside it, its licence is stated."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# A markdown link or image target: ](target) — external and in-page targets are not files.
LINK_TARGET = re.compile(r"\]\(([^)\s]+)\)")


def local_link_targets(markdown: str) -> list[str]:
    """Every link target in `markdown` that names a file, without any #fragment."""
    targets = []
    for target in LINK_TARGET.findall(markdown):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        targets.append(target.split("#", 1)[0])
    return targets


def test_the_readme_links_only_to_files_in_the_repository():
    # A clone holds only the repository: a link outside it is broken for every reader.
    targets = local_link_targets((ROOT / "README.md").read_text())
    assert "docs/sessions-and-checkpoints.md" in targets
    for target in targets:
        resolved = (ROOT / target).resolve()
        assert resolved.is_relative_to(ROOT), f"README links outside the repository: {target}"
        assert resolved.is_file(), f"README links to a missing file: {target}"


def test_the_licence_is_declared_and_shipped():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    licence = (ROOT / "LICENSE").read_text()
    assert licence.startswith("MIT License")
    assert "Copyright (c) 2026 the lovia authors" in licence


def test_ci_runs_the_readme_test_command_and_fails_on_lint_or_type_findings():
    readme = (ROOT / "README.md").read_text().splitlines()
    test_command = readme[readme.index("```sh") + 2]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci, "CI must run the README's test command as written"
    assert "set -euo pipefail" in ci
    assert "export CI=true" in ci, "tests that need an outside program must fail in CI, not skip"
    assert ci.index(".venv/bin/ruff check lovia") > ci.index(test_command)
    assert ".venv/bin/mypy lovia" in ci
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    assert {requirement.split("==")[0] for requirement in dev} >= {"ruff", "mypy"}
