"""What `keep` writes on real meetings: archive quality, decision coverage, hygiene, speed.

    .venv/bin/python -m bench.meetings --data QMSUM_DIR
        [--model NAME ...] [--models-dir DIR ...] [--only ES2006c ...] [--context TOKENS]
        [--threads N] [--json FILE]
    .venv/bin/python -m bench.meetings --data QMSUM_DIR --decisions-only

The data is QMSum-shaped (``docs/benchmarks/keep.md``): one directory per series, each meeting
in BrainCue's transcript import format, and ``queries.json`` with the gold general summary and
specific queries per meeting. Each series is imported into its own Space (activity ``project``)
of a fresh store, and its meetings are kept in order with the real language and embedding
models — exactly ``Rememberer.remember(session, "keep")``. Per meeting and overall it prints:

- keep time, tokens generated, peak RSS (this process, reset before each keep), and whether the
  archive and the extraction pass each succeeded;
- ROUGE-1/2/Lsum F1 of the rendered archive against the gold general summary (``rouge-score``
  with stemming, QMSum's setting; Lsum over lines);
- decision coverage: for the specific queries about decisions, the ROUGE-1 recall of the gold
  answer by the meeting's *Decided* section plus its decision assertions;
- hygiene counts (deterministic, see :func:`hygiene`).

``--model`` may be given several times: the models run one after the other over the same
meetings and the overall lines are printed side by side. ``--only`` restricts the run to
series or meetings (``ES2006``, ``ES2006c``); a meeting's series is still kept in order up to it
only when the earlier meetings are named too.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import statistics
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from daemon.memory.archive import FORMATS
from daemon.memory.validate import copied_run, norm, words

DECISION_QUERY = re.compile(r"\b(decid\w*|decision\w*|agree\w*|conclu\w*)\b", re.I)
SHORT_ITEM_WORDS = 3  # a section item of at most this many words is a label, not a statement
# ... unless a verb makes it one: "Marketing will investigate." (the commitment as said) is a
# statement; "Project Manager", "Design project" and "User Interface" are not
_STATEMENT_VERB = re.compile(r"\b(will|shall|is|are|was|were|has|have|had|can|must|"
                             r"decided|agreed|chose)\b", re.I)


def label_item(item: str) -> bool:
    """Whether a section item is only a role, a name or a heading: a few words, no verb."""
    return len(words(item)) <= SHORT_ITEM_WORDS and not _STATEMENT_VERB.search(item)
PLACEHOLDER_OWNERS = {"me", "them"}


# -- pure scoring ------------------------------------------------------------------------------


def sentence_lines(text: str) -> str:
    """One sentence per line: rougeLsum scores summary-level LCS over lines."""
    lines = []
    for line in text.splitlines():
        lines += [s.strip() for s in re.split(r"(?<=[.!?])\s+", line) if s.strip()]
    return "\n".join(lines)


_SCORER: Any = None


def rouge(prediction: str, reference: str) -> dict[str, dict[str, float]]:
    """ROUGE-1/2/Lsum precision, recall and F1 (percent), rouge-score with the Porter stemmer."""
    global _SCORER
    if _SCORER is None:
        from rouge_score import rouge_scorer  # type: ignore[import-untyped]

        _SCORER = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeLsum"], use_stemmer=True)
    scores = _SCORER.score(sentence_lines(reference), sentence_lines(prediction))
    return {name: {"p": 100 * s.precision, "r": 100 * s.recall, "f": 100 * s.fmeasure}
            for name, s in scores.items()}


def decision_queries(queries: Iterable[Mapping[str, Any]], meeting: str) -> list[str]:
    """The gold answers of ``meeting``'s specific queries about decisions."""
    return [q["answer"] for q in queries
            if q["meeting"] == meeting and q["kind"] == "specific"
            and DECISION_QUERY.search(q["query"])]


def decision_coverage(decided_text: str, answers: Sequence[str]) -> float | None:
    """Mean ROUGE-1 recall (percent) of the gold ``answers`` by ``decided_text``; None without
    a decision query."""
    if not answers:
        return None
    return statistics.fmean(rouge(decided_text, a)["rouge1"]["r"] for a in answers)


