"""Voices: who among "them" spoke.

``encoder`` (GE2E) and ``campplus`` (CAM++) embed speech as voiceprints in numpy;
``segmentation`` finds who speaks when inside a short window, overlaps included; ``diarize``
cuts an utterance where the voice changes and groups a session's pieces into voices;
``service`` holds the voices of a running daemon and the named voices of the profile;
``naming`` reads when a heard voice is surely a named one (fitted thresholds, a data file).
"""
