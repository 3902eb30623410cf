"""Ask figures over IPC: a real daemon subprocess, a store of 100 sessions, the installed LLM.

    .venv/bin/python -m bench.ask [--sessions 100] [--questions 5] [--live]

Imports synthetic transcripts through the protocol (ImportTranscript, into one Space), then asks
questions as `braincue ask` does — subscribed to the answer's topic, the request sent from a
thread — and prints, per question, the time to its evidence (the first event: what memory
holds, before the model writes), to the first token and to the checked reply, and
their medians, beside how long the same question's Search alone takes (the rest of the first
token's wait is the model reading its prompt). The first question also pays for loading the
model; it is reported apart. Evidence, first-token and whole-answer p50 and p95 close the table; it
opens with what llama.cpp alone reads and writes per second on the host right now.

With ``--live`` the questions are asked during a call: a private PulseAudio server (null
sinks, as in ``bench.live``), the daemon capturing both sources, a session started in the
Space, and bench.live's two-voice dialogue played in real time for the whole run, so whisper
transcribes beside the answers.

With ``--hotkey`` (implies ``--live``) it is the hotkey's case: in the call, "them" asks the
questions (spoken, transcribed by the daemon), the dialogue waits for the answer as a person
would, and ``--press-after`` seconds after the question was spoken the hotkey is pressed: an
Ask with no question, answered from the last question heard. Timed from the press; an answer
with nothing relevant recalled (no model) is shown but not counted. ``--set NAME=VALUE`` adds
a line to the daemon's config.toml (e.g. ``--set llm_read_question_ahead=false``).
``--vary NAME=V1,V2,...`` asks the same questions once per value of a setting (changed over
IPC between the rounds, one import, one warm-up), each round with its own p50/p95 line — e.g.
``--vary ask_source_chars=500,1100,2400`` for the source budget's cost. ``--home DIR`` keeps
the daemon's home and, given again, reuses its imported sessions (the same questions follow).
Models come from BRAINCUE_MODELS (else the user's models directory).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import random
import shutil
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec

from bench.common import default_models_dir, machine, model_speed, percentile
from bench.live import PAUSE_S, SCRIPT
from daemon.audio.testing import ME_SINK, THEM_SINK, PulseServer, speak
from daemon.config import Config
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    AddSpace,
    AnswerDone,
    AnswerEvidence,
    AnswerToken,
    Ask,
    AskReply,
    ImportTranscript,
    ListSpaces,
    Search,
    SettingsSet,
    Start,
    Status,
    Stop,
    answer_topic,
)
from daemon.ipc.testing import DaemonProcess, short_home, start_daemon
from daemon.models.registry import resolve_model

SPACE = "Bench"
PROJECTS = ["Atlas", "Borealis", "Cobalt", "Dune", "Ember", "Fjord", "Granite", "Harbor"]
PEOPLE = ["Sarah", "Tom", "Priya", "Lukas", "Mei", "Omar"]
TOPICS = ["the budget", "the launch date", "hiring", "the vendor contract", "onboarding",
          "the roadmap", "customer feedback", "the migration", "pricing", "the security review"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
QUESTIONS = [
    "When will the {p} launch happen?",
    "What did we decide about {t} for {p}?",
    "Who is responsible for {t} on {p}?",
    "What is the budget for {p}?",
    "What did {n} say about {t}?",
]


def transcript(i: int, rng: random.Random) -> dict[str, object]:
    """One synthetic meeting of about 24 turns about one project."""
    project = PROJECTS[i % len(PROJECTS)]
    other = rng.choice(PEOPLE)
    started = dt.datetime(2026, 1, 5, 10, tzinfo=dt.UTC) + dt.timedelta(days=i)
    turns = []
    for j in range(24):
        topic = rng.choice(TOPICS)
        speaker = "me" if j % 2 else other
        line = rng.choice([
            f"On {topic} for {project}, I think we should wait until {rng.choice(DAYS)}.",
            f"{rng.choice(PEOPLE)} will own {topic}; the deadline is {rng.choice(DAYS)}.",
            f"We agreed that {topic} stays as planned, with {rng.randint(2, 9)} people on it.",
            f"The {project} budget for {topic} is {rng.randint(10, 90)} thousand euros.",
            f"Can we revisit {topic} next week? The {project} team is stretched.",
            f"Customers asked about {topic} again; {rng.randint(3, 30)} tickets this month.",
        ])
        turns.append({"speaker": speaker, "text": line, "t": j * 20.0})
    return {"title": f"{project} sync {i + 1}", "started_at": started.isoformat(),
            "activity": "meeting", "turns": turns}


class Timed(msgspec.Struct, kw_only=True):
    """One answer as a client saw it: seconds from the request to its evidence (the first
    event), to its first token and to the checked reply; ``streamed``: the model's text as
    it was streamed, before the check."""

    evidence_s: float
    first_s: float
    total_s: float
    reply: AskReply
    streamed: str = ""


def ask_timed(request: Ask) -> Timed:
    """``request`` asked as a client asks it, timed (see :class:`Timed`)."""
    seen: dict[str, float] = {}
    tokens: list[str] = []
    outcome: list[AskReply | BaseException] = []
    with Client(timeout=30) as client, client.subscribe([answer_topic(request.id)]) as events:
        began = time.perf_counter()

        def send() -> None:
            try:
                with Client(timeout=600) as asking:
                    outcome.append(asking.request(request, timeout=600))
            except BaseException as e:
                outcome.append(e)

        sender = threading.Thread(target=send)
        sender.start()
        while True:
            event = events.receive(600)
            if isinstance(event, AnswerEvidence):
                seen.setdefault("evidence", time.perf_counter() - began)
            if isinstance(event, AnswerToken):
                seen.setdefault("first", time.perf_counter() - began)
                tokens.append(event.token)
            if isinstance(event, AnswerDone) or event is None:
                break
        sender.join()
        total = time.perf_counter() - began
    reply = outcome[0]
    if isinstance(reply, BaseException):
        raise reply
    return Timed(evidence_s=seen.get("evidence", total), first_s=seen.get("first", total),
                 total_s=total, reply=reply, streamed="".join(tokens))


def prompt_reads(daemon: DaemonProcess) -> list[str]:
    """The daemon's log lines saying how much of each answer's prompt the model read."""
    return [line.split("answer ", 1)[1] for line in daemon.log().splitlines()
            if "answer prompt of" in line]


def search_time(question: str) -> float:
    """Seconds a Search for ``question`` takes over IPC: the recall part of an answer."""
    with Client(timeout=120) as client:
        began = time.perf_counter()
        client.request(Search(query=question, space=SPACE), timeout=120)
        return time.perf_counter() - began



@contextmanager
def call_in_progress(pulse: PulseServer, voices: list[Path]) -> Iterator[None]:
    """A live session in the Space, the dialogue playing into it until the block ends."""
    with Client(timeout=120) as client:
        wait_for_capture(client)
        client.request(Start(title="Bench call", space=SPACE))
    done = threading.Event()

    def play() -> None:
        i = 0
        while not done.is_set():
            who, _ = SCRIPT[i % len(SCRIPT)]
            pulse.play(ME_SINK if who == "me" else THEM_SINK, voices[i % len(SCRIPT)])
            done.wait(PAUSE_S)  # the dialogue's own pace
            i += 1

    player = threading.Thread(target=play, daemon=True)
    player.start()
    time.sleep(20)  # let the call run a while before the first question: turns to read
    try:
        yield
    finally:
        done.set()
        player.join(30)
        with Client(timeout=120) as client:
            stopped = client.request(Stop())
        print(f"the call: {stopped.turns} turns transcribed meanwhile")


def hotkey_call(pulse: PulseServer, questions: list[str], press_after: float,
                timed: list[Timed], folder: Path,
                daemon: DaemonProcess) -> None:
    """A live session in which "them" asks each of ``questions``; ``press_after`` seconds after
    each is spoken, the hotkey asks (no question: the last one heard)."""
    lines = [("me", "Thanks for joining. Let us go through the projects."),
             *[("them", f"Sure. {question}") for question in questions]]
    voices = [speak(text, "en-us" if who == "me" else "en-gb+f3", folder / f"hotkey-{n}.wav")
              for n, (who, text) in enumerate(lines)]
    with Client(timeout=120) as client:
        wait_for_capture(client)
        client.request(Start(title="Bench call", space=SPACE))
    pulse.play(ME_SINK, voices[0])
    for i, question in enumerate(questions, 1):
        time.sleep(PAUSE_S)
        pulse.play(THEM_SINK, voices[i])
        time.sleep(press_after)
        read = len(prompt_reads(daemon))
        one = ask_timed(Ask(id=uuid.uuid4().hex))
        reply = one.reply
        counted = not reply.nothing_found and i > 1  # the first loads the model
        if counted:
            timed.append(one)
        label = "warm-up (loads the model)" if i == 1 else f"question {i - 1}"
        note = "" if counted else "  (not counted: " + (
            "nothing relevant recalled)" if reply.nothing_found else "the warm-up)")
        prompt = next(iter(prompt_reads(daemon)[read:]), "no prompt read")
        print(f"{label:<26} evidence {one.evidence_s:5.2f} s   first token {one.first_s:6.2f} s"
              f"   answer {one.total_s:6.2f} s   asked "
              f"{question!r}, heard {reply.question!r}{note}\n{'':<26} {prompt}")
        pulse.play(ME_SINK, voices[0])  # the user carries on with the next project
    with Client(timeout=120) as client:
        stopped = client.request(Stop())
    print(f"the call: {stopped.turns} turns transcribed")


def wait_for_capture(client: Client) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        live = client.request(Status()).live
        if live is not None and all(s.state == "capturing" for s in live.sources.values()):
            return
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--live", action="store_true",
                        help="ask while a live session is transcribing (PulseAudio null sinks)")
    parser.add_argument("--hotkey", action="store_true",
                        help="in a live call, 'them' asks; the hotkey answers (implies --live)")
    parser.add_argument("--press-after", type=float, default=2.0, metavar="S",
                        help="seconds from the end of their question to the hotkey press")
    parser.add_argument("--set", dest="settings", action="append", default=[],
                        metavar="NAME=VALUE", help="a config.toml line for the daemon")
    parser.add_argument("--vary", metavar="NAME=V1,V2,...",
                        help="ask the questions once per value of this setting (not --live)")
    parser.add_argument("--home", type=Path,
                        help="keep the daemon's home here and reuse the sessions imported "
                             "before (a short path: its sockets live inside)")
    args = parser.parse_args()
    args.live = args.live or args.hotkey
    rng = random.Random(args.seed)

    home = short_home() if args.home is None else args.home
    config = home / "config" / "config.toml"  # (a reused home's earlier settings go)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("".join(f"{line}\n" for line in args.settings))
    os.environ["BRAINCUE_HOME"] = str(home)
    os.environ.setdefault("BRAINCUE_MODELS", str(default_models_dir()))
    pulse = PulseServer() if args.live else None
    voices: list[Path] = []
    folder = tempfile.TemporaryDirectory()
    if pulse is not None:
        pulse.start()
        os.environ.update(BRAINCUE_CAPTURE="on", XDG_RUNTIME_DIR=str(pulse.runtime_dir))
        voices = [speak(text, "en-us" if who == "me" else "en-gb+f3",
                        Path(folder.name) / f"{n}.wav") for n, (who, text) in enumerate(SCRIPT)]
    else:
        os.environ.setdefault("BRAINCUE_CAPTURE", "off")  # a benchmark never listens
    print(f"machine: {machine()}")
    # how fast this host reads right now, with the daemon's model and threads (its config.toml,
    # written above): first-token figures of different hosts and hours differ by it (the same
    # code: 0.74 s on one 2-core host, 1.06-1.35 s on another)
    daemon_config = Config.load()
    print(model_speed(resolve_model("llm", daemon_config.settings.llm_model,
                                    daemon_config.paths.models_dir),
                      threads=daemon_config.settings.llm_threads))
    daemon = start_daemon(home)
    try:
        with Client(timeout=600) as client:
            # (a reused home has them: made all the same, so that the questions are too)
            reused = any(s.name == SPACE for s in client.request(ListSpaces()).spaces)
            if not reused:
                client.request(AddSpace(name=SPACE))
            began = time.perf_counter()
            for i in range(args.sessions):
                content = json.dumps(transcript(i, rng)).encode()
                if not reused:
                    client.request(ImportTranscript(content=content, space=SPACE), timeout=600)
            imported = time.perf_counter() - began
            status = client.request(Status())
        print(f"{'reused' if reused else 'imported'} {args.sessions} sessions in "
              f"{imported:.1f} s ({status.counts}); models: "
              f"{', '.join(status.models_loaded) or 'none'}")

        questions = [QUESTIONS[i % len(QUESTIONS)].format(
            p=rng.choice(PROJECTS), t=rng.choice(TOPICS), n=rng.choice(PEOPLE))
            for i in range(args.questions + 1)]
        timed: list[Timed] = []
        recalls: list[float] = []
        if args.vary:
            vary(args.vary, questions, daemon)
        elif args.hotkey and pulse is not None:
            hotkey_call(pulse, questions, args.press_after, timed, Path(folder.name), daemon)
        else:
            during = (call_in_progress(pulse, voices) if pulse is not None
                      else contextlib.nullcontext())
            with during:
                ask_all(questions, timed, recalls, daemon)
        if recalls:
            print(f"median over {len(timed)}: first token "
                  f"{statistics.median(t.first_s for t in timed):.2f} s, whole answer "
                  f"{statistics.median(t.total_s for t in timed):.2f} s, the search in it "
                  f"{statistics.median(recalls):.2f} s; load average now {os.getloadavg()[0]:.2f}")
        if timed:
            case = (f"the hotkey, pressed {args.press_after:g} s after their question"
                    if args.hotkey else "during a live call" if args.live else "idle")
            print(f"{case}: {latencies(timed)}")
    finally:
        code = daemon.stop()
        if code != 0:
            print(f"daemon exited with {code}:\n{daemon.log()[-2000:]}")
        if pulse is not None:
            pulse.close()
        folder.cleanup()
        if args.home is None:
            shutil.rmtree(home, ignore_errors=True)


def vary(spec: str, questions: list[str], daemon: DaemonProcess) -> None:
    """``ask_all`` once per value of the setting ``spec`` names (``NAME=V1,V2,...``): the
    model is loaded by the first round's warm-up, the later rounds ask only the questions."""
    name, _, values = spec.partition("=")
    summary = []
    for round_, value in enumerate(values.split(",")):
        with Client(timeout=120) as client:
            client.request(SettingsSet(key=name, value=value))
        print(f"-- {name} = {value}")
        timed: list[Timed] = []
        ask_all(questions if round_ == 0 else questions[1:], timed, [], daemon,
                warm_up=round_ == 0)
        summary.append(f"{name} = {value}: {latencies(timed)} (n={len(timed)}; load average "
                       f"{os.getloadavg()[0]:.2f})")
    print("\n".join(summary))


