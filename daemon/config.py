"""Settings and paths.

Settings are a msgspec Struct with a default for every field, read from ``config.toml`` in the
user config directory. ``BRAINCUE_HOME`` relocates every directory (data, config, runtime,
cache, models) under one root, which is what tests use. Each profile has its own data directory.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import stat
import tomllib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import platformdirs

from daemon.errors import ConfigError

APP_NAME = "braincue"
DEFAULT_PROFILE = "default"
# Everything BrainCue writes is its user's alone: 0700 directories, 0600 files.
PRIVATE_UMASK = 0o077

log = logging.getLogger(__name__)


class Settings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Everything configurable, each with a sensible default.

    Model names refer to the registry (`braincue models list`); an empty name means "the best
    installed model of that role".
    """

    asr_model: str = ""
    llm_model: str = ""
    embed_model: str = ""
    # 0: before each utterance, the cores other work leaves free (an oversubscribed whisper ran
    # 10-20x slower, notes/platform.md); a number fixes it
    asr_threads: int = 0
    llm_threads: int = msgspec.field(default_factory=lambda: max(1, os.cpu_count() or 2))
    # tokens: a 35-minute meeting (~10k tokens) is archived in one piece, not seven (the Qwen
    # models take 32k; the cache costs ~12 KB a token on the 0.5B)
    llm_context: int = 16384
    # the language model's and the speech model's processes end after this many minutes
    # unused (their memory goes with them) and start again on the next need, which then waits
    # for the model to load
    idle_unload_min: Annotated[float, msgspec.Meta(ge=0)] = 10.0
    embed_batch: int = 32
    # whisper's encoder sized to each English utterance (its length plus 2.6 s, at least 10 s:
    # cost in proportion to its length for anything longer; other languages lost accuracy
    # fitted and keep the full window); false: the full 30 s window for every utterance, as
    # whisper was trained (slower)
    asr_fit_context: bool = True
    # what a multilingual speech model listens for: a language code ("en", "de", ...) or "auto"
    # (detected per utterance); English-only models (".en") always hear English
    asr_language: Annotated[str, msgspec.Meta(pattern=r"^(auto|[a-z]{2,3})$")] = "en"
    # while a session is live, the language model stays loaded and reads the conversation as
    # it grows, so a question asked during the call costs only its own words (off: ~0.5 GB
    # less while live, slower answers)
    llm_read_ahead: bool = True
    # the language model runs in a process of its own, restarted when it dies: a native crash
    # or an out-of-memory kill of the model costs the answer in progress, not the daemon (off:
    # inside the daemon's process)
    llm_process: bool = True
    # the speech model too: a crash of whisper.cpp costs at most the utterance it was
    # transcribing (asked again of the restarted process), never the capture (off: inside the
    # daemon's process)
    asr_process: bool = True
    # and when "them" just asked a question, it reads the answer's whole prompt (the sources
    # recalled for the question too), so the hotkey's answer to it starts at once (off: the
    # model reads only the conversation ahead; it works less in the call's pauses)
    llm_read_question_ahead: bool = True
    # capture
    mic_device: str = ""  # empty: follow the system default
    loopback_device: str = ""  # empty: the monitor of the default output
    auto_start: bool = True
    auto_end_silence_min: float = 5.0
    # a live session tells at once when the mic stays silent this long while the other side
    # talks (a muted mic), and its receipt names the stretch
    silent_mic_min: float = 2.0
    # what is remembered (two independent switches)
    session_archive_enabled: bool = True
    memory_enabled: bool = False
    # who among "them" spoke: voices told apart per session ("Them 1", "Them 2"); a voiceprint
    # is kept across sessions only for a voice you name (`braincue voices name`)
    voices_enabled: bool = True
    # the speaker encoder (empty: the best installed, CAM++ before GE2E); a named voice is
    # recognised only by the encoder it was named under ("resemblyzer" keeps GE2E's)
    voice_model: str = ""
    reconcile_distance: float = 0.25
    # sessions never answered or answered "later" are deleted like a discard after this many
    # days (0: never); approved memories stay
    retention_days: int = 0
    # a keep waits between its model calls while a session is live (off: it runs beside the
    # call, at the lowest CPU priority either way)
    keep_pauses_while_live: bool = True
    # a meeting's decisions also looked for by the turn detector (daemon/memory/detect.py) and
    # worded by the model from the turns it found; off until the figures on whole meetings show
    # it adds decisions for the time its model calls cost (docs/benchmarks/keep.md)
    keep_detector: bool = False
    # search
    search_k: int = 5
    per_session_cap: int = 2
    archive_cap: int = 2
    # the top 8 of each search re-read by a cross-encoder, query and passage together (no
    # re-ranking model installed: the fused order as it is). Off by default: +1.1 points of
    # recall on the dev chats, no fold lower, for 60-90 ms more a search at 100k items on two
    # cores (docs/benchmarks/search.md, scale.md)
    search_rerank: bool = False
    rerank_model: str = ""
    # ask: how many characters of recalled text the model reads for an answer (~4 a token; the
    # best sources first, the rest left out) and the most tokens it may write: the first token
    # waits for the reading (2,400: 4.0 s measured on two idle cores; 500: ~1.2 s expected),
    # the whole answer for the writing too; on real meetings 2,400 answered no better
    ask_source_chars: Annotated[int, msgspec.Meta(ge=1)] = 500
    # ... and for a question asking for an account of an exchange (a summary, what was
    # discussed or decided: grounding.question_kind), told in four or five sentences
    # (~60 tokens more to read)
    ask_account_source_chars: Annotated[int, msgspec.Meta(ge=1)] = 740
    ask_answer_tokens: Annotated[int, msgspec.Meta(ge=1)] = 128
    # ... and the evidence shown first is chosen from this many recalled items (the model reads
    # from the first search_k of them): a real meeting's answer is often a few items down
    # (docs/benchmarks/ask.md, "Evidence from deeper recall")
    ask_evidence_k: Annotated[int, msgspec.Meta(ge=1)] = 20
    # the language model's engine: "embedded" (llama.cpp in a process of the daemon's own,
    # the model ``llm_model``) or "openai" (a server speaking the OpenAI chat API — Ollama,
    # llama.cpp's llama-server, LM Studio, vLLM — at ``llm_url``, serving ``llm_remote_model``).
    # Only the text a model is asked to read goes there, secrets masked; embeddings, search,
    # voices and the secret gate stay in the daemon
    llm_engine: Literal["embedded", "openai"] = "embedded"
    llm_url: str = ""  # e.g. http://127.0.0.1:11434/v1 (Ollama) or unix:/path/to/socket
    llm_remote_model: str = ""  # the server's name of its model (empty: the one it serves)
    # a server off this machine (anything but 127.0.0.0/8, ::1, localhost or a Unix socket) is
    # refused unless this is on: conversation text then leaves the machine, and `status` says so
    llm_allow_network: bool = False
    llm_timeout_s: Annotated[float, msgspec.Meta(gt=0)] = 120.0  # per request to the server
    # layers of the embedded model on the GPU: -1 all of them when llama.cpp was built with a
    # GPU backend (CUDA, Metal, Vulkan), else none; 0 none
    llm_gpu_layers: Annotated[int, msgspec.Meta(ge=-1)] = -1
    # desktop: the global hotkeys of `braincue hotkey` (modifiers Ctrl, Alt, Shift, Super + a key)
    hotkey_ask: str = "Ctrl+Alt+Space"  # opens the ask box
    hotkey_answer_them: str = "Ctrl+Alt+Shift+Space"  # answers what "they" just asked
    # at rest: a new database is encrypted (key in the OS key store, else a 0600 key file);
    # an existing plain one is encrypted by `braincue security encrypt`
    encrypt_database: bool = True
    backup_interval_hours: float = 24.0  # an online backup this often, when idle (0: never)
    backups_kept: int = 7

    @property
    def idle_unload_s(self) -> float:
        return self.idle_unload_min * 60