def archive_sections(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """(participants, {section title: items}) of a rendered archive."""
    participants: list[str] = []
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("Who: "):
            participants = [p.strip() for p in line[5:].split(",") if p.strip()]
            current = None
        elif line.startswith("- ") and current is not None:
            current.append(line[2:])
        elif line.endswith(":") and not line.startswith("- "):
            title = line[:-1]
            current = None if title == "In their own words" else sections.setdefault(title, [])
        else:
            current = None
    return participants, sections


def scaffolding_patterns() -> list[re.Pattern[str]]:
    """What of the prompts must never be stored: piece labels, schema keys, the hints."""
    keys = {s.key for f in FORMATS.values() for s in f.sections if "_" in s.key}
    keys |= {"key_quotes", "about_person", "action_items"}
    hints = {s.hint for f in FORMATS.values() for s in f.sections}
    patterns = [re.compile(r"\bpart \d+ of \d+\b", re.I),
                re.compile(r"\b(" + "|".join(sorted(keys)) + r")\b"),
                re.compile(r"\b(an empty list if nothing fits|copied exactly|word for word|"
                           r"matching this json schema|one turn per line)\b", re.I)]
    patterns += [re.compile(re.escape(h), re.I) for h in sorted(hints)]
    with contextlib.suppress(ImportError):  # the examples a prompt gives (newer code only)
        from daemon.memory.extract import EXAMPLES  # type: ignore[attr-defined]

        patterns += [re.compile(re.escape(e.rstrip(".")), re.I) for e in EXAMPLES]
    return patterns


@dataclass(frozen=True)
class StoredAssertion:
    kind: str
    text: str
    chosen: str = ""
    alternatives: tuple[str, ...] = ()
    reasoning: str = ""
    owner: str = ""
    due: str = ""


def hygiene(archive_text: str, assertions: Sequence[StoredAssertion], speakers: Iterable[str],
            turns: Sequence[str]) -> dict[str, int]:
    """The deterministic hygiene counts of one kept meeting (every one should be 0)."""
    people = {norm(s) for s in speakers}
    owners = people | PLACEHOLDER_OWNERS
    participants, sections = archive_sections(archive_text)
    seen: dict[str, str] = {}
    repeated = 0
    for title, items in sections.items():
        for item in items:
            key = norm(item)
            if key in seen and seen[key] != title:
                repeated += 1
            seen.setdefault(key, title)
    stored = [archive_text] + [" ".join([a.text, a.chosen, a.reasoning, *a.alternatives])
                               for a in assertions]
    return {
        "repeated_items": repeated,
        "label_items": sum(label_item(i) for items in sections.values() for i in items),
        "foreign_participants": sum(norm(p) not in people for p in participants),
        "decisions_without_chosen": sum(a.kind == "decision" and not a.chosen.strip()
                                        for a in assertions),
        "owners_not_participants": sum(a.kind in ("commitment", "task")
                                       and norm(a.owner) not in owners for a in assertions),
        "verbatim_copies": sum(copied_run(a.text, turns) for a in assertions),
        "scaffolding": sum(len(p.findall(t)) for p in scaffolding_patterns() for t in stored),
    }


def decided_text(archive_text: str, assertions: Sequence[StoredAssertion]) -> str:
    """The *Decided* section and the decision assertions: what decision coverage reads."""
    _, sections = archive_sections(archive_text)
    parts = list(sections.get("Decided", []))
    for a in assertions:
        if a.kind == "decision":
            parts += [a.text, a.chosen, a.reasoning, *a.alternatives]
    return "\n".join(p for p in parts if p)


# -- the gold decisions and action items ------------------------------------------------------
# ``decisions.json`` lists per meeting the decisions (chosen, rejected, reason, keywords) and
# action items (owner, task, keywords) that the annotators' summaries and queries state,
# checked against the transcripts; its borderline decisions count neither way. A stored item
# matches a gold one when every gold keyword is in its words (a keyword's stem as a substring:
# "button" in "push-buttons") and, for an action item, its owner is the gold owner or one of
# them ("All" is anyone's). Each gold item is matched once; a stored item matching one already
# matched is a repeat, counted right (it is true) but not again in the recall.

ANYONE = {"all", "everyone", "the group", "the team"}


def keyword_in(keyword: str, text: str) -> bool:
    """Whether a gold keyword is in ``text``: its stem as a substring, casefolded."""
    key = keyword.casefold().replace("-", " ")
    for suffix in ("es", "s", "y"):  # "battery" is in "batteries" as "batter"
        if key.endswith(suffix) and len(key) - len(suffix) >= 4:
            key = key[: -len(suffix)]
            break
    # AMI spells letters out "L_C_D_s": the keyword is "lcd"
    return key in text.casefold().replace("-", " ").replace("_", "")


def owner_matches(owner: str, gold_owner: str) -> bool:
    """Whether a stored owner is the gold owner or one of them ("Industrial Designer and User
    Interface"); a gold owner "All" is anyone's."""
    gold = norm(gold_owner)
    if gold in ANYONE:
        return bool(norm(owner))
    who = norm(owner)
    return bool(who) and who not in ANYONE and re.search(rf"\b{re.escape(who)}\b", gold) is not None


def decision_words(a: StoredAssertion) -> str:
    return f"{a.text} {a.chosen}"


def gold_match(stored: StoredAssertion, gold: Mapping[str, Any]) -> bool:
    """Whether a stored decision or action item states a gold one (see above)."""
    keywords = gold.get("keywords") or []
    if "owner" in gold and not owner_matches(stored.owner, gold["owner"]):
        return False
    return bool(keywords) and all(keyword_in(k, decision_words(stored)) for k in keywords)


@dataclass
class Matched:
    """One stored item and the gold item it matched (its index; -1 none, -2 borderline)."""

    kind: str
    text: str
    gold: int
    repeat: bool = False
    alternatives: bool = False  # stored a rejected alternative
    reason: bool = False  # stored a reason
    owner: str = ""
    due: str = ""


@dataclass
class GoldScore:
    decisions_gold: int = 0
    decisions_stored: int = 0  # borderline ones left out
    decisions_right: int = 0  # stored ones that match a gold decision
    decisions_found: int = 0  # gold decisions matched
    borderline: int = 0  # stored decisions matching only a borderline one
    with_alternative: int = 0  # matched decisions whose gold names a rejected alternative
    alternative_stored: int = 0  # ... that store one
    with_reason: int = 0
    reason_stored: int = 0
    actions_gold: int = 0
    actions_stored: int = 0
    actions_right: int = 0
    actions_found: int = 0
    items: list[Matched] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)  # gold items nothing matched

    def add(self, other: GoldScore) -> None:
        for name in self.__dataclass_fields__:
            if name not in ("items", "missed"):
                setattr(self, name, getattr(self, name) + getattr(other, name))


