"""What differs per agent: one package each (docs/ARCHITECTURE.md, "Adding an agent")."""
