"""Beam translation filtered by fastText language ID and COMETKiwi (multilingual CLIPScore)."""
