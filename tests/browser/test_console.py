"""The console in a real browser (headless Chromium) against a real server running real flytekit workflows.

Each test opens the page of a run started with FlyteRemote (or from the console's own launch form) and
watches it change without reloading: node phases in the graph, streamed task logs, the gate's
approve button, terminate. Screenshots of the main pages land in tests/artifacts/screenshots/.
"""

from __future__ import annotations

import os
import re
import shutil

import pytest
from flyteidl.core.execution_pb2 import WorkflowExecution

from tests.browser.conftest import DOCS_SCREENSHOT, screenshot

pytestmark = pytest.mark.e2e
PROJECT, DOMAIN = "flytesnacks", "development"


def start(remote, demo: str, workflow: str, **inputs) -> str:
    lp = remote.fetch_launch_plan(PROJECT, DOMAIN, f"console_demo.{workflow}", demo)
    return remote.execute(lp, inputs=inputs).id.name


def execution_path(name: str) -> str:
    return f"/console/projects/{PROJECT}/domains/{DOMAIN}/executions/{name}"


def node(page, node_id: str):
    return page.locator(f"#dag g.dag-node[data-node='{node_id}']")


def test_run_page_follows_the_engine_and_streams_logs(page, server, remote, demo):
    name = start(remote, demo, "fan_wf", seconds=6, label="slow")
    page.goto(server.url + execution_path(name))
    # The graph shows every node of the compiled workflow, coloured as the engine moves.
    for node_id in ("start-node", "n0", "n1", "n2", "end-node"):
        assert node(page, node_id).count() == 1
    running = node(page, "n0")
    page.wait_for_function("document.querySelector(\"#dag g[data-node='n0']\").dataset.phase === 'RUNNING'")
    assert "n-run" in running.get_attribute("class")
    assert node(page, "n2").get_attribute("data-phase") == "NOT_STARTED"
    # Open n0's log while it runs: lines arrive in the panel as the task prints them.
    log_link = page.locator("tr[data-node-row='n0'] a.log[data-log]")
    log_link.wait_for()
    log_link.click()
    panel = page.locator("#log-text")
    page.wait_for_function("document.querySelector('#log-text').textContent.includes('slow: tick 1')")
    assert "slow: done" not in panel.text_content()
    screenshot(page, "execution-running")
    page.wait_for_function("document.querySelector('#log-text').textContent.includes('slow: done')", timeout=60_000)
    page.click("#log-close")
    # No reload: the summary, graph, node list and timeline update themselves until the run ends.
    page.wait_for_function("document.querySelector('#execution-phase').textContent === 'SUCCEEDED'", timeout=60_000)
    for node_id in ("n0", "n1", "n2", "end-node"):
        assert node(page, node_id).get_attribute("data-phase") == "SUCCEEDED"
    assert page.locator("#gantt .row[data-gantt='n0']").count() == 1
    assert page.locator("#gantt .row[data-gantt='n0#0'] .bar.ok").count() == 1
    assert "'slow-6+quick-1'" in page.locator("#data").text_content()
    assert page.locator("#content").get_attribute("data-running") == "0"
    path = screenshot(page, "execution")
    if os.environ.get("FLYTELITE_UPDATE_DOCS_SCREENSHOT"):
        # Refresh the documentation's picture (docs/console.png) only when asked, so a run leaves the tree clean.
        DOCS_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, DOCS_SCREENSHOT)


def test_launch_form_reports_bad_inputs_then_starts_a_run(page, server, demo):
    page.goto(f"{server.url}/console/projects/{PROJECT}/launchPlans/console_demo.fan_wf?domain={DOMAIN}&version={demo}")
    form = page.locator("form.launch")
    assert form.locator("input[data-input='seconds']").input_value() == "3"  # the launch plan's default
    form.locator("input[data-input='seconds']").fill("three")
    form.locator("button[type=submit]").click()
    result = form.locator(".launch-result")
    result.wait_for(state="visible")
    page.wait_for_function("document.querySelector('.launch-result').textContent.length > 0")
    assert "seconds: 'three' does not fit type INTEGER" in result.text_content()
    assert "bad" in result.get_attribute("class")
    form.locator("input[data-input='seconds']").fill("1")
    form.locator("input[data-input='label']").fill("from-the-form")
    screenshot(page, "launch-form")
    form.locator("button[type=submit]").click()
    page.wait_for_url(re.compile(r".*/executions/[a-z][a-z0-9]+$"))
    page.wait_for_function("document.querySelector('#execution-phase').textContent === 'SUCCEEDED'", timeout=60_000)
    assert "'from-the-form-1+quick-1'" in page.locator("#data").text_content()
    assert "manual" in page.locator("#summary").text_content()


