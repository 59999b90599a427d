"""gemini-companion.nvim: the Python side (loaded by Neovim's Python host as a remote plugin).

Only the thin pynvim edge is imported here; everything heavy is imported by the server
thread after Neovim has drawn its first screen.
"""

from .plugin import GeminiCompanionPlugin

__all__ = ["GeminiCompanionPlugin"]
