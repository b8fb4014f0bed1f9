"""The docs: the MkDocs site builds in strict mode (broken links, anchors or pages left out of the nav fail),
every route of the HTTP API is in the docs' route table, no page or the README points outside the
repository, the README stays a short entry point with a table of contents, and its examples parse."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
ROW = re.compile(r"^\|\s*(GET|POST|PUT|PATCH|DELETE)\s*\|\s*`([^`]+)`\s*\|", re.M)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _mkdocs_or_skip() -> None:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        if os.environ.get("CI"):
            pytest.fail("mkdocs-material is missing: it is in the dev extra (make setup installs it)")
        pytest.skip("mkdocs-material is not installed (make setup installs it; under CI this fails)")


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], cwd=str(config.parent), env=env, capture_output=True,
                          text=True, timeout=600)


def test_the_docs_site_builds_in_strict_mode(tmp_path: Path) -> None:
    _mkdocs_or_skip()
    r = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for page in ("index", "agents", "cypher", "architecture", "decisions", "operations", "evaluation"):
        assert (tmp_path / "site" / ("index.html" if page == "index" else f"{page}/index.html")).is_file(), page
    assert (tmp_path / "site" / "results" / "relations-metrics.png").is_file()


def test_the_strict_build_fails_on_a_broken_link(tmp_path: Path) -> None:
    """The check above can fail: the same configuration with a page that links to a missing page."""
    _mkdocs_or_skip()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nSee [the missing page](missing.md).\n")
    cfg = (ROOT / "mkdocs.yml").read_text().split("\nnav:")[0] + "\nnav:\n  - Home: index.md\n"
    (tmp_path / "mkdocs.yml").write_text(cfg)
    r = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert r.returncode != 0 and "missing.md" in (r.stdout + r.stderr)


def _openapi_routes() -> set[tuple[str, str]]:
    from serving.api import ApiDeps, create_app

    app = create_app(ApiDeps(memory=None, pipeline=None))  # type: ignore[arg-type]  # only the routes are read
    return {(m.upper(), p) for p, ops in app.openapi()["paths"].items() for m in ops}


def test_every_openapi_route_is_in_the_docs_route_table() -> None:
    routes = _openapi_routes()
    documented = {(m, p) for m, p in ROW.findall((DOCS / "agents.md").read_text())}
    assert len(routes) >= 19
    assert routes - documented == set(), f"routes missing from docs/agents.md: {sorted(routes - documented)}"
    assert documented - routes == set(), f"documented routes the app does not have: {sorted(documented - routes)}"


def test_the_route_check_sees_a_missing_route() -> None:
    table = (DOCS / "agents.md").read_text().replace("| DELETE | `/v1/users/{user_id}` |", "| DELETE | `/gone` |")
    assert ("DELETE", "/v1/users/{user_id}") not in set(ROW.findall(table))


def _pages() -> list[Path]:
    return [README, ROOT / "clients" / "python" / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_no_page_points_outside_the_repository() -> None:
    bad = []
    for page in _pages():
        text = page.read_text()
        rel = page.relative_to(ROOT)
        if "../shared" in text or "/work/" in text:
            bad.append(f"{rel}: names a path outside the repository")
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue  # a URL or an anchor on the same page
            path = target.split("#")[0]
            if path.startswith("/"):
                bad.append(f"{rel}: absolute link {target}")
                continue
            resolved = (page.parent / path).resolve()
            if not resolved.is_relative_to(ROOT):
                bad.append(f"{rel}: {target} leaves the repository")
            elif not resolved.exists():
                bad.append(f"{rel}: {target} does not exist")
    assert bad == []


def _slug(heading: str) -> str:
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def test_the_readme_is_short_with_a_table_of_contents() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    headings = {_slug(h) for h in re.findall(r"^## (.+)$", text, re.M)}
    toc = re.findall(r"^- \[([^\]]+)\]\(#([^)]+)\)", text, re.M)
    assert len(toc) >= 6 and all(anchor in headings for _, anchor in toc), (toc, headings)
    toc_text = " ".join(label for label, _ in toc)
    for topic in ("MCP", "client", "HTTP", "Cypher", "Session"):
        assert topic.lower() in toc_text.lower(), topic
    what = text.split("## What it is and why", 1)[1].split("\n## ", 1)[0].strip().splitlines()
    assert len(what) <= 15
    assert "make demo" in text and "make test" in text and '"mcpServers"' in text


def _json_blocks(text: str) -> list[object]:
    return [json.loads(b) for b in re.findall(r"```json\n(.*?)```", text, re.S)]


def test_the_session_examples_are_valid_sessions() -> None:
    from induction.session import parse_session

    examples = [b for page in (README, DOCS / "agents.md") for b in _json_blocks(page.read_text())
                if isinstance(b, dict) and "turns" in b]
    assert len(examples) >= 2
    for ex in examples:
        assert isinstance(ex, dict)
        s = parse_session(ex, user_id="maya")
        assert s.turns and s.session_id


def test_the_mcp_example_uses_absolute_paths() -> None:
    for page in (README, DOCS / "agents.md"):
        cfg = next(b for b in _json_blocks(page.read_text()) if isinstance(b, dict) and "mcpServers" in b)
        assert isinstance(cfg, dict)
        server = cfg["mcpServers"]["evomem"]
        assert Path(server["command"]).is_absolute()
        args = server["args"]
        assert args[0] == "mcp" and Path(args[args.index("--store-path") + 1]).is_absolute()
