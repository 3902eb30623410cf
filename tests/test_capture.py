"""Capture plumbing that needs no audio server: block timing and the drop-oldest channel."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import trio

from daemon.audio.capture import BLOCK, Block, BlockChannel, BlockClock
from daemon.audio.format import SAMPLE_RATE

BLOCK_S = BLOCK / SAMPLE_RATE


def test_block_times_start_at_the_first_arrival_and_follow_the_frame_count() -> None:
    clock = BlockClock()
    # the recorder opened at 100.0; frames only arrive a second later, then in bursts
    first = clock.stamp(BLOCK, arrived=101.1)
    assert first == pytest.approx(101.1 - BLOCK_S)
    later = [clock.stamp(BLOCK, arrived=a) for a in (101.5, 101.5, 101.5, 101.5)]
    assert later == pytest.approx([first + BLOCK_S * i for i in range(1, 5)])


def test_block_times_resync_when_audio_was_lost() -> None:
    clock = BlockClock(resync_s=2.0)
    clock.stamp(BLOCK, arrived=10.0)
    clock.stamp(BLOCK, arrived=10.1)  # the count says the next block ends at 10.2 ...
    after_gap = clock.stamp(BLOCK, arrived=15.0)  # ... but it arrives 5 s later
    assert after_gap == pytest.approx(15.0 - BLOCK_S)
    assert clock.stamp(BLOCK, arrived=15.1) == pytest.approx(15.0)


def _block(i: int) -> Block:
    return Block("mic", float(i), 1, np.full(BLOCK, i, dtype=np.float32))


async def test_a_full_channel_drops_its_oldest_blocks_and_counts_them() -> None:
    channel = BlockChannel(3)
    for i in range(5):
        channel.put(_block(i))
    assert channel.dropped == 2
    assert channel.pending() == 3
    kept = [channel.receive.receive_nowait().t for _ in range(3)]
    assert kept == [2.0, 3.0, 4.0]


async def test_blocks_put_from_another_thread_arrive_in_order() -> None:
    channel = BlockChannel(100)

    def produce() -> None:
        for i in range(10):
            channel.put_threadsafe(_block(i))

    await trio.to_thread.run_sync(produce)
    received: list[Any] = []
    with trio.fail_after(5):
        while len(received) < 10:
            received.append((await channel.receive.receive()).t)
    assert received == [float(i) for i in range(10)]
    assert channel.dropped == 0
