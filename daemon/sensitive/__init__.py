"""The sensitive-data gate: finding secrets said aloud or written, and masking them.

Pure functions over strings, importing nothing of the daemon's: the store masks what it writes
and shows with them, and the memory masks what a model wrote.
"""
