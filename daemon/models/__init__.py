"""Models: the registry, what is installed, installing from the hub or package wheels, converters.

`daemon.models.registry` holds the data and resolves settings to installed files;
`daemon.models.install` downloads, builds and verifies them.
"""
