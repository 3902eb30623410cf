"""The request handlers: wire types in, domain calls, wire types out.

One module per request family, each with a daemon part ``register(daemon: Context)`` (see
``daemon.app``) typed against :class:`daemon.handlers.context.Context`, never against the app.
The transport (``daemon.ipc``) reaches them only through ``daemon.ipc.dispatch``.
"""
