"""Single sign-on for the web pages: OpenID Connect, authorization code + PKCE.

``provider`` speaks to the issuer (discovery, the code exchange, the ID token's
checks), ``pending`` keeps each started sign-in's one-time state, ``accounts``
turns verified claims into a Leaflab user with the mapped roles, and ``pages``
holds the two routes. A finished sign-in ends in the same session cookie the
API-key form sets; API keys keep working for scripts and the CLI.
"""
