"""Docker backend: hardened containers, a warm pool of them, and the janitor that reaps orphans."""
