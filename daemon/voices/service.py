"""The voices of a running daemon: diarisation per session, named voices in the profile.

Per-session voices ("Them 1", "Them 2", ...) live in memory only, for as long as the daemon
runs: their voiceprints are biometric data and are written to the profile only when the user
names one (`braincue voices name`). Named voices are recognised in later sessions.

The encoder is the ``voice_model`` setting's, or the best installed (CAM++, then GE2E), each
with its own thresholds (:data:`ENCODERS`); a named voice is recognised only by the encoder it
was named under, and the others are said once in the log and shown by `voices list`.

Blocking (the encoder, the store): callers run these methods on a worker thread. A missing or
corrupt voice model is logged once, in one line, and the next installed one runs; without any,
diarisation is off until one is installed: transcription goes on, turns of "them" stay "them".
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from daemon.asr.engine import Segment, within
from daemon.audio.format import SAMPLE_RATE
from daemon.config import Settings
from daemon.errors import BrainCueError, InvalidInput, NotFound
from daemon.models.registry import PREFERENCE, Entry, is_installed, lookup, pick_installed
from daemon.store import voices as voice_store
from daemon.store.store import Store
from daemon.voices import naming
from daemon.voices.campplus import CampplusEncoder
from daemon.voices.diarize import (
    DiarizeConfig,
    NamedVoice,
    Piece,
    SessionVoice,
    SessionVoices,
    WindowEmbedder,
    who_said,
)
from daemon.voices.encoder import VoiceEncoder

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VoiceModel:
    """A speaker encoder the voices can run, and the thresholds for its likeness: each encoder
    scores one voice and two voices on a scale of its own."""

    load: Callable[[Path], WindowEmbedder]
    model_id: str  # what named voices are stored under (``voices.model_id``)
    config: DiarizeConfig


# by registry name (the ``voice_model`` setting); which one an empty setting runs:
# registry.PREFERENCE["voice"], CAM++ first. Thresholds chosen on real meeting excerpts
# (docs/benchmarks/speakers.md): GE2E's are DiarizeConfig's defaults; CAM++'s voices are
# less alike to each other (two speakers' 1.6 s windows: equal error rate 4.0% against 17.7%),
# so its cuts and matches sit lower (DER 23.2%, leave-one-out over the thresholds 23.9%)
# When a session voice is given a known name, and when the name is only offered, is fitted on
# real voices (naming.fitted: a data file, rebuilt by bench.voices_margin); an encoder without
# fitted thresholds names at its ``named_voice``.


def _with_naming(config: DiarizeConfig, model_id: str) -> DiarizeConfig:
    found = naming.fitted(model_id)
    return config if found is None else dataclasses.replace(config, **dataclasses.asdict(found))


ENCODERS: dict[str, VoiceModel] = {
    "campplus-zh-en": VoiceModel(
        CampplusEncoder.load, CampplusEncoder.model_id,
        _with_naming(dataclasses.replace(DiarizeConfig(), change_below=0.4, same_voice=0.5,
                                         named_voice=0.5), CampplusEncoder.model_id)),
    "resemblyzer": VoiceModel(VoiceEncoder.load, VoiceEncoder.model_id,
                              _with_naming(DiarizeConfig(), VoiceEncoder.model_id)),
}


@dataclass(frozen=True)
class Said:
    """What one voice said in an utterance: seconds from the utterance start."""

    start: float
    end: float
    text: str
    speaker: str
    voice: str  # the session voice ("Them 2")
    voice_id: int | None


@dataclass(frozen=True)
class HeardVoice:
    """A voice of a session this daemon heard (for `voices list`)."""

    session_id: int
    label: str  # "Them 2"
    name: str | None
    seconds: float
    suggestion: str | None = None  # not named, but maybe this named voice ("Sarah?")


def split_by_voice(pieces: Sequence[Piece], segments: Sequence[Segment]) -> list[Said]:
    """Give each transcribed segment to the voice that spoke most of it, and join neighbouring
    segments of one voice into one turn."""
    out: list[Said] = []
    for segment in segments:
        text = " ".join(segment.text.split())
        if not text:
            continue
        piece = who_said(pieces, segment.start, segment.end)
        _append(out, Said(segment.start, segment.end, text, piece.label, piece.voice,
                          piece.voice_id))
    return out


def split_at_pieces(pieces: Sequence[Piece], segments: Sequence[Segment]) -> list[Said]:
    """Cut each segment where the voices' pieces change inside it, each part holding the words
    whose middle falls in it (whisper's timed words); a part without a word is its
    neighbour's. The turns keep the pieces' bounds, not the words': whisper's word times are
    coarse, and the gaps between words are speech too. A segment without timed words goes
    whole to the voice that spoke most of it."""
    out: list[Said] = []
    for segment in segments:
        inside = [p for p in pieces if min(segment.end, p.end) > max(segment.start, p.start)]
        if not segment.words or len(inside) < 2:
            out += split_by_voice(pieces, [segment])
            continue
        parts: list[tuple[float, float, Piece, list[str]]] = [
            (max(segment.start, p.start), min(segment.end, p.end), p, []) for p in inside]
        for word in segment.words:
            middle = (word.start + word.end) / 2
            part = min(parts, key=lambda q: 0.0 if q[0] <= middle < q[1]
                       else min(abs(middle - q[0]), abs(middle - q[1])))
            part[3].extend(word.text.split())
        kept = [q for q in parts if q[3]]
        for k, (_, end, piece, words) in enumerate(kept):
            # a part without words gives its time to the part before it (the first: after)
            begin = segment.start if k == 0 else kept[k][0]
            end = kept[k + 1][0] if k < len(kept) - 1 else segment.end
            _append(out, Said(begin, end, " ".join(words), piece.label, piece.voice,
                              piece.voice_id))
    return out


def _append(out: list[Said], said: Said) -> None:
    """``said`` after ``out``, joined to its last turn when that is the same voice's."""
    if out and out[-1].voice == said.voice:
        last = out.pop()
        said = Said(last.start, said.end, f"{last.text} {said.text}", last.speaker, last.voice,
                    last.voice_id)
    out.append(said)


def rejoin(said: Sequence[Said], merged: dict[str, SessionVoice]) -> list[Said]:
    """``said`` after the voices merged: what a merged-away voice said is its new voice's, and
    neighbouring turns of one voice are one turn."""
    out: list[Said] = []
    for s in said:
        into = merged.get(s.voice)
        if into is not None:
            named = None if into.named is None else into.named.id
            s = Said(s.start, s.end, s.text, into.label, into.session_label, named)
        if out and out[-1].voice == s.voice:
            last = out.pop()
            s = Said(last.start, s.end, f"{last.text} {s.text}", last.speaker, last.voice,
                     last.voice_id)
        out.append(s)
    return out


def label_segments(voices: SessionVoices, encoder: WindowEmbedder, audio: np.ndarray,
                   segments: Sequence[Segment]) -> list[Said]:
    """Who said which of whisper's ``segments`` of one utterance, cut where the config's
    ``cut_at`` says. Times are kept inside the utterance: whisper's last timestamp can run past
    the audio it was given.

    The voices hear the whole utterance, not only the span of whisper's segments: cutting the
    VAD's margins off measured worse on real meeting excerpts (bench.diarize: DER 58.5% against
    56.4%, confusion 23.9 s against 20.7 s), whisper's segments being seconds long."""
    duration = len(audio) / SAMPLE_RATE
    pieces = voices.label_utterance(encoder, audio)
    cut_at = voices.config.cut_at
    if cut_at == "pieces":
        return split_at_pieces(voices.join_alike(pieces), within(list(segments), duration))
    spoken = [Segment(min(w.start, duration), min(w.end, duration), w.text)
              for s in segments
              for w in (s.words if cut_at == "words" and s.words else (s,))]
    return split_by_voice(pieces, spoken)


def unrecognised_note(voices: Sequence[voice_store.StoredVoice], model_id: str) -> str:
    """One line: these named voices were named under another encoder than ``model_id``, whose
    voiceprints it cannot compare with its own, so nothing recognises them in new sessions
    until they are named again (their past turns keep the name)."""
    names = ", ".join(v.name for v in voices)
    under = sorted({v.model_id for v in voices})
    settings = [name for name, m in ENCODERS.items() if m.model_id in under]
    back = (f", or `braincue settings set voice_model {settings[0]}` to run that encoder again"
            if len(settings) == 1 else "")
    return (f"{names} {'was' if len(voices) == 1 else 'were'} named under "
            f"{', '.join(under)}, not {model_id}: not recognised in new sessions until named "
            f"again where they speak (`braincue voices name \"Them 1\" {voices[0].name}` keeps "
            f"the voice and its turns and learns its print anew){back}")


class Voices:
    """Diarisation and named voices for one daemon (one profile)."""

    def __init__(
        self,
        store: Store,
        settings: Callable[[], Settings],
        models_dir: Path,
        *,
        encoder: WindowEmbedder | None = None,
        config: DiarizeConfig | None = None,
    ) -> None:
        self.store = store
        self._settings = settings
        self.models_dir = models_dir
        self._encoder = encoder
        # an encoder given (tests) runs with the thresholds given, else GE2E's
        self._model: VoiceModel | None = None if encoder is None else VoiceModel(
            lambda path: encoder, getattr(encoder, "model_id", "scripted"),
            config or DiarizeConfig())
        self._config = config
        self._model_error: str | None = None
        self._failed_with: tuple[tuple[str, int, int], ...] = ()  # _voice_files() then
        self._fallback = ""  # the encoder that runs since the preferred one did not load
        self._sessions: dict[int, SessionVoices] = {}
        self._named: list[NamedVoice] | None = None
        self._lock = threading.Lock()  # sessions and named voices, across worker threads
        self._loading = threading.Lock()  # the encoder, loaded once
        self._told_unrecognised = False

    @property
    def model_id(self) -> str:
        """The encoder the voices run ("" without one): named voices are stored under it, and
        only voices named under it are recognised."""
        self.encoder()
        return "" if self._model is None else self._model.model_id

    @property
    def config(self) -> DiarizeConfig:
        """The thresholds: the ones given, else the encoder's own."""
        if self._config is not None:
            return self._config
        self.encoder()
        return DiarizeConfig() if self._model is None else self._model.config

    def encoder(self) -> WindowEmbedder | None:
        """The voice encoder, loaded on first use; None (said once in the log) without one,
        until a voice model file is installed or replaced: then it is loaded again, so
        `braincue models install` needs no restart."""
        with self._loading:
            if self._encoder is None and (self._model_error is None
                                          or self._voice_files() != self._failed_with):
                self._model_error = None
                self._load()
                self._failed_with = self._voice_files() if self._model_error else ()
            return self._encoder

    def _voice_files(self) -> tuple[tuple[str, int, int], ...]:
        """The voice model files in place (name, size, modified): what a failed load saw."""
        found = []
        for name in PREFERENCE["voice"]:
            try:
                info = (self.models_dir / lookup(name).filename).stat()
            except OSError:
                continue
            found.append((name, info.st_size, info.st_mtime_ns))
        return tuple(found)

    def _load(self) -> None:
        """The ``voice_model`` setting's encoder, or the best installed one that loads: a
        missing or corrupt CAM++ is said in one line and GE2E runs where it is installed."""
        wanted = self._settings().voice_model
        try:
            first = pick_installed("voice", self.models_dir, wanted)
        except BrainCueError as e:
            self._model_error = str(e)
            log.error("speakers are not told apart: %s", e)
            return
        others: list[Entry] = [] if wanted else [
            e for e in (lookup(n) for n in PREFERENCE["voice"])
            if e.name != first.name and is_installed(e, self.models_dir)]
        failed: list[str] = []
        for entry in [first, *others]:
            model = ENCODERS[entry.name]
            try:
                self._encoder = model.load(self.models_dir / entry.filename)
            except BrainCueError as e:
                failed.append(f"{entry.name}: {e}")
                log.error("speakers are not told apart by %s: %s", entry.name, e)
                continue
            self._model = model
            log.info("speakers are told apart by %s", entry.name)
            self._fallback = f"by {entry.name}, not {failed[0]}" if failed else ""
            return
        self._model_error = failed[0].split(": ", 1)[1]

    @property
    def switched_on(self) -> bool:
        """The ``voices_enabled`` setting."""
        return self._settings().voices_enabled

    def enabled(self) -> bool:
        """Switched on and the voice model loads."""
        return self.switched_on and self.encoder() is not None

    def status(self) -> str:
        if not self.switched_on:
            return "off (voices_enabled is false)"
        self.encoder()
        if self._model_error:
            return f"unavailable: {self._model_error}"
        return f"on, {self._fallback}" if self._fallback else "on"

    # -- diarisation ---------------------------------------------------------------------------

    def _named_voices(self) -> list[NamedVoice]:
        """The named voices the encoder can recognise: those named under it."""
        if self._named is None:
            stored = voice_store.list_voices(self.store)
            self._named = [NamedVoice(v.id, v.name, v.voiceprint)
                           for v in stored if v.model_id == self.model_id]
            other = [v for v in stored if v.model_id != self.model_id]
            if other and not self._told_unrecognised:
                self._told_unrecognised = True
                log.warning("%s", unrecognised_note(other, self.model_id))
        return self._named

    def session(self, session_id: int) -> SessionVoices:
        with self._lock:
            found = self._sessions.get(session_id)
        if found is None:
            self._prune()
        with self._lock:
            found = self._sessions.get(session_id)
            if found is None:
                found = SessionVoices(self.config, self._named_voices())
                self._sessions[session_id] = found
            return found

    def label(self, session_id: int, audio: np.ndarray, segments: Sequence[Segment]
              ) -> list[Said] | None:
        """Who said which segments of one "them" utterance; None when diarisation is off."""
        if not self.enabled() or not segments:
            return None
        encoder = self.encoder()
        assert encoder is not None
        voices = self.session(session_id)
        with self._lock:
            before = {v.session_label: v.label for v in voices.voices}
            said = label_segments(voices, encoder, audio, segments)
            merged = voices.merge_alike() if voices.config.regroup else {}
            renamed = [v for v in voices.voices
                       if v.session_label in before and before[v.session_label] != v.label
                       and v.session_label not in merged]
        for old, into in merged.items():  # its turns stored so far
            voice_store.join_session_voice(self.store, session_id, old, into.session_label,
                                           into.label, None if into.named is None
                                           else into.named.id)
        for voice in renamed:  # recognised now (or no longer): its turns stored so far follow
            voice_store.join_session_voice(self.store, session_id, voice.session_label,
                                           voice.session_label, voice.label,
                                           None if voice.named is None else voice.named.id)
        return rejoin(said, merged)

    def _prune(self) -> None:
        """Drop from memory the voices of sessions that were deleted (discarded)."""
        with self._lock:
            ids = list(self._sessions)
        gone = []
        for sid in ids:
            try:
                self.store.get_session(sid)
            except NotFound:
                gone.append(sid)
        with self._lock:
            for sid in gone:
                self._sessions.pop(sid, None)

    def heard(self) -> list[HeardVoice]:
        self._prune()
        with self._lock:
            return [
                HeardVoice(sid, v.session_label, None if v.named is None else v.named.name,
                           round(v.seconds, 1),
                           None if v.suggested is None else v.suggested.name)
                for sid, voices in sorted(self._sessions.items())
                for v in voices.voices
            ]

    # -- named voices --------------------------------------------------------------------------

    def _refresh_named(self) -> None:
        with self._lock:
            self._named = None
            named = self._named_voices()
            for voices in self._sessions.values():
                voices.use_named(named)

    def _find_heard(self, label: str, session_id: int | None) -> tuple[int, SessionVoice]:
        self._prune()
        with self._lock:
            ids = [session_id] if session_id is not None else sorted(self._sessions, reverse=True)
            for sid in ids:
                voices = self._sessions.get(sid)
                found = None if voices is None else voices.find(label)
                if found is not None:
                    return sid, found
        where = f"in session {session_id}" if session_id is not None else "in any session"
        raise NotFound(
            f"no voice {label!r} heard {where} since the daemon started",
            fix="voiceprints are kept only for named voices, so a session voice can be named "
                "while the daemon that heard it runs; `braincue voices list` shows them",
        )

    def name(self, ref: str, name: str, session_id: int | None = None) -> voice_store.StoredVoice:
        """Name a voice: a session voice ("Them 2", in ``session_id`` or the latest session
        that has one) or a named voice (id or name). Naming a session voice with the name of
        a named voice makes it that voice (the voiceprints are combined; a voice named under
        another encoder learns its print anew from this one)."""
        ref = ref.strip()
        if ref.isdigit():
            renamed = voice_store.rename_voice(self.store, int(ref), name)
            self._refresh_named()
            return renamed
        sid, heard = self._find_heard(ref, session_id)
        if (heard.pinned and heard.named is not None
                and heard.named.name.casefold() != name.strip().casefold()):
            # the user named this very voice before: a new name for that person
            renamed = voice_store.rename_voice(self.store, heard.named.id, name)
            self._refresh_named()
            return renamed
        same_name = next(
            (v for v in voice_store.list_voices(self.store)
             if v.name.casefold() == " ".join(name.split()).casefold()), None)
        labels = [(sid, heard.session_label)]
        if same_name is not None:  # confirmed: the print learns from this voice, bounded
            stored = voice_store.extend_voice(self.store, same_name.id, heard.centroid,
                                              heard.seconds, labels, self.model_id,
                                              at_most=self.config.learn_at_most)
        else:
            stored = voice_store.add_voice(self.store, name, heard.centroid, heard.seconds,
                                           self.model_id, labels)
        with self._lock:
            heard.named = NamedVoice(stored.id, stored.name, stored.voiceprint)
            heard.pinned = True
        self._refresh_named()
        return stored

    def show(self, ref: str) -> voice_store.StoredVoice:
        """A named voice by id or name."""
        return voice_store.get_voice(self.store, self._voice_id(ref))

    def merge(self, keep: str, other: str) -> voice_store.StoredVoice:
        merged = voice_store.merge_voices(self.store, self._voice_id(keep), self._voice_id(other),
                                          self.model_id)
        self._refresh_named()
        return merged

    def forget(self, ref: str) -> voice_store.StoredVoice:
        forgotten = voice_store.forget_voice(self.store, self._voice_id(ref))
        self._refresh_named()
        return forgotten

    def _voice_id(self, ref: str) -> int:
        ref = ref.strip()
        if not ref:
            raise InvalidInput("voice: give a voice's id or name")
        return voice_store.get_voice(self.store, int(ref) if ref.isdigit() else ref).id
