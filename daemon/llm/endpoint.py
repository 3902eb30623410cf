"""Where a language-model server is, and whether conversation text may go there (pure).

Nothing leaves the machine unless the user says so: a server is on this machine when its URL
names a loopback address (127.0.0.0/8, ::1), ``localhost``, or a Unix socket (``unix:PATH``).
Any other host is refused unless ``llm_allow_network`` is on. Names are not resolved: a name
that happens to resolve to this machine counts as another host (what it resolves to can
change).
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from dataclasses import dataclass

from daemon.errors import ConfigError, NetworkRefused

API_PATH = "/v1"  # where an OpenAI-compatible server answers when the URL names no path


@dataclass(frozen=True)
class Endpoint:
    """A checked server address: ``base`` is the API's URL (requests go to
    ``base + "/chat/completions"``), through the Unix socket ``socket`` when there is one;
    ``host`` is what the user is told about; ``off_machine``: conversation text leaves the
    machine."""

    url: str
    base: str
    host: str
    socket: str | None = None
    off_machine: bool = False


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a URL's host, brackets removed) is this machine by its very name."""
    name = host.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def parse(url: str, *, allow_network: bool) -> Endpoint:
    """``url`` (``llm_url``) checked: ConfigError when it is no server address, NetworkRefused
    when it is off this machine and ``allow_network`` is off."""
    text = url.strip()
    if not text:
        raise ConfigError("llm_engine is openai but llm_url is empty",
                          fix="set it, e.g. `braincue settings set llm_url "
                              "http://127.0.0.1:11434/v1` (Ollama)")
    if text.startswith("unix:"):
        path = urllib.parse.unquote(text.removeprefix("unix:").removeprefix("//"))
        if not path.startswith("/"):
            raise ConfigError(f"llm_url {url!r}: a Unix socket needs an absolute path",
                              fix="write it as unix:/path/to/socket")
        return Endpoint(url=text, base=f"http://localhost{API_PATH}", host=f"unix:{path}",
                        socket=path)
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"llm_url {url!r} is not a server address",
                          fix="write it as http://HOST:PORT/v1 or unix:/path/to/socket")
    try:
        port = parts.port
    except ValueError as e:
        raise ConfigError(f"llm_url {url!r}: {e}", fix="write the port as a number") from e
    host = parts.hostname
    shown = f"[{host}]" if ":" in host else host
    shown += f":{port}" if port is not None else ""
    path = parts.path.rstrip("/") or API_PATH
    base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))
    off = not is_loopback(host)
    if off and not allow_network:
        raise NetworkRefused(
            f"llm_url {text} is not on this machine: conversation text would go to {shown}",
            fix="use a server on this machine (127.0.0.1, ::1, localhost or unix:/path), or "
                "allow it with `braincue settings set llm_allow_network true`")
    return Endpoint(url=text, base=base, host=shown, off_machine=off)
