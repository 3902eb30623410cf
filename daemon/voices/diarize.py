"""Who among "them" spoke when: speaker turns inside an utterance, voices across a session.

Each utterance of the loopback stream (or of a mono import) is embedded as overlapping 1.6 s
windows every ``hop_s``. Neighbouring windows are merged bottom-up while their mean voices stay
alike (``change_below``), which cuts the utterance where the voice changes, however short the
pause. Each piece then joins the session's nearest voice when it is close enough
(``same_voice``) or starts a new one — "Them 1", "Them 2", ... in the order they first spoke —
so one speaker is an honest answer, never forced into two. A session voice that matches a named
voice of the profile (``named_voice``) is labelled with its name.

Pure: numpy arrays in, labels out. The encoder that turns audio into window embeddings is
injected (:class:`WindowEmbedder`); :class:`daemon.voices.encoder.VoiceEncoder` is the real one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

from daemon.audio.format import SAMPLE_RATE
from daemon.voices.encoder import HOP, PARTIAL_FRAMES, normalize_volume

Vectors = npt.NDArray[np.float32]

WINDOW_S = PARTIAL_FRAMES * HOP / SAMPLE_RATE  # 1.6 s, what the encoder was trained on


class WindowEmbedder(Protocol):
    def embed_windows(self, audio: Vectors, starts: list[int]) -> Vectors: ...


@dataclass(frozen=True)
class DiarizeConfig:
    # tuned on real meeting excerpts (bench.diarize; docs/benchmarks/speakers.md)
    hop_s: float = 0.4  # a window every this often
    change_below: float = 0.70  # neighbouring pieces whose voices are less alike are apart
    min_piece_s: float = 0.8  # shorter pieces join their more alike neighbour
    same_voice: float = 0.80  # a piece at least this alike to a session voice is that voice
    named_voice: float = 0.80  # a session voice at least this alike to a named one is named ...
    name_ahead_by: float = 0.0  # ... and this much more alike to it than to any other named one
    name_after_s: float = 0.0  # ... once this much of it was heard
    # below those, a session voice at least this alike to a named one is offered that name as
    # a question ("Sarah?"), its turns left "Them 2" (above 1: never)
    suggest_voice: float = 2.0
    # naming or confirming a voice moves its print towards the speech confirmed, time-weighted,
    # by at most this share: one bad call cannot move it far
    learn_at_most: float = 0.25
    # a piece shorter than this joins the nearest voice rather than start one: less than one
    # 1.6 s window of speech is too little to tell a new voice from noise or a cough
    min_new_voice_s: float = 1.2
    # where a turn is cut inside one of whisper's segments (service.label_segments):
    # "segments": never, a segment goes whole to the voice that spoke most of it;
    # "pieces" (the default): where the voices' pieces change and the two voices are apart
    #   (SessionVoices.join_alike: less than ``change_below`` alike, the test that cut the
    #   pieces), each part holding the words timed in it and spanning to the next part. On
    #   real meeting excerpts (bench.diarize, whisper tiny.en's segments): DER 29.6% whole
    #   segments, 28.9% cut at every change of piece, 28.1% cut where the voices are apart
    #   (confusion 16.1 -> 14.9 -> 13.4 s). Cut at every change, a false change of voice that a
    #   whole segment hides becomes a turn: the end of a speaker's first sentence (a piece whose
    #   new voice is 0.74 alike to the rest of his) is a second speaker in a recording of one
    #   (tests/test_import_real.py); not apart, it is not cut;
    # "words": each timed word goes to its voice and a turn spans its words only (measured
    #   worse: the gaps between words and their coarse times count as missed speech)
    cut_at: Literal["segments", "pieces", "words"] = "pieces"
    # after each utterance, voices whose centroids have grown ``same_voice`` alike are merged
    # (SessionVoices.merge_alike) and their past turns relabelled
    regroup: bool = True


@dataclass(frozen=True)
class NamedVoice:
    id: int
    name: str
    voiceprint: Vectors  # L2-normed


@dataclass(frozen=True)
class Piece:
    """A stretch of one utterance spoken by one voice (seconds from the utterance start):
    ``label`` is what the turn shows (a name, or "Them 2"), ``voice`` the session voice."""

    start: float
    end: float
    label: str
    voice: str = ""
    voice_id: int | None = None  # the named voice, if recognised


def who_said(pieces: Sequence[Piece], start: float, end: float) -> Piece:
    """The piece that overlaps [start, end) most (the nearest one for a zero-length span)."""

    def overlap(p: Piece) -> float:
        return min(end, p.end) - max(start, p.start)

    return max(pieces, key=overlap)


def _unit(v: Vectors) -> Vectors:
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


def window_starts(n_samples: int, hop_s: float) -> list[int]:
    """Frame offsets of the windows covering ``n_samples``: at least one, the last one ending
    at the utterance's end (a short utterance is one zero-padded window)."""
    n_frames = n_samples // HOP
    hop = max(1, round(hop_s * SAMPLE_RATE / HOP))
    last = max(0, n_frames - PARTIAL_FRAMES)
    starts = list(range(0, last + 1, hop))
    if starts[-1] != last:
        starts.append(last)
    return starts


