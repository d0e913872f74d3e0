"""A TCP listener on one host address that records who connected (the sandbox
isolation tests' canary)."""

from __future__ import annotations

import socket
import threading
import time


class Listener:
    """A TCP listener on one host address that records who connected."""

    def __init__(self, host: str) -> None:
        self.sock = socket.socket()
        self.sock.bind((host, 0))
        self.sock.listen(8)
        self.host = host
        self.port = int(self.sock.getsockname()[1])
        self.accepted: list[str] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return  # closed
            self.accepted.append(str(peer[0]))
            conn.close()

    def wait_accepted(self, timeout_s: float = 10) -> list[str]:
        """Who connected, once someone did (the accept thread may lag the client)."""
        deadline = time.monotonic() + timeout_s
        while not self.accepted and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.accepted

    def close(self) -> None:
        self.sock.close()
