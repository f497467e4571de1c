"""The API's start and stop of sweeps: `control` (the rules shared by the REST routes and `rnntune up`), `launcher` (child processes), `api_state` (what this layer needs of the API, as Protocols)."""