def test_gate_is_approved_from_the_page(page, server, remote, demo):
    name = start(remote, demo, "gate_wf", x=5)
    page.goto(server.url + execution_path(name))
    approve = page.locator("tr[data-signal='go-ahead'] button[data-signal-approve='true']")
    approve.wait_for(timeout=60_000)
    # The gate creates its signal during the round whose end records the node RUNNING (as Flyte's gate does):
    # the page may show the signal a moment before the node's phase.
    page.wait_for_function("document.querySelector(\"#dag g[data-node='n1']\").dataset.phase === 'RUNNING'",
                           timeout=60_000)
    screenshot(page, "gate-pending")
    approve.click()
    page.wait_for_function("document.querySelector('#execution-phase').textContent === 'SUCCEEDED'", timeout=60_000)
    assert "True" in page.locator("tr[data-signal='go-ahead']").text_content()
    assert "7" in page.locator("#data").text_content()


def test_terminate_aborts_a_running_execution(page, server, remote, demo):
    name = start(remote, demo, "fan_wf", seconds=300, label="forever")
    page.goto(server.url + execution_path(name))
    page.wait_for_function("document.querySelector(\"#dag g[data-node='n0']\").dataset.phase === 'RUNNING'")
    # Terminate asks first, and for a cause.
    page.click("button[data-action='terminate']")
    page.click("form.terminate button[type=submit]")
    page.wait_for_selector("form.terminate .terminate-result.bad")
    assert "Say why" in page.locator("form.terminate .terminate-result").text_content()
    assert remote.fetch_execution(name=name).closure.phase == WorkflowExecution.RUNNING
    page.fill("form.terminate input[name=cause]", "wrong label, started again")
    page.click("form.terminate button[type=submit]")
    page.wait_for_function("document.querySelector('#execution-phase').textContent === 'ABORTED'", timeout=60_000)
    assert "wrong label, started again" in page.locator("#summary").text_content()
    # A finished run offers relaunch and recover instead.
    assert page.locator("a[data-relaunch]").count() == 1
    assert page.locator("button[data-action='recover']").count() == 1
    assert remote.fetch_execution(name=name).closure.phase == WorkflowExecution.ABORTED  # as FlyteRemote sees it
    # Relaunch opens the launch form with the run's inputs, to change before launching.
    page.click("a[data-relaunch]")
    page.wait_for_url(re.compile(r".*/relaunch$"))
    assert page.input_value("[data-input='seconds']") == "300"
    assert page.input_value("[data-input='label']") == "forever"
    page.fill("[data-input='seconds']", "1")
    page.click("details.advanced summary")
    page.fill("[data-option='labels']", "team=ml")
    screenshot(page, "relaunch")
    page.click("form.launch button[type=submit]")
    page.wait_for_url(re.compile(r".*/executions/(?!" + name + r")[a-z][a-z0-9]+$"))
    page.wait_for_function("document.querySelector('#execution-phase').textContent === 'SUCCEEDED'", timeout=60_000)
    summary = page.locator("#summary")
    assert summary.locator("a.reference").text_content() == name
    assert "relaunch of" in summary.text_content() and "team=ml" in summary.text_content()
    assert "quick-1+slow-1" not in page.locator("#data").text_content()
    assert "forever-1+quick-1" in page.locator("#data").text_content()


