"""The items of an array node (a map task, or an array over launch plans or subworkflows), and one item.

The list gives a summary by phase whose counts filter it, and the items a page at a time, failed first: each
with its phase, attempts, the error of its failed attempt and its logs (streamed in the page while it runs).
An item's page has its attempts, each one's error and logs, its own inputs and its outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote, urlencode

from flytelite.console.layout import (
    TERMINAL,
    LinkFor,
    data_table,
    error_block,
    esc,
    execution_url,
    layout,
    log_link,
    log_panel,
    phase_badge,
    table,
)
from flytelite.console.literals import HtmlFormatter
from flytelite.console.views import NOT_STARTED, ArrayItemsView, Data, ItemAttemptView, ItemView

PAGE_SIZE = 100
# What the phase filter accepts: an item's phase is its latest attempt's.
ITEM_PHASES = frozenset({"UNDEFINED", "QUEUED", "RUNNING", "SUCCEEDED", "ABORTED", "FAILED", "INITIALIZING",
                         "WAITING_FOR_RESOURCES", "RETRYABLE_FAILURE", NOT_STARTED})
# The list's order: what needs looking at first.
_RANK = {"FAILED": 0, "RETRYABLE_FAILURE": 1, "ABORTED": 2, "RUNNING": 3, "INITIALIZING": 3,
         "WAITING_FOR_RESOURCES": 3, "QUEUED": 4, NOT_STARTED: 5, "SUCCEEDED": 6}


def items_url(items: ArrayItemsView, index: int | None = None, **params: str | int) -> str:
    path = (execution_url(items.project, items.domain, items.execution) + f"/nodes/{quote(items.node_id, safe='')}"
            + "/items" + (f"/{index}" if index is not None else ""))
    kept = {k: v for k, v in params.items() if v not in ("", None)}
    return path + ("?" + urlencode(kept) if kept else "")


def in_order(items: list[ItemView], phase: str) -> list[ItemView]:
    """The items of phase `phase` (every item for ''), failed first, then by index."""
    chosen = [item for item in items if not phase or item.phase == phase]
    return sorted(chosen, key=lambda item: (_RANK.get(item.phase, 5), item.index))


def items_page(items: ArrayItemsView, phase: str, page: int, error_of: Callable[[ItemView], str]) -> str:
    """One page of the items of phase `phase` (all for ''); `error_of(item)` is a failed item's error."""
    chosen = in_order(items.items, phase)
    shown = chosen[page * PAGE_SIZE:(page + 1) * PAGE_SIZE]
    rows = [_item_row(items, item, error_of(item) if item.phase == "FAILED" else "") for item in shown]
    first = page * PAGE_SIZE + 1
    where = (f"items {first}–{first + len(shown) - 1} of {len(chosen)}" if shown else
             f"no items{f' {phase.lower()}' if phase else ''}")
    pager = []
    if page > 0:
        pager.append(f"<a class='prev' href='{esc(_url(items, phase, page - 1))}'>Previous page</a>")
    if (page + 1) * PAGE_SIZE < len(chosen):
        pager.append(f"<a class='next' href='{esc(_url(items, phase, page + 1))}'>Next page</a>")
    body = (f"{_heading(items)}<div id='content' data-running='{1 if items.running else 0}'>"
            f"<div id='items' data-live><p class='summary'>{_summary(items, phase)}</p>"
            f"<p class='muted'>Showing {where}, failed first.</p>"
            + table(["Item", "Phase", "Attempts", "Error", "Logs"], rows, "No items.", "items")
            + f"<div class='pager'>{''.join(pager)}</div></div></div>{log_panel()}")
    return layout(f"{items.node_id} items · {items.execution}", body, items.project, items.domain)


def _url(items: ArrayItemsView, phase: str, page: int) -> str:
    return items_url(items, phase=phase, page=page or "", attempt=_attempt_param(items))


def _attempt_param(items: ArrayItemsView) -> int | str:
    """The array node's attempt in links: named only when it is not the latest."""
    return items.attempt if items.attempts and items.attempt != items.attempts[-1] else ""


