"""Diarisation logic on a scripted voice encoder: turns inside an utterance, session voices in
order of first speech, one speaker as an honest answer, named voices recognised."""

from __future__ import annotations

import itertools

import numpy as np

from daemon.asr.engine import Segment, Word
from daemon.audio.format import SAMPLE_RATE
from daemon.voices.diarize import (
    DiarizeConfig,
    NamedVoice,
    Piece,
    SessionVoices,
    window_starts,
)
from daemon.voices.encoder import HOP, PARTIAL_FRAMES
from daemon.voices.service import Said, label_segments, rejoin, split_at_pieces, split_by_voice

RATE = SAMPLE_RATE
# each "voice" is a tone; the scripted encoder hears which tone fills most of a window
TONES = {"ann": 300.0, "bob": 700.0, "cy": 1100.0}
rng = np.random.default_rng(7)
VOICEPRINTS = {name: v / np.linalg.norm(v) for name, v in
               ((n, rng.normal(size=256).astype(np.float32)) for n in TONES)}


class ToneEncoder:
    """Embeds a window as the voiceprint of its loudest tone, mixed in proportion."""

    def __init__(self, tones: dict[str, float] = TONES) -> None:
        self.tones = tones

    def embed_windows(self, audio: np.ndarray, starts: list[int]) -> np.ndarray:
        out = []
        for start in starts:
            window = audio[start * HOP : (start + PARTIAL_FRAMES) * HOP]
            window = np.pad(window, (0, PARTIAL_FRAMES * HOP - len(window)))
            spectrum = np.abs(np.fft.rfft(window))
            freqs = np.fft.rfftfreq(len(window), 1 / RATE)
            mix = sum(spectrum[np.argmin(np.abs(freqs - f))] * VOICEPRINTS[n]
                      for n, f in zip(VOICEPRINTS, self.tones.values(), strict=False))
            out.append(mix / np.linalg.norm(mix))
        return np.asarray(out, np.float32)


def speech(*parts: tuple[str, float]) -> np.ndarray:
    return np.concatenate([
        0.1 * np.sin(2 * np.pi * TONES[who] * np.arange(int(s * RATE)) / RATE)
        for who, s in parts
    ]).astype(np.float32)


def test_windows_cover_the_utterance_and_a_short_one_is_one_window() -> None:
    assert window_starts(RATE, 0.4) == [0]
    starts = window_starts(10 * RATE, 0.4)
    assert starts[0] == 0 and starts[-1] == 10 * RATE // HOP - PARTIAL_FRAMES
    assert all(b - a <= 40 for a, b in itertools.pairwise(starts))


def test_a_change_of_voice_inside_one_utterance_splits_it() -> None:
    voices = SessionVoices(DiarizeConfig())
    pieces = voices.label_utterance(ToneEncoder(), speech(("ann", 4.0), ("bob", 4.0)))
    assert [p.label for p in pieces] == ["Them 1", "Them 2"]
    assert abs(pieces[0].end - 4.0) < 0.5 and pieces[1].end == 8.0


def test_one_voice_is_one_speaker_however_long() -> None:
    voices = SessionVoices(DiarizeConfig())
    for _ in range(3):
        pieces = voices.label_utterance(ToneEncoder(), speech(("cy", 6.0)))
        assert [p.label for p in pieces] == ["Them 1"]
    assert len(voices.voices) == 1


def test_voices_are_numbered_in_order_of_first_speech_across_utterances() -> None:
    voices = SessionVoices(DiarizeConfig())
    heard = [voices.label_utterance(ToneEncoder(), speech((who, 3.0)))[0].label
             for who in ("bob", "ann", "bob", "cy", "ann")]
    assert heard == ["Them 1", "Them 2", "Them 1", "Them 3", "Them 2"]


def test_a_named_voice_is_recognised_and_keeps_its_session_label() -> None:
    sarah = NamedVoice(4, "Sarah", VOICEPRINTS["bob"])
    voices = SessionVoices(DiarizeConfig(), [sarah])
    first = voices.label_utterance(ToneEncoder(), speech(("ann", 3.0)))[0]
    second = voices.label_utterance(ToneEncoder(), speech(("bob", 3.0)))[0]
    assert (first.label, first.voice_id) == ("Them 1", None)
    assert (second.label, second.voice, second.voice_id) == ("Sarah", "Them 2", 4)
    voices.use_named([])  # forgotten
    assert voices.voices[1].label == "Them 2"


