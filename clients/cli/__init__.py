"""Command groups of the `braincue` shell client, one module per area."""
