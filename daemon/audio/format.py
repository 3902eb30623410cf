"""The one audio format inside the daemon: 16 kHz mono float32 samples in [-1, 1], what
capture and audio files are resampled to and what whisper.cpp, the VAD and the voice encoder
take."""

SAMPLE_RATE = 16_000