def test_segments_go_to_the_voice_that_spoke_most_of_them() -> None:
    voices = SessionVoices(DiarizeConfig())
    pieces = voices.label_utterance(ToneEncoder(), speech(("ann", 4.0), ("bob", 4.0)))
    segments = [Segment(0.0, 2.0, "Shall we"), Segment(2.0, 3.8, " ship it?"),
                Segment(4.1, 7.9, "Yes, on Friday.")]
    said = split_by_voice(pieces, segments)
    assert [(s.speaker, s.text) for s in said] == [
        ("Them 1", "Shall we ship it?"), ("Them 2", "Yes, on Friday.")]
    assert said[1].start == 4.1 and said[1].voice == "Them 2"


def test_a_burst_too_short_to_tell_joins_the_nearest_voice_instead_of_starting_one() -> None:
    voices = SessionVoices(DiarizeConfig())
    voices.label_utterance(ToneEncoder(), speech(("ann", 4.0)))
    burst = voices.label_utterance(ToneEncoder(), speech(("bob", 0.8)))
    assert [p.label for p in burst] == ["Them 1"] and len(voices.voices) == 1
    longer = voices.label_utterance(ToneEncoder(), speech(("bob", 2.0)))
    assert [p.label for p in longer] == ["Them 2"]


def test_a_segment_is_cut_where_the_voices_pieces_change_and_keeps_its_span() -> None:
    audio = np.concatenate([np.zeros(RATE, np.float32), speech(("ann", 4.0), ("bob", 4.0))])
    # one segment of whisper's, spoken by two voices, beginning in the silence before them
    words = (Word(1.2, 2.0, "Shall"), Word(2.0, 2.6, "we"), Word(2.6, 4.6, "ship?"),
             Word(5.3, 6.0, "Yes,"), Word(6.1, 8.8, "Friday."))
    said = label_segments(SessionVoices(DiarizeConfig(cut_at="pieces")), ToneEncoder(), audio,
                          [Segment(0.0, 9.0, "Shall we ship? Yes, Friday.", words)])
    assert [(s.speaker, s.text) for s in said] == [
        ("Them 1", "Shall we ship?"), ("Them 2", "Yes, Friday.")]
    # the turns cover the segment, cut where the pieces change (the voice at 5.0 s)
    assert said[0].start == 0.0 and said[0].end == said[1].start and said[1].end == 9.0
    assert abs(said[1].start - 5.0) < 0.5


def test_a_part_of_a_segment_without_a_word_goes_to_its_neighbour() -> None:
    voices = SessionVoices(DiarizeConfig(cut_at="pieces"))
    pieces = voices.label_utterance(ToneEncoder(), speech(("ann", 3.0), ("bob", 3.0),
                                                          ("ann", 3.0)))
    assert [p.label for p in pieces] == ["Them 1", "Them 2", "Them 1"]
    # whisper timed no word in bob's stretch (a cough, an overlap it did not write)
    words = (Word(0.2, 1.0, "We"), Word(1.0, 2.5, "ship"), Word(6.5, 8.0, "Friday."))
    said = label_segments(voices, ToneEncoder(), speech(("ann", 3.0), ("bob", 3.0),
                                                        ("ann", 3.0)),
                          [Segment(0.0, 9.0, "We ship Friday.", words)])
    assert [(s.speaker, s.text, s.start, s.end) for s in said] == [
        ("Them 1", "We ship Friday.", 0.0, 9.0)]


def test_timed_words_cut_a_segment_where_the_voice_changes_and_trim_it_to_speech() -> None:
    voices = SessionVoices(DiarizeConfig(cut_at="words"))
    audio = np.concatenate([np.zeros(RATE, np.float32), speech(("ann", 4.0), ("bob", 4.0))])
    words = (Word(1.2, 2.0, "Shall"), Word(2.0, 2.6, "we"), Word(2.6, 4.6, "ship?"),
             Word(5.3, 6.0, "Yes,"), Word(6.1, 8.8, "Friday."))
    said = label_segments(voices, ToneEncoder(), audio,
                          [Segment(0.0, 9.0, "Shall we ship? Yes, Friday.", words)])
    assert [(s.speaker, s.text, s.start, s.end) for s in said] == [
        ("Them 1", "Shall we ship?", 1.2, 4.6), ("Them 2", "Yes, Friday.", 5.3, 8.8)]
    # not cut (or without its words to cut at) the segment goes whole to one voice, silence
    # included
    configs = (DiarizeConfig(cut_at="segments"), DiarizeConfig(cut_at="words"),
               DiarizeConfig(cut_at="pieces"))
    for config, timed in zip(configs, (words, (), ()), strict=True):
        whole = label_segments(SessionVoices(config), ToneEncoder(), audio,
                               [Segment(0.0, 9.0, "Shall we ship? Yes, Friday.", timed)])
        assert [(s.text, s.start, s.end) for s in whole] == [
            ("Shall we ship? Yes, Friday.", 0.0, 9.0)]


