"""HTTP side of authentication: the OAuth2 endpoints, the console's login, and the middleware that checks
every other route.

Follows FlyteAdmin: the self-auth server's /oauth2/{authorize,token,jwks}, the discovery documents
(/.well-known/oauth-authorization-server, /config/v1/flyte_client), and auth/handlers.go's /login,
/callback and /logout, which sign a browser in with the authorization-code flow and keep the access token
in the `flyte_at` cookie. Where FlyteAdmin sends the user on to an external identity provider, flytelite
asks for a configured user's password itself (the sign-in session is a cookie of its own).
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from urllib.parse import parse_qsl, unquote_plus, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from flytelite.auth.oauth2 import OAuthError, pkce_challenge
from flytelite.auth.setup import Auth
from flytelite.auth.tokens import ACCESS, LOGIN, bearer_token
from flytelite.config.auth import CONSOLE_CLIENT_ID
from flytelite.console.layout import esc, layout
from flytelite.errors import Unauthenticated
from flytelite.storage.signing import DOWNLOAD_ROUTE, UPLOAD_ROUTE

ACCESS_COOKIE = "flyte_at"
SESSION_COOKIE = "flytelite_session"
LOGIN_COOKIE = "flyte_csrf_state"
OPENID_COOKIE = "flytelite_openid"
# What a 401 answer asks for (RFC 6750).
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="flytelite"'}
LOGIN_SECONDS = 10 * 60
# Paths anyone may reach: health, metrics (as FlyteAdmin's own metrics port), discovery and the sign-in flow
# itself, static files, and the signed blob URLs (their signature is their authorization, as an S3 presigned
# URL's is).
OPEN_PATHS = ("/healthz", "/metrics", "/favicon.ico", "/.well-known/", "/config/v1/flyte_client", "/oauth2/", "/login",
              "/callback", "/logout", "/console/static/", UPLOAD_ROUTE + "/", DOWNLOAD_ROUTE + "/",
              "/flyteidl2.auth.AuthMetadataService/")
# Where the middleware leaves the identity of a request's valid token, for the routes to authorize it; or,
# on the paths of audited calls, why it has none (REFUSED), for them to answer 401 and record the attempt.
IDENTITY, REFUSED = "flytelite.identity", "flytelite.refused"
AUDITED_PATHS = ("/api/", "/console/api/", "/flyteidl2.")
# Where a browser without a valid cookie is sent to sign in rather than answered 401.
BROWSER_PATHS = ("/console", "/logs/", "/k8s/logs/")


def _form(body: bytes) -> dict[str, str]:
    return dict(parse_qsl(body.decode(errors="replace"), keep_blank_values=True))


def _basic(header: str | None) -> tuple[str, str] | None:
    """Client id and secret of HTTP Basic auth; the secret as sent (oauth2 tries it form-decoded too)."""
    if not header or not header.lower().startswith("basic "):
        return None
    try:
        raw = base64.b64decode(header[6:].strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise OAuthError("invalid_client", "the Basic authorization header is not base64 of id:secret", 401) from None
    client_id, _, secret = raw.partition(":")
    return unquote_plus(client_id), secret


def _oauth_error(exc: OAuthError) -> JSONResponse:
    return JSONResponse({"error": exc.error, "error_description": exc.description}, status_code=exc.status,
                        headers={"Cache-Control": "no-store"})


def _local_path(url: str) -> str:
    """Only this server's own paths are followed after sign-in (no open redirect)."""
    return url if url.startswith("/") and not url.startswith("//") and "\\" not in url else "/console"


def _sign_in_page(params: dict[str, str], error: str = "") -> str:
    hidden = "".join(f"<input type='hidden' name='{esc(k)}' value='{esc(v)}'>" for k, v in params.items()
                     if k not in ("username", "password"))
    msg = f"<div class='error'>{esc(error)}</div>" if error else ""
    return layout("Sign in", f"""<h1>Sign in to flytelite</h1>{msg}
<form method='post' action='/oauth2/authorize'>{hidden}
<p><label>User <input name='username' autocomplete='username' autofocus></label></p>
<p><label>Password <input name='password' type='password' autocomplete='current-password'></label></p>
<p><button type='submit'>Sign in</button></p></form>
<p>Client <code>{esc(params.get('client_id', ''))}</code> asks to act for you.</p>""")


def _failed(message: str, status: int) -> HTMLResponse:
    return HTMLResponse(layout("Sign-in failed", f"<h1>Sign-in failed</h1><div class='error'>{esc(message)}</div>"
                               "<p><a href='/login'>Sign in again</a></p>"), status_code=status)


