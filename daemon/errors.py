"""The one exception hierarchy of BrainCue.

Every error a user can cause or meet derives from :class:`BrainCueError` and carries a
one-line message that names the problem and, where there is one, the fix.

    BrainCueError
    ├── ConfigError            settings file unreadable or invalid
    │   └── NetworkRefused     a language-model server off this machine, not allowed
    ├── ModelError             anything about model files
    │   ├── UnknownModel       a name not in the registry
    │   ├── ModelNotInstalled  the file is missing (run `braincue models install`)
    │   ├── ChecksumMismatch   the sha256 of a download/conversion differs from the pin
    │   └── DownloadError      network or source failure while fetching
    ├── AudioError             unreadable audio file, no audio server
    ├── StoreError             database problems
    │   └── NotFound           a session, Space, chunk ... does not exist
    ├── InvalidInput           user input that fails validation (names the field)
    ├── EngineError            a model failed while running (transcribe, embed, generate)
    │   └── EngineUnavailable  the language-model engine cannot answer now (a keep waits)
    │       ├── EngineUnreachable   its server is down, timed out or closed mid-answer
    │       └── RemoteModelMissing  its server serves no model of the configured name
    ├── DaemonAlreadyRunning   a second daemon for a profile that has one
    └── IpcError               a client could not talk to the daemon, or the protocol failed
        ├── DaemonNotRunning   nothing serves the profile's sockets
        └── DaemonTimeout      the daemon did not answer in time
"""

from __future__ import annotations


class BrainCueError(Exception):
    """Base of every BrainCue error; ``str(err)`` is a one-line message for the user."""

    code = "error"

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        self.message = message
        self.fix = fix
        super().__init__(f"{message} — {fix}" if fix else message)


class ConfigError(BrainCueError):
    code = "config"


class NetworkRefused(ConfigError):
    """``llm_url`` names a host off this machine and ``llm_allow_network`` is off."""

    code = "network_refused"


class ModelError(BrainCueError):
    code = "model"


class UnknownModel(ModelError):
    code = "unknown_model"


class ModelNotInstalled(ModelError):
    code = "model_not_installed"


class ChecksumMismatch(ModelError):
    code = "checksum"


class DownloadError(ModelError):
    code = "download"


class AudioError(BrainCueError):
    code = "audio"


class StoreError(BrainCueError):
    code = "store"


class NotFound(StoreError):
    code = "not_found"


class InvalidInput(BrainCueError):
    code = "invalid"


class EngineError(BrainCueError):
    code = "engine"


class EngineUnavailable(EngineError):
    """The language-model engine cannot answer now; the same request may succeed once it
    does (a keep waits for it instead of failing)."""

    code = "engine_unavailable"


class EngineUnreachable(EngineUnavailable):
    code = "engine_unreachable"


class RemoteModelMissing(EngineUnavailable):
    code = "remote_model_missing"


class DaemonAlreadyRunning(BrainCueError):
    code = "already_running"


class IpcError(BrainCueError):
    """Also raised for protocol-level error replies; ``code`` then says which one."""

    code = "ipc"

    def __init__(self, message: str, *, fix: str | None = None, code: str | None = None) -> None:
        super().__init__(message, fix=fix)
        if code is not None:
            self.code = code


class DaemonNotRunning(IpcError):
    code = "not_running"


class DaemonTimeout(IpcError):
    code = "timeout"


def user_error(exc: BaseException) -> BrainCueError | None:
    """``exc`` if it is a BrainCueError, or the only exception inside nested exception groups
    (trio nurseries wrap what their tasks raise) if that one is; else None."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc if isinstance(exc, BrainCueError) else None