def _match(stored: Sequence[StoredAssertion], gold: Sequence[Mapping[str, Any]],
           ) -> list[tuple[StoredAssertion, list[int], bool]]:
    """(stored, the gold items it newly matches — every one: "a simple battery, the advanced
    chip" states two — or the one it repeats, or [], repeat) for each stored item."""
    taken: set[int] = set()
    out = []
    for a in stored:
        hits = [i for i, g in enumerate(gold) if gold_match(a, g)]
        fresh = [i for i in hits if i not in taken]
        out.append((a, fresh or hits[:1], not fresh and bool(hits)))
        taken.update(fresh)
    return out


def score_gold(stored: Sequence[StoredAssertion], gold: Mapping[str, Any]) -> GoldScore:
    """Decision and action-item recall and precision of one meeting against its gold entry."""
    s = GoldScore()
    decisions = list(gold.get("decisions", []))
    borderline = list(gold.get("borderline_decisions", []))
    actions = list(gold.get("actions", []))
    s.decisions_gold, s.actions_gold = len(decisions), len(actions)
    found: set[int] = set()
    for a, hits, repeat in _match([a for a in stored if a.kind == "decision"], decisions):
        if not hits and any(gold_match(a, b) for b in borderline):
            s.borderline += 1
            s.items.append(Matched(a.kind, a.text, -2))
            continue
        s.decisions_stored += 1
        m = Matched(a.kind, a.text, hits[0] if hits else -1, repeat, bool(a.alternatives),
                    bool(a.reasoning))
        s.items.append(m)
        if not hits:
            continue
        s.decisions_right += 1
        if repeat:
            continue
        for i in hits:
            found.add(i)
            g = decisions[i]
            if g.get("rejected"):
                s.with_alternative += 1
                s.alternative_stored += m.alternatives
            if g.get("reason"):
                s.with_reason += 1
                s.reason_stored += m.reason
    s.decisions_found = len(found)
    done: set[int] = set()
    for a, hits, repeat in _match([a for a in stored if a.kind in ("commitment", "task")],
                                  actions):
        s.actions_stored += 1
        s.items.append(Matched(a.kind, a.text, hits[0] if hits else -1, repeat, owner=a.owner,
                               due=a.due))
        if hits:
            s.actions_right += 1
            done.update(hits)
    s.actions_found = len(done)
    s.missed = ([f"decision: {g['decision']}" for i, g in enumerate(decisions) if i not in found]
                + [f"action: {g['owner']}: {g['task']}" for i, g in enumerate(actions)
                   if i not in done])
    return s


def share(part: int, whole: int) -> str:
    return "-" if not whole else f"{100 * part / whole:.0f}%"


