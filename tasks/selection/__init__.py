"""Geo-diverse image selection (Crossmodal-3600): geocoding, where languages are spoken, greedy and optimal picks."""
