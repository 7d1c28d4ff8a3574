"""Browser fixtures: Debian's Chromium driven by Playwright, against a real flytelite server with real runs.

`.ci/run` installs chromium and the dev extras (playwright); without them these tests skip saying so.
Playwright never downloads a browser here: it launches /usr/bin/chromium.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from tests.e2e.flyte_cli import pyflyte

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WORKFLOWS = Path(__file__).parent / "workflows"
SCREENSHOTS = Path(__file__).resolve().parents[1] / "artifacts" / "screenshots"
DOCS_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "console.png"


# Module scope, not session: Playwright's sync API keeps an event loop running in this thread while it is
# open, and later tests (the engine's) call asyncio.run().
@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium; .ci/run does it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.set_default_timeout(30_000)
    yield pg
    context.close()
    assert not errors, f"script errors on the page: {errors}"


@pytest.fixture(scope="session")
def demo(server, tmp_path_factory) -> str:
    """Register tests/browser/workflows on the session server; returns the version."""
    folder = tmp_path_factory.mktemp("browser-workflows")
    shutil.copy(WORKFLOWS / "console_demo.py", folder / "console_demo.py")
    version = "b" + uuid.uuid4().hex[:10]
    pyflyte(server, "register", "--project", "flytesnacks", "--domain", "development", "--version", version,
            "--activate-launchplans", "console_demo.py", cwd=folder)
    return version


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
