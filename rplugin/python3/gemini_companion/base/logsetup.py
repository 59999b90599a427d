"""Logging to a file only: Neovim keeps the host's stderr in memory, so nothing goes there."""

from __future__ import annotations

import logging
import logging.handlers
import os

_handler: logging.Handler | None = None


class _Redact(logging.Filter):
    """Defence in depth: the bearer token must never reach the log file."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def _scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "<redacted>")
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            text = record.getMessage()
            if any(s in text for s in self.secrets):
                record.msg, record.args = self._scrub(text), None
            if record.exc_info and not record.exc_text:
                # Tracebacks may quote raw request bytes (aiohttp does for a malformed request).
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = self._scrub(record.exc_text)
                record.exc_info = None
        return True


REDACT = _Redact()


class _ClientErrors(logging.Filter):
    """aiohttp logs a client's malformed request (broken framing, a body it cannot decode) as an
    ERROR with a traceback, even when the request had no token: the client's mistake, not ours,
    and any local process could fill the log with them. Dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        from aiohttp.http_exceptions import HttpProcessingError
        from aiohttp.web_protocol import RequestPayloadError

        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, HttpProcessingError | RequestPayloadError)


LOG_FILE_NAME = "gemini_companion.log"  # status.lua's log_file() names it too, before a host runs


def setup_file_logging(log_dir: str, nvim_pid: int) -> str:
    """Log to `log_dir`/LOG_FILE_NAME. Every Neovim writes to the same file, so each line
    says which one (`[nvim PID]`, the PID `:echo getpid()` shows)."""
    global _handler
    nvim_pid = nvim_pid or os.getppid()  # (the host is Neovim's child when Lua did not say)
    os.makedirs(log_dir, exist_ok=True)
    path = os.path.join(log_dir, LOG_FILE_NAME)
    if _handler is None:
        _handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=5 * 1024 * 1024, backupCount=1, encoding="utf-8"
        )
        _handler.setFormatter(
            logging.Formatter(f"%(asctime)s [nvim {int(nvim_pid)}] %(levelname)s %(name)s: %(message)s")
        )
        _handler.addFilter(REDACT)
        logging.getLogger("aiohttp.server").addFilter(_ClientErrors())
        root = logging.getLogger()
        root.addHandler(_handler)
        root.setLevel(logging.WARNING)
        logging.getLogger("gemini_companion").setLevel(logging.INFO)
    return path
