"""A scripted HTTP server on 127.0.0.1 speaking just enough of the Anthropic Messages
and OpenAI Chat Completions wire protocols for the providers' wire-level tests.

Each POST takes the next scripted :class:`Reply` (status, headers, body, a delay
before answering, or a body cut short of its Content-Length) and records the
request (path, headers, JSON body). An unscripted request gets a 418 (not retried) so a test
that calls more often than it expects fails loudly.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from attrs import define, field

MAX_DELAY_SEC = 5.0
"""A scripted hang never lasts longer (the tests stay bounded)."""


@define
class Reply:
    status: int = 200
    body: Any = None
    """A dict (sent as JSON) or raw bytes (sent as they are)."""
    headers: dict[str, str] = field(factory=dict)
    delay: float = 0.0
    cut_at: int | None = None
    """Send only this many body bytes (with the full Content-Length), then close."""


@define
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class WireServer:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                with server._lock:
                    server.seen.append(
                        Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    reply = server.replies.popleft() if server.replies else None
                if reply is None:
                    reply = Reply(418, {"error": {"message": "unscripted request"}})
                if reply.delay:
                    time.sleep(min(reply.delay, MAX_DELAY_SEC))
                payload = (
                    reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                )
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    if reply.cut_at is not None:
                        self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(payload if reply.cut_at is None else payload[: reply.cut_at])
                    self.wfile.flush()
                    if reply.cut_at is not None:
                        self.close_connection = True
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def start(self) -> WireServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# --- the two wire protocols -------------------------------------------------------------


def anthropic_message(text: str, *, stop: str = "end_turn", model: str = "m") -> dict[str, Any]:
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 120, "output_tokens": 80},
    }


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def openai_completion(text: str, *, stop: str = "stop", model: str = "m") -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": stop,
            }
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 80, "total_tokens": 200},
    }


def openai_error(kind: str, message: str, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": None}}


ToolUse = tuple[str, str, dict[str, Any]]
"""(call id, tool name, arguments) of one scripted tool call."""


def anthropic_tool_message(calls: list[ToolUse], text: str = "", *, model: str = "m") -> dict:
    """An Anthropic reply making ``calls`` (``stop_reason`` ``tool_use``)."""
    body = anthropic_message(text, stop="tool_use", model=model)
    body["content"] = ([{"type": "text", "text": text}] if text else []) + [
        {"type": "tool_use", "id": cid, "name": name, "input": args} for cid, name, args in calls
    ]
    return body


def openai_tool_completion(calls: list[ToolUse], text: str = "", *, model: str = "m") -> dict:
    """An OpenAI chat completion making ``calls`` (``finish_reason`` ``tool_calls``)."""
    body = openai_completion(text, stop="tool_calls", model=model)
    message = body["choices"][0]["message"]
    message["content"] = text or None
    message["tool_calls"] = [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for cid, name, args in calls
    ]
    return body