def _device_page(user_code: str, error: str = "") -> str:
    msg = f"<div class='error'>{esc(error)}</div>" if error else ""
    return layout("Device sign-in", f"""<h1>Sign in a device</h1>{msg}
<form method='get' action='/oauth2/device'><p><label>Code shown by the device
<input name='user_code' value='{esc(user_code)}' autofocus></label></p><p><button type='submit'>Next</button></p></form>""")


def _device_sign_in(user_code: str, error: str = "") -> str:
    msg = f"<div class='error'>{esc(error)}</div>" if error else ""
    return layout("Device sign-in", f"""<h1>Sign in to approve device {esc(user_code)}</h1>{msg}
<form method='post' action='/oauth2/device'><input type='hidden' name='user_code' value='{esc(user_code)}'>
<p><label>User <input name='username' autocomplete='username' autofocus></label></p>
<p><label>Password <input name='password' type='password' autocomplete='current-password'></label></p>
<p><button type='submit'>Sign in</button></p></form>""")


def _device_confirm(user_code: str, client_id: str, user: str) -> str:
    return layout("Device sign-in", f"""<h1>Sign in device {esc(user_code)}?</h1>
<p>Client <code>{esc(client_id)}</code> asks to act as <b>{esc(user)}</b>. Approve only if you started this on a
device of yours and it shows this code.</p>
<form method='post' action='/oauth2/device'><input type='hidden' name='user_code' value='{esc(user_code)}'>
<button type='submit' name='decision' value='approve'>Approve</button>
<button type='submit' name='decision' value='deny' class='danger'>Deny</button></form>""")


