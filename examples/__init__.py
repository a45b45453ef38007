"""Examples: an agents file and a module of function tools (``examples.tools_example``)."""