def gold_row(name: str, s: GoldScore) -> str:
    return (f"{name:<10} decisions R {share(s.decisions_found, s.decisions_gold):>4} "
            f"({s.decisions_found}/{s.decisions_gold}) P "
            f"{share(s.decisions_right, s.decisions_stored):>4} "
            f"({s.decisions_right}/{s.decisions_stored}, {s.borderline} borderline) "
            f"alt {s.alternative_stored}/{s.with_alternative} why {s.reason_stored}/"
            f"{s.with_reason}; actions R {share(s.actions_found, s.actions_gold):>4} "
            f"({s.actions_found}/{s.actions_gold}) P {share(s.actions_right, s.actions_stored):>4}"
            f" ({s.actions_right}/{s.actions_stored})")


def gold_report(scored: Sequence[tuple[str, GoldScore]], *, items: bool = True) -> list[str]:
    """Per meeting its gold row and (``items``) every stored decision and action item with
    whether it matched, and the gold items missed; then the total row."""
    total = GoldScore()
    lines = []
    for meeting, s in scored:
        total.add(s)
        lines.append(gold_row(meeting, s))
        if not items:
            continue
        for m in s.items:
            mark = {-1: "no   ", -2: "bord "}.get(m.gold, "REP  " if m.repeat else "YES  ")
            extra = "".join(f" [{k}]" for k, v in (("alt", m.alternatives), ("why", m.reason))
                            if v)
            who = f" (owner {m.owner}{', due ' + m.due if m.due else ''})" if m.owner else ""
            lines.append(f"    {mark}{m.kind}: {m.text}{who}{extra}")
        lines += [f"    MISSED {g}" for g in s.missed]
    lines.append(gold_row("total", total))
    return lines


@dataclass
class MeetingResult:
    model: str
    meeting: str
    turns: int
    chars: int
    keep_s: float
    cpu_s: float  # this process's CPU time during the keep: what a busy machine cannot change
    tokens: int
    peak_rss_mib: float
    archive_ok: bool
    extraction_ok: bool
    rouge1: float
    rouge2: float
    rougeLsum: float
    coverage: float | None
    assertions: int
    kinds: dict[str, int]
    hygiene: dict[str, int]
    notes: list[str] = field(default_factory=list)
    # where the keep's model time went, by kind of call: calls, seconds, prompt and generated tokens
    calls: dict[str, dict[str, float]] = field(default_factory=dict)
    archive: str = ""
    stored: list[dict[str, Any]] = field(default_factory=list)


def overall(results: Sequence[MeetingResult]) -> dict[str, Any]:
    """Means (coverage over the meetings that have decision queries) and hygiene totals."""
    covered = [r.coverage for r in results if r.coverage is not None]
    totals: dict[str, int] = {}
    for r in results:
        for k, v in r.hygiene.items():
            totals[k] = totals.get(k, 0) + v
    return {
        "meetings": len(results),
        "keep_s": sum(r.keep_s for r in results),
        "cpu_s": sum(r.cpu_s for r in results),
        "tokens": sum(r.tokens for r in results),
        "peak_rss_mib": max((r.peak_rss_mib for r in results), default=0.0),
        "failed_passes": sum((not r.archive_ok) + (not r.extraction_ok) for r in results),
        "rouge1": statistics.fmean(r.rouge1 for r in results) if results else 0.0,
        "rouge2": statistics.fmean(r.rouge2 for r in results) if results else 0.0,
        "rougeLsum": statistics.fmean(r.rougeLsum for r in results) if results else 0.0,
        "coverage": statistics.fmean(covered) if covered else None,
        "hygiene": totals,
    }


HYGIENE_SHORT = {"repeated_items": "rep", "label_items": "lbl", "foreign_participants": "who",
                 "decisions_without_chosen": "nochs", "owners_not_participants": "own",
                 "verbatim_copies": "copy", "scaffolding": "scaf"}


def row(name: str, keep_s: float, cpu_s: float, tokens: int, rss: float, passes: str,
        r1: float, r2: float, rl: float, coverage: float | None, hyg: Mapping[str, int]) -> str:
    cov = "-" if coverage is None else f"{coverage:.1f}"
    counts = " ".join(f"{hyg.get(k, 0):>{len(v)}}" for k, v in HYGIENE_SHORT.items())
    return (f"{name:<18} {keep_s:>7.1f} {cpu_s:>7.1f} {tokens:>6} {rss:>6.0f} {passes:>5} "
            f"{r1:>5.1f} {r2:>5.1f} {rl:>5.1f} {cov:>5} {counts}")


def header() -> str:
    counts = " ".join(HYGIENE_SHORT.values())
    return (f"{'meeting':<18} {'keep s':>7} {'CPU s':>7} {'tokens':>6} {'RSS MB':>6} "
            f"{'pass':>5} {'R-1':>5} {'R-2':>5} {'R-Ls':>5} {'dcov':>5} {counts}")


