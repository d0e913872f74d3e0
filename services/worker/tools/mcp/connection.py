"""One MCP server's session, kept open on the private loop and reopened after it dies.

A stdio server runs inside a sandbox container with no network (isolation.py);
its container is removed when the session ends (``--rm``, and ``docker rm -f``
should the client have been killed first). One registered with
``"isolation": "none"`` runs as a child of the worker, never with the worker's
environment: it gets ``PATH``, a locale, and ``HOME``/``TMPDIR`` pointing at a
temporary folder of its own (also its working directory), so database URLs,
API keys and tokens in the worker's environment are not handed to it. Either
way its stderr goes to a file in that folder; the last lines are quoted when it
fails to start.

An HTTP server is reached through the address guard (``http_guard.py``).

A session is opened by a holder task that keeps the SDK's context managers
entered (they must be left by the task that entered them) until ``close`` or
until the transport fails; then the next call opens a new one. Every failure
comes out as :class:`McpUnavailable` (no session) or :class:`McpCallFailed`
(the server answered with an error or something the SDK could not read).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
import time
from collections import deque
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TextIO

import mcp_types as types
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.session import IncomingMessage
from mcp.client.streamable_http import streamable_http_client

from services.common.net_guard import AddressRefused, NetGuard
from services.worker.tools.mcp.http_guard import check_server_url, guarded_client
from services.worker.tools.mcp.isolation import (
    container_name,
    docker_cli_environment,
    isolated_parameters,
)
from services.worker.tools.mcp.loop import LoopTimeout, McpLoop
from services.worker.tools.mcp.settings import McpServerConfig, McpSettings

log = logging.getLogger(__name__)
STDERR_TAIL_CHARS = 600


class McpUnavailable(Exception):
    """No session with the server could be had (start, handshake, guard, transport)."""


class McpCallFailed(Exception):
    """The server answered a request with an error, or with a reply that is not valid MCP."""


def child_environment(home: Path) -> dict[str, str]:
    """What a stdio server's process sees: nothing of the worker's configuration."""
    env = {"HOME": str(home), "TMPDIR": str(home), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    env["PATH"] = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    # The SDK merges these over a default set (HOME, LOGNAME, PATH, SHELL, TERM,
    # USER): names, not secrets; HOME and PATH are replaced by ours.
    return env


class ServerConnection:
    def __init__(
        self,
        config: McpServerConfig,
        *,
        loop: McpLoop,
        guard: NetGuard,
        start_timeout_s: float,
        settings: McpSettings | None = None,
    ) -> None:
        self.config = config
        self._settings = settings or McpSettings()
        self._container: str | None = None  # the isolated server's container, while it runs
        self._loop = loop
        self._guard = guard
        self._start_timeout_s = start_timeout_s
        self._session: ClientSession | None = None
        self._holder: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._opening: asyncio.Lock | None = None
        self._home: Path | None = None
        # Messages the server sent that were not valid MCP (time, what), newest last.
        self._unreadable: deque[tuple[float, str]] = deque(maxlen=5)

    # -- from the agent's threads -------------------------------------------------

    def list_tools(self) -> list[types.Tool]:
        """Every tool the server lists (all pages), opening the session if needed."""
        deadline = self._start_timeout_s * 2
        try:
            return self._loop.run(self._list_tools(), timeout_s=deadline)
        except LoopTimeout:
            raise McpUnavailable(f"no tool list within {deadline:g} s") from None

    def call(
        self, tool: str, arguments: dict[str, Any], *, timeout_s: float
    ) -> types.CallToolResult:
        """One tools/call; LoopTimeout when it overran ``timeout_s`` (then cancelled).

        A server that has to be started first (the first call, or the one after a
        crash) is started under the start timeout, not the call's: a slow start on a
        loaded host is not a hanging tool."""
        deadline = self._start_timeout_s * 2
        try:
            self._loop.run(self._session_now(), timeout_s=deadline)
        except LoopTimeout:
            raise McpUnavailable(f"did not start within {deadline:g} s") from None
        return self._loop.run(self._call(tool, arguments), timeout_s=timeout_s)

    def unreadable_since(self, since: float) -> list[str]:
        """What the server sent since ``since`` (time.monotonic) that was not valid MCP."""
        return [what for at, what in list(self._unreadable) if at >= since]

    def close(self) -> None:
        try:
            self._loop.run(self._close(), timeout_s=10)
        except LoopTimeout:
            log.warning("mcp server %s did not close within 10 s", self.config.name)

    # -- on the loop ----------------------------------------------------------------

    async def _list_tools(self) -> list[types.Tool]:
        session = await self._session_now()
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(20):  # pages; a server that pages forever is cut off
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            try:
                page = await session.list_tools(params=params)
            except MCPError as exc:
                raise McpCallFailed(f"tools/list failed: {await self._failed(exc)}") from None
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def _call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        session = await self._session_now()
        try:
            result = await session.call_tool(tool, arguments)
        except MCPError as exc:
            raise McpCallFailed(await self._failed(exc)) from None
        except (RuntimeError, ValueError) as exc:  # a reply the SDK refused to read
            detail = " ".join(str(exc).split())[:300]
            raise McpCallFailed(f"its reply is not a valid tool result: {detail}") from None
        if not isinstance(result, types.CallToolResult):
            raise McpCallFailed(f"the server answered a {type(result).__name__}, not a tool result")
        return result

    async def _failed(self, exc: MCPError) -> str:
        """The reason to report; a closed connection also ends the session, so the next
        call starts the server again."""
        if exc.code != types.CONNECTION_CLOSED:
            return f"{exc.message} (error {exc.code})"
        if self._stop is not None:
            self._stop.set()
        self._session = None
        return f"the server closed the connection (its process exited?){self._stderr_tail()}"

    async def _note_message(self, message: IncomingMessage) -> None:
        if isinstance(message, Exception):
            self._unreadable.append((time.monotonic(), _describe(message)[:300]))

    async def _session_now(self) -> ClientSession:
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._session is not None and self._holder is not None and not self._holder.done():
                return self._session
            ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
            self._stop = asyncio.Event()
            self._holder = asyncio.create_task(self._hold(ready, self._stop))
            try:
                self._session = await asyncio.wait_for(ready, self._start_timeout_s)
            except TimeoutError:
                self._holder.cancel()
                raise McpUnavailable(
                    f"did not start within {self._start_timeout_s:g} s{self._stderr_tail()}"
                ) from None
            except McpUnavailable:
                raise
            except Exception as exc:
                raise McpUnavailable(f"{_describe(exc)}{self._stderr_tail()}") from None
            return self._session

    async def _hold(self, ready: asyncio.Future[ClientSession], stop: asyncio.Event) -> None:
        """Keep one session open until ``stop`` (or until its transport fails)."""
        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(stack))
                session = await stack.enter_async_context(
                    ClientSession(read, write, message_handler=self._note_message)
                )
                await session.initialize()
                ready.set_result(session)
                await stop.wait()
        except BaseException as exc:  # noqa: B036 - handed to the opener, or logged
            if not ready.done():
                ready.set_exception(
                    exc if isinstance(exc, Exception) else McpUnavailable("stopped")
                )
            elif not isinstance(exc, asyncio.CancelledError):
                log.warning("mcp server %s: session ended: %s", self.config.name, _describe(exc))
            if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
                raise
        finally:
            self._session = None
            await self._remove_container()

    async def _remove_container(self) -> None:
        """``--rm`` removes it when its stdin closes; this covers a client killed first."""
        name, self._container = self._container, None
        if name is None:
            return
        try:
            proc = await asyncio.create_subprocess_exec(
                self._settings.mcp_docker, "rm", "-f", name,
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
                env=docker_cli_environment(self._home_dir()),
            )  # fmt: skip
            await asyncio.wait_for(proc.wait(), 20)
        except (OSError, TimeoutError) as exc:
            log.warning(
                "mcp server %s: could not remove container %s: %s", self.config.name, name, exc
            )

    def _transport(self, stack: AsyncExitStack) -> Any:
        if self.config.command is not None:
            home = self._home_dir()
            errlog: TextIO = stack.enter_context(open(home / "stderr.log", "a"))  # noqa: SIM115
            if self.config.isolated:
                self._container = container_name(self.config.name)
                params = isolated_parameters(
                    self.config,
                    name=self._container,
                    home=home,
                    docker_cli=self._settings.mcp_docker,
                    python_env=self._settings.mcp_python_env,
                )
            else:
                program, *args = self.config.command
                params = StdioServerParameters(
                    command=program, args=args, env=child_environment(home), cwd=str(home)
                )
            return stdio_client(params, errlog=errlog)
        assert self.config.url is not None
        try:
            check_server_url(self.config.url, self._guard)
        except AddressRefused as exc:
            raise McpUnavailable(f"refused by the address guard: {exc}") from None
        client = guarded_client(self._guard, timeout_s=self._start_timeout_s)
        return streamable_http_client(self.config.url, http_client=client)

    def _home_dir(self) -> Path:
        if self._home is None or not self._home.is_dir():
            self._home = Path(tempfile.mkdtemp(prefix=f"leaflab-mcp-{self.config.name}-"))
        return self._home

    def _stderr_tail(self) -> str:
        if self._home is None:
            return ""
        try:
            text = (self._home / "stderr.log").read_text(errors="replace")
        except OSError:
            return ""
        tail = text.strip()[-STDERR_TAIL_CHARS:]
        return f"; its stderr ends: {tail}" if tail else ""

    async def _close(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._holder is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._holder), 8)
            except (TimeoutError, Exception):  # noqa: S110 - closing anyway
                self._holder.cancel()
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None


def _describe(exc: BaseException) -> str:
    """A one-line reason; exception groups (anyio task groups) by their first leaf."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, FileNotFoundError | PermissionError):
        return f"cannot run its command: {exc.strerror}: {exc.filename or ''}".rstrip(": ")
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
