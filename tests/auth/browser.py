"""A headless browser for flytekit's PKCE flow: flytekit opens the authorize URL with `webbrowser`, which
runs $BROWSER; this follows the URL as a person would (sign in on the form the server shows, follow the
redirects to flytekit's local callback). Each run appends the URL to $AUTH_TEST_BROWSER_LOG.

Usage: browser.py URL (the user and password come from AUTH_TEST_USER / AUTH_TEST_PASSWORD).
"""

import os
import sys

import requests

from tests.auth.clients import sign_in_fields

url = sys.argv[1]
with open(os.environ["AUTH_TEST_BROWSER_LOG"], "a") as log:
    log.write(url + "\n")
session = requests.Session()
page = session.get(url, timeout=60)
page.raise_for_status()
fields = sign_in_fields(page.text)
assert fields, f"no sign-in form at {url}:\n{page.text}"
fields.update(username=os.environ["AUTH_TEST_USER"], password=os.environ["AUTH_TEST_PASSWORD"])
# The server answers 303 to flytekit's callback on localhost, which hands the code to flytekit.
done = session.post(page.url.split("?")[0], data=fields, timeout=60)
done.raise_for_status()
