"""Authentication as FlyteAdmin's self-auth server does it: flytelite is its own OAuth2 authorization server.

`config` (the `auth:` block), `secrets` (hashed client secrets and passwords), `keys` (the signing key and
its JWKS), `tokens` (signed JWTs: access and refresh tokens, authorization codes, sign-in sessions),
`oauth2` (the grants of /oauth2/token and /oauth2/authorize), `grpc` (AuthMetadataService and the server
interceptor), `http` (the OAuth2 routes, the console's login and the middleware that checks every route).
Off unless the configuration has an `auth:` block; nothing here runs then.
"""