# Settings that were renamed: the old name is still read from config.toml and converted (the
# file is written with the new one when a setting is next saved); `settings set` names the new
RENAMED: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "llm_idle_unload_s": ("idle_unload_min", lambda seconds: seconds / 60),
}


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (settings by name) with renamed settings under their new names; a new name
    given beside its old one wins."""
    migrated = dict(data)
    for old, (new, convert) in RENAMED.items():
        if old in migrated:
            value = migrated.pop(old)
            if new not in migrated:
                try:
                    migrated[new] = convert(value)
                except TypeError:
                    migrated[new] = value  # a wrong type: validation names it
    return migrated


# Settings read once by something long-lived; every other change applies at once.
APPLIES_LATER = {
    "encrypt_database": "to a new database (an existing one: `braincue security encrypt`)",
    "embed_model": "when the daemon restarts (vectors are then re-embedded with the new model)",
    "embed_batch": "when the daemon restarts",
    "voice_model": "when the daemon restarts",
    "hotkey_ask": "when `braincue hotkey` starts again",
    "hotkey_answer_them": "when `braincue hotkey` starts again",
}


@dataclass(frozen=True)
class Paths:
    """Where BrainCue keeps things for one profile."""

    profile: str
    config_dir: Path
    data_root: Path
    runtime_root: Path
    cache_dir: Path
    models_dir: Path

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def data_dir(self) -> Path:
        return self.data_root / "profiles" / self.profile

    @property
    def runtime_dir(self) -> Path:
        return self.runtime_root / self.profile

    @classmethod
    def resolve(cls, profile: str = DEFAULT_PROFILE) -> Paths:
        validate_profile_name(profile)
        home = os.environ.get("BRAINCUE_HOME")
        models_env = os.environ.get("BRAINCUE_MODELS")
        if home:
            root = Path(home).expanduser().absolute()
            paths = cls(
                profile=profile,
                config_dir=root / "config",
                data_root=root / "data",
                runtime_root=root / "run",
                cache_dir=root / "cache",
                models_dir=root / "models",
            )
        else:
            dirs = platformdirs.PlatformDirs(APP_NAME, appauthor=False)
            with warnings.catch_warnings():
                # without XDG_RUNTIME_DIR platformdirs falls back to /tmp/runtime-<uid> and
                # warns; ensure() makes that directory private, which is what matters
                warnings.simplefilter("ignore")
                runtime_root = Path(dirs.user_runtime_dir)
            paths = cls(
                profile=profile,
                config_dir=Path(dirs.user_config_dir),
                data_root=Path(dirs.user_data_dir),
                runtime_root=runtime_root,
                cache_dir=Path(dirs.user_cache_dir),
                models_dir=Path(dirs.user_data_dir) / "models",
            )
        if models_env:
            models_dir = Path(models_env).expanduser().absolute()
            paths = dataclasses.replace(paths, models_dir=models_dir)
        return paths

    def ensure(self) -> None:
        """Create the directories this profile writes to, private to the user (0700), and
        tighten what an earlier version left readable by others (logged)."""
        roots = [self.config_dir, self.data_root, self.cache_dir, self.runtime_root]
        for d in (*roots, self.data_dir, self.runtime_dir, self.models_dir):
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
        # a models directory shared by several users (BRAINCUE_MODELS) is theirs to set
        private = [*roots, self.models_dir] if self.models_dir.is_relative_to(self.data_root) \
            else roots
        for root in private:
            tightened = make_private(root)
            if tightened:
                log.info("made %d path(s) under %s private to this user (0700/0600)",
                         tightened, root)


def make_private(root: Path) -> int:
    """Take group and other permissions off ``root`` and everything below it (directories
    0700, files 0600 — the owner's own bits stay); return how many paths changed."""
    changed = 0
    for directory, dirnames, filenames in os.walk(root):
        for path in (directory, *(os.path.join(directory, n) for n in (*dirnames, *filenames))):
            try:
                st = os.lstat(path)
            except FileNotFoundError:  # removed meanwhile (a temporary file)
                continue
            if stat.S_ISLNK(st.st_mode) or not st.st_mode & 0o077:
                continue
            os.chmod(path, stat.S_IMODE(st.st_mode) & 0o700)
            changed += 1
    return changed


def validate_profile_name(profile: str) -> None:
    if not profile or not all(c.isalnum() or c in "-_" for c in profile) or len(profile) > 40:
        raise ConfigError(
            f"invalid profile name {profile!r}",
            fix="use letters, digits, '-' or '_' (at most 40 characters)",
        )


def load_settings(paths: Paths) -> Settings:
    """Read ``config.toml``; a missing file means all defaults."""
    try:
        raw = paths.config_file.read_bytes()
    except FileNotFoundError:
        return Settings()
    except OSError as e:
        raise ConfigError(f"cannot read {paths.config_file}: {e.strerror}") from e
    try:
        data: dict[str, Any] = tomllib.loads(raw.decode("utf-8"))
        return msgspec.convert(migrate(data), Settings)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, msgspec.ValidationError) as e:
        raise ConfigError(
            f"invalid settings in {paths.config_file}: {e}",
            fix="fix or delete the file (defaults are used for anything left out)",
        ) from e


