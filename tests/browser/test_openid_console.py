"""The console signed in through an OpenID Connect provider, in Chromium: the console sends the browser to the
provider (another flytelite), the person signs in there, and comes back signed in to the console, seeing the
projects the provider's groups give them."""

from __future__ import annotations

import pytest

from tests.auth.openid_servers import USERS, running_pair

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    with running_pair(tmp_path_factory.mktemp("openid-console")) as servers:
        yield servers


def test_console_sign_in_through_the_provider(page, pair):
    provider, app = pair
    page.goto(f"{app.url}/console")
    assert page.url.startswith(f"{provider.url}/oauth2/authorize?")  # the provider's sign-in
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", USERS["alice"])
    page.click("button[type=submit]")
    page.wait_for_url(f"{app.url}/console")
    assert page.locator("[data-project]").evaluate_all("cards => cards.map(c => c.dataset.project)") == ["flytesnacks"]
    assert any(c["name"] == "flyte_at" for c in page.context.cookies(app.url))
    # Her role (viewer, from the provider's group) reaches the project's pages; a project she has no role in
    # is refused.
    page.goto(f"{app.url}/console/projects/flytesnacks/executions?domain=development")
    assert page.locator("h1").first.is_visible()
    response = page.goto(f"{app.url}/console/projects/other/executions?domain=development")
    assert response.status == 403 and "lacks the view permission in project other" in page.content()
