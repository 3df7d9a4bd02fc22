"""Node objects -> GPU inventory (pure parsing), plus loading node lists from files."""
