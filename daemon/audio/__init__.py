"""Audio: reading files now; capture (microphone and system loopback) lives here too."""

from daemon.audio.files import load_audio, load_audio_channels

__all__ = ["load_audio", "load_audio_channels"]