def split_pieces(
    embeddings: Vectors, starts: Sequence[int], n_samples: int, config: DiarizeConfig
) -> list[tuple[float, float, Vectors]]:
    """Cut one utterance where the voice changes: ``(start_s, end_s, voice)`` per piece.

    Bottom-up: every window is a piece; the most alike neighbours merge (their embeddings
    summed) until no neighbours are alike enough, then pieces shorter than ``min_piece_s`` join
    their more alike neighbour. A piece spans the centres of its windows; the first starts at 0
    and the last ends at the utterance's end.
    """
    duration = n_samples / SAMPLE_RATE
    sums = [e.astype(np.float32) for e in embeddings]
    spans = [[i, i] for i in range(len(sums))]  # window index range of each piece

    def similarity(a: int, b: int) -> float:
        return float(_unit(sums[a]) @ _unit(sums[b]))

    def merge(a: int) -> None:  # piece a with piece a + 1
        sums[a] = sums[a] + sums[a + 1]
        spans[a][1] = spans[a + 1][1]
        del sums[a + 1], spans[a + 1]

    while len(sums) > 1:
        best = max(range(len(sums) - 1), key=lambda i: similarity(i, i + 1))
        if similarity(best, best + 1) < config.change_below:
            break
        merge(best)

    def bounds(span: list[int]) -> tuple[float, float]:
        half = WINDOW_S / 2
        first = starts[span[0]] * HOP / SAMPLE_RATE
        last = starts[span[1]] * HOP / SAMPLE_RATE
        return first + half, last + half

    def covered(i: int) -> float:
        begin, end = bounds(spans[i])
        return end - begin + config.hop_s

    while len(sums) > 1:
        short = [i for i in range(len(sums)) if covered(i) < config.min_piece_s]
        if not short:
            break
        i = min(short, key=covered)
        if i == 0:
            merge(0)
        elif i == len(sums) - 1:
            merge(i - 1)
        else:
            merge(i if similarity(i, i + 1) >= similarity(i - 1, i) else i - 1)

    pieces: list[tuple[float, float, Vectors]] = []
    for k, (span, total) in enumerate(zip(spans, sums, strict=True)):
        begin = 0.0 if k == 0 else pieces[-1][1]
        end = duration if k == len(spans) - 1 else (bounds(span)[1] + bounds(spans[k + 1])[0]) / 2
        pieces.append((begin, min(end, duration), _unit(total)))
    return pieces


@dataclass
class SessionVoice:
    """One voice of a session: the running sum of its pieces' embeddings, time-weighted."""

    number: int  # 1 for "Them 1"
    total: Vectors
    seconds: float
    named: NamedVoice | None = None
    pinned: bool = False  # the user named this very voice: recognition leaves it alone
    suggested: NamedVoice | None = None  # not sure enough to name it: "Sarah?"

    @property
    def centroid(self) -> Vectors:
        return _unit(self.total)

    @property
    def session_label(self) -> str:
        return f"Them {self.number}"

    @property
    def label(self) -> str:
        return self.named.name if self.named is not None else self.session_label


