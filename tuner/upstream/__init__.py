"""The private names of upstream libraries rnntune relies on, one adapter module per library.

Each module says why it needs every private name it uses, checks at start-up that the installed
version is the one its names were read from, and has a test of the behaviour it relies on
(tests/tuner/upstream/); no other module imports a private name of Ray or Optuna
(tests/test_layout.py). docs/contracts.md lists what an upgrade of either must re-check.
"""
