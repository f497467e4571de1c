"""The API's routers, one module per resource: studies, trials, analysis (sensitivity, plots), web."""
