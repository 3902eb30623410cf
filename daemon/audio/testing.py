"""For tests and benchmarks: a private PulseAudio server with virtual devices, and voices.

Two null sinks stand in for a call (notes/platform.md): ``virt`` is the default output, so its
monitor is what the daemon captures as "them"; ``micsink`` feeds a source ``mic`` remapped from
its monitor, the default input, so what is played into ``micsink`` is heard as "me".
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

MODULES = (
    "module-native-protocol-unix",
    "module-null-sink sink_name=virt sink_properties=device.description=VirtualSpeaker",
    "module-null-sink sink_name=micsink sink_properties=device.description=VirtualMicSink",
    "module-remap-source master=micsink.monitor source_name=mic",
)
ME_SINK = "micsink"
THEM_SINK = "virt"


class PulseServer:
    """``start()``/``stop()`` can be repeated: the server comes back with the same devices."""

    def __init__(self) -> None:
        self.runtime_dir = Path(tempfile.mkdtemp(prefix="pa-", dir="/tmp"))
        os.chmod(self.runtime_dir, 0o700)
        self.env = {**os.environ, "XDG_RUNTIME_DIR": str(self.runtime_dir)}
        self.pid: int | None = None

    def _run(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)

    def start(self, timeout: float = 20.0) -> None:
        args = ["pulseaudio", "-D", "-n", "--exit-idle-time=-1", "--disallow-exit",
                *(f"--load={m}" for m in MODULES)]
        started = self._run(*args)
        if started.returncode != 0:
            raise RuntimeError(f"pulseaudio did not start: {started.stderr.strip()}")
        deadline = time.monotonic() + timeout
        while self._run("pactl", "info").returncode != 0:
            if time.monotonic() > deadline:
                raise RuntimeError("pulseaudio started but does not answer")
            time.sleep(0.1)
        self.pid = int((self.runtime_dir / "pulse" / "pid").read_text().strip())
        for command in (("set-default-sink", THEM_SINK), ("set-default-source", "mic")):
            result = self._run("pactl", *command)
            if result.returncode != 0:
                raise RuntimeError(f"pactl {' '.join(command)}: {result.stderr.strip()}")

    def stop(self, timeout: float = 10.0) -> None:
        """Kill the server (as a crash would) and wait until it is gone."""
        if self.pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while Path(f"/proc/{self.pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.pid = None

    def unplug_mic(self) -> None:
        """Take the mic away as a pulled-out headset would: unload the source remapped from
        ``micsink`` and the null sink itself."""
        listed = self._run("pactl", "list", "short", "modules").stdout.splitlines()
        for line in reversed(listed):
            index, _, args = [*line.split("\t"), "", ""][:3]
            if args.strip() in (MODULES[2].split(" ", 1)[1], MODULES[3].split(" ", 1)[1]):
                result = self._run("pactl", "unload-module", index)
                if result.returncode != 0:
                    raise RuntimeError(f"pactl unload-module {index}: {result.stderr.strip()}")

    def plug_mic(self) -> None:
        """Bring the mic back (``micsink`` and the source ``mic`` remapped from it)."""
        for module in MODULES[2:]:
            result = self._run("pactl", "load-module", *module.split(" "))
            if result.returncode != 0:
                raise RuntimeError(f"pactl load-module {module}: {result.stderr.strip()}")

    def play(self, sink: str, wav: Path) -> None:
        """Play ``wav`` into ``sink``; returns when it has been played."""
        result = self._run("paplay", f"--device={sink}", str(wav), timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"paplay into {sink}: {result.stderr.strip()}")

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.runtime_dir, ignore_errors=True)


def speak(text: str, voice: str, wav: Path, *, rate: int = 150) -> Path:
    """``text`` spoken by espeak-ng, as a 16 kHz mono WAV."""
    raw = wav.with_suffix(".raw.wav")
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(rate), "-w", str(raw), text],
                   check=True, capture_output=True, timeout=60)
    subprocess.run(["sox", str(raw), "-r", "16000", "-c", "1", str(wav)],
                   check=True, capture_output=True, timeout=60)
    raw.unlink()
    return wav


def noise_wav(wav: Path, seconds: float, volume: float) -> Path:
    """Pink noise at ``volume`` (linear, 1.0 is full scale), 16 kHz mono."""
    subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", str(wav), "synth", str(seconds),
                    "pinknoise", "vol", str(volume)], check=True, capture_output=True, timeout=60)
    return wav
