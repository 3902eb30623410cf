"""BrainCue daemon: a private, always-on conversation memory."""

__version__ = "0.1.0"
