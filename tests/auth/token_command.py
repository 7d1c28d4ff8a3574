"""An ExternalCommand for flytekit: prints an access token got by the client-credentials grant.

Usage: token_command.py TOKEN_URL CLIENT_ID CLIENT_SECRET
"""

import sys

import requests

url, client_id, secret = sys.argv[1:4]
resp = requests.post(url, data={"grant_type": "client_credentials", "scope": "all"}, auth=(client_id, secret),
                     timeout=30)
resp.raise_for_status()
print(resp.json()["access_token"])