def _heading(items: ArrayItemsView) -> str:
    back = execution_url(items.project, items.domain, items.execution)
    others = ""
    if len(items.attempts) > 1:
        others = " · node attempt " + " ".join(
            f"<b>{a}</b>" if a == items.attempt else f"<a href='{esc(items_url(items, attempt=a))}'>{a}</a>"
            for a in items.attempts)
    return (f"<h1>Items of node {esc(items.node_id)} {phase_badge(items.node_phase)}</h1>"
            f"<p><a href='{esc(back)}'>← execution {esc(items.execution)}</a>{others}</p>")


def _summary(items: ArrayItemsView, phase: str) -> str:
    counts: dict[str, int] = {}
    for item in items.items:
        counts[item.phase] = counts.get(item.phase, 0) + 1
    links = [f"<a href='{esc(_url(items, '', 0))}'>{'<b>' if not phase else ''}all {len(items.items)}"
             f"{'</b>' if not phase else ''}</a>"]
    for name in sorted(counts, key=lambda p: (_RANK.get(p, 5), p)):
        label = f"{counts[name]} {name.lower().replace('_', ' ')}"
        if name == phase:
            label = f"<b>{label}</b>"
        links.append(f"<a data-phase='{esc(name)}' href='{esc(_url(items, name, 0))}'>{label}</a>")
    return " · ".join(links)


def _item_row(items: ArrayItemsView, item: ItemView, error: str) -> str:
    latest = item.attempts[-1] if item.attempts else None
    logs = _logs(latest) if latest is not None else ""
    return (f"<tr data-item='{item.index}' data-phase='{esc(item.phase)}'>"
            f"<td><a href='{esc(items_url(items, item.index, attempt=_attempt_param(items)))}'>#{item.index}</a></td>"
            f"<td>{phase_badge(item.phase)}{_cache(latest)}</td><td>{len(item.attempts)}</td>"
            f"<td>{error_block(error)}</td><td>{logs}</td></tr>")


def _logs(attempt: ItemAttemptView) -> str:
    return " ".join(log_link(name, uri, attempt.phase not in TERMINAL) for name, uri in attempt.logs)


def _cache(attempt: ItemAttemptView | None) -> str:
    if attempt is None or not attempt.cache_status:
        return ""
    return f" <span class='tag cache'>cache {esc(attempt.cache_status.lower())}</span>"


def item_page(items: ArrayItemsView, item: ItemView, errors: dict[int, str], inputs: Data, outputs: Data,
              link: LinkFor) -> str:
    """One item: its attempts (`errors` by attempt), its inputs and its latest attempt's outputs."""
    fmt = HtmlFormatter(link)
    rows = []
    for attempt in item.attempts:
        child = (f" <a href='{esc(execution_url(items.project, items.domain, attempt.external_id))}'>"
                 f"execution {esc(attempt.external_id)}</a>" if items.launches and attempt.external_id else "")
        rows.append(f"<tr data-attempt='{attempt.retry_attempt}'><td>#{attempt.retry_attempt}</td>"
                    f"<td>{phase_badge(attempt.phase)}{_cache(attempt)}{child}</td>"
                    f"<td>{error_block(errors.get(attempt.retry_attempt, ''))}</td><td>{_logs(attempt)}</td></tr>")
    no_outputs = ("none: the item failed" if item.phase == "FAILED" else "none yet" if item.phase not in TERMINAL
                  else "none")
    back = items_url(items, attempt=_attempt_param(items))
    execution = execution_url(items.project, items.domain, items.execution)
    body = (f"<h1>Item #{item.index} of node {esc(items.node_id)} {phase_badge(item.phase)}</h1>"
            f"<p><a href='{esc(back)}'>← all items</a> · <a href='{esc(execution)}'>execution "
            f"{esc(items.execution)}</a></p>"
            f"<div id='content' data-running='{1 if items.running else 0}'><div id='item' data-live>"
            "<h2>Attempts</h2>" + table(["Attempt", "Phase", "Error", "Logs"], rows, "Not started yet.")
            + f"<h2>Inputs</h2>{data_table(inputs, fmt)}<h2>Outputs</h2>{data_table(outputs, fmt, no_outputs)}"
            f"</div></div>{log_panel()}")
    return layout(f"{items.node_id} item {item.index} · {items.execution}", body, items.project, items.domain)