def _toward(a: np.ndarray, b: np.ndarray, cosine: float) -> np.ndarray:
    """A unit vector at ``cosine`` from unit ``a``, in the plane of ``a`` and ``b``."""
    other = b - (b @ a) * a
    other /= np.linalg.norm(other)
    out: np.ndarray = (cosine * a + np.sqrt(1 - cosine**2) * other).astype(np.float32)
    return out


def test_a_segment_is_cut_only_between_voices_apart() -> None:
    ann, bob = VOICEPRINTS["ann"], VOICEPRINTS["bob"]
    config = DiarizeConfig()
    assert config.cut_at == "pieces"
    voices = SessionVoices(config)
    them1 = voices.assign(ann, 4.0)
    # a piece cut off the end of ann's sentence that started a voice of its own, still 0.74
    # like her (as the end of JFK's first sentence does), and a voice truly apart
    them2 = voices.assign(_toward(ann, bob, 0.74), 1.9)
    them3 = voices.assign(VOICEPRINTS["cy"], 2.0)
    assert [v.session_label for v in (them1, them2, them3)] == ["Them 1", "Them 2", "Them 3"]
    pieces = [Piece(0.0, 4.0, "Them 1", "Them 1"), Piece(4.0, 5.9, "Them 2", "Them 2"),
              Piece(5.9, 8.0, "Them 3", "Them 3")]
    joined = voices.join_alike(pieces)
    assert [(p.start, p.end, p.voice) for p in joined] == [
        (0.0, 5.9, "Them 1"), (5.9, 8.0, "Them 3")]
    words = (Word(0.5, 3.0, "Ask"), Word(4.2, 5.5, "not."), Word(6.0, 7.5, "Yes."))
    said = split_at_pieces(joined, [Segment(0.0, 8.0, "Ask not. Yes.", words)])
    assert [(s.speaker, s.text, s.start, s.end) for s in said] == [
        ("Them 1", "Ask not.", 0.0, 5.9), ("Them 3", "Yes.", 5.9, 8.0)]
    # the longer piece gives the joined one its voice
    longer = voices.join_alike([Piece(0.0, 1.0, "Them 1", "Them 1"),
                                Piece(1.0, 4.0, "Them 2", "Them 2")])
    assert [(p.start, p.end, p.voice) for p in longer] == [(0.0, 4.0, "Them 2")]


def test_voices_that_grow_alike_are_regrouped_into_the_first_and_turns_follow() -> None:
    ann, bob = VOICEPRINTS["ann"], VOICEPRINTS["bob"]
    voices = SessionVoices(DiarizeConfig())
    first = voices.assign(ann, 3.0)
    # the same person heard briefly and unlike themself: a second voice, for now
    second = voices.assign(_toward(ann, bob, 0.74), 2.0)
    assert (first.session_label, second.session_label) == ("Them 1", "Them 2")
    assert voices.merge_alike() == {}
    voices.assign(_toward(ann, bob, 0.85), 3.0)  # Them 2 again, now nearer Them 1
    assert len(voices.voices) == 2 and voices.voices[1].seconds == 5.0
    merged = voices.merge_alike()
    assert list(merged) == ["Them 2"] and merged["Them 2"] is first
    assert len(voices.voices) == 1 and voices.voices[0] is first and first.seconds == 8.0
    # a voice after the merge is not given the merged-away number again
    assert voices.assign(bob, 3.0).session_label == "Them 3"
    said = [Said(0.0, 1.0, "So", "Them 1", "Them 1", None),
            Said(1.0, 2.0, "we ship.", "Them 2", "Them 2", None),
            Said(2.0, 3.0, "No.", "Them 3", "Them 3", None)]
    assert [(s.speaker, s.text, s.start, s.end) for s in rejoin(said, merged)] == [
        ("Them 1", "So we ship.", 0.0, 2.0), ("Them 3", "No.", 2.0, 3.0)]