def auth_routes(auth: Auth) -> list[Route]:
    server, tokens = auth.server, auth.tokens

    def secure() -> bool:
        return tokens.issuer.startswith("https://")

    def cookie(response: Response, name: str, value: str, seconds: int) -> None:
        response.set_cookie(name, value, max_age=seconds, httponly=True, samesite="lax", secure=secure(), path="/")

    def metadata(_request: Request) -> Response:
        return JSONResponse(server.metadata())

    def client_config(_request: Request) -> Response:
        return JSONResponse(server.public_client_config())

    def jwks(_request: Request) -> Response:
        return JSONResponse({"keys": [auth.key.jwk]})

    async def token(request: Request) -> Response:
        try:
            basic = _basic(request.headers.get("authorization"))
            answer = server.token(_form(await request.body()), basic)
        except OAuthError as exc:
            return _oauth_error(exc)
        return JSONResponse(answer, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})

    async def authorize(request: Request) -> Response:
        params = dict(request.query_params) if request.method == "GET" else _form(await request.body())
        try:
            req = server.check_authorize(params)
        except OAuthError as exc:
            # Never redirect to a URI that was not checked: tell the person at the browser instead.
            return HTMLResponse(layout("Sign-in refused", f"<h1>Sign-in refused</h1><div class='error'>"
                                       f"{esc(exc.error)}: {esc(exc.description)}</div>"), status_code=exc.status)
        if request.method == "GET":
            signed_in = server.session_user(request.cookies.get(SESSION_COOKIE))
            if signed_in is not None:
                return RedirectResponse(server.issue_code(req, *signed_in), status_code=302)
            if auth.openid is not None:
                return await run_in_threadpool(to_provider, f"/oauth2/authorize?{urlencode(params)}")
            return HTMLResponse(_sign_in_page(params))
        if auth.openid is not None:
            return HTMLResponse(layout("Sign-in refused", "<h1>Sign-in refused</h1><div class='error'>People sign "
                                       "in through the OpenID provider here, not with a password.</div>"), 400)
        user = params.get("username", "")
        try:
            session = server.sign_in(user, params.get("password", ""))
        except Unauthenticated as exc:
            return HTMLResponse(_sign_in_page(params, str(exc)), status_code=401)
        response = RedirectResponse(server.issue_code(req, user), status_code=303)
        cookie(response, SESSION_COOKIE, session, auth.config.refresh_token_seconds)
        return response

    def to_provider(after: str) -> Response:
        """Send the browser to the OpenID provider; `after` (a path of this server) follows the sign-in."""
        assert auth.openid is not None
        state, verifier, nonce = secrets.token_urlsafe(24), secrets.token_urlsafe(48), secrets.token_urlsafe(24)
        try:
            url = auth.openid.authorize_url(f"{tokens.issuer}/oauth2/callback", state, nonce,
                                            pkce_challenge(verifier))
        except Unauthenticated as exc:
            return _failed(str(exc), 502)
        response = RedirectResponse(url, status_code=302)
        cookie(response, OPENID_COOKIE, tokens.sign(LOGIN, "-", "openid", LOGIN_SECONDS, state=state,
                                                    verifier=verifier, nonce=nonce, after=after), LOGIN_SECONDS)
        return response

    def provider_callback(request: Request) -> Response:
        """The OpenID provider sends the browser back here with a code: who signed in becomes a session."""
        assert auth.openid is not None
        try:
            pending = tokens.verify(request.cookies.get(OPENID_COOKIE, ""), LOGIN)
        except Unauthenticated:
            return _failed("This browser started no sign-in here, or took too long; start again.", 400)
        if request.query_params.get("error"):
            return _failed(f"The OpenID provider refused: {request.query_params.get('error')} "
                           f"{request.query_params.get('error_description', '')}", 401)
        if not secrets.compare_digest(pending["state"], request.query_params.get("state", "")):
            return _failed("The state does not match this browser's sign-in; start again.", 400)
        try:
            person = auth.openid.person(request.query_params.get("code", ""), f"{tokens.issuer}/oauth2/callback",
                                        pending["verifier"], pending["nonce"])
        except Unauthenticated as exc:
            return _failed(str(exc), 401)
        response = RedirectResponse(_local_path(pending["after"]), status_code=302)
        cookie(response, SESSION_COOKIE, server.session(person.name, person.groups), auth.config.refresh_token_seconds)
        response.delete_cookie(OPENID_COOKIE, path="/")
        return response

    async def device_code(request: Request) -> Response:
        try:
            answer = server.device_authorization(_form(await request.body()),
                                                 _basic(request.headers.get("authorization")))
        except OAuthError as exc:
            return _oauth_error(exc)
        return JSONResponse(answer, headers={"Cache-Control": "no-store"})

    async def device(request: Request) -> Response:
        """Where a person enters a device's user code, signs in, and approves or denies the device."""
        params = dict(request.query_params) if request.method == "GET" else _form(await request.body())
        user_code, devices = params.get("user_code", ""), server.devices
        pending = await run_in_threadpool(devices.pending, user_code) if devices is not None and user_code else None
        if devices is None or pending is None:
            return HTMLResponse(_device_page(user_code, "" if not user_code else "No device waits for this code: "
                                             "it expired, was answered, or is mistyped."),
                                status_code=200 if not user_code else 404)
        signed_in = server.session_user(request.cookies.get(SESSION_COOKIE))
        if request.method == "POST" and signed_in is None and auth.openid is None and "password" in params:
            try:
                session = server.sign_in(params.get("username", ""), params.get("password", ""))
            except Unauthenticated as exc:
                return HTMLResponse(_device_sign_in(user_code, str(exc)), status_code=401)
            response = RedirectResponse(f"/oauth2/device?{urlencode({'user_code': user_code})}", status_code=303)
            cookie(response, SESSION_COOKIE, session, auth.config.refresh_token_seconds)
            return response
        if signed_in is None:
            if auth.openid is not None:
                return await run_in_threadpool(to_provider, f"/oauth2/device?{urlencode({'user_code': user_code})}")
            return HTMLResponse(_device_sign_in(user_code))
        if request.method == "GET" or params.get("decision") not in ("approve", "deny"):
            return HTMLResponse(_device_confirm(user_code, pending.client_id, signed_in[0]))
        approve = params["decision"] == "approve"
        await run_in_threadpool(devices.answer, user_code, signed_in[0], signed_in[1], approve)
        verdict = "signed in; return to your device" if approve else "denied"
        return HTMLResponse(layout("Device", f"<h1>Device {esc(verdict)}</h1>"))

    def openid_configuration(_request: Request) -> Response:
        return JSONResponse(server.openid_configuration())

    def userinfo(request: Request) -> Response:
        """OpenID Connect's UserInfo: who an access token of this server (scope openid or all) is for."""
        try:
            claims = tokens.verify(bearer_token(request.headers.get("authorization")), ACCESS)
        except Unauthenticated as exc:
            return JSONResponse({"error": "invalid_token", "error_description": str(exc)}, status_code=401,
                                headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
        groups = claims.get("groups") or []
        return JSONResponse({"sub": claims["sub"], "preferred_username": claims["sub"],
                             "groups": server.user_groups(claims["sub"], tuple(groups))})

    def login(request: Request) -> Response:
        """Start the console's authorization-code flow; the state and PKCE verifier wait in a signed cookie."""
        state, verifier = secrets.token_urlsafe(24), secrets.token_urlsafe(48)
        after = _local_path(request.query_params.get("redirect_url", "/console"))
        query = urlencode({"client_id": CONSOLE_CLIENT_ID, "response_type": "code", "scope": "all offline",
                           "redirect_uri": f"{tokens.issuer}/callback", "state": state,
                           "code_challenge": pkce_challenge(verifier), "code_challenge_method": "S256"})
        response = RedirectResponse(f"/oauth2/authorize?{query}", status_code=302)
        cookie(response, LOGIN_COOKIE, tokens.sign(LOGIN, "-", CONSOLE_CLIENT_ID, LOGIN_SECONDS, state=state,
                                                   verifier=verifier, after=after), LOGIN_SECONDS)
        return response

    def callback(request: Request) -> Response:
        try:
            pending = tokens.verify(request.cookies.get(LOGIN_COOKIE, ""), LOGIN)
        except Unauthenticated:
            return RedirectResponse("/login", status_code=302)  # a stale or missing login: start again
        if not secrets.compare_digest(pending["state"], request.query_params.get("state", "")):
            return HTMLResponse(layout("Sign-in failed", "<h1>Sign-in failed</h1><div class='error'>The state "
                                       "does not match this browser's sign-in; <a href='/login'>try again</a>."
                                       "</div>"), status_code=400)
        try:
            answer = server.token({"grant_type": "authorization_code", "client_id": CONSOLE_CLIENT_ID,
                                   "code": request.query_params.get("code", ""),
                                   "redirect_uri": f"{tokens.issuer}/callback",
                                   "code_verifier": pending["verifier"]}, None)
        except OAuthError as exc:
            return HTMLResponse(layout("Sign-in failed", f"<h1>Sign-in failed</h1><div class='error'>"
                                       f"{esc(exc.description)}</div>"), status_code=exc.status)
        response = RedirectResponse(_local_path(pending["after"]), status_code=302)
        cookie(response, ACCESS_COOKIE, answer["access_token"], answer["expires_in"])
        response.delete_cookie(LOGIN_COOKIE, path="/")
        return response

    def logout(_request: Request) -> Response:
        response = HTMLResponse(layout("Signed out", "<h1>Signed out</h1><p><a href='/login'>Sign in</a></p>"))
        for name in (ACCESS_COOKIE, SESSION_COOKIE, LOGIN_COOKIE):
            response.delete_cookie(name, path="/")
        return response

    routes = [
        Route("/.well-known/oauth-authorization-server", metadata),
        Route("/.well-known/openid-configuration", openid_configuration),
        Route("/oauth2/userinfo", userinfo),
        Route("/oauth2/device/code", device_code, methods=["POST"]),
        Route("/oauth2/device", device, methods=["GET", "POST"]),
        Route("/config/v1/flyte_client", client_config),
        Route("/oauth2/jwks", jwks),
        Route("/oauth2/token", token, methods=["POST"]),
        Route("/oauth2/authorize", authorize, methods=["GET", "POST"]),
        Route("/login", login),
        Route("/callback", callback),
        Route("/logout", logout),
    ]
    if auth.openid is not None:
        routes.append(Route("/oauth2/callback", provider_callback))
    return routes


class AuthMiddleware:
    """Every route but OPEN_PATHS needs an access token: a bearer header (Authorization or the gRPC metadata
    key) or the console's cookie. Browsers are sent to /login; API clients get 401 with a JSON error."""

    def __init__(self, app, auth: Auth):
        self.app, self.auth = app, auth
        self.header = auth.config.header_key.lower().encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"].startswith(OPEN_PATHS):
            return await self.app(scope, receive, send)
        request = Request(scope)
        token = (bearer_token(request.headers.get("authorization"))
                 or bearer_token(request.headers.get(self.header.decode()))
                 or request.cookies.get(ACCESS_COOKIE, ""))
        try:
            if not token:
                raise Unauthenticated(f"{request.url.path} needs a bearer token (Authorization header) or a "
                                      f"console sign-in")
            scope[IDENTITY] = self.auth.tokens.identity(token)
        except Unauthenticated as exc:
            path = scope["path"]
            if path.startswith(AUDITED_PATHS):
                # The API answers it (401), so that the audit trail records the refused call.
                scope[REFUSED] = str(exc)
                return await self.app(scope, receive, send)
            if request.method in ("GET", "HEAD") and (path == "/" or path.startswith(BROWSER_PATHS)):
                target = path + (f"?{scope['query_string'].decode()}" if scope.get("query_string") else "")
                response = RedirectResponse(f"/login?{urlencode({'redirect_url': target})}", status_code=302)
            else:
                response = Response(json.dumps({"error": "Unauthenticated", "message": str(exc), "code": 16}),
                                    status_code=401, media_type="application/json", headers=CHALLENGE)
            return await response(scope, receive, send)
        return await self.app(scope, receive, send)
