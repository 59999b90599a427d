"""What tests/ and bench/ share: a real headless Neovim, MCP clients, the Node drivers, fuzz strategies."""
