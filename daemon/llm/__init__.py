"""Language models: generation (JSON-schema constrained, streamed) and embeddings.

llama.cpp runs its threads under OpenMP (the system libgomp), whose threads by default spin at
every barrier — hundreds per token — waiting for each other. On a small machine where anything
else runs (another program, the daemon's own transcription) a spinning thread burns the time
slice its partner needs: on 2 busy cores the 0.5B model generated 0.4-0.5 tokens/s with
2 threads instead of 15-19 with waiting threads that sleep. libgomp reads the policy once, when
it is loaded, i.e. when ``llama_cpp`` is first imported (lazily, after this package); a value
the user set is kept.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "passive")

from daemon.llm.embed import Embedder, LlamaEmbedder, ScriptedEmbedder
from daemon.llm.generate import (
    ChatMessage,
    Generator,
    LlamaGenerator,
    ModelLoad,
    ScriptedGenerator,
    output_schema,
)

__all__ = [
    "ChatMessage",
    "Embedder",
    "Generator",
    "LlamaEmbedder",
    "LlamaGenerator",
    "ModelLoad",
    "ScriptedEmbedder",
    "ScriptedGenerator",
    "output_schema",
]
