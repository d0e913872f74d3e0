"""Redaction rules on their own: what is hidden, what is left readable."""

from __future__ import annotations

import hashlib

import pytest

from services.common.telemetry.redaction import REDACTED, RedactionPolicy, redact_text


class TestRedactText:
    @pytest.mark.parametrize(
        ("text", "secret"),
        [
            ("key lf_AbCdEf0123456789xyzXYZ ok", "AbCdEf0123456789xyzXYZ"),
            ("sk-proj-abcdefghijklmnop1234", "abcdefghijklmnop1234"),
            ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz123", "abcdefghijklmnopqrstuvwxyz"),
            ('curl -H "Authorization: Basic dXNlcjpwYXNz" x', "dXNlcjpwYXNz"),
            ("password=hunter22 next", "hunter22"),
            ('{"api_key": "abcd1234"}', "abcd1234"),
            ("postgresql://leaflab:pa55word@db:5432/x", "pa55word"),
            ("AKIAIOSFODNN7EXAMPLE", "FODNN7EXAMPLE"),
            ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCY", "wJalrXUtnFEMI"),
            ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "abcdefghijklmnopqrstuvwxyz0123"),
            ("xoxb-1234567890-abcdefghij", "1234567890-abcdefghij"),
            ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N", "dozjgNryP4J3"),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
                "MIIEpAIBAAKCAQEA",
            ),
        ],
    )
    def test_secret_is_removed(self, text: str, secret: str) -> None:
        cleaned = redact_text(text)
        assert secret not in cleaned
        assert REDACTED in cleaned

    @pytest.mark.parametrize(
        "text",
        [
            "the bearer of bad news",
            "input tokens 1234, token classification",
            "Basic authentication is disabled",
            "gen_ai.usage.output_tokens",
            "see https://example.org/papers/1234",
        ],
    )
    def test_prose_is_left_alone(self, text: str) -> None:
        assert redact_text(text) == text


class TestPolicy:
    def test_secret_keys_are_blanked_but_token_counts_kept(self) -> None:
        out = RedactionPolicy().clean_attributes(
            {
                "http.request.header.authorization": "anything",
                "db.password": "x",
                "gen_ai.usage.input_tokens": 12,
                "leaflab.cached_tokens": 3,
            }
        )
        assert out == {
            "http.request.header.authorization": REDACTED,
            "db.password": REDACTED,
            "gen_ai.usage.input_tokens": 12,
            "leaflab.cached_tokens": 3,
        }

    def test_query_attributes_are_dropped_whatever_their_type(self) -> None:
        # Numbers skip the string checks; a query that happens to be one still goes.
        out = RedactionPolicy().clean_attributes(
            {"url.query": 12345, "http.query": 1.5, "url.path": "/search", "n": 3}
        )
        assert out == {"url.path": "/search", "n": 3}

    def test_size_cap_keeps_preview_length_and_hash_of_redacted_text(self) -> None:
        text = "sk-abcdefghijklmnopqrstu " + "y" * 100
        out = RedactionPolicy(preview_chars=20).clean_attributes({"p": text})
        redacted = redact_text(text)
        assert out["p"] == redacted[:20] + "…"
        assert out["p.length"] == len(redacted)
        assert out["p.sha256"] == hashlib.sha256(redacted.encode()).hexdigest()

    def test_full_capture_keeps_whole_value_still_redacted(self) -> None:
        text = "password=swordfish " + "z" * 5000
        out = RedactionPolicy(full_capture=True, preview_chars=20).clean_attributes({"p": text})
        assert out["p"] == redact_text(text)
        assert "swordfish" not in out["p"] and len(out["p"]) > 5000
        assert "p.length" not in out

    def test_nul_characters_are_dropped(self) -> None:
        assert RedactionPolicy().clean_attributes({"s": "a\x00b"}) == {"s": "ab"}
