"""Where studies live: the Optuna study in SQL (`study`), the database URL (`database_url`) and the
driver lease that lets one process drive a study at a time (`lease`), the typed study and trial
attributes stored there (`study_attrs`, `trial_attrs`, on `attr_registry`), several of them written
in one transaction (`attrs`), studies created under a bound (`creation`), and the confinement of
paths read from a study to a root (`confine`)."""
