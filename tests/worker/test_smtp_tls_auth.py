"""E-mail delivery over STARTTLS with AUTH, against a real aiosmtpd server on loopback
with a self-signed certificate made here: the message goes out only after the TLS
upgrade, logged in with the settings' credentials by AUTH PLAIN or LOGIN; a wrong
password, an untrusted certificate or a server without STARTTLS leaves the outbox
row pending with the reason, then failed after the last attempt — never sent in
the clear, never lost. Real Postgres outbox rows, the real ``send_due``."""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from pydantic import SecretStr
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import EmailDelivery
from services.worker.notify.email_delivery import send_due
from services.worker.notify.settings import EmailSettings
from tests.fixtures.builders import make_user, queued_jobs
from tests.fixtures.processes import free_port

USER, PASSWORD = "leaflab-notify", "correct horse battery staple"


@dataclass(frozen=True)
class Certificate:
    cert: Path
    key: Path


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> Certificate:
    """A self-signed certificate for 127.0.0.1 (and localhost)."""
    folder = tmp_path_factory.mktemp("smtp-tls")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "leaflab test smtp")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    paths = Certificate(folder / "cert.pem", folder / "key.pem")
    paths.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


@dataclass
class Session_:
    """What the server saw of one message: over TLS or not, and who logged in how."""

    tls: bool
    login: str | None
    rcpt_tos: list[str]


@dataclass
class TlsSmtpServer:
    port: int
    auth_tries: list[tuple[str, str, bool]] = field(default_factory=list)  # mechanism, login, ok
    received: list[Session_] = field(default_factory=list)


def start_server(
    certificate: Certificate | None, *, mechanisms: tuple[str, ...] = ("PLAIN", "LOGIN")
) -> tuple[TlsSmtpServer, Controller]:
    """aiosmtpd requiring STARTTLS (when given a certificate) before AUTH and MAIL,
    offering only ``mechanisms``."""
    server = TlsSmtpServer(port=free_port())

    def authenticator(_srv: Any, _session: Any, _env: Any, mechanism: str, data: Any) -> AuthResult:
        ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
            USER.encode(),
            PASSWORD.encode(),
        )
        login = data.login.decode() if isinstance(data, LoginPassword) else ""
        server.auth_tries.append((mechanism, login, ok))
        return AuthResult(success=ok, handled=False, auth_data=login if ok else None)

    class Handler:
        async def handle_DATA(self, _server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 - aiosmtpd's naming
            server.received.append(
                Session_(session.ssl is not None, session.auth_data, list(envelope.rcpt_tos))
            )
            return "250 OK"

    tls: ssl.SSLContext | None = None
    if certificate is not None:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(certificate.cert, certificate.key)
    excluded = [m for m in ("PLAIN", "LOGIN") if m not in mechanisms]
    controller = Controller(
        Handler(),
        hostname="127.0.0.1",
        port=server.port,
        tls_context=tls,
        require_starttls=tls is not None,
        auth_required=True,
        auth_require_tls=tls is not None,
        authenticator=authenticator,
        auth_exclude_mechanism=excluded,
    )
    controller.start()
    return server, controller


@pytest.fixture
def servers() -> Iterator[list[Controller]]:
    started: list[Controller] = []
    yield started
    for controller in started:
        controller.stop()


def settings_for(
    server: TlsSmtpServer, certificate: Certificate | None, **more: Any
) -> EmailSettings:
    values: dict[str, Any] = {
        "smtp_host": "127.0.0.1",
        "smtp_port": server.port,
        "smtp_from": "leaflab@lab.example.org",
        "smtp_starttls": True,
        "smtp_ca_file": certificate.cert if certificate else None,
        "smtp_user": USER,
        "smtp_password": SecretStr(PASSWORD),
        "smtp_timeout_s": 5,
        "smtp_max_attempts": 2,
        "smtp_backoff_base_s": 0.01,
        "smtp_backoff_max_s": 0.01,
        **more,
    }
    return EmailSettings(**values)


def outbox_row(factory: sessionmaker[Session]) -> uuid.UUID:
    """One pending e-mail about a job of a new user (as the job's end writes it)."""
    user = make_user(factory)
    (job_id,) = queued_jobs(factory, user.id, 1)
    with factory() as db, db.begin():
        row = EmailDelivery(
            user_id=user.id,
            job_id=job_id,
            event="job.succeeded",
            to_address=user.email,
            body={"kind": "turn", "status": "succeeded", "title": "ferns", "cost_usd": 0.01},
        )
        db.add(row)
        db.flush()
        return row.id


def row_of(factory: sessionmaker[Session], delivery_id: uuid.UUID) -> EmailDelivery:
    with factory() as db:
        found = db.get(EmailDelivery, delivery_id)
        assert found is not None
        return found


def due_again(factory: sessionmaker[Session], delivery_id: uuid.UUID) -> None:
    """Skip the backoff wait (tiny here anyway, but the clock is Postgres')."""
    with factory() as db, db.begin():
        db.execute(
            update(EmailDelivery)
            .where(EmailDelivery.id == delivery_id)
            .values(next_attempt_at=dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1))
        )


