"""Gemini CLI: its IDE companion protocol (discovery file, context notifications, openDiff/closeDiff)."""
