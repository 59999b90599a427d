"""The bottom layer: what knows nothing of reviews, agents or HTTP (private files, the port's owner,
the heap's figures, the log's setup, the workspace's paths). Imports nothing else of ours."""
