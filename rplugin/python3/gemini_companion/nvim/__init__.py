"""The one way into Neovim: the msgpack-RPC channel and the gateway every call goes through, with
its timeout. Over `base`, and the seam's messages (seam.py)."""
