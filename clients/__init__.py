"""Thin clients of the BrainCue daemon."""
