"""A real OpenAI-compatible language model server on loopback for the engine tests:
llama-cpp-python's own server (its ``server`` extra) serving a GGUF file under a name of its
own, on a free port; started, killed and started again by the test."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

READY_LINE = "Uvicorn running on"
START_TIMEOUT_S = 180.0  # imports and the model's load on two busy cores; a bound, not a wait


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class LlmServer:
    """``python -m llama_cpp.server`` serving ``model`` as ``alias`` on 127.0.0.1."""

    def __init__(self, model: Path, log_dir: Path, *, alias: str = "braincue-test",
                 n_ctx: int = 4096) -> None:
        self.model = model
        self.alias = alias
        self.n_ctx = n_ctx
        self.port = free_port()
        self.log_path = log_dir / f"llm-server-{self.port}.log"
        self._process: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        """Start it and return once it listens (its own output says so); RuntimeError with its
        log when it exits or does not within ``START_TIMEOUT_S``."""
        process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model),
             "--model_alias", self.alias, "--host", "127.0.0.1", "--port", str(self.port),
             "--n_ctx", str(self.n_ctx), "--n_threads", "2", "--verbose", "false"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
            env={**os.environ, "OMP_WAIT_POLICY": "passive"})
        self._process = process
        ready = threading.Event()
        log = self.log_path.open("a")

        def read() -> None:  # all of its output, to the log; READY_LINE sets ``ready``
            assert process.stdout is not None
            with log:
                for line in process.stdout:
                    log.write(line)
                    log.flush()
                    if READY_LINE in line:
                        ready.set()
            ready.set()  # it exited: the wait below ends at once

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(START_TIMEOUT_S) or process.poll() is not None:
            self.kill()
            raise RuntimeError(f"the language model server did not start:\n{self.log()}")

    def kill(self) -> None:
        """Kill it at once (SIGKILL: a crash, not a shutdown) and wait until it is gone."""
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGKILL)
            self._process.wait()
        self._process = None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""