def result_row(r: MeetingResult) -> str:
    passes = ("A" if r.archive_ok else "-") + ("E" if r.extraction_ok else "-")
    return row(r.meeting, r.keep_s, r.cpu_s, r.tokens, r.peak_rss_mib, passes, r.rouge1,
               r.rouge2, r.rougeLsum, r.coverage, r.hygiene)


def calls_row(calls: Mapping[str, Mapping[str, float]]) -> str:
    """Where a keep's model time went: per kind of call, calls x seconds and the tokens read
    (prompt, prefix reuse included) and written."""
    return "  " + "; ".join(
        f"{kind} {u['calls']:.0f}x {u['seconds']:.1f} s, {u['prompt_tokens']:.0f} read "
        f"{u['completion_tokens']:.0f} written" for kind, u in calls.items())


def overall_row(name: str, o: Mapping[str, Any]) -> str:
    return row(name, o["keep_s"], o.get("cpu_s", 0.0), o["tokens"], o["peak_rss_mib"],
               f"{o['failed_passes']}x", o["rouge1"], o["rouge2"], o["rougeLsum"],
               o["coverage"], o["hygiene"])


# -- running -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Meeting:
    series: str
    name: str
    path: Path
    queries: tuple[Mapping[str, Any], ...]


def load(data: Path, only: Sequence[str] = ()) -> list[Meeting]:
    """The meetings under ``data`` in series and meeting order, those named in ``only``."""
    meetings = []
    for series in sorted(p for p in data.iterdir() if (p / "queries.json").is_file()):
        queries = tuple(json.loads((series / "queries.json").read_text()))
        for path in sorted(series.glob("*.json")):
            if path.name == "queries.json":
                continue
            if only and not any(path.stem.startswith(o) for o in only):
                continue
            meetings.append(Meeting(series.name, path.stem, path, queries))
    return meetings


def _reset_peak_rss() -> None:
    with contextlib.suppress(OSError):  # Linux: resets VmHWM, the peak RSS
        Path("/proc/self/clear_refs").write_text("5")


def _peak_rss_mib() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def installed(name: str, models_dirs: Sequence[Path]) -> Path:
    """``name``'s file in the first of ``models_dirs`` that has it."""
    from daemon.errors import ModelNotInstalled
    from daemon.models.registry import model_path

    for directory in models_dirs[:-1]:
        with contextlib.suppress(ModelNotInstalled):
            return model_path(name, directory)
    return model_path(name, models_dirs[-1])


def run_model(model: str, meetings: Sequence[Meeting], args: argparse.Namespace,
              ) -> list[MeetingResult]:
    import trio

    from bench.remember import CountingGenerator
    from daemon.config import Settings
    from daemon.llm import LlamaEmbedder, ModelLoad
    from daemon.memory.remember import Rememberer
    from daemon.store.store import Store
    from daemon.store.transcript import import_transcript, parse_transcript

    generator = CountingGenerator(ModelLoad(installed(model, args.models_dir),
                                            threads=args.threads, n_ctx=args.context))
    embedder = LlamaEmbedder(installed(args.embed_model, args.models_dir), threads=args.threads,
                             batch=32)
    settings = Settings(llm_context=args.context, llm_threads=args.threads,
                        keep_detector=args.detector)
    results = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = Store(Path(tmp), embedder)
            try:
                rememberer = Rememberer(store, generator=lambda: generator,
                                        settings=lambda: settings)
                for m in meetings:
                    if m.series not in {s.name for s in store.list_spaces()}:
                        store.create_space(m.series, activity="project")
                    transcript = parse_transcript(m.path.read_bytes())
                    session, turns, _ = import_transcript(store, transcript, m.series)
                    generator.by_kind.clear()
                    _reset_peak_rss()
                    started, cpu = time.perf_counter(), time.process_time()
                    outcome = trio.run(rememberer.remember, session.id, "keep")
                    elapsed = time.perf_counter() - started
                    cpu = time.process_time() - cpu
                    rss = _peak_rss_mib()
                    chunks = store.archive(session.id)
                    text = chunks[0].body if chunks else ""
                    stored = [StoredAssertion(a.kind, a.text, a.chosen or "", a.alternatives,
                                              a.reasoning or "", a.owner or "", a.due or "")
                              for a in store.list_assertions(session_id=session.id)]
                    result = score(model, m, [t.speaker for t in turns],
                                   [t.text for t in turns], text, stored)
                    result.keep_s = elapsed
                    result.cpu_s = cpu
                    result.tokens = sum(u.completion_tokens for u in generator.by_kind.values())
                    result.peak_rss_mib = rss
                    result.archive_ok = outcome.archived
                    result.extraction_ok = not any(n.startswith("extraction failed")
                                                   for n in outcome.notes)
                    result.notes = list(outcome.notes)
                    result.calls = {kind: asdict(u) for kind, u in generator.by_kind.items()}
                    results.append(result)
                    print(result_row(result), flush=True)
                    print(calls_row(result.calls), flush=True)
                    if args.json:  # a long run's figures so far, readable while it goes on
                        args.json.with_suffix(".partial.json").write_text(
                            json.dumps([asdict(r) for r in results], indent=1))
            finally:
                store.close()
    finally:
        generator.close()
        embedder.close()
    return results