@dataclass
class SessionVoices:
    """The voices heard in one session, and the named voices of the profile to look for."""

    config: DiarizeConfig = field(default_factory=DiarizeConfig)
    named: Sequence[NamedVoice] = ()
    voices: list[SessionVoice] = field(default_factory=list)
    numbered: int = 0  # voices ever started: a merged-away number is not given again

    def assign(self, voice: Vectors, seconds: float) -> SessionVoice:
        """The session voice this piece belongs to (a new one when none is close enough)."""
        best: SessionVoice | None = None
        if self.voices:
            sims = [float(v.centroid @ voice) for v in self.voices]
            k = int(np.argmax(sims))
            if sims[k] >= self.config.same_voice:
                best = self.voices[k]
        if best is None and self.voices and seconds < self.config.min_new_voice_s:
            best = self.voices[int(np.argmax(sims))]
        if best is None:
            self.numbered += 1
            best = SessionVoice(self.numbered, np.zeros_like(voice), 0.0)
            self.voices.append(best)
        best.total = best.total + voice * seconds
        best.seconds += seconds
        self._recognise(best)
        return best

    def merge_alike(self) -> dict[str, SessionVoice]:
        """Re-cluster: voices whose centroids have grown at least ``same_voice`` alike are one
        voice, the later joining the earlier (most alike pairs first; two voices named
        differently stay apart). A voice heard first in a few short utterances may have
        started before there was enough of it to match: the same test, on more speech.
        A voice that never grew past ``min_new_voice_s`` once a later voice started joins the
        voice it is most like: the first piece of a session starts a voice however short it
        is (a word cut off, a cough), where any later piece that short would have joined one.
        Returns the session labels merged away, each with the voice it is now."""
        merged: dict[str, SessionVoice] = {}
        while True:
            pairs = [(float(a.centroid @ b.centroid), i, j)
                     for i, a in enumerate(self.voices) for j, b in enumerate(self.voices)
                     if i < j and not (a.named and b.named and a.named.id != b.named.id)]
            stubs = [k for k, v in enumerate(self.voices[:-1])
                     if v.seconds < self.config.min_new_voice_s and v.named is None]
            if stubs:
                k = stubs[0]
                _, i, j = max(p for p in pairs if k in p[1:])
                keep, gone = (self.voices[j], self.voices[i]) if i == k else (
                    self.voices[i], self.voices[j])
                self.voices.remove(gone)
            else:
                best = max(pairs, default=None)
                if best is None or best[0] < self.config.same_voice:
                    return merged
                _, i, j = best
                keep, gone = self.voices[i], self.voices.pop(j)
            keep.total = keep.total + gone.total
            keep.seconds += gone.seconds
            if keep.named is None:
                keep.named, keep.pinned = gone.named, gone.pinned
            merged = {label: keep if v is gone else v for label, v in merged.items()}
            merged[gone.session_label] = keep
            self._recognise(keep)

    def use_named(self, named: Sequence[NamedVoice]) -> None:
        """The profile's named voices changed (named, renamed, merged, forgotten): each named
        voice goes to the session voice most like it, most alike pairs first, where the
        voice is sure enough (:meth:`sure`)."""
        self.named = named
        by_id = {n.id: n for n in named}
        for voice in self.voices:
            voice.suggested = None
            if voice.pinned and voice.named is not None and voice.named.id in by_id:
                voice.named = by_id[voice.named.id]
            else:
                voice.named, voice.pinned = None, False
        taken = {v.named.id for v in self.voices if v.named is not None}
        pairs = sorted(
            ((float(n.voiceprint @ v.centroid), k, n) for k, v in enumerate(self.voices)
             if v.named is None for n in named if n.id not in taken),
            key=lambda p: -p[0],
        )
        for _, k, n in pairs:
            voice = self.voices[k]
            if voice.named is None and n.id not in taken and self.sure(voice, n):
                voice.named = n
                taken.add(n.id)
        for voice in self.voices:
            if voice.named is None:
                voice.suggested = self._suggestion(voice, taken)

    def likeness(self, voice: SessionVoice) -> list[tuple[float, NamedVoice]]:
        """How alike ``voice`` is to each named voice, most alike first."""
        return sorted(((float(n.voiceprint @ voice.centroid), n) for n in self.named),
                      key=lambda p: -p[0])

    def sure(self, voice: SessionVoice, named: NamedVoice) -> bool:
        """Whether ``voice`` is surely ``named``: heard for at least ``name_after_s``, at
        least ``named_voice`` alike to its print and ``name_ahead_by`` more alike to it than to
        any other named voice's. A stranger given a known name is the costly error: below
        this the name is only offered."""
        if voice.seconds < self.config.name_after_s:
            return False
        ranked = self.likeness(voice)
        mine = next(s for s, n in ranked if n.id == named.id)
        others = [s for s, n in ranked if n.id != named.id]
        return (mine >= self.config.named_voice
                and mine - max(others, default=-1.0) >= self.config.name_ahead_by)

    def _suggestion(self, voice: SessionVoice, taken: set[int]) -> NamedVoice | None:
        """The named voice to offer ``voice`` as a question, when alike enough."""
        ranked = self.likeness(voice)
        if ranked and ranked[0][0] >= self.config.suggest_voice and ranked[0][1].id not in taken:
            return ranked[0][1]
        return None

    def _recognise(self, voice: SessionVoice) -> None:
        if voice.pinned:
            return
        taken = {v.named.id for v in self.voices if v.named is not None and v is not voice}
        ranked = [n for _, n in self.likeness(voice) if n.id not in taken]
        voice.named = ranked[0] if ranked and self.sure(voice, ranked[0]) else None
        voice.suggested = None if voice.named is not None else self._suggestion(voice, taken)

    def join_alike(self, pieces: Sequence[Piece]) -> list[Piece]:
        """Neighbouring pieces of one utterance whose session voices are not apart — at least
        ``change_below`` alike, the test that cuts pieces — as one piece of the longer one's
        voice. A piece is cut off where its windows differ from their neighbours', but it may
        then start a voice of its own that is still like the voice before it (the end of a
        sentence of one speaker: the speech of one in tests/test_import_real.py); a turn is
        cut only between voices the same test tells apart."""
        by_label = {v.session_label: v for v in self.voices}
        out: list[Piece] = []
        for p in pieces:
            if out:
                q = out[-1]
                a, b = by_label.get(q.voice), by_label.get(p.voice)
                if (a is not None and b is not None
                        and float(a.centroid @ b.centroid) >= self.config.change_below):
                    keep = q if q.end - q.start >= p.end - p.start else p
                    out[-1] = Piece(q.start, p.end, keep.label, keep.voice, keep.voice_id)
                    continue
            out.append(p)
        return out

    def find(self, label: str) -> SessionVoice | None:
        """The voice shown as ``label`` ("Them 2" or its name), case-insensitive."""
        wanted = label.casefold()
        return next((v for v in self.voices if wanted in (v.label.casefold(),
                                                          v.session_label.casefold())), None)

    def label_utterance(self, embedder: WindowEmbedder, audio: Vectors) -> list[Piece]:
        """Split one utterance into pieces, each labelled with its session voice."""
        audio = normalize_volume(np.asarray(audio, dtype=np.float32))
        starts = window_starts(len(audio), self.config.hop_s)
        return self.label_windows(embedder.embed_windows(audio, starts), starts, len(audio))

    def label_windows(self, embeddings: Vectors, starts: Sequence[int], n_samples: int
                      ) -> list[Piece]:
        pieces: list[Piece] = []
        for begin, end, embedding in split_pieces(embeddings, starts, n_samples, self.config):
            voice = self.assign(embedding, end - begin)
            if pieces and pieces[-1].voice == voice.session_label:
                begin = pieces.pop().start
            named = None if voice.named is None else voice.named.id
            pieces.append(Piece(begin, end, voice.label, voice.session_label, named))
        return pieces
