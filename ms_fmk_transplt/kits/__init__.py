"""What a kit (``kit aoe|profile|precision``) copies into its tree: ``msft_kit.py``, the runtime
of the kit's calls. The tool reads it as a file and never imports it."""
