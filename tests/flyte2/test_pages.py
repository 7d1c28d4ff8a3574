"""Flyte 2's console pages in Chromium: the runs list with its filters, a run's action tree and timeline, an
action's inputs and outputs, and aborting a run from its page."""

from __future__ import annotations

from tests.browser.conftest import browser, page  # noqa: F401 - fixtures
from tests.e2e.flyte_cli import wait_for
from tests.flyte2.conftest import ABORTED, NO_SDK, drive, run_phase

pytestmark = NO_SDK


def test_runs_list_filters_and_leads_to_a_runs_actions_and_their_data(page, server):  # noqa: F811 - fixture
    remote = drive(server, "gather_squares", {"n": 3})
    page.goto(f"{server.url}/v2/domain/development/project/flytesnacks/runs")
    row = page.locator("tr", has=page.locator(f"a:text-is('{remote['name']}')"))
    assert "SUCCEEDED" in row.inner_text() and "gather_squares" in row.inner_text()
    page.select_option("select[name=phase]", "FAILED")
    page.click("form.filters button")
    page.wait_for_url("**phase=FAILED**")
    assert page.locator(f"a:text-is('{remote['name']}')").count() == 0
    page.goto(f"{server.url}/v2/domain/development/project/flytesnacks/runs?task=gather")
    page.click(f"a:text-is('{remote['name']}')")
    page.wait_for_url(f"**/runs/{remote['name']}")
    assert page.locator("#run tr").count() == 5  # the header, the root and its three children
    assert page.locator("#gantt .bar").count() == 4  # a bar on the timeline for each action
    page.click("#run a:text-is('gather_squares')")
    page.wait_for_url("**?i=a0")
    panel = page.locator("#action").inner_text()
    assert "Inputs" in panel and "Outputs" in panel
    assert page.locator("#action table.kv").nth(0).inner_text().split() == ["n", "3"]
    assert "[0, 1, 4]" in " ".join(page.locator("#action table.kv").nth(1).inner_text().split()).replace("\n", "")


def test_a_run_is_aborted_from_its_page(page, server, tmp_path):  # noqa: F811 - fixture
    name = drive(server, "sleepy_fanout", {"n": 2, "seconds": 600.0, "marker_dir": str(tmp_path)},
                 mode="start")["name"]
    wait_for(lambda: len(list(tmp_path.iterdir())) == 2, "the children to start", timeout=120)
    page.goto(f"{server.url}/v2/domain/development/project/flytesnacks/runs/{name}")
    page.click("button[data-action=abort-run]")
    page.wait_for_selector("#run p .phase:text-is('ABORTED')", timeout=60_000)  # the page follows the run
    assert run_phase(server, name) == ABORTED