def score(model: str, meeting: Meeting, speakers: Sequence[str], turns: Sequence[str],
          archive_text: str, stored: Sequence[StoredAssertion]) -> MeetingResult:
    """The quality figures of one kept meeting (timing fields left 0 for the caller)."""
    gold = next(q["answer"] for q in meeting.queries
                if q["meeting"] == meeting.name and q["kind"] == "general")
    scores = rouge(archive_text, gold)
    kinds: dict[str, int] = {}
    for a in stored:
        kinds[a.kind] = kinds.get(a.kind, 0) + 1
    return MeetingResult(
        model=model, meeting=meeting.name, turns=len(turns), chars=sum(map(len, turns)),
        keep_s=0.0, cpu_s=0.0, tokens=0, peak_rss_mib=0.0, archive_ok=bool(archive_text),
        extraction_ok=True, rouge1=scores["rouge1"]["f"], rouge2=scores["rouge2"]["f"],
        rougeLsum=scores["rougeLsum"]["f"],
        coverage=decision_coverage(decided_text(archive_text, stored),
                                   decision_queries(meeting.queries, meeting.name)),
        assertions=len(stored), kinds=kinds,
        hygiene=hygiene(archive_text, stored, speakers, turns),
        archive=archive_text, stored=[asdict(a) for a in stored],
    )


# -- decisions only: no model ------------------------------------------------------------------


@dataclass
class KeptDecision:
    ref: str  # the turn that states it (the transcript's ``ref``, else its index)
    speaker: str
    text: str
    chosen: str
    alternatives: list[str]
    reasoning: str
    evidence: str
    stored: bool = True  # as an assertion too (a transcript chunk supports it)


@dataclass
class SaidItem:
    ref: str  # the turn that takes it on
    kind: str  # commitment or task
    text: str
    owner: str
    due: str


@dataclass
class DecisionsResult:
    meeting: str
    coverage: float | None
    decided: list[str]  # the archive's *Decided* section
    decisions: list[KeptDecision]
    # the action items said in so many words ("I'll put the minutes in the project documents
    # folder"), stored without the model; the others go to the model to be worded
    actions: list[SaidItem] = field(default_factory=list)
    actions_to_word: int = 0


def keep_decisions(meeting: Meeting) -> DecisionsResult:
    """The decisions a keep of a long ``meeting`` stores and its *Decided* section, and their
    decision coverage, with the keep's own functions and no model: a long transcript's
    decisions are read off the words said and validated (``remember.checked_decisions``, as
    the keep does) and are the *Decided* section (``archive.build_archive``); the action items
    said in so many words are stored as the keep stores them (``said_assertion``), and those
    the model would word are only counted. What the model would write (summary, the other
    action items) and the reconciliation with earlier meetings' assertions are left out. A
    decision no transcript chunk supports (``find_anchor``) is in *Decided* only, as in a keep."""
    from daemon.memory import archive, validate
    from daemon.memory.extract import AnchorCandidate, check_assertion, find_anchor, said_assertion
    from daemon.memory.remember import checked_decisions, kept_undertakings
    from daemon.store import chunking
    from daemon.store.records import Turn
    from daemon.store.transcript import parse_transcript

    transcript = parse_transcript(meeting.path.read_bytes())
    turns = [Turn(id=i + 1, session_id=1, seq=i, speaker=t.speaker, source="import",
                  start=t.t, end=t.end if t.end is not None else t.t, text=t.text, ref=t.ref)
             for i, t in enumerate(transcript.turns)]
    people = validate.speakers(t.speaker for t in turns)
    kept = [(t, a) for t, a in checked_decisions(turns) if a.kind == "decision"]
    # stored as an assertion only when a transcript chunk supports it (the Decided section
    # keeps it either way), as the store cuts the chunks
    ctx = chunking.ChunkContext(date=transcript.started_at.date(), kind="transcript",
                                title=transcript.title,
                                participants=tuple(people))
    chunks = [AnchorCandidate(i, c.body) for i, c in enumerate(chunking.chunk_turns(
        [chunking.ChunkTurn(id=t.id, speaker=t.speaker, start=t.start, text=t.text)
         for t in turns], ctx))]
    anchored = [(t, a) for t, a in kept if find_anchor(a, chunks) is not None]
    fmt = archive.format_for("project")
    built = archive.build_archive(
        fmt, archive.ArchiveEnvelope(),
        [archive.TranscriptTurn(t.id, t.speaker, validate.fluent(t.text)) for t in turns],
        archive.stated_sections(fmt, [(a.kind, a.text) for _, a in kept]))
    stored = [StoredAssertion(a.kind, a.text, a.chosen, tuple(a.alternatives), a.reasoning)
              for _, a in anchored]
    pairs = [(t.speaker, t.text) for t in turns]
    groups = kept_undertakings(pairs, people)
    worded = [(turns[g[0].index], said_assertion(g, pairs)) for g in groups]
    actions = [SaidItem(t.ref or str(t.seq), a.kind, a.text, a.owner, a.due)
               for t, a in ((t, check_assertion(a, people, [x.text for x in turns]))
                            for t, a in worded if a is not None) if a is not None]
    return DecisionsResult(
        meeting=meeting.name,
        coverage=decision_coverage(decided_text(archive.render(built, fmt), stored),
                                   decision_queries(meeting.queries, meeting.name)),
        decided=list(built.sections.get("decided", [])),
        decisions=[KeptDecision(t.ref or str(t.seq), t.speaker, a.text, a.chosen,
                                list(a.alternatives), a.reasoning, a.evidence,
                                (t, a) in anchored)
                   for t, a in kept],
        actions=actions, actions_to_word=sum(a is None for _, a in worded))