class TestStartTlsAndAuth:
    @pytest.mark.parametrize("mechanism", ["PLAIN", "LOGIN"])
    def test_the_email_goes_out_over_tls_logged_in_with_the_settings_credentials(
        self,
        mechanism: str,
        certificate: Certificate,
        servers: list[Controller],
        session_factory: sessionmaker[Session],
    ) -> None:
        server, controller = start_server(certificate, mechanisms=(mechanism,))
        servers.append(controller)
        delivery = outbox_row(session_factory)
        send_due(session_factory, settings_for(server, certificate))
        row = row_of(session_factory, delivery)
        assert row.last_error is None, row.last_error
        assert row.status == "sent" and row.attempts == 1
        assert server.auth_tries == [(mechanism, USER, True)]
        # The pass sends every due e-mail: other modules' rows may ride along (the
        # session's database); this row's is the one asserted.
        (seen,) = [r for r in server.received if r.rcpt_tos == [row.to_address]]
        assert seen.tls and seen.login == USER and seen.rcpt_tos == [row.to_address]


class TestRefusedIsVisibleNeverLost:
    def test_a_wrong_password_is_retried_then_failed_on_the_outbox_row(
        self,
        certificate: Certificate,
        servers: list[Controller],
        session_factory: sessionmaker[Session],
    ) -> None:
        server, controller = start_server(certificate)
        servers.append(controller)
        delivery = outbox_row(session_factory)
        wrong = settings_for(server, certificate, smtp_password=SecretStr("not it"))
        send_due(session_factory, wrong)
        first = row_of(session_factory, delivery)
        assert first.status == "pending" and first.attempts == 1
        assert first.last_error is not None and "SMTPAuthenticationError" in first.last_error
        assert "535" in first.last_error and "not it" not in first.last_error
        due_again(session_factory, delivery)
        send_due(session_factory, wrong)
        last = row_of(session_factory, delivery)
        assert last.status == "failed" and last.attempts == 2
        assert last.last_error is not None and "535" in last.last_error
        assert server.received == []
        # Each attempt logged in as the settings' user (smtplib tries each offered
        # mechanism once) and was refused.
        assert server.auth_tries and not any(ok for _, _, ok in server.auth_tries)
        assert {login for _, login, _ in server.auth_tries} == {USER}

    def test_a_corrected_password_delivers_the_pending_email(
        self,
        certificate: Certificate,
        servers: list[Controller],
        session_factory: sessionmaker[Session],
    ) -> None:
        server, controller = start_server(certificate)
        servers.append(controller)
        delivery = outbox_row(session_factory)
        send_due(session_factory, settings_for(server, certificate, smtp_password=SecretStr("x")))
        assert row_of(session_factory, delivery).status == "pending"
        due_again(session_factory, delivery)
        send_due(session_factory, settings_for(server, certificate))
        row = row_of(session_factory, delivery)
        assert row.status == "sent" and row.attempts == 2
        assert [r.rcpt_tos for r in server.received].count([row.to_address]) == 1

    def test_an_untrusted_certificate_sends_nothing_not_even_the_password(
        self,
        certificate: Certificate,
        servers: list[Controller],
        session_factory: sessionmaker[Session],
    ) -> None:
        server, controller = start_server(certificate)
        servers.append(controller)
        delivery = outbox_row(session_factory)
        send_due(session_factory, settings_for(server, None))  # the system's CAs only
        row = row_of(session_factory, delivery)
        assert row.status == "pending" and row.last_error is not None
        assert "CERTIFICATE_VERIFY_FAILED" in row.last_error
        assert server.auth_tries == [] and server.received == []

    def test_a_server_without_starttls_gets_no_plain_text_login(
        self, servers: list[Controller], session_factory: sessionmaker[Session]
    ) -> None:
        server, controller = start_server(None)
        servers.append(controller)
        delivery = outbox_row(session_factory)
        send_due(session_factory, settings_for(server, None))
        row = row_of(session_factory, delivery)
        assert row.status == "pending" and row.last_error is not None
        assert "STARTTLS" in row.last_error
        assert server.auth_tries == [] and server.received == []
