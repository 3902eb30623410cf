"""The pure parts of bench.segmentation: chunk placement, frame times, matching local speakers."""

from __future__ import annotations

import numpy as np
import pytest

from bench.segmentation import (
    best_match,
    chunk_starts,
    file_figures,
    frame_centres,
    reference_activity,
)
from daemon.voices.segmentation import FRAME_STEP


def test_chunks_slide_and_the_last_one_ends_at_the_end() -> None:
    assert chunk_starts(30.0, 5.0) == [0.0, 5.0, 10.0, 15.0, 20.0]
    assert chunk_starts(30.0 + 1 / 16_000, 5.0) == [0.0, 5.0, 10.0, 15.0, 20.0]  # a sample
    assert chunk_starts(23.0, 5.0) == [0.0, 5.0, 10.0, 13.0]
    assert chunk_starts(7.0, 5.0) == [0.0]


def test_frames_are_centred_on_their_receptive_field() -> None:
    times = frame_centres(5.0)
    assert len(times) == 589
    assert times[0] == pytest.approx(5.0 + 0.0619375 / 2)
    assert times[1] - times[0] == pytest.approx(FRAME_STEP)


def test_local_speakers_are_matched_to_whom_they_speak_with() -> None:
    turns = [(0.0, 1.0, "Ann"), (0.5, 2.0, "Bob")]
    times = np.array([0.25, 0.75, 1.5, 2.5])
    reference = reference_activity(turns, ["Ann", "Bob"], times)
    assert reference.tolist() == [[True, False], [True, True], [False, True], [False, False]]
    local = np.array([[0, 1, 0], [1, 1, 0], [1, 0, 0], [0, 0, 0]], bool)
    assert best_match(reference, local) == {0: 1, 1: 0}
    assert best_match(reference, np.zeros((4, 3), bool)) == {}


def test_a_speaker_only_ever_overlapped_is_found_when_the_model_hears_two() -> None:
    # Ann speaks all 10 s, Bob 1 s over her: one voice per moment never has Bob alone
    turns = [(0.0, 10.0, "Ann"), (4.0, 5.0, "Bob")]
    times = frame_centres(0.0)
    local = np.zeros((1, len(times), 3), bool)
    local[0, :, 2] = True
    local[0, (times >= 4.1) & (times < 4.9), 0] = True
    figures = file_figures("x", turns, [0.0], local, 0.3)
    assert (figures.speakers, figures.found, figures.barely_alone) == (2, 2, 1)
    assert (figures.local_max, figures.reference_max, figures.chunks_ok) == (2, 2, 1)
    assert figures.overlap_reference_s == pytest.approx(1.0, abs=2 * FRAME_STEP)
    assert figures.overlap_hit_s == pytest.approx(0.8, abs=2 * FRAME_STEP)
    local[0, :, 0] = False  # the model hears Ann alone
    missed = file_figures("x", turns, [0.0], local, 0.3)
    assert missed.found == 1 and missed.missed == ["Bob 1.0/0.0 s"]