def decisions_report(results: Sequence[DecisionsResult]) -> list[str]:
    """The lines ``--decisions-only`` prints: per meeting its coverage and each decision kept
    with the turn that states it, then the mean over the meetings with decision queries."""
    lines = []
    for r in results:
        cov = "-" if r.coverage is None else f"{r.coverage:.1f}"
        lines.append(f"{r.meeting:<10} dcov {cov:>5}  {len(r.decisions)} kept, "
                     f"{len(r.decided)} in Decided")
        for d in r.decisions:
            extra = "".join(f"; {k} {v}" for k, v in (("because", d.reasoning),
                                                      ("instead of", ", ".join(d.alternatives)))
                            if v)
            unstored = "" if d.stored else " (Decided only: no chunk supports it)"
            lines.append(f"  {d.ref} {d.speaker}: {d.text} [chosen: {d.chosen}{extra}]"
                         f"{unstored}")
            lines.append(f"      said: {d.evidence}")
        lines += [f"  {a.ref} {a.kind}: {a.text}" + (f" (due {a.due})" if a.due else "")
                  for a in r.actions]
        if r.actions_to_word:
            lines.append(f"  and {r.actions_to_word} undertakings the model words")
    covered = [r.coverage for r in results if r.coverage is not None]
    mean = f"{statistics.fmean(covered):.1f}" if covered else "-"
    lines.append(f"mean decision coverage {mean} over {len(covered)} meetings with decision "
                 f"queries; {sum(len(r.decisions) for r in results)} decisions kept in "
                 f"{len(results)} meetings")
    return lines


def stored_of(result: Mapping[str, Any]) -> list[StoredAssertion]:
    """The stored assertions of a meeting as a ``--json`` file holds them."""
    return [StoredAssertion(**{**a, "alternatives": tuple(a.get("alternatives", ()))})
            for a in result.get("stored", [])]


def gold_lines(results: Sequence[Mapping[str, Any]], gold: Mapping[str, Any],
               held_out: Sequence[str], *, items: bool = True) -> list[str]:
    """The gold report of kept meetings (``--json`` shaped), with the totals of the meetings
    tuned on and of the ``held_out`` series apart."""
    scored = [(r["meeting"], score_gold(stored_of(r), gold[r["meeting"]]))
              for r in results if r["meeting"] in gold]
    lines = gold_report(scored, items=items)
    if held_out:
        out = tuple(held_out)
        for name, part in (("tuned on", [x for x in scored if not x[0].startswith(out)]),
                           ("held out", [x for x in scored if x[0].startswith(out)])):
            total = GoldScore()
            for _, s in part:
                total.add(s)
            lines.append(gold_row(name, total) + f" [{len(part)} meetings]")
    return lines


