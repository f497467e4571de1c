"""One module per `rnntune` subcommand; each exposes `register(subparsers)`."""
