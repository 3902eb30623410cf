"""The daemon's own requests: ping, status and settings; the status and subscription events."""

from __future__ import annotations

import msgspec

from daemon.ipc.protocol.base import TOPIC_STATUS, TOPIC_SYNC, Event, Reply, Request, sync_topic

__all__ = [
    "LanguageModelInfo", "LiveStatus", "ModelProcessInfo", "Ping", "Pong", "SettingValue",
    "SettingsGet", "SettingsReply", "SettingsSet", "SourceStatus", "Status", "StatusEvent",
    "StatusReply", "Subscribed"
]


class Pong(Reply):
    pass


class SourceStatus(msgspec.Struct):
    """One capture source: ``state`` is stopped | starting | capturing | no audio."""

    state: str
    device: str = ""
    detail: str = ""  # why there is no audio


class LiveStatus(msgspec.Struct):
    """Live capture and transcription."""

    sources: dict[str, SourceStatus]  # by source: mic, loopback
    utterances_queued: int  # waiting for transcription, the one in progress included
    asr_lag_s: float  # how far transcription is behind the end of speech
    dropped_blocks: int  # audio dropped because transcription fell behind
    asr_real_time_factor: float = 0.0  # transcription time / audio transcribed, so far
    asr_model: str = ""  # empty: no speech model installed
    session_id: int | None = None  # the live session
    # where the time from the end of an utterance to its turn stored goes, median seconds per
    # stage over recent utterances: cut (the VAD's hangover), queued, asr, voices, stored, total
    stages_p50_s: dict[str, float] = {}
    # the longest, over recent utterances, from the end of one's transcription to its turn
    # stored (voices, store): the daemon's own share after the speech model
    after_asr_max_s: float = 0.0


class ModelProcessInfo(msgspec.Struct, frozen=True):
    """A model's own process: ``pid`` None while it is not running (it starts on first use);
    ``deaths`` since the daemon started, ``last_death`` how (\"killed by SIGSEGV\")."""

    role: str  # "llm" or "asr" (speech)
    priority: str  # "foreground" (asks), "background" (keeps) or "live" (speech)
    model_id: str
    pid: int | None
    deaths: int = 0
    last_death: str | None = None
    rss_bytes: int | None = None  # its memory now (resident, weights mapped from file included)
    loaded_at: float | None = None  # since when its model is loaded (None: not loaded now)
    # when it was last ended for being unused (``idle_unload_min``; None: never): it starts
    # again on the next need
    unloaded_at: float | None = None


class LanguageModelInfo(msgspec.Struct, frozen=True):
    """The language model: its ``engine`` ("embedded" or "openai"), ``model``, ``state``
    ("loaded", "loads on first use", "not installed"; a server's "ready", "unreachable",
    "failing" or "refused") and why (``detail``: the error with its fix); a server's ``url``
    and, when it is off this machine, the host conversation text goes to (``sends_to``); the
    embedded model's llama.cpp ``backend`` ("CPU", "CUDA", "Metal", ...) and its layers on
    the GPU (``gpu_layers`` of ``layers``)."""

    engine: str
    model: str
    state: str
    detail: str = ""
    url: str = ""
    sends_to: str = ""
    backend: str = ""
    gpu_layers: int = 0
    layers: int = 0


class StatusReply(Reply):
    profile: str
    version: str
    protocol: int
    pid: int
    uptime_s: float
    models_loaded: list[str]
    capture: str
    counts: dict[str, int]  # filled by the parts of the daemon that own the counted things
    ipc: dict[str, int]  # request counters of the server
    live: LiveStatus | None = None  # None: capture is not part of this daemon
    model_processes: list[ModelProcessInfo] = []
    rss_bytes: int | None = None  # the daemon's own memory now (its model processes' apart)
    language_model: LanguageModelInfo | None = None


SettingValue = str | int | float | bool


class SettingsReply(Reply):
    settings: dict[str, SettingValue]


class Ping(Request[Pong]):
    pass


class Status(Request[StatusReply]):
    pass


class SettingsGet(Request[SettingsReply]):
    key: str = ""  # empty: every setting


class SettingsSet(Request[SettingsReply]):
    key: str
    value: str  # parsed like a TOML value; a bare word is a string


class StatusEvent(Event):
    """What capture is doing; ``alert``: the live session is missing audio (a gap, a mic
    silent while the other side talks), for the user to see at once."""

    topic_prefix = TOPIC_STATUS
    capture: str
    message: str = ""
    alert: bool = False


class Subscribed(Event):
    """The daemon saw the subscription to ``sync_topic(nonce)``, and every one before it."""

    topic_prefix = TOPIC_SYNC
    nonce: str

    def topic(self) -> str:
        return sync_topic(self.nonce)
