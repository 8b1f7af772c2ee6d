"""The solver's version: it changes whenever any number that a given input produces changes (see the
CHANGELOG, "solver changes"). A stored result names the version that made it."""

SOLVER_VERSION = "1.8.0"
