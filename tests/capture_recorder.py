"""Run by tests/test_capture_quiet.py, with the private audio server's environment: capture the
default output's loopback while playing ``SIGNAL`` into it, told "quiet" (read 500 ms at a time)
before and after the middle of it, and save what was delivered.

    python tests/capture_recorder.py SIGNAL.wav OUT.npz SINK
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import numpy as np

from daemon.audio.capture import Block, CaptureThread


def main() -> None:
    signal, out, sink = sys.argv[1:4]
    blocks: list[Block] = []
    arrived = threading.Condition()
    quiet = [True]

    def deliver(block: Block) -> None:
        with arrived:
            blocks.append(block)
            arrived.notify_all()

    capture = CaptureThread("loopback", deliver, quiet=lambda: quiet[0])
    capture.start()
    with arrived:  # capturing, and reading quietly already
        if not arrived.wait_for(lambda: len(blocks) >= 3 and len(blocks[-1].samples) > 1600,
                                timeout=30):
            sys.exit(f"no quiet block came: {capture.state} {capture.detail}")
    player = subprocess.Popen(["paplay", f"--device={sink}", signal])
    for seconds, value in ((1.2, False), (1.2, True)):  # loud in the middle of the signal
        time.sleep(seconds)
        quiet[0] = value
    player.wait(timeout=60)
    with arrived:  # the signal's end is in, a block beyond it too
        count = len(blocks)
        arrived.wait_for(lambda: len(blocks) >= count + 3, timeout=30)
    capture.stop()
    np.savez(out, audio=np.concatenate([b.samples for b in blocks]),
             sizes=np.array([len(b.samples) for b in blocks]),
             epochs=np.array([b.epoch for b in blocks]))


if __name__ == "__main__":
    main()