def test_two_voices_named_apart_are_never_regrouped() -> None:
    ann = VOICEPRINTS["ann"]
    voices = SessionVoices(DiarizeConfig())
    a, b = voices.assign(ann, 3.0), voices.assign(_toward(ann, VOICEPRINTS["bob"], 0.5), 3.0)
    a.named, b.named = NamedVoice(1, "Ann", ann), NamedVoice(2, "Anne", b.centroid)
    a.pinned = b.pinned = True
    b.total = a.total.copy()  # as alike as can be
    assert voices.merge_alike() == {} and len(voices.voices) == 2


def test_a_segment_whisper_timed_past_the_utterance_ends_with_it() -> None:
    voices = SessionVoices(DiarizeConfig())
    said = label_segments(voices, ToneEncoder(), speech(("ann", 2.0)),
                          [Segment(0.0, 2.6, "Years.")])
    assert [(s.start, s.end) for s in said] == [(0.0, 2.0)]


def test_a_voice_is_named_only_when_sure_and_otherwise_offered_the_name() -> None:
    config = DiarizeConfig(named_voice=0.8, suggest_voice=0.5, name_after_s=2.0)
    sarah = NamedVoice(1, "Sarah", np.array([1.0, 0.0, 0.0], np.float32))
    voices = SessionVoices(config, [sarah])
    near = np.array([0.9, np.sqrt(1 - 0.81), 0.0], np.float32)  # 0.9 alike to her print
    maybe = np.array([0.6, 0.8, 0.0], np.float32)  # 0.6 alike: offered, not named
    heard = voices.assign(near, 1.0)
    assert (heard.named, heard.suggested) == (None, sarah)  # heard too briefly to be sure
    heard = voices.assign(near, 2.0)
    assert (heard.named, heard.suggested) == (sarah, None)
    other = voices.assign(np.array([0.0, 0.0, 1.0], np.float32), 3.0)
    other.total = maybe * 3.0
    voices.use_named([sarah])
    assert (other.named, other.suggested) == (None, None)  # she is taken by the surer voice
    assert heard.named == sarah


def test_a_confirmed_print_moves_by_its_share_of_speech_at_most_the_bound() -> None:
    from daemon.store.voices import learnt

    old = np.array([1.0, 0.0], np.float32)
    heard = np.array([0.0, 1.0], np.float32)
    small, seconds, _ = learnt((old, 30.0, "m"), (heard, 10.0, "m"), 0.25)
    assert seconds == 40.0 and np.isclose(small @ heard / (small @ old), 10 / 30)
    bounded, _, _ = learnt((old, 10.0, "m"), (heard, 300.0, "m"), 0.25)
    assert np.isclose(bounded @ heard / (bounded @ old), 0.25 / 0.75)
    replaced, seconds, encoder = learnt((old, 10.0, "a"), (heard, 5.0, "b"), 0.25)
    assert (encoder, seconds) == ("b", 5.0) and np.allclose(replaced, heard)


def test_a_first_voice_that_never_grew_past_a_word_joins_the_voice_it_is_most_like() -> None:
    voices = SessionVoices(DiarizeConfig(same_voice=0.8, min_new_voice_s=1.2))
    word = voices.assign(np.array([0.6, 0.8, 0.0], np.float32), 0.7)  # "War." cut off
    ann = voices.assign(np.array([1.0, 0.0, 0.0], np.float32), 4.0)  # 0.6 alike: a voice
    cara = voices.assign(np.array([0.0, 0.0, 1.0], np.float32), 6.0)
    assert [v.session_label for v in voices.voices] == ["Them 1", "Them 2", "Them 3"]
    assert voices.merge_alike() == {"Them 1": ann}
    assert voices.voices == [ann, cara] and ann.seconds == 4.7
    assert word not in voices.voices


def test_the_only_voice_of_a_session_stays_however_short() -> None:
    voices = SessionVoices(DiarizeConfig(same_voice=0.8, min_new_voice_s=1.2))
    word = voices.assign(np.array([0.6, 0.8, 0.0], np.float32), 0.7)
    assert voices.merge_alike() == {} and voices.voices == [word]