def test_map_items_list_filters_and_pages(page, server, remote, demo):
    failed = start(remote, demo, "map_wf", xs=[1, 2, -3, 4])
    page.goto(server.url + execution_path(failed))
    page.wait_for_function("document.querySelector('#execution-phase').textContent === 'FAILED'", timeout=60_000)
    items = page.locator("tr[data-node-row='n0'] .items")
    # Four items, one of them failed; the engine may abort items still running when the map fails.
    assert items.get_attribute("data-items") == "4"
    # With warm workers the failing item can end before any other succeeds; the counts must add up to 4.
    counts = re.fullmatch(r"map items: (?:(\d+) aborted, )?1 failed(?:, (\d+) succeeded)? see the items",
                       items.text_content())
    assert counts, items.text_content()
    assert sum(int(c or 0) for c in counts.groups()) == 3
    assert "negative input -3" in page.locator("#summary .error").text_content()
    assert node(page, "n0").get_attribute("data-phase") == "FAILED"
    screenshot(page, "execution-failed-map")
    # The items: failed first, each with its error and log; an item's page with its own input.
    page.click("tr[data-node-row='n0'] a.items-link")
    page.wait_for_selector("#items tr[data-item]")
    assert page.locator("#items tr[data-item]").first.get_attribute("data-item") == "2"
    failed_item = page.locator("#items tr[data-item='2']")
    assert "negative input -3" in failed_item.text_content()
    page.click("#items a[data-phase='FAILED']")
    page.wait_for_url(re.compile(r".*/items\?phase=FAILED$"))
    assert page.locator("#items tr[data-item]").count() == 1
    screenshot(page, "map-items")
    page.click("#items tr[data-item='2'] td:first-child a")
    page.wait_for_selector("tr[data-attempt='0']")
    assert "-3" in page.locator("#item table.kv").first.text_content()
    page.click("tr[data-attempt='0'] a.log")
    page.wait_for_function("document.querySelector('#log-text').textContent.includes('negative input -3')",
                           timeout=30_000)
    screenshot(page, "map-item")
    page.click("#log-close")
    # The audit trail is a click away and fits the window.
    page.click("header a.audit")
    page.wait_for_url(re.compile(r".*/console/audit$"))
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.goto(server.url + execution_path(failed))
    # Recover re-runs the failed execution as a new one and opens its page.
    page.click("button[data-action='recover']")
    page.wait_for_url(re.compile(r".*/executions/(?!" + failed + r")[a-z][a-z0-9]+$"))

    page.goto(f"{server.url}/console/projects/{PROJECT}/executions?domain={DOMAIN}")
    page.select_option("select[name=phase]", "FAILED")
    page.fill("input[name=workflow]", "console_demo.map_wf")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(re.compile(r".*phase=FAILED.*"))
    rows = page.locator("#executions tr[data-execution-row]")
    assert rows.count() >= 1
    assert page.locator(f"#executions tr[data-execution-row='{failed}']").count() == 1
    assert all("FAILED" in t for t in rows.all_text_contents())
    screenshot(page, "executions")
    for path in ("/console", f"/console/projects/{PROJECT}?domain={DOMAIN}",
                 f"/console/projects/{PROJECT}/workflows/console_demo.fan_wf?domain={DOMAIN}",
                 f"/console/projects/{PROJECT}/tasks/console_demo.slow_step?domain={DOMAIN}",
                 f"/console/projects/{PROJECT}/schedules?domain={DOMAIN}"):
        resp = page.goto(server.url + path)
        assert resp.status == 200, path
    nightly = page.locator("tr[data-schedule='fan_nightly']")
    assert "cron '0 3 * * *'" in nightly.text_content()
    assert nightly.locator(".next-run").text_content().endswith(" 03:00:00 UTC")
    screenshot(page, "schedules")
    # Times show in UTC, or in the browser's own zone at the press of a button, kept for the next page.
    tokyo = page.context.browser.new_context(timezone_id="Asia/Tokyo")
    try:
        there = tokyo.new_page()
        there.goto(f"{server.url}/console/projects/{PROJECT}/schedules?domain={DOMAIN}")
        next_run = there.locator("tr[data-schedule='fan_nightly'] .next-run")
        assert next_run.text_content().endswith(" 03:00:00 UTC")
        there.click("button[data-zone]")
        assert " 12:00:00 " in next_run.text_content() and not next_run.text_content().endswith("UTC")
        there.reload()
        assert there.locator("button[data-zone]").text_content() == "Local time"
        assert " 12:00:00 " in next_run.text_content()
    finally:
        tokyo.close()
    page.goto(f"{server.url}/console/projects/{PROJECT}/domains/{DOMAIN}/workflow/console_demo.fan_wf/version/{demo}")
    assert page.locator("#content, .dag g[data-node='n2']").count() >= 1
    assert "console_demo.fan_wf" in page.locator("h1").text_content()
    screenshot(page, "workflow")


def test_a_wide_dynamic_node_lists_its_children_on_demand(page, server, remote, demo):
    name = start(remote, demo, "wide_wf", n=25)
    page.goto(server.url + execution_path(name))
    page.wait_for_function("document.querySelector('#execution-phase').textContent === 'SUCCEEDED'", timeout=120_000)
    children = page.locator("tr[data-ancestors='n0']")
    assert children.count() == 25
    assert all(row.is_hidden() for row in children.all())
    toggle = page.locator("button[data-toggle='n0']")
    assert toggle.text_content() == "show 25 nodes"
    toggle.click()
    assert all(row.is_visible() for row in children.all())
    ids = [row.get_attribute("data-node-row") for row in children.all()]
    assert [int(i.rsplit("-dn", 1)[1]) for i in ids] == list(range(25))
    assert toggle.text_content() == "hide 25 nodes"
    screenshot(page, "wide-dynamic")
    toggle.click()
    assert all(row.is_hidden() for row in children.all())
    # A click on a node of the graph opens its panel; a dynamic node's panel shows the graph it ran, whose
    # nodes open their own panels.
    node(page, "n0").click()
    panel = page.locator("#node-panel")
    panel.wait_for(state="visible")
    assert "many" in panel.text_content() and "SUCCEEDED" in panel.text_content()
    page.click("#node-panel button[data-show-graph='n0']")
    inner = page.locator(".subdag[data-graph-of='n0']")
    assert inner.is_visible() and inner.locator("g.dag-node").count() == 25 + 2  # with its start and end
    inner.locator("g.dag-node[data-node='dn7']").click()
    page.wait_for_function("document.getElementById('node-title').textContent === 'dn7'")
    assert "inc" in panel.text_content() and "n0-0-dn7" in panel.text_content()
    screenshot(page, "node-panel")
    page.click("#node-close")
    panel.wait_for(state="hidden")