def rescore(path: Path, gold: Mapping[str, Any], held_out: Sequence[str]) -> list[str]:
    """The figures of a run a ``--json`` file (or its ``.partial.json``) holds, scored again:
    the matcher is iterated without keeping again."""
    data = json.loads(path.read_text())
    runs = ({"": data} if isinstance(data, list)
            else {m: v["meetings"] for m, v in data["models"].items()})
    lines = []
    for model, results in runs.items():
        keep_s = [r["keep_s"] for r in results]
        lines += [f"{model} {len(results)} meetings, keep median "
                  f"{statistics.median(keep_s) if keep_s else 0:.1f} s",
                  *(f"{r['meeting']:<10} R-1 {r['rouge1']:.1f} hygiene "
                    f"{sum(r['hygiene'].values())} keep {r['keep_s']:.0f} s" for r in results),
                  *gold_lines(results, gold, held_out)]
        rouge1 = [r["rouge1"] for r in results]
        lines.append(f"mean ROUGE-1 {statistics.fmean(rouge1) if rouge1 else 0:.1f}, hygiene "
                     f"{sum(sum(r['hygiene'].values()) for r in results)}")
    return lines


def main() -> None:
    from bench.common import default_models_dir, machine, model_speed

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="a QMSum-shaped directory")
    parser.add_argument("--models-dir", type=Path, action="append",
                        help="a models directory, repeatable: each model is taken from the "
                             "first that has it (default: BRAINCUE_MODELS or the user's)")
    parser.add_argument("--model", action="append", help="language model (repeatable)")
    parser.add_argument("--embed-model", default="all-minilm-l6-v2")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--context", type=int, default=None,
                        help="the model's context tokens (default: the settings' llm_context)")
    parser.add_argument("--only", nargs="*", default=[], help="series or meetings to keep")
    parser.add_argument("--detector", action="store_true",
                        help="the keep with the turn detector on (the keep_detector setting)")
    parser.add_argument("--json", type=Path, help="write every figure, archive and assertion")
    parser.add_argument("--gold", type=Path,
                        help="the gold decisions and action items (default: decisions.json "
                             "in --data, when there)")
    parser.add_argument("--held-out", nargs="*", default=[],
                        help="series not tuned on: their gold totals are printed apart")
    parser.add_argument("--rescore", type=Path,
                        help="score a --json file of an earlier run again (no model)")
    parser.add_argument("--decisions-only", action="store_true",
                        help="no model: the decisions each keep would store, the turns that "
                             "state them, the decision coverage and the action items stored "
                             "as said (seconds)")
    args = parser.parse_args()
    gold_path = args.gold or args.data / "decisions.json"
    gold: dict[str, Any] = json.loads(gold_path.read_text()) if gold_path.is_file() else {}
    if args.rescore:
        print("\n".join(rescore(args.rescore, gold, args.held_out)))
        return
    if args.decisions_only:
        kept = [keep_decisions(m) for m in load(args.data, args.only)]
        print("\n".join(decisions_report(kept)))
        if gold:  # action items: only those stored without the model
            print("\n".join(gold_lines([
                {"meeting": r.meeting, "stored": [
                    *(asdict(StoredAssertion("decision", d.text, d.chosen,
                                             tuple(d.alternatives), d.reasoning))
                      for d in r.decisions if d.stored),
                    *(asdict(StoredAssertion(a.kind, a.text, owner=a.owner))
                      for a in r.actions)]}
                for r in kept], gold, args.held_out)))
        if args.json:
            args.json.write_text(json.dumps([asdict(r) for r in kept], indent=1))
        return
    args.models_dir = [*(args.models_dir or []), default_models_dir()]
    if args.context is None:
        from daemon.config import Settings

        args.context = Settings().llm_context
    models = args.model or ["qwen2.5-coder-0.5b"]
    meetings = load(args.data, args.only)
    print(f"{machine()} at start; {len(meetings)} meetings; threads {args.threads}, "
          f"context {args.context}")
    print("hygiene: " + ", ".join(f"{v} {k}" for k, v in HYGIENE_SHORT.items()))
    everything: dict[str, Any] = {"models": {}, "machine": machine(), "context": args.context}
    summaries = {}
    for model in models:
        print(f"\n{model}")
        speeds = [model_speed(installed(model, args.models_dir), args.threads)]
        print(speeds[0])
        print(header())
        results = run_model(model, meetings, args)
        summaries[model] = overall(results)
        print(overall_row("overall", summaries[model]))
        print(f"keep median {statistics.median(r.keep_s for r in results):.1f} s")
        if gold:
            print("\n".join(gold_lines([asdict(r) for r in results], gold, args.held_out)))
        speeds.append(model_speed(installed(model, args.models_dir), args.threads))
        print(f"{machine()} after {model}; {speeds[-1]}")
        everything["models"][model] = {"overall": summaries[model], "speed": speeds,
                                       "meetings": [asdict(r) for r in results]}
        if args.json:
            args.json.write_text(json.dumps(everything, indent=1))
    if len(models) > 1:
        print("\n" + header())
        for model, o in summaries.items():
            print(overall_row(model[-18:], o))


if __name__ == "__main__":
    main()
