"""The pure parts of bench.diarize: the RTTM reader, speech spans, re-identification."""

from __future__ import annotations

import numpy as np
import pytest

from bench.diarize import (
    FileScore,
    Recording,
    alone_time,
    der,
    grid_configs,
    misnamed,
    nearest_print,
    oracle_turns,
    overlap_matrix,
    read_rttm,
    recognised,
    speaker_prints,
    speech_spans,
    talk_time,
)
from daemon.asr.engine import Segment, Word
from daemon.audio.format import SAMPLE_RATE
from daemon.voices.diarize import DiarizeConfig


def test_rttm_lines_become_turns_by_file() -> None:
    text = ("SPEAKER trn07 1 8.275 1.452 <NA> <NA> FEE087 <NA> <NA>\n"
            "SPEAKER trn07 1 15.6 2.81 <NA> <NA> MEO086 <NA> <NA>\n"
            "SPEAKER dev00 1 0.5 1.0 <NA> <NA> MEE009 <NA> <NA>\n"
            "not a speaker line\n")
    turns = read_rttm(text)
    assert sorted(turns) == ["dev00", "trn07"]
    assert turns["trn07"][1] == (15.6, 15.6 + 2.81, "MEO086")


def test_speech_spans_merge_turns_closer_than_the_gap() -> None:
    turns = [(0.0, 1.0, "a"), (1.2, 2.0, "b"), (3.0, 4.0, "a"), (3.5, 5.0, "b")]
    assert speech_spans(turns) == [(0.0, 2.0), (3.0, 5.0)]


def test_a_speaker_is_recognised_when_most_of_their_speech_carries_their_name() -> None:
    reference = [(0.0, 4.0, "Sarah"), (4.0, 6.0, "Tom")]
    assert talk_time([(0.0, 3.0, "Sarah")], "Sarah", 1.0, 5.0) == 2.0
    assert recognised(reference, [(0.0, 3.0, "Sarah"), (3.0, 6.0, "Them 2")], "Sarah")
    assert not recognised(reference, [(0.0, 1.0, "Sarah"), (1.0, 6.0, "Them 2")], "Sarah")
    assert not recognised(reference, [(0.0, 6.0, "Them 1")], "Tom")


def test_a_grid_is_every_combination_over_the_base_config() -> None:
    base = DiarizeConfig()
    configs = grid_configs("same=0.7,0.8 change=0.6", base)
    assert [(c.same_voice, c.change_below, c.hop_s) for c in configs] == [
        (0.7, 0.6, base.hop_s), (0.8, 0.6, base.hop_s)]
    with pytest.raises(SystemExit, match="'colour' is not one of"):
        grid_configs("colour=1", base)


def test_overall_der_weighs_files_by_their_speech_time() -> None:
    short = FileScore(missed=1.0, false_alarm=1.0, confusion=0.0, total=2.0, found=1, truth=1)
    long = FileScore(missed=0.0, false_alarm=0.0, confusion=2.0, total=18.0, found=2, truth=3)
    assert der([short, long]) == 4.0 / 20.0


def test_a_name_on_speech_mostly_someone_elses_is_misnamed() -> None:
    reference = [(0.0, 4.0, "Sarah"), (4.0, 10.0, "Tom")]
    hypothesis = [(0.0, 4.0, "Sarah"), (4.0, 10.0, "Ann"), (10.0, 11.0, "Them 3")]
    assert misnamed(reference, hypothesis, {"Sarah", "Ann", "Bo"}) == ["Ann"]


def test_speech_alone_is_what_nobody_else_speaks_over() -> None:
    turns = [(0.0, 4.0, "Sarah"), (3.0, 5.0, "Tom"), (4.5, 6.0, "Ann"), (7.0, 8.0, "Tom")]
    assert alone_time(turns) == {"Ann": (1.5, 1.0), "Sarah": (4.0, 3.0), "Tom": (3.0, 1.5)}


def test_the_matrix_gives_each_label_the_reference_speech_it_holds() -> None:
    reference = [(0.0, 4.0, "Sarah"), (4.0, 6.0, "Tom")]
    hypothesis = [(0.0, 5.0, "Them 1"), (5.0, 6.0, "Them 2")]
    assert overlap_matrix(reference, hypothesis) == {
        "Them 1": {"Sarah": 4.0, "Tom": 1.0}, "Them 2": {"Sarah": 0.0, "Tom": 1.0}}


def test_the_oracle_gives_each_segment_or_word_to_the_reference_speaker_of_it() -> None:
    reference = [(10.0, 13.0, "Sarah"), (13.0, 20.0, "Tom")]
    words = (Word(0.5, 1.5, "Shall"), Word(1.5, 2.5, "we?"), Word(3.5, 4.5, "Yes."),
             Word(5.0, 8.0, "Friday."))
    segments = [Segment(0.0, 8.0, "Shall we? Yes. Friday.", words), Segment(8.0, 9.0, " ")]
    recording = Recording("x", 20.0, [(10.0, np.zeros(9 * SAMPLE_RATE, np.float32), segments)])
    assert oracle_turns(reference, recording, by_word=False) == [(10.0, 18.0, "Tom")]
    assert oracle_turns(reference, recording, by_word=True) == [
        (10.0, 13.5, "Sarah"), (13.5, 18.0, "Tom")]


def test_a_speakers_print_is_the_windows_they_fill_weighted_by_their_seconds_in_each() -> None:
    # windows of 1.6 s at 0, 0.8 and 1.6 s: Sarah fills the first, half the second, none of the
    # third; Tom a quarter of the second and all of the third
    reference = [(0.0, 1.6, "Sarah"), (1.6, 2.0, "Tom"), (2.0, 3.2, "Tom"), (3.0, 3.2, "Ann")]
    e = np.eye(3, dtype=np.float32)
    prints = speaker_prints(reference, [0.0, 0.8, 1.6], e)
    sarah, windows = prints["Sarah"]
    assert windows == 2
    assert np.allclose(sarah, np.array([1.6, 0.8, 0.0]) / np.hypot(1.6, 0.8))
    assert prints["Tom"][1] == 2  # 0.8 s of the second window is his: half of it
    assert "Ann" not in prints  # 0.2 s of a window is not a print


def test_the_nearest_print_is_the_most_alike_by_cosine() -> None:
    prints = {"Sarah": np.array([1.0, 0.0], np.float32), "Tom": np.array([0.6, 0.8], np.float32)}
    who, likeness = nearest_print(prints, np.array([0.0, 1.0], np.float32))
    assert who == "Tom"
    assert likeness == pytest.approx(0.8)
