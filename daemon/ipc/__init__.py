"""The transport: the msgspec protocol, the trio<->ZeroMQ adapter, the ROUTER + XPUB server,
``dispatch`` (a request frame to its reply frame) and the client."""
