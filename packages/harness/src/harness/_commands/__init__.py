"""One module per CLI command; each imports its heavy dependencies inside the command body."""