def latencies(timed: list[Timed]) -> str:
    """The evidence, first-token and whole-answer times of ``timed``, p50 / p95."""

    def line(name: str, values: list[float]) -> str:
        return (f"{name} p50 {statistics.median(values):.2f} s / p95 "
                f"{percentile(values, 0.95):.2f} s")

    return ", ".join([line("evidence", [t.evidence_s for t in timed]),
                      line("first token", [t.first_s for t in timed]),
                      line("whole answer", [t.total_s for t in timed])])


def ask_all(questions: list[str], timed: list[Timed], recalls: list[float],
            daemon: DaemonProcess, *, warm_up: bool = True) -> None:
    """Ask each question in turn, printing its figures and how much of its prompt the model
    read for it (the daemon's log); the first one is the warm-up (with ``warm_up``)."""
    for i, question in enumerate(questions, 0 if warm_up else 1):
        read = len(prompt_reads(daemon))
        one = ask_timed(Ask(id=uuid.uuid4().hex, question=question, space=SPACE))
        recall = search_time(question)
        words = len(one.reply.answer.split())
        label = "warm-up (loads the model)" if i == 0 else f"question {i}"
        prompt = next(iter(prompt_reads(daemon)[read:]), "no prompt read")
        print(f"{label:<26} evidence {one.evidence_s:5.2f} s   first token {one.first_s:6.2f} s"
              f"   answer {one.total_s:6.2f} s   (its search alone {recall:5.2f} s)   "
              f"{words:3d} words, {len(one.reply.evidence)} evidence, "
              f"{len(one.reply.sources)} sources   {question}\n{'':<26} {prompt}")
        if i:
            timed.append(one)
            recalls.append(recall)


if __name__ == "__main__":
    main()
