"""The features, with no agent and no HTTP in them: reviews, the review gate's common part, the
tools' catalogue, the clients' sessions. Over `nvim` and `base`."""