def save_settings(paths: Paths, settings: Settings) -> None:
    """Write only the settings that differ from the defaults, atomically."""
    import tomli_w

    defaults = msgspec.to_builtins(Settings())
    current = msgspec.to_builtins(settings)
    changed = {k: v for k, v in current.items() if defaults.get(k) != v}
    paths.config_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = paths.config_file.with_suffix(".toml.tmp")
    tmp.write_text(tomli_w.dumps(changed), encoding="utf-8")
    os.replace(tmp, paths.config_file)


def set_setting(settings: Settings, key: str, value: str) -> Settings:
    """Return a copy of ``settings`` with ``key`` parsed from its string form."""
    fields = {f.name: f for f in msgspec.structs.fields(Settings)}
    if key in RENAMED:
        new = RENAMED[key][0]
        raise ConfigError(f"the setting {key!r} is now {new!r}",
                          fix=f"`braincue settings set {new} VALUE` (see `settings get {new}`)")
    if key not in fields:
        raise ConfigError(f"unknown setting {key!r}", fix=f"one of: {', '.join(sorted(fields))}")
    data = msgspec.to_builtins(settings)
    try:
        data[key] = tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        data[key] = value  # a bare string
    try:
        return msgspec.convert(data, Settings)
    except msgspec.ValidationError as e:
        raise ConfigError(f"invalid value for {key}: {e}") from e


@dataclass(frozen=True)
class Config:
    """What a running daemon or client needs: the profile's paths and its settings."""

    paths: Paths
    settings: Settings

    @classmethod
    def load(cls, profile: str = DEFAULT_PROFILE) -> Config:
        paths = Paths.resolve(profile)
        return cls(paths=paths, settings=load_settings(paths))
