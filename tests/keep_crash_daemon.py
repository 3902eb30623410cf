"""Run by tests/test_keep_crash.py: the real daemon with scripted models, in a subprocess.

    python tests/keep_crash_daemon.py hang|answer

``hang``: the language model writes ``$BRAINCUE_HOME/keep-started`` at its first call and then
never answers, so a keep is in the middle of its work for as long as the test wants (it kills
the daemon there). ``answer``: the model answers as test_persistence_e2e's Script does.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio
from test_persistence_e2e import Script

from daemon.app import run_until_signalled
from daemon.config import Config
from daemon.engines import Engines
from daemon.llm.embed import ScriptedEmbedder
from daemon.llm.generate import ChatMessage, ScriptedGenerator

STARTED = "keep-started"


class HangingGenerator(ScriptedGenerator):
    def __init__(self, marker: Path) -> None:
        super().__init__([])
        self.marker = marker

    async def generate(self, messages: Sequence[ChatMessage], output_type: type[Any], *,
                       max_tokens: int = 1024, temperature: float = 0.2) -> Any:
        self.marker.write_text("started")
        await trio.sleep_forever()


def main() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = Config.load("default")
    marker = Path(os.environ["BRAINCUE_HOME"]) / STARTED
    generator = (HangingGenerator(marker) if sys.argv[1] == "hang"
                 else ScriptedGenerator(Script()))
    engines = Engines(lambda: config.settings, config.paths.models_dir,
                      embedder=ScriptedEmbedder(), generator=generator)
    trio.run(run_until_signalled, config, engines)


if __name__ == "__main__":
    main()
