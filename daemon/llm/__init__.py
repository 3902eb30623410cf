"""Language models: generation (JSON-schema constrained, streamed) and embeddings."""

from daemon.llm.embed import Embedder, LlamaEmbedder, ScriptedEmbedder
from daemon.llm.generate import (
    ChatMessage,
    Generator,
    LlamaGenerator,
    ScriptedGenerator,
    output_schema,
)

__all__ = [
    "ChatMessage",
    "Embedder",
    "Generator",
    "LlamaEmbedder",
    "LlamaGenerator",
    "ScriptedEmbedder",
    "ScriptedGenerator",
    "output_schema",
]
