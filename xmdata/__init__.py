"""xmdata: Prefect flows that build multilingual, multimodal evaluation datasets."""
__version__ = "0.1.0"
