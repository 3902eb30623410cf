"""Run by tests/test_capture_quiet.py, with the private audio server's environment: capture the
default output's loopback while playing ``SIGNAL`` into it, read 1 s at a time, then 100 ms, then
500 ms, and save what was delivered.

    python tests/capture_recorder.py SIGNAL.wav OUT.npz SINK
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import numpy as np

from daemon.audio.capture import BLOCK, IDLE_BLOCK, QUIET_BLOCK, Block, CaptureThread


def main() -> None:
    signal, out, sink = sys.argv[1:4]
    blocks: list[Block] = []
    arrived = threading.Condition()
    size = [IDLE_BLOCK]

    def deliver(block: Block) -> None:
        with arrived:
            blocks.append(block)
            arrived.notify_all()

    capture = CaptureThread("loopback", deliver,
                            read_frames=lambda: size[0])
    capture.start()
    with arrived:  # capturing, and reading quietly already
        if not arrived.wait_for(lambda: len(blocks) >= 2 and len(blocks[-1].samples) > BLOCK,
                                timeout=30):
            sys.exit(f"no quiet block came: {capture.state} {capture.detail}")
    player = subprocess.Popen(["paplay", f"--device={sink}", signal])
    # read as between calls, then as while someone speaks, then as in a pause
    for seconds, value in ((1.2, BLOCK), (1.2, QUIET_BLOCK)):
        time.sleep(seconds)
        size[0] = value
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
